// Package policy owns who the callers are and what each may call: the
// configured agents (id, type, supervisor, current task and attempt, HTTP
// bearer token) read from the operator's agents file, the local identity of
// a server run without one, and per-type rules over tools: allow and deny
// lists, and the add and remove lists that extend a type's defaults (see
// Rules). It decides; the dispatcher asks (dispatch.Policy) with what the
// registry knows of the tool (Tool: its plugin and the roles the plugin
// declares), and the transports map a token or a flag to an identity
// through it. A server that reloads the agents file holds a Live.
package policy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/caller"
	"github.com/plugboard/plugboard/host/internal/jsonfile"
	"github.com/plugboard/plugboard/host/internal/oauth"
)

// Agent types: the roles a plugin's manifest may declare (abi.AgentRoles).
const (
	Supervisor   = abi.RoleSupervisor
	Orchestrator = abi.RoleOrchestrator
	Worker       = abi.RoleWorker
)

// Types lists every agent type.
var Types = []string{Supervisor, Orchestrator, Worker}

// LocalID is the identity of a server run without --agent (stdio) and of
// the single --http-token: an operator's own session, with SUPERVISOR
// rights. No configured agent may take it.
const LocalID = "local"

// Local returns the local identity.
func Local() *abi.Caller { return &abi.Caller{ID: LocalID, Role: Supervisor} }

// AttemptPrefix starts the id of an attempt identity: the caller of one
// attempt's processes, which reach the board through the host's agent
// endpoint with a token issued for that attempt (host.Config.Board.Access)
// instead of the board's data directory. No configured agent may take an
// id of this form, so only the host mints such identities.
const AttemptPrefix = "attempt:"

// AttemptCaller returns the identity of attemptID's processes: a WORKER
// whose id is AttemptPrefix+attemptID. It calls what the WORKER type's
// rules allow (the agents file's, else the defaults) and reaches only its
// own attempt (Policy.Scope).
func AttemptCaller(attemptID string) *abi.Caller {
	return &abi.Caller{ID: AttemptPrefix + attemptID, Role: Worker}
}

// AttemptOf returns the attempt of an attempt identity (AttemptCaller),
// or false for any other caller.
func AttemptOf(c *abi.Caller) (string, bool) {
	if c == nil || c.Role != Worker {
		return "", false
	}
	id, ok := strings.CutPrefix(c.ID, AttemptPrefix)
	return id, ok && id != ""
}

// Agent is one configured agent.
type Agent struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	// Supervisor is the id of the agent this one reports to (escalations,
	// mail to "my supervisor"); it must be configured too.
	Supervisor string `json:"supervisor,omitempty"`
	// TaskID and AttemptID are the agent's current work on the board, if
	// any (agent_get_task).
	TaskID    string `json:"task_id,omitempty"`
	AttemptID string `json:"attempt_id,omitempty"`
	// Token is the agent's HTTP bearer token; an agent without one can only
	// be served over stdio (serve --agent ID). At least MinTokenLength
	// characters.
	Token string `json:"token,omitempty"`
	// Scope widens (or narrows) the board work the agent reaches beyond
	// its type's default (see Policy.Scope): "all", "own", or a list of
	// task ids reachable besides its own work. Nil keeps the default.
	Scope *Grant `json:"scope,omitempty"`
}

// Caller is the agent as the dispatcher and plugins see it.
func (a Agent) Caller() *abi.Caller { return &abi.Caller{ID: a.ID, Role: a.Type} }

// Rules are one agent type's lists of entries over tools. An entry is
//
//   - a glob (path.Match; an exact name is one) over a tool's name and each
//     of its aliases,
//   - "plugin:NAME", every tool the plugin NAME serves (its manifest's name,
//     the one plugins.settings uses; NAME may be a glob), whatever the
//     operator's settings rename its tools to, or
//   - "declared" (Allow and Add only), every tool of a plugin whose
//     manifest declares the type among its roles (abi.Manifest.Roles).
//
// Precedence: Deny, then Remove, refuse first; then Allow, then Add,
// grant; a tool nothing grants is refused. So a grant never beats a
// refusal, whichever list or form either comes from, and a plugin's
// declaration grants only through a "declared" entry the operator wrote.
type Rules struct {
	Allow []string `json:"allow"`
	// Add grants besides Allow: the agents file's way to extend a type's
	// defaults (or its own allow list) without restating them.
	Add  []string `json:"add,omitempty"`
	Deny []string `json:"deny"`
	// Remove refuses like Deny, without replacing the deny list: tools
	// Allow or Add would grant that the type must not call.
	Remove []string `json:"remove,omitempty"`
}

