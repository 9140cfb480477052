package policy_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/caller"
	"github.com/plugboard/plugboard/host/internal/policy"
)

func parse(t *testing.T, body string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse("agents.json", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// served is a tool served by plugin, whose manifest declares roles.
func served(name, plugin string, roles ...string) policy.Tool {
	return policy.Tool{Def: &abi.Tool{Name: name}, Plugin: plugin, Roles: roles}
}

func decide(t *testing.T, p *policy.Policy, typ string, tool policy.Tool, wantOK bool, wantRule string) {
	t.Helper()
	ok, rule := p.Decide(typ, tool)
	if ok != wantOK || rule != wantRule {
		t.Errorf("%s × %s (plugin %q): %v %q, want %v %q", typ, tool.Def.Name, tool.Plugin, ok, rule, wantOK, wantRule)
	}
}

// TestAddKeepsDefaults: the case. A WORKER given a plugin's tools
// with add keeps every default grant and refusal; remove takes one tool
// away from a default glob without restating the list.
func TestAddKeepsDefaults(t *testing.T) {
	p := parse(t, `{"agents":[],"permissions":{"WORKER":{"add":["toolbox_*","plugin:shelf"],"remove":["mail_send"]}}}`)
	def := policy.Default()
	// Every tool of the default matrix is decided as by the defaults, but
	// mail_send.
	for name := range matrix {
		want, _ := def.Permits(policy.Worker, name)
		if name == "mail_send" {
			want = false
		}
		if got, rule := p.Permits(policy.Worker, name); got != want {
			t.Errorf("WORKER × %s: %v (%s), want %v as by default", name, got, rule, want)
		}
	}
	decide(t, p, policy.Worker, served("toolbox_hammer", "toolbox"), true, "add toolbox_*")
	decide(t, p, policy.Worker, served("mail_list_inbox", "agents"), true, "allow mail_*")
	decide(t, p, policy.Worker, served("log_decision", "agents"), true, "allow log_decision")
	decide(t, p, policy.Worker, served("mail_send", "agents"), false, "remove mail_send")
	decide(t, p, policy.Worker, served("create_task", "tasks-write"), false, "deny create_task")
	// plugin:NAME takes every tool of that plugin, whatever it is named,
	// and only its.
	decide(t, p, policy.Worker, served("count", "shelf"), true, "add plugin:shelf")
	decide(t, p, policy.Worker, served("count", "other"), false, "no allow pattern")
	decide(t, p, policy.Worker, policy.NamedTool("count"), false, "no allow pattern")
	// The lists in force: the default ones, and the file's additions.
	r := p.Rules(policy.Worker)
	if !slices.Equal(r.Allow, def.Rules(policy.Worker).Allow) || !slices.Equal(r.Deny, def.Rules(policy.Worker).Deny) ||
		!slices.Equal(r.Add, []string{"toolbox_*", "plugin:shelf"}) || !slices.Equal(r.Remove, []string{"mail_send"}) {
		t.Errorf("WORKER rules %+v", r)
	}
	// The other types keep their defaults.
	decide(t, p, policy.Orchestrator, served("toolbox_hammer", "toolbox"), false, "no allow pattern")
}

// TestAddOverAllow: add and remove extend a file's own allow list too, and
// that list still replaces the default one.
func TestAddOverAllow(t *testing.T) {
	p := parse(t, `{"agents":[],"permissions":{"WORKER":{"allow":["get_attempt_*","mail_*"],"add":["log_decision"],"remove":["mail_send"]}}}`)
	decide(t, p, policy.Worker, policy.NamedTool("get_attempt_status"), true, "allow get_attempt_*")
	decide(t, p, policy.Worker, policy.NamedTool("log_decision"), true, "add log_decision")
	decide(t, p, policy.Worker, policy.NamedTool("mail_read"), true, "allow mail_*")
	decide(t, p, policy.Worker, policy.NamedTool("mail_send"), false, "remove mail_send")
	decide(t, p, policy.Worker, policy.NamedTool("agent_get_task"), false, "no allow pattern")
}

// TestPluginEntries: plugin:NAME matches by the serving plugin (a glob
// too) in every list, critical_tools included; a refusal by plugin beats a
// grant by name.
func TestPluginEntries(t *testing.T) {
	p := parse(t, `{"agents":[],"permissions":{
		"WORKER":{"add":["tool*", "plugin:kit-*"],"remove":["plugin:toolbox"]},
		"ORCHESTRATOR":{"deny":["plugin:kit-b"],"add":["plugin:kit-*"]}},
		"critical_tools":["plugin:toolbox"]}`)
	decide(t, p, policy.Worker, served("toolbox_hammer", "toolbox"), false, "remove plugin:toolbox")
	decide(t, p, policy.Worker, served("toolbox_hammer", "other"), true, "add tool*")
	decide(t, p, policy.Worker, served("count", "kit-a"), true, "add plugin:kit-*")
	decide(t, p, policy.Orchestrator, served("count", "kit-b"), false, "deny plugin:kit-b")
	decide(t, p, policy.Orchestrator, served("count", "kit-c"), true, "add plugin:kit-*")
	if !p.Critical(served("anything", "toolbox")) || p.Critical(served("anything", "other")) || p.Critical(policy.NamedTool("toolbox")) {
		t.Error("critical_tools plugin:toolbox is not matched by the serving plugin alone")
	}
}

// TestDeclaredRoles: a plugin's declared roles grant nothing until the
// operator adds "declared" to a type, then only to the types declared,
// and never past a refusal.
func TestDeclaredRoles(t *testing.T) {
	forWorker := served("count", "counter", policy.Worker)
	aliased := policy.Tool{Def: &abi.Tool{Name: "boss_move", Aliases: []string{"mcp__supervisor__move"}}, Plugin: "counter", Roles: []string{policy.Worker}}
	decide(t, policy.Default(), policy.Worker, forWorker, false, "no allow pattern")
	p := parse(t, `{"agents":[],"permissions":{"WORKER":{"add":["declared"]},"ORCHESTRATOR":{"add":["declared"],"remove":["plugin:counter"]}}}`)
	decide(t, p, policy.Worker, forWorker, true, "add declared")
	decide(t, p, policy.Worker, served("count", "counter", policy.Orchestrator), false, "no allow pattern")
	decide(t, p, policy.Worker, served("count", "counter"), false, "no allow pattern")
	decide(t, p, policy.Worker, aliased, false, "deny mcp__supervisor__*")
	decide(t, p, policy.Orchestrator, served("count", "counter", policy.Orchestrator), false, "remove plugin:counter")
	decide(t, p, policy.Orchestrator, served("other", "kit", policy.Orchestrator), true, "add declared")
	// A tool known by name only has no plugin to declare anything.
	decide(t, p, policy.Worker, policy.NamedTool("count"), false, "no allow pattern")
	// "declared" in the replacing allow list works the same.
	q := parse(t, `{"agents":[],"permissions":{"WORKER":{"allow":["declared"]}}}`)
	decide(t, q, policy.Worker, forWorker, true, "allow declared")
	decide(t, q, policy.Worker, policy.NamedTool("mail_send"), false, "no allow pattern")
}

func TestExtendErrors(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"declared refuses nothing", `{"agents":[],"permissions":{"WORKER":{"remove":["declared"]}}}`,
			[]string{"permissions.WORKER.remove[0]", `"declared" only grants`, "plugin:NAME"}},
		{"declared in deny", `{"agents":[],"permissions":{"WORKER":{"deny":["declared"]}}}`, []string{"permissions.WORKER.deny[0]"}},
		{"declared critical", `{"agents":[],"critical_tools":["declared"]}`, []string{"critical_tools[0]", `"declared" only grants`}},
		{"plugin without a name", `{"agents":[],"permissions":{"WORKER":{"add":["plugin:"]}}}`,
			[]string{"permissions.WORKER.add[0]", "names no plugin", "plugboard plugin inspect"}},
		{"bad plugin glob", `{"agents":[],"permissions":{"WORKER":{"add":["plugin:kit["]}}}`, []string{"permissions.WORKER.add[0]", `"kit["`}},
		{"bad glob", `{"agents":[],"permissions":{"WORKER":{"remove":["mail_["]}}}`, []string{"permissions.WORKER.remove[0]", "mail_["}},
		{"empty entry", `{"agents":[],"permissions":{"WORKER":{"add":[""]}}}`, []string{"permissions.WORKER.add[0]", "empty"}},
		{"misspelt field", `{"agents":[],"permissions":{"WORKER":{"adds":["x"]}}}`, []string{"permissions.WORKER.adds", `did you mean "add"`}},
		{"not a list", `{"agents":[],"permissions":{"WORKER":{"add":"toolbox_*"}}}`, []string{"permissions.WORKER.add"}},
		{"added but denied by default", `{"agents":[],"permissions":{"WORKER":{"add":["mail_list_inbox","create_task"]}}}`,
			[]string{`permissions.WORKER.add[1]: "create_task" grants nothing`, `the default deny "create_task"`}},
		{"added but denied by the file", `{"agents":[],"permissions":{"WORKER":{"deny":["mail_*"],"add":["mail_send"]}}}`,
			[]string{`permissions.WORKER.add[0]`, `deny "mail_*"`}},
		{"added and removed", `{"agents":[],"permissions":{"WORKER":{"add":["toolbox_x"],"remove":["toolbox_*"]}}}`,
			[]string{`permissions.WORKER.add[0]`, `remove "toolbox_*"`}},
		{"placed", "{\"agents\": [],\n \"permissions\": {\"WORKER\": {\"add\": [\"plugin:\"]}}}",
			[]string{"agents.json:2:37: permissions.WORKER.add[0]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := policy.Parse("agents.json", []byte(tc.body))
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// TestDeniedHintNamesOnlyCallable: the refusal's hint suggests mail_send
// only to a caller that may call it (caller.May, which the dispatcher
// sets); otherwise it names the operator's setting.
func TestDeniedHintNamesOnlyCallable(t *testing.T) {
	p := parse(t, `{"agents":[{"id":"w1","type":"WORKER"}],"permissions":{"WORKER":{"remove":["mail_send"]}}}`)
	w1, _ := p.Caller("w1")
	may := func(name string) bool { ok, _ := p.Permits(w1.Role, name); return ok }
	ctx := caller.WithMay(context.Background(), may)
	env := p.Allow(ctx, w1, policy.NamedTool("create_task"))
	if env == nil || env.Code != abi.CodePermissionDenied {
		t.Fatalf("create_task: %v", env)
	}
	if strings.Contains(env.Hint, "mail_send") || !strings.Contains(env.Hint, "permissions.WORKER.add") {
		t.Errorf("hint %q names a tool the caller may not call, or not the setting", env.Hint)
	}
	// The same refusal to a WORKER that may send mail suggests it.
	env = policy.Default().Allow(caller.WithMay(context.Background(), func(name string) bool {
		ok, _ := policy.Default().Permits(policy.Worker, name)
		return ok
	}), w1, policy.NamedTool("create_task"))
	if env == nil || !strings.Contains(env.Hint, "mail_send") {
		t.Errorf("default WORKER hint %v does not suggest mail_send", env)
	}
}

// TestTypeFollowsFile: a configured agent's calls are decided under its
// type in the policy asked, not the role its session began with: a reload
// that changes the type applies to sessions already open.
func TestTypeFollowsFile(t *testing.T) {
	p := parse(t, `{"agents":[{"id":"w1","type":"SUPERVISOR"}]}`)
	stale := &abi.Caller{ID: "w1", Role: policy.Worker}
	if env := p.Allow(context.Background(), stale, policy.NamedTool("create_task")); env != nil {
		t.Errorf("w1, now a SUPERVISOR, refused: %v", env)
	}
	q := parse(t, `{"agents":[{"id":"w1","type":"WORKER"}]}`)
	promoted := &abi.Caller{ID: "w1", Role: policy.Supervisor}
	env := q.Allow(context.Background(), promoted, policy.NamedTool("create_task"))
	if env == nil || env.Details["agent_type"] != policy.Worker {
		t.Errorf("w1, now a WORKER, calling create_task: %v", env)
	}
}

// TestLive: a Live answers with the policy in force, and Store replaces it.
func TestLive(t *testing.T) {
	first := parse(t, `{"agents":[{"id":"w1","type":"WORKER","task_id":"t1","token":"tok-w1-0123456789abcdef0123456789ab"}]}`)
	second := parse(t, `{"agents":[{"id":"w1","type":"WORKER","task_id":"t2"},{"id":"w2","type":"WORKER"}],
		"permissions":{"WORKER":{"add":["plugin:counter"]}},"critical_tools":["count"]}`)
	l := policy.NewLive(first)
	w1, _ := l.Caller("w1")
	count := served("count", "counter")
	if l.Allow(context.Background(), w1, count) == nil || l.Critical(count) || !l.Scope(w1).HasTask("t1") {
		t.Fatal("the first policy is not the one in force")
	}
	if _, ok := l.Agent("w2"); ok {
		t.Fatal("w2 known before the reload")
	}
	l.Store(second)
	if env := l.Allow(context.Background(), w1, count); env != nil {
		t.Errorf("after Store, count refused: %v", env)
	}
	if !l.Critical(count) || l.Scope(w1).HasTask("t1") || !l.Scope(w1).HasTask("t2") {
		t.Error("critical tools or scope did not follow Store")
	}
	if _, ok := l.Agent("w2"); !ok || l.Load() != second || len(l.Load().Tokens()) != 0 {
		t.Error("agents or tokens did not follow Store")
	}
	l.Store(nil)
	if len(l.Load().Agents()) != 0 {
		t.Error("Store(nil) is not the default policy")
	}
	if !first.Equal(parse(t, `{"agents":[{"id":"w1","type":"WORKER","task_id":"t1","token":"tok-w1-0123456789abcdef0123456789ab"}]}`)) ||
		first.Equal(second) || first.Equal(nil) {
		t.Error("Equal")
	}
}
