package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/board/store"
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
	human := &abi.Caller{ID: mail.Human, Role: "HUMAN"}
	return dashboard.New(dashboard.Options{
		Tokens:   opts.Tokens,
		Sessions: storeSessions{h},
		Local:    h.caller,
		Callers:  mopts.Callers,
		Logger:   h.log,
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
		Hosts: func(ctx context.Context) (any, error) {
			b, err := h.board.wait(ctx)
			if err != nil {
				return nil, err
			}
			return b.Hosts(ctx, true)
		},
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

// storeSessions keeps the dashboard's sessions in the board's store: every
// host sharing it honours a sign-in and a sign-out, and a restart keeps
// them.
type storeSessions struct{ h *Host }

func (s storeSessions) store(ctx context.Context) (*store.Store, error) {
	b, err := s.h.board.wait(ctx)
	if err != nil {
		return nil, err
	}
	return b.Store(), nil
}

func (s storeSessions) Create(ctx context.Context, sess dashboard.Session, idleBefore time.Time, keep int) error {
	st, err := s.store(ctx)
	if err != nil {
		return err
	}
	return st.CreateDashboardSession(ctx, store.DashboardSession{IDHash: sess.IDHash, Identity: sess.Identity,
		TokenHash: sess.TokenHash, CSRF: sess.CSRF, MAC: sess.MAC, CreatedAt: store.FormatTime(sess.Created), SeenAt: store.FormatTime(sess.Seen)},
		store.FormatTime(idleBefore), keep)
}

func (s storeSessions) Get(ctx context.Context, idHash string) (dashboard.Session, bool, error) {
	st, err := s.store(ctx)
	if err != nil {
		return dashboard.Session{}, false, err
	}
	d, err := st.GetDashboardSession(ctx, idHash)
	if errors.Is(err, store.ErrNotFound) {
		return dashboard.Session{}, false, nil
	}
	if err != nil {
		return dashboard.Session{}, false, err
	}
	// An unreadable creation time is left zero: the session's MAC and
	// lifetime checks then end it.
	created, _ := time.Parse(store.TimeFormat, d.CreatedAt)
	seen, err := time.Parse(store.TimeFormat, d.SeenAt)
	if err != nil {
		return dashboard.Session{}, false, fmt.Errorf("dashboard session seen at %q: %w", d.SeenAt, err)
	}
	return dashboard.Session{IDHash: d.IDHash, Identity: d.Identity, TokenHash: d.TokenHash, CSRF: d.CSRF, MAC: d.MAC,
		Created: created, Seen: seen}, true, nil
}

func (s storeSessions) Touch(ctx context.Context, idHash string, seen time.Time) error {
	st, err := s.store(ctx)
	if err != nil {
		return err
	}
	return st.TouchDashboardSession(ctx, idHash, store.FormatTime(seen))
}

func (s storeSessions) Delete(ctx context.Context, idHash string) error {
	st, err := s.store(ctx)
	if err != nil {
		return err
	}
	return st.DeleteDashboardSession(ctx, idHash)
}