// Entry forms besides globs (see Rules).
const (
	// PluginPrefix starts an entry naming a plugin: "plugin:NAME".
	PluginPrefix = "plugin:"
	// Declared is the entry granting the tools of plugins that declare
	// the type among their roles.
	Declared = "declared"
)

// Tool is what the policy decides on: a served tool's definition (its name
// and aliases), the name of the plugin serving it, and the agent types that
// plugin's manifest says it is meant for. The dispatcher fills it from the
// registry, so the policy matches "plugin:" and "declared" entries without
// knowing the registry.
type Tool struct {
	Def    *abi.Tool
	Plugin string
	Roles  []string
}

// NamedTool is a tool known by names only (its name, then its aliases),
// served by no plugin the policy knows of: "plugin:" and "declared"
// entries do not match it.
func NamedTool(names ...string) Tool {
	if len(names) == 0 {
		return Tool{Def: &abi.Tool{}}
	}
	return Tool{Def: &abi.Tool{Name: names[0], Aliases: names[1:]}}
}

// DefaultPermissions returns the rules of each type when the agents file
// sets none: the multi-agent spec's, in plugboard names. Deny patterns in
// mcp__<namespace>__* form match tools that declare such aliases.
func DefaultPermissions() map[string]Rules {
	attemptReads := []string{"get_attempt_status", "tail_attempt_logs", "tail_session_messages",
		"get_attempt_changes", "get_attempt_patch", "get_attempt_file", "get_context"}
	boardReads := append([]string{"list_projects", "list_repos", "list_executors", "list_tasks", "get_task",
		"list_task_attempts"}, attemptReads...)
	return map[string]Rules{
		Supervisor: {Allow: []string{"*"}},
		Orchestrator: {
			Allow: slices.Concat([]string{"mail_*", "agent_*", "log_decision"}, boardReads, []string{"review_queue"}),
			Deny:  []string{"mcp__supervisor__*"},
		},
		Worker: {
			Allow: slices.Concat([]string{"mail_*", "agent_get_status", "agent_get_task", "log_decision"}, attemptReads),
			Deny: []string{"mcp__supervisor__*", "mcp__orchestrator__*", "mcp__epic__*", "mcp__task__create", "mcp__task__assign",
				"create_task", "start_task_attempt", "review_queue", "approve_attempt", "request_changes"},
		},
	}
}

// Policy is a loaded agents configuration. It is immutable and safe for
// concurrent use; it implements dispatch.Policy.
type Policy struct {
	agents   []Agent
	byID     map[string]int
	perms    map[string]Rules
	critical []string
	oauth    *oauth.Config
}

// Default is the policy of a server run without an agents file: no agents,
// the default permissions, no critical tools.
func Default() *Policy {
	return &Policy{byID: map[string]int{}, perms: DefaultPermissions()}
}

// File is the JSON shape of an agents file.
type File struct {
	Agents []Agent `json:"agents"`
	// Permissions sets the rules per type (FileRules): an allow or deny
	// list given replaces that type's default list, an absent one keeps
	// it; add and remove extend whichever is in force.
	Permissions map[string]FileRules `json:"permissions,omitempty"`
	// CriticalTools are entries (globs or "plugin:NAME", matched like
	// permissions) whose tools' final failure is escalated as critical.
	CriticalTools []string `json:"critical_tools,omitempty"`
	// OAuth, when set, admits over HTTP the access tokens the
	// organisation's authorization server issues for this server, mapped
	// to agents and types by their claims (oauth.Config).
	OAuth *oauth.Config `json:"oauth,omitempty"`
}

// FileRules is one type's rules in an agents file. Allow and Deny replace
// the type's default lists (nil keeps them): the form to use when the
// defaults must go. Add and Remove extend the lists in force — the
// defaults, or Allow and Deny when given — without restating them: the
// form that keeps the defaults, and with them every tool a later version
// adds to them. Both forms may be given together. See Rules for the
// entries and their precedence.
type FileRules struct {
	Allow *[]string `json:"allow,omitempty"`
	Deny  *[]string `json:"deny,omitempty"`
	// Add grants tools besides the allow list in force, e.g.
	// ["toolbox_*", "plugin:toolbox", "declared"].
	Add []string `json:"add,omitempty"`
	// Remove refuses tools the allow list in force or Add would grant,
	// e.g. ["mail_send"] while "mail_*" is allowed.
	Remove []string `json:"remove,omitempty"`
}

