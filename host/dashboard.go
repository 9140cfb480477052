package host

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/dashboard"
	"github.com/plugboard/plugboard/host/internal/dispatch"
	"github.com/plugboard/plugboard/host/internal/mail"
	"github.com/plugboard/plugboard/host/internal/mcpserver"
)

// dashboardFor builds the web dashboard ServeHTTP serves at "/": its
// actions are tool calls through the dispatcher as the signed-in identity;
// its operator reads come from the board's store, the mail system and the
// registry.
func (h *Host) dashboardFor(opts HTTPOptions, mopts mcpserver.Options) *dashboard.Dashboard {
	var authenticate func(string) (string, bool)
	if len(opts.Tokens) > 0 {
		authenticate = mcpserver.Tokens(opts.Tokens)
	}
	human := &abi.Caller{ID: mail.Human, Role: "HUMAN"}
	return dashboard.New(dashboard.Options{
		Authenticate: authenticate,
		Local:        h.caller,
		Callers:      mopts.Callers,
		Logger:       h.log,
		Call: func(ctx context.Context, c *abi.Caller, tool string, args json.RawMessage) (json.RawMessage, *abi.Envelope) {
			res := h.dispatcher.Call(ctx, dispatch.Request{Tool: tool, Arguments: args, Caller: c})
			if res.IsError() {
				return nil, res.Envelope
			}
			return res.Structured, nil
		},
		Tools: func(c *abi.Caller) []dashboard.Tool {
			var out []dashboard.Tool
			for _, t := range h.registry.Tools() {
				if h.dispatcher.Permits(c, t.Def) {
					out = append(out, dashboard.Tool{Name: t.Def.Name, Title: t.Def.Title, Description: t.Def.Description, InputSchema: t.Def.InputSchema})
				}
			}
			return out
		},
		Decisions: func(ctx context.Context, q dashboard.DecisionQuery) (any, error) {
			b, err := h.board.wait(ctx)
			if err != nil {
				return nil, err
			}
			// Since selects the calls finished at or after it, oldest first
			// (the store's follower query); without it the newest come first.
			rows, err := b.Store().ListDecisions(ctx, DecisionFilter{AgentID: q.Agent, Tool: q.Tool, Limit: q.Limit, FinishedAfter: q.Since})
			if rows == nil {
				rows = []Decision{}
			}
			return rows, err
		},
		Inbox: func(ctx context.Context, includeRead bool) (any, error) {
			return h.mail.ListInbox(ctx, human, mail.InboxArgs{IncludeRead: includeRead, Limit: 100})
		},
		ReadMail: func(ctx context.Context, id string) (any, error) {
			return h.mail.Read(ctx, human, mail.MailArgs{MailID: id})
		},
		ReplyMail: func(ctx context.Context, id, body string) (any, error) {
			return h.mail.Reply(ctx, human, mail.ReplyArgs{MailID: id, Body: body})
		},
		Plugins: func(context.Context) any { return h.pluginsView() },
	})
}

// pluginView is a served plugin as the dashboard shows it.
type pluginView struct {
	Name          string           `json:"name"`
	Version       string           `json:"version,omitempty"`
	Description   string           `json:"description,omitempty"`
	Path          string           `json:"path"`
	Origin        string           `json:"origin,omitempty"`
	Granted       []string         `json:"granted"`
	Withheld      []string         `json:"withheld"`
	Compiled      bool             `json:"compiled"`
	Loaded        bool             `json:"loaded"`
	IdleInstances int              `json:"idle_instances"`
	Tools         []dashboard.Tool `json:"tools"`
}

type problemView struct {
	Path  string `json:"path"`
	Error string `json:"error"`
}

func (h *Host) pluginsView() map[string]any {
	plugins := []pluginView{}
	for _, p := range h.registry.Plugins() {
		granted := p.Granted()
		v := pluginView{Name: p.Name(), Version: p.Manifest.Plugin.Version, Description: p.Manifest.Plugin.Description,
			Path: p.Path, Origin: p.Origin, Granted: granted, Withheld: []string{}, Tools: []dashboard.Tool{}}
		if v.Granted == nil {
			v.Granted = []string{}
		}
		for _, c := range p.Manifest.Capabilities {
			if !slices.Contains(granted, c) {
				v.Withheld = append(v.Withheld, c)
			}
		}
		v.Compiled, v.Loaded, v.IdleInstances = p.State()
		for _, t := range p.Manifest.Tools {
			v.Tools = append(v.Tools, dashboard.Tool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema})
		}
		plugins = append(plugins, v)
	}
	problems := []problemView{}
	for _, p := range h.registry.Problems() {
		problems = append(problems, problemView{Path: p.Path, Error: p.Err.Error()})
	}
	return map[string]any{"plugins": plugins, "problems": problems}
}
