// Package policy owns who the callers are and what each may call: the
// configured agents (id, type, supervisor, current task and attempt, HTTP
// bearer token) read from the operator's agents file, the local identity of
// a server run without one, and per-type allow and deny glob lists over tool
// names and their aliases. It decides; the dispatcher asks (dispatch.Policy)
// and the transports map a token or a flag to an identity through it.
package policy

import (
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
	"github.com/plugboard/plugboard/host/internal/jsonfile"
)

// Agent types.
const (
	Supervisor   = "SUPERVISOR"
	Orchestrator = "ORCHESTRATOR"
	Worker       = "WORKER"
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

// Rules are the allow and deny glob lists of one agent type, matched with
// path.Match against a tool's name and each of its aliases. Deny is checked
// first; a tool matching no allow pattern is denied.
type Rules struct {
	Allow []string `json:"allow"`
	Deny  []string `json:"deny"`
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
}

// Default is the policy of a server run without an agents file: no agents,
// the default permissions, no critical tools.
func Default() *Policy {
	return &Policy{byID: map[string]int{}, perms: DefaultPermissions()}
}

// File is the JSON shape of an agents file.
type File struct {
	Agents []Agent `json:"agents"`
	// Permissions overrides the default rules per type: a list given
	// replaces that type's default list, an absent one keeps it.
	Permissions map[string]FileRules `json:"permissions,omitempty"`
	// CriticalTools are tool names or globs (matched like permissions)
	// whose final failure is escalated as critical.
	CriticalTools []string `json:"critical_tools,omitempty"`
}

// FileRules is one type's rules in an agents file; nil keeps the default.
type FileRules struct {
	Allow *[]string `json:"allow,omitempty"`
	Deny  *[]string `json:"deny,omitempty"`
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
		for j, pat := range rules.Allow {
			if err := checkPattern(pat); err != nil {
				fail(at.Join("allow", j), "%v", err)
			}
		}
		for j, pat := range rules.Deny {
			if err := checkPattern(pat); err != nil {
				fail(at.Join("deny", j), "%v", err)
			}
		}
		p.perms[typ] = rules
	}
	for j, pat := range f.CriticalTools {
		if err := checkPattern(pat); err != nil {
			fail(jsonfile.Path{"critical_tools", j}, "%v", err)
		}
	}
	p.critical = f.CriticalTools
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
// name, then its aliases), and which rule decided: "deny PATTERN",
// "allow PATTERN" or "no allow pattern".
func (p *Policy) Permits(typ string, names ...string) (bool, string) {
	rules, ok := p.perms[typ]
	if !ok {
		return false, "unknown agent type"
	}
	if pat, hit := matchAny(rules.Deny, names); hit {
		return false, "deny " + pat
	}
	if pat, hit := matchAny(rules.Allow, names); hit {
		return true, "allow " + pat
	}
	return false, "no allow pattern"
}

func matchAny(patterns, names []string) (string, bool) {
	for _, pat := range patterns {
		for _, n := range names {
			if ok, _ := path.Match(pat, n); ok {
				return pat, true
			}
		}
	}
	return "", false
}

func names(tool *abi.Tool) []string { return append([]string{tool.Name}, tool.Aliases...) }

// Allow implements dispatch.Policy: nil when the caller's type may call
// tool, else a permission_denied envelope naming the type and the tool.
func (p *Policy) Allow(c *abi.Caller, tool *abi.Tool) *abi.Envelope {
	if c == nil {
		env := abi.NewEnvelope(abi.CodePermissionDenied, fmt.Sprintf("tool %q needs a caller identity and the call has none", tool.Name),
			"connect with an agent's bearer token (HTTP) or start the server with --agent ID (stdio)")
		return env.WithDetail("tool", tool.Name)
	}
	ok, rule := p.Permits(c.Role, names(tool)...)
	if ok {
		return nil
	}
	env := abi.NewEnvelope(abi.CodePermissionDenied,
		fmt.Sprintf("tool %q is not allowed for agent type %q", tool.Name, c.Role),
		"call tools/list for the tools your agent type may call; if this one must run, ask your supervisor with mail_send")
	env.Details = map[string]any{"agent_id": c.ID, "agent_type": c.Role, "tool": tool.Name, "rule": rule}
	return env
}

// Critical implements dispatch.Policy: whether tool (by name or alias)
// matches critical_tools.
func (p *Policy) Critical(tool *abi.Tool) bool {
	_, hit := matchAny(p.critical, names(tool))
	return hit
}