// Load reads an agents file; "" gives Default().
func Load(file string) (*Policy, error) {
	if file == "" {
		return Default(), nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("agents file: %w", err)
	}
	return Parse(file, b)
}

var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.@-]{0,127}$`)

// Parse reads an agents file's content; name (the file) starts every
// error, which is placed at its line and column and names the field
// (agents[1].type) and the agent at fault. Every problem is reported at
// once.
func Parse(name string, data []byte) (*Policy, error) {
	doc, err := jsonfile.Parse(name, data)
	if err != nil {
		return nil, err
	}
	return ParseDoc(doc)
}

// ParseDoc reads an agents file's content from a parsed document: a whole
// agents file, or the agents section of plugboard's configuration file
// (host/config), whose errors then carry that file's positions and paths.
func ParseDoc(doc *jsonfile.Doc) (*Policy, error) {
	var f File
	filled, err := doc.Decode(&f)
	if !filled {
		return nil, err
	}
	p := Default()
	errs := []error{err}
	fail := func(at jsonfile.Path, format string, args ...any) {
		errs = append(errs, doc.Errorf(at, format, args...))
	}
	tokens := map[string]string{}
	for i, a := range f.Agents {
		at := jsonfile.Path{"agents", i}
		who := fmt.Sprintf("agent %q", a.ID)
		switch {
		case a.ID == "":
			fail(at.Join("id"), "the id is empty; every agent needs one")
		case a.ID == LocalID:
			fail(at.Join("id"), "%q is reserved for the local identity", LocalID)
		case strings.HasPrefix(a.ID, AttemptPrefix):
			fail(at.Join("id"), "%q: ids starting with %q are reserved for the identities the host gives attempt processes", a.ID, AttemptPrefix)
		case !idPattern.MatchString(a.ID):
			fail(at.Join("id"), "%q: the id must be 1-128 of [A-Za-z0-9_.@-], starting with a letter or digit", a.ID)
		}
		if j, dup := p.byID[a.ID]; dup && a.ID != "" {
			fail(at.Join("id"), "%q is a duplicate of agents[%d]", a.ID, j)
		}
		if !slices.Contains(Types, a.Type) {
			fail(at.Join("type"), "unknown type %q (%s; one of %s)", a.Type, who, strings.Join(Types, ", "))
		}
		if a.Token != "" {
			if strings.IndexFunc(a.Token, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) || r > unicode.MaxASCII }) >= 0 {
				fail(at.Join("token"), "%s's token must be printable ASCII without spaces", who)
			}
			if n := len(a.Token); n < MinTokenLength {
				fail(at.Join("token"), "%s's token is %d characters; a bearer token needs at least %d random ones (e.g. openssl rand -hex 32)",
					who, n, MinTokenLength)
			}
			if other, dup := tokens[a.Token]; dup {
				fail(at.Join("token"), "%s's token is the same as agent %q's; every agent needs its own", who, other)
			}
			tokens[a.Token] = a.ID
		}
		if a.Scope != nil {
			for j, id := range a.Scope.Tasks {
				if id == "" || strings.TrimSpace(id) != id {
					fail(at.Join("scope", j), "%s: a task id must be non-empty, without surrounding spaces", who)
				}
			}
		}
		if _, dup := p.byID[a.ID]; !dup {
			p.byID[a.ID] = i
		}
		p.agents = append(p.agents, a)
	}
	for i, a := range f.Agents {
		if a.Supervisor == "" {
			continue
		}
		at := jsonfile.Path{"agents", i, "supervisor"}
		if a.Supervisor == a.ID {
			fail(at, "agent %q cannot supervise itself", a.ID)
		} else if _, ok := p.byID[a.Supervisor]; !ok {
			fail(at, "no agent has id %q (agent %q's supervisor)", a.Supervisor, a.ID)
		}
	}
	for _, typ := range slices.Sorted(maps.Keys(f.Permissions)) {
		r := f.Permissions[typ]
		at := jsonfile.Path{"permissions", typ}
		if !slices.Contains(Types, typ) {
			fail(at, "unknown agent type %q (one of %s)", typ, strings.Join(Types, ", "))
			continue
		}
		rules := p.perms[typ]
		if r.Allow != nil {
			rules.Allow = *r.Allow
		}
		if r.Deny != nil {
			rules.Deny = *r.Deny
		}
		rules.Add, rules.Remove = r.Add, r.Remove
		for _, l := range []struct {
			key     string
			entries []string
			grants  bool
		}{{"allow", rules.Allow, true}, {"add", rules.Add, true}, {"deny", rules.Deny, false}, {"remove", rules.Remove, false}} {
			for j, e := range l.entries {
				if err := checkEntry(e, l.grants); err != nil {
					fail(at.Join(l.key, j), "%v", err)
				}
			}
		}
		for j, e := range rules.Add {
			if why := refusedFirst(rules, e, r.Deny != nil); why != "" {
				fail(at.Join("add", j), "%q grants nothing: %s refuses it first (refusals win over grants); %s", e, why,
					"drop it from add, or from the list that refuses it")
			}
		}
		p.perms[typ] = rules
	}
	for j, e := range f.CriticalTools {
		if err := checkEntry(e, false); err != nil {
			fail(jsonfile.Path{"critical_tools", j}, "%v", err)
		}
	}
	p.critical = f.CriticalTools
	if f.OAuth != nil {
		for _, pr := range f.OAuth.Check(Types) {
			fail(append(jsonfile.Path{"oauth"}, pr.Key...), "%s", pr.Message)
		}
		p.oauth = f.OAuth
	}
	if err := jsonfile.Join(errs...); err != nil {
		return nil, err
	}
	return p, nil
}

func checkPattern(pat string) error {
	if pat == "" {
		return errors.New("empty pattern")
	}
	if _, err := path.Match(pat, ""); err != nil {
		return fmt.Errorf("pattern %q: %w", pat, err)
	}
	return nil
}

// checkEntry checks one entry of a list; "declared" only grants, so it is
// refused where grants is false (deny, remove, critical_tools).
func checkEntry(e string, grants bool) error {
	if e == Declared {
		if !grants {
			return fmt.Errorf("%q only grants (allow, add); to refuse a plugin's tools name it: \"%sNAME\"", Declared, PluginPrefix)
		}
		return nil
	}
	if name, ok := strings.CutPrefix(e, PluginPrefix); ok {
		if name == "" {
			return fmt.Errorf("%q names no plugin: write %sNAME, NAME as plugboard plugin inspect shows it", e, PluginPrefix)
		}
		if _, err := path.Match(name, ""); err != nil {
			return fmt.Errorf("plugin pattern %q: %w", name, err)
		}
		return nil
	}
	return checkPattern(e)
}

// refusedFirst says which refusal makes the add entry e useless, or "":
// only for an exact tool name, whose fate a glob refusal decides for sure.
// fileDeny tells whether the deny list is the file's or the default one.
func refusedFirst(r Rules, e string, fileDeny bool) string {
	if e == Declared || strings.HasPrefix(e, PluginPrefix) || strings.ContainsAny(e, `*?[\`) {
		return ""
	}
	deny := "the default deny"
	if fileDeny {
		deny = "deny"
	}
	for _, l := range []struct {
		what    string
		entries []string
	}{{deny, r.Deny}, {"remove", r.Remove}} {
		for _, pat := range l.entries {
			if ok, _ := path.Match(pat, e); ok {
				return fmt.Sprintf("%s %q", l.what, pat)
			}
		}
	}
	return ""
}

// Agents returns the configured agents in file order.
func (p *Policy) Agents() []Agent { return slices.Clone(p.agents) }

// Agent returns the configured agent of that id.
func (p *Policy) Agent(id string) (Agent, bool) {
	i, ok := p.byID[id]
	if !ok {
		return Agent{}, false
	}
	return p.agents[i], true
}

// Caller returns the identity of id: a configured agent, or the local
// identity for LocalID.
func (p *Policy) Caller(id string) (*abi.Caller, bool) {
	if id == LocalID {
		return Local(), true
	}
	a, ok := p.Agent(id)
	if !ok {
		return nil, false
	}
	return a.Caller(), true
}

// OAuth returns the agents file's oauth section, or nil.
func (p *Policy) OAuth() *oauth.Config { return p.oauth }

// Tokens returns every agent's bearer token and whose it is.
func (p *Policy) Tokens() map[string]string {
	out := map[string]string{}
	for _, a := range p.agents {
		if a.Token != "" {
			out[a.Token] = a.ID
		}
	}
	return out
}

// Rules returns the rules of an agent type.
func (p *Policy) Rules(typ string) Rules { return p.perms[typ] }

// Permits reports whether an agent type may call a tool known by names (its
// name, then its aliases; see NamedTool), and which rule decided (see
// Decide).
func (p *Policy) Permits(typ string, names ...string) (bool, string) {
	return p.Decide(typ, NamedTool(names...))
}

// Decide reports whether an agent type may call t, and which rule decided:
// "deny ENTRY", "remove ENTRY", "allow ENTRY", "add ENTRY", or "no allow
// pattern" (see Rules for the order).
func (p *Policy) Decide(typ string, t Tool) (bool, string) {
	rules, ok := p.perms[typ]
	if !ok {
		return false, "unknown agent type"
	}
	for _, l := range []struct {
		what    string
		entries []string
		grants  bool
	}{{"deny", rules.Deny, false}, {"remove", rules.Remove, false}, {"allow", rules.Allow, true}, {"add", rules.Add, true}} {
		if e, hit := matchAny(l.entries, typ, t); hit {
			return l.grants, l.what + " " + e
		}
	}
	return false, "no allow pattern"
}

// matchAny returns the first of entries that matches t for agent type typ.
func matchAny(entries []string, typ string, t Tool) (string, bool) {
	for _, e := range entries {
		if matches(e, typ, t) {
			return e, true
		}
	}
	return "", false
}

// matches reports whether one entry (see Rules) matches t.
func matches(e, typ string, t Tool) bool {
	if e == Declared {
		return t.Plugin != "" && slices.Contains(t.Roles, typ)
	}
	if name, ok := strings.CutPrefix(e, PluginPrefix); ok {
		hit, _ := path.Match(name, t.Plugin)
		return t.Plugin != "" && hit
	}
	if t.Def == nil {
		return false
	}
	if ok, _ := path.Match(e, t.Def.Name); ok {
		return true
	}
	for _, a := range t.Def.Aliases {
		if ok, _ := path.Match(e, a); ok {
			return true
		}
	}
	return false
}

// typeOf is the agent type c's calls are decided under: a configured
// agent's type in this policy — which may have changed since its session
// began, when the agents file was reloaded — else the role c carries.
func (p *Policy) typeOf(c *abi.Caller) string {
	if a, ok := p.Agent(c.ID); ok {
		return a.Type
	}
	return c.Role
}

// Allow implements dispatch.Policy: nil when the caller's type may call
// t, else a permission_denied envelope naming the type and the tool, whose
// hint names only tools the caller may call (caller.May: ctx is the call's,
// carrying what the dispatcher allows it).
func (p *Policy) Allow(ctx context.Context, c *abi.Caller, t Tool) *abi.Envelope {
	name := ""
	if t.Def != nil {
		name = t.Def.Name
	}
	if c == nil {
		env := abi.NewEnvelope(abi.CodePermissionDenied, fmt.Sprintf("tool %q needs a caller identity and the call has none", name),
			"connect with an agent's bearer token (HTTP) or start the server with --agent ID (stdio)")
		return env.WithDetail("tool", name)
	}
	typ := p.typeOf(c)
	ok, rule := p.Decide(typ, t)
	if ok {
		return nil
	}
	env := abi.NewEnvelope(abi.CodePermissionDenied,
		fmt.Sprintf("tool %q is not allowed for agent type %q", name, typ), deniedHint(ctx, typ))
	env.Details = map[string]any{"agent_id": c.ID, "agent_type": typ, "tool": name, "rule": rule}
	return env
}

// deniedHint tells a refused caller what it can do: ask its supervisor by
// mail when it may send mail, else it has no tool to ask with, and the
// hint names the setting the operator would change.
func deniedHint(ctx context.Context, typ string) string {
	const list = "call tools/list for the tools your agent type may call"
	if caller.May(ctx, "mail_send") {
		return list + "; if this one must run, ask your supervisor with mail_send"
	}
	return fmt.Sprintf("%s; if this one must run, the operator grants it in the agents file (permissions.%s.add)", list, typ)
}

// Critical implements dispatch.Policy: whether t matches critical_tools
// (by name, alias or "plugin:NAME").
func (p *Policy) Critical(t Tool) bool {
	_, hit := matchAny(p.critical, "", t)
	return hit
}
