package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/abi/tasks"
	"github.com/plugboard/plugboard/host/internal/audit"
	"github.com/plugboard/plugboard/host/internal/board"
	"github.com/plugboard/plugboard/host/internal/caller"
	"github.com/plugboard/plugboard/host/internal/dashboard"
	"github.com/plugboard/plugboard/host/internal/dispatch"
	"github.com/plugboard/plugboard/host/internal/mail"
	"github.com/plugboard/plugboard/host/internal/mcpserver"
	"github.com/plugboard/plugboard/host/internal/registry"
	"github.com/plugboard/plugboard/host/internal/store"
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
			if t, ok := h.dispatcher.Resolve(tool); ok && dashboardRead(t) {
				ctx = audit.LeaveOut(ctx, t.Def.Name)
			}
			res := h.dispatcher.Call(ctx, dispatch.Request{Tool: tool, Arguments: args, Caller: c})
			if res.IsError() {
				return nil, res.Envelope
			}
			return res.Structured, nil
		},
		Tools: func(c *abi.Caller) []dashboard.Tool {
			var out []dashboard.Tool
			for _, t := range h.registry.Tools() {
				if h.dispatcher.Permits(c, t) {
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
			rows, err := listDecisions(ctx, b.Store(), decisionFilter(q))
			return decisionSummaries(rows), err
		},
		Decision: func(ctx context.Context, id string) (any, error) {
			b, err := h.board.wait(ctx)
			if err != nil {
				return nil, err
			}
			d, err := b.Store().GetDecision(ctx, id)
			if errors.Is(err, store.ErrNotFound) {
				return nil, abi.NewEnvelope(abi.CodeNotFound, "no decision-log row "+id,
					"it may have been pruned (the log's age and size bounds); reload the Decisions view")
			}
			return d, err
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
		Board: func(ctx context.Context, c *abi.Caller, projectID string) (any, error) {
			if _, err := h.board.wait(ctx); err != nil {
				return nil, err
			}
			ctx = caller.WithMay(caller.With(ctx, c), func(tool string) bool {
				t, ok := h.dispatcher.Resolve(tool)
				return ok && h.dispatcher.Permits(c, t)
			})
			return h.board.api.BoardTasks(ctx, projectID)
		},
		Marks: func(ctx context.Context, projects, attempts []string) (map[string]string, error) {
			b, err := h.board.wait(ctx)
			if err != nil {
				return nil, err
			}
			return liveMarks(ctx, b.Store(), projects, attempts)
		},
		CreateProject: func(ctx context.Context, c *abi.Caller, name string, repos []dashboard.RepoInput) (any, error) {
			b, err := h.board.wait(ctx)
			if err != nil {
				return nil, err
			}
			specs := make([]board.RepoSpec, len(repos))
			for i, r := range repos {
				specs[i] = board.RepoSpec{Path: r.Path, Name: r.DisplayName}
			}
			p, err := b.CreateProject(ctx, name, specs)
			if err != nil {
				return nil, repoRefused(err)
			}
			h.recordSetUp(ctx, c, "Created project "+p.Name, fmt.Sprintf("project %s with %d repositories, from the dashboard", p.ID, len(p.Repos)))
			return projectInfo(p), nil
		},
		AddRepo: func(ctx context.Context, c *abi.Caller, projectID string, r dashboard.RepoInput) (any, error) {
			b, err := h.board.wait(ctx)
			if err != nil {
				return nil, err
			}
			p, err := b.AddRepo(ctx, projectID, board.RepoSpec{Path: r.Path, Name: r.DisplayName})
			if errors.Is(err, store.ErrNotFound) {
				return nil, abi.NewEnvelope(abi.CodeNotFound, "no project "+projectID, "reload the board and pick a project")
			}
			if err != nil {
				return nil, repoRefused(err)
			}
			h.recordSetUp(ctx, c, "Added a repository to project "+p.Name, fmt.Sprintf("%s to project %s, from the dashboard", r.Path, p.ID))
			return projectInfo(p), nil
		},
	})
}

// liveMarks reads the dashboard's live marks of projects and attempts.
func liveMarks(ctx context.Context, st *store.Store, projects, attempts []string) (map[string]string, error) {
	out := make(map[string]string, 2*len(projects)+3*len(attempts))
	for _, p := range projects {
		m, err := st.ProjectMarks(ctx, p)
		if err != nil {
			return nil, err
		}
		out[dashboard.MarkCards(p)], out[dashboard.MarkActivity(p)] = m.Cards, m.Activity
	}
	for _, a := range attempts {
		m, err := st.AttemptMarks(ctx, a)
		if err != nil {
			return nil, err
		}
		out[dashboard.MarkLogs(a)], out[dashboard.MarkState(a)], out[dashboard.MarkMessages(a)] = m.Logs, m.State, m.Messages
	}
	return out, nil
}

