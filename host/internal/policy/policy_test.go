package policy_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/policy"
	"github.com/plugboard/plugboard/host/internal/registry"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// upcoming are tools other parts of the multi-agent work add (mail, agent
// introspection, the decision log, review); the matrix covers them by name.
var upcoming = []string{"mail_send", "mail_list_inbox", "mail_read", "mail_reply", "agent_get_status", "agent_get_task",
	"log_decision", "review_queue", "approve_attempt", "request_changes"}

// matrix is the expected decision of the default permissions for every
// tool, per type: S(UPERVISOR), O(RCHESTRATOR), W(ORKER); "-" is denied.
var matrix = map[string]string{
	"echo":                  "S--",
	"text_diff":             "S--",
	"list_projects":         "SO-",
	"list_repos":            "SO-",
	"list_executors":        "SO-",
	"list_tasks":            "SO-",
	"get_task":              "SO-",
	"list_task_attempts":    "SO-",
	"get_attempt_status":    "SOW",
	"tail_attempt_logs":     "SOW",
	"tail_session_messages": "SOW",
	"get_context":           "SOW",
	"get_attempt_changes":   "SOW",
	"get_attempt_patch":     "SOW",
	"get_attempt_file":      "SOW",
	"create_task":           "S--",
	"update_task":           "S--",
	"delete_task":           "S--",
	"start_task_attempt":    "S--",
	"follow_up":             "S--",
	"stop_attempt":          "S--",
	"mail_send":             "SOW",
	"mail_list_inbox":       "SOW",
	"mail_read":             "SOW",
	"mail_reply":            "SOW",
	"agent_get_status":      "SOW",
	"agent_get_task":        "SOW",
	"log_decision":          "SOW",
	"review_queue":          "SO-",
	"approve_attempt":       "S--",
	"request_changes":       "S--",
}

// firstPartyTools builds every first-party plugin (plugins/* but internal)
// and returns its tools by name, each with its manifest definition.
func firstPartyTools(t *testing.T) map[string]*abi.Tool {
	t.Helper()
	if testing.Short() {
		t.Skip("builds plugins")
	}
	root := buildtest.Root(t)
	entries, err := os.ReadDir(filepath.Join(root, "plugins"))
	if err != nil {
		t.Fatal(err)
	}
	var srcs []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != "internal" {
			srcs = append(srcs, "plugins/"+e.Name())
		}
	}
	dir, _ := buildtest.Plugins(t, srcs...)
	// Manifests are embedded, so no engine is needed; every condition is
	// met so that conditional tools (get_context) are listed too.
	reg, err := registry.Load(context.Background(), registry.Options{Dirs: []string{dir}, Conditions: abi.Conditions()})
	if err != nil {
		t.Fatal(err)
	}
	if p := reg.Problems(); len(p) > 0 {
		t.Fatalf("plugins refused: %v", p)
	}
	tools := map[string]*abi.Tool{}
	for _, tl := range reg.Tools() {
		tools[tl.Def.Name] = tl.Def
	}
	return tools
}

func TestPermissionMatrix(t *testing.T) {
	tools := firstPartyTools(t)
	for _, name := range upcoming {
		if _, ok := tools[name]; !ok {
			tools[name] = &abi.Tool{Name: name}
		}
	}
	for name := range tools {
		if _, ok := matrix[name]; !ok {
			t.Errorf("tool %s has no row in the permission matrix: add one", name)
		}
	}
	for name := range matrix {
		if _, ok := tools[name]; !ok {
			t.Errorf("the matrix has a row for %s, which no first-party plugin serves and is not upcoming", name)
		}
	}
	p := policy.Default()
	for name, def := range tools {
		want := matrix[name]
		for i, typ := range policy.Types {
			allowed := want[i] != '-'
			c := &abi.Caller{ID: "a-" + strings.ToLower(typ), Role: typ}
			env := p.Allow(context.Background(), c, policy.Tool{Def: def})
			if (env == nil) != allowed {
				t.Errorf("%s × %s: allowed = %v, want %v (%v)", typ, name, env == nil, allowed, env)
			}
			if env != nil && (env.Code != abi.CodePermissionDenied || env.Details["agent_type"] != typ ||
				env.Details["tool"] != name || env.Details["agent_id"] != c.ID || env.Hint == "" ||
				!strings.Contains(env.Message, typ) || !strings.Contains(env.Message, name)) {
				t.Errorf("%s × %s: envelope %+v", typ, name, env)
			}
		}
	}
}