// projectInfo is a project as list_projects shows it.
func projectInfo(p store.Project) tasks.Project {
	return tasks.Project{ProjectID: p.ID, Name: p.Name, RepoCount: len(p.Repos), CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
}

// repoRefused is a project set-up the board refused, for the operator: its
// own envelope, or the repository's problem as invalid_argument.
func repoRefused(err error) error {
	var env *abi.Envelope
	if errors.As(err, &env) {
		return env
	}
	return abi.NewEnvelope(abi.CodeInvalidArgument, err.Error(),
		"give the absolute path of a git repository on this host, with at least one commit").WithDetail("field", "path")
}

// recordSetUp writes a project set-up made on the dashboard to the
// decision log, as who made it: it is no tool call, so nothing else would.
func (h *Host) recordSetUp(ctx context.Context, c *abi.Caller, title, body string) {
	if _, err := h.decisions.Deliberate(ctx, c, title, body); err != nil {
		h.log.Warn("dashboard: a project set-up was not recorded in the decision log", "title", title, "err", err)
	}
}

// dashboardRead reports whether a call of t from the dashboard is a read
// the decision log leaves out (audit.LeaveOut): a tool annotated read-only
// whose name is reserved for the first-party plugin serving it
// (registry.ReservedOwner), so that the hint is the host's own and no
// plugin can hide a person's writes by declaring its tool read-only. The
// pages read these at every change the server tells them of (a log line,
// a card moved); a person's writes, and every call of anyone else, stay
// recorded.
func dashboardRead(t registry.Tool) bool {
	if t.Def == nil || t.Def.Annotations == nil || !t.Def.Annotations.ReadOnlyHint || t.Plugin == nil {
		return false
	}
	owner, reserved := registry.ReservedOwner(t.Def.Name)
	return reserved && owner == t.Plugin.Name()
}

// decisionFilter is the filter of the Decisions view's query.
func decisionFilter(q dashboard.DecisionQuery) DecisionFilter {
	f := DecisionFilter{AgentID: q.Agent, Tool: q.Tool, Status: q.Status, ErrorCode: q.ErrorCode, Limit: q.Limit}
	if !q.From.IsZero() {
		f.CreatedFrom = store.FormatTime(q.From)
	}
	if !q.To.IsZero() {
		f.CreatedBefore = store.FormatTime(q.To)
	}
	return f
}

// decisionSummary is a decision-log row as the Decisions view lists it:
// without its input, result, error and HTTP requests, which opening the
// row reads (a list of 500 rows polled every 2 s would carry up to 2 MB).
type decisionSummary struct {
	ID         string  `json:"id"`
	Kind       string  `json:"kind"`
	AgentID    string  `json:"agent_id"`
	AgentType  string  `json:"agent_type"`
	Tool       string  `json:"tool"`
	Title      string  `json:"title,omitempty"`
	Status     string  `json:"status"`
	ErrorCode  string  `json:"error_code"`
	DurationMS *int64  `json:"duration_ms"`
	Attempts   int     `json:"attempts"`
	CreatedAt  string  `json:"created_at"`
	FinishedAt *string `json:"finished_at"`
}

func decisionSummaries(rows []Decision) []decisionSummary {
	out := make([]decisionSummary, 0, len(rows))
	for _, d := range rows {
		out = append(out, decisionSummary{ID: d.ID, Kind: d.Kind, AgentID: d.AgentID, AgentType: d.AgentType, Tool: d.Tool,
			Title: d.Title, Status: d.Status, ErrorCode: d.ErrorCode, DurationMS: d.DurationMS, Attempts: d.Attempts,
			CreatedAt: d.CreatedAt, FinishedAt: d.FinishedAt})
	}
	return out
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
	// Needs are what the plugin declares it needs (abi.Needs), each with
	// its status under the settings in force; Settings are those
	// settings, by name (dashboard_needs.go). Neither shows a value.
	Needs    []needView   `json:"needs"`
	Settings settingsView `json:"settings"`
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
		v.Needs, v.Settings = needsView(p.Name(), p.Manifest.Needs, p.Settings())
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