func TestPermissionDenyFirstAndNoAllow(t *testing.T) {
	p, err := policy.Parse("agents.json", []byte(`{"agents":[],"permissions":{
		"WORKER":{"allow":["*"],"deny":["mail_*"]},
		"ORCHESTRATOR":{"allow":["list_*"]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if ok, rule := p.Permits(policy.Worker, "mail_send"); ok || rule != "deny mail_*" {
		t.Errorf("deny first: %v %q", ok, rule)
	}
	if ok, rule := p.Permits(policy.Worker, "get_task"); !ok || rule != "allow *" {
		t.Errorf("allow *: %v %q", ok, rule)
	}
	if ok, rule := p.Permits(policy.Orchestrator, "get_task"); ok || rule != "no allow pattern" {
		t.Errorf("no allow match: %v %q", ok, rule)
	}
	// ORCHESTRATOR's deny list was not given: the default one stays.
	if got := p.Rules(policy.Orchestrator).Deny; !slices.Equal(got, policy.DefaultPermissions()[policy.Orchestrator].Deny) {
		t.Errorf("orchestrator deny = %v", got)
	}
	if ok, _ := p.Permits("JANITOR", "get_task"); ok {
		t.Error("an unknown type was allowed")
	}
}

func TestPermissionAliases(t *testing.T) {
	p := policy.Default()
	// A deny pattern on an alias wins over an allow on the name.
	tool := &abi.Tool{Name: "get_attempt_file", Aliases: []string{"mcp__epic__read_file"}}
	if env := p.Allow(context.Background(), &abi.Caller{ID: "w", Role: policy.Worker}, policy.Tool{Def: tool}); env == nil || env.Details["rule"] != "deny mcp__epic__*" {
		t.Errorf("worker calling a tool aliased mcp__epic__*: %v", env)
	}
	// An allow pattern matching only an alias allows.
	q, err := policy.Parse("agents.json", []byte(`{"agents":[],"permissions":{"WORKER":{"allow":["mcp__mail__*"],"deny":[]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if env := q.Allow(context.Background(), &abi.Caller{ID: "w", Role: policy.Worker}, policy.NamedTool("mail_send", "mcp__mail__send")); env != nil {
		t.Errorf("alias allow: %v", env)
	}
	if env := q.Allow(context.Background(), &abi.Caller{ID: "w", Role: policy.Worker}, policy.NamedTool("mail_send")); env == nil {
		t.Error("a tool without the alias was allowed")
	}
	if env := p.Allow(context.Background(), nil, policy.Tool{Def: &abi.Tool{Name: "echo"}}); env == nil || env.Code != abi.CodePermissionDenied {
		t.Errorf("nil caller: %v", env)
	}
}

func TestAgentsFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "agents.json")
	if err := os.WriteFile(file, []byte(`{
	  "agents": [
	    {"id": "sup", "type": "SUPERVISOR", "token": "tok-sup-0123456789abcdef0123456789"},
	    {"id": "orch", "type": "ORCHESTRATOR", "supervisor": "sup"},
	    {"id": "w1", "type": "WORKER", "supervisor": "orch", "task_id": "t1", "attempt_id": "a1", "token": "tok-w1-0123456789abcdef01234567890"}
	  ],
	  "critical_tools": ["start_task_attempt", "mcp__epic__*"]
	}`), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := policy.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if a, ok := p.Agent("w1"); !ok || a.Type != policy.Worker || a.Supervisor != "orch" || a.TaskID != "t1" || a.AttemptID != "a1" {
		t.Errorf("w1 = %+v", a)
	}
	if c, ok := p.Caller("w1"); !ok || *c != (abi.Caller{ID: "w1", Role: policy.Worker}) {
		t.Errorf("caller w1 = %+v", c)
	}
	if c, ok := p.Caller(policy.LocalID); !ok || c.Role != policy.Supervisor {
		t.Errorf("local = %+v", c)
	}
	if _, ok := p.Caller("nobody"); ok {
		t.Error("an unknown agent has a caller")
	}
	if got := p.Tokens(); len(got) != 2 || got["tok-sup-0123456789abcdef0123456789"] != "sup" || got["tok-w1-0123456789abcdef01234567890"] != "w1" {
		t.Errorf("tokens = %v", got)
	}
	if !p.Critical(policy.Tool{Def: &abi.Tool{Name: "start_task_attempt"}}) || !p.Critical(policy.NamedTool("x", "mcp__epic__x")) ||
		p.Critical(policy.Tool{Def: &abi.Tool{Name: "get_task"}}) {
		t.Error("critical_tools not matched by name and alias")
	}
	if d, err := policy.Load(""); err != nil || len(d.Agents()) != 0 {
		t.Errorf("no file: %v %v", d, err)
	}
	if _, err := policy.Load(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("a missing file loaded")
	}
}

func TestAgentsFileErrors(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"unknown supervisor", `{"agents":[{"id":"w1","type":"WORKER","supervisor":"ghost"}]}`,
			[]string{"agents[0]", `"w1"`, "supervisor", `"ghost"`}},
		{"self supervisor", `{"agents":[{"id":"w1","type":"WORKER","supervisor":"w1"}]}`, []string{`"w1"`, "supervisor", "itself"}},
		{"duplicate id", `{"agents":[{"id":"a","type":"WORKER"},{"id":"a","type":"SUPERVISOR"}]}`,
			[]string{"agents[1]", `"a"`, "id", "duplicate of agents[0]"}},
		{"duplicate token", `{"agents":[{"id":"a","type":"WORKER","token":"same-token-0123456789abcdef012345"},{"id":"b","type":"WORKER","token":"same-token-0123456789abcdef012345"}]}`,
			[]string{"agents[1]", `"b"`, "token", `"a"`}},
		{"short token", `{"agents":[{"id":"a","type":"WORKER","token":"short-token-0123456789abcdef012"}]}`,
			[]string{"agents[0]", `"a"`, "token", "31 characters", "at least 32"}},
		{"bad scope word", `{"agents":[{"id":"a","type":"WORKER","scope":"everything"}]}`, []string{"scope", `"all"`}},
		{"bad scope type", `{"agents":[{"id":"a","type":"WORKER","scope":5}]}`, []string{"scope"}},
		{"empty scope task", `{"agents":[{"id":"a","type":"WORKER","scope":["t1",""]}]}`, []string{"agents[0]", "scope[1]"}},
		{"bad type", `{"agents":[{"id":"a","type":"BOSS"}]}`, []string{"agents[0]", `"a"`, "type", `"BOSS"`, "WORKER"}},
		{"empty id", `{"agents":[{"type":"WORKER"}]}`, []string{"agents[0]", "id is empty"}},
		{"reserved id", `{"agents":[{"id":"local","type":"WORKER"}]}`, []string{"agents[0]", "id", "reserved"}},
		{"attempt id form", `{"agents":[{"id":"attempt:0b5c","type":"SUPERVISOR"}]}`, []string{"agents[0].id", `"attempt:0b5c"`, `"attempt:"`, "reserved", "attempt processes"}},
		{"bad id", `{"agents":[{"id":"a b","type":"WORKER"}]}`, []string{"agents[0]", "id must be"}},
		{"token with space", `{"agents":[{"id":"a","type":"WORKER","token":"a b"}]}`, []string{"agents[0]", "token"}},
		{"unknown field", `{"agents":[{"id":"a","type":"WORKER","role":"x"}]}`, []string{"role"}},
		{"unknown type in permissions", `{"agents":[],"permissions":{"JANITOR":{"allow":["*"]}}}`, []string{"permissions", `"JANITOR"`}},
		{"bad pattern", `{"agents":[],"permissions":{"WORKER":{"allow":["mail_["]}}}`, []string{"permissions.WORKER.allow[0]", "mail_["}},
		{"bad critical pattern", `{"agents":[],"critical_tools":["["]}`, []string{"critical_tools[0]"}},
		{"not JSON", `{"agents":`, []string{"agents.json:1:11: agents: unexpected end"}},
		{"placed at line and column", "{\"agents\": [\n  {\"id\": \"a\", \"type\": \"WORKER\"},\n  {\"id\": \"b\", \"type\": \"WORKR\"}\n]}",
			[]string{`agents.json:3:23: agents[1].type: unknown type "WORKR"`, `agent "b"`}},
		{"every problem at once", `{"agents":[{"id":"a","type":"BOSS","tokn":"x"}],"critical_tools":["["]}`,
			[]string{`:1:29: agents[0].type: unknown type "BOSS"`, `:1:36: agents[0].tokn: unknown field "tokn" (did you mean "token"?)`,
				`:1:67: critical_tools[0]: pattern "["`}},
		{"trailing data", `{"agents":[]} {}`, []string{"after the top-level object"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := policy.Parse("/etc/plugboard/agents.json", []byte(tc.body))
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range append(tc.want, "/etc/plugboard/agents.json") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// scopeMatrix is the board work each kind of agent reaches by default and
// with a grant, extending the permission matrix from tools to data: the
// agents file below configures one of each, all with task t1 and attempt
// a1 of their own. Rows list what each reaches: "*" everything, else the
// tasks held whole (t…) and the single attempts (a…).
var scopeMatrix = []struct {
	agent string
	want  policy.Scope
}{
	{"sup", policy.Scope{All: true}},
	{"orch", policy.Scope{All: true}},
	{"w-attempt", policy.Scope{Attempts: []string{"a1"}}},
	{"w-task", policy.Scope{Tasks: []string{"t1"}}},
	{"w-none", policy.Scope{}},
	{"w-list", policy.Scope{Attempts: []string{"a1"}, Tasks: []string{"t2", "t3"}}},
	{"w-all", policy.Scope{All: true}},
	{"w-own", policy.Scope{Attempts: []string{"a1"}}},
	{"orch-own", policy.Scope{Tasks: []string{"t1"}}},
	{"sup-list", policy.Scope{Tasks: []string{"t2"}}},
}

func TestScopeMatrix(t *testing.T) {
	p, err := policy.Parse("agents.json", []byte(`{"agents": [
	  {"id": "sup", "type": "SUPERVISOR", "task_id": "t1", "attempt_id": "a1"},
	  {"id": "orch", "type": "ORCHESTRATOR", "task_id": "t1", "attempt_id": "a1"},
	  {"id": "w-attempt", "type": "WORKER", "task_id": "t1", "attempt_id": "a1"},
	  {"id": "w-task", "type": "WORKER", "task_id": "t1"},
	  {"id": "w-none", "type": "WORKER"},
	  {"id": "w-list", "type": "WORKER", "task_id": "t1", "attempt_id": "a1", "scope": ["t2", "t3", "t2"]},
	  {"id": "w-all", "type": "WORKER", "task_id": "t1", "attempt_id": "a1", "scope": "all"},
	  {"id": "w-own", "type": "WORKER", "task_id": "t1", "attempt_id": "a1", "scope": "own"},
	  {"id": "orch-own", "type": "ORCHESTRATOR", "task_id": "t1", "scope": "own"},
	  {"id": "sup-list", "type": "SUPERVISOR", "scope": ["t2"]}
	]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range scopeMatrix {
		c, ok := p.Caller(row.agent)
		if !ok {
			t.Fatalf("no agent %s", row.agent)
		}
		got := p.Scope(c)
		if got.All != row.want.All || !slices.Equal(got.Tasks, row.want.Tasks) || !slices.Equal(got.Attempts, row.want.Attempts) {
			t.Errorf("%s: scope %+v, want %+v", row.agent, got, row.want)
		}
		// A scope holds what it names, and nothing else unless it is all.
		for _, task := range []string{"t1", "t2", "t3", "t9"} {
			if want := row.want.All || slices.Contains(row.want.Tasks, task); got.HasTask(task) != want {
				t.Errorf("%s: HasTask(%s) = %v", row.agent, task, !want)
			}
		}
		for _, at := range []string{"a1", "a9"} {
			if want := row.want.All || slices.Contains(row.want.Attempts, at); got.HasAttempt(at) != want {
				t.Errorf("%s: HasAttempt(%s) = %v", row.agent, at, !want)
			}
		}
	}
	// The local identity and a call without a caller reach everything; an
	// identity the file does not know, by its role.
	for _, c := range []*abi.Caller{nil, policy.Local(), {ID: "ghost", Role: policy.Orchestrator}} {
		if !p.Scope(c).All {
			t.Errorf("scope of %+v is not everything", c)
		}
	}
	if s := p.Scope(&abi.Caller{ID: "ghost", Role: policy.Worker}); !s.Empty() {
		t.Errorf("an unknown WORKER reaches %+v", s)
	}
	// The grant round-trips through JSON.
	for _, in := range []string{`"all"`, `"own"`, `["t1","t2"]`} {
		var g policy.Grant
		if err := json.Unmarshal([]byte(in), &g); err != nil {
			t.Fatal(err)
		}
		if out, _ := json.Marshal(g); string(out) != in {
			t.Errorf("grant %s → %s", in, out)
		}
	}
}
