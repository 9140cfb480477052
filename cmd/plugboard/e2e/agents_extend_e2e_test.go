package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/plugin"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// The extending tests run the real binary over HTTP with an agents file
// that gives a WORKER a plugin by extension (permissions.WORKER.add), keeps
// its defaults, takes mail_send away, then is edited while the server runs:
// a good edit takes effect for new calls and tokens without a restart, a
// bad one keeps the agents in force and is logged once.

const extendWorker2Token = "worker2-token-0123456789abcdef0123456789"

// shelfManifest is the manifest embedded in shelf.wasm, a copy of the
// counter test plugin (which answers any tool name) that declares it is
// meant for WORKERs.
const shelfManifest = `{"abi":1,"plugin":{"name":"shelf","version":"1.0.0"},"roles":["WORKER"],
"tools":[{"name":"shelf_count","description":"Use when: testing declared roles.\nRequired: none\nOptional: none\nNext: none.\nAvoid: calling it outside tests.","inputSchema":{"type":"object"}}]}`

// extendPlugins builds the agents plugin (mail_*, agent_*, log_decision)
// and counter (count), and writes shelf.wasm beside them.
func extendPlugins(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	dir, _ := buildtest.Plugins(t, "plugins/agents", "testdata/plugins/counter")
	counter, err := os.ReadFile(filepath.Join(dir, "counter.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	shelf, err := plugin.SetCustomSection(counter, abi.ManifestSection, []byte(shelfManifest))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "shelf.wasm"), shelf, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// saveAgents replaces file with body the way editors save: a new file
// renamed over the old one, so the server never reads half a file.
func saveAgents(t *testing.T, file, body string) {
	t.Helper()
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, file); err != nil {
		t.Fatal(err)
	}
}

// extendAgents is the agents file: boss (SUPERVISOR) and worker1 (WORKER)
// with tokens, WORKERs given plugin counter and without mail_send; more
// is spliced into the WORKER rules and the agents.
func extendAgents(workerRules, moreAgents string) string {
	return `{"agents": [
	  {"id": "boss", "type": "SUPERVISOR", "token": "` + bossToken + `"},
	  {"id": "worker1", "type": "WORKER", "supervisor": "boss", "token": "` + workerToken + `"}` + moreAgents + `
	],
	"permissions": {"WORKER": {` + workerRules + `}}}`
}

// callOK calls tool and fails the test unless it succeeded.
func callOK(t *testing.T, s *mcp.ClientSession, tool string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res := callSession(t, ctx, s, tool, args)
	if res.IsError {
		t.Fatalf("call %s: %s", tool, clitest.Text(res))
	}
	return res
}

// callErr calls tool and returns its envelope; the test fails if it
// succeeded.
func callErr(t *testing.T, s *mcp.ClientSession, tool string, args any) abi.Envelope {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return clitest.EnvelopeOf(t, callSession(t, ctx, s, tool, args))
}

// waitServe polls cond until it holds or 30 s pass.
func waitServe(t *testing.T, s *httpServer, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 30s; stderr:\n%s", what, s.Stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// initStatus is the HTTP status of an MCP initialize with token.
func initStatus(t *testing.T, s *httpServer, token string) int {
	t.Helper()
	resp := rawRequest(t, http.MethodPost, s.URL, "", "Bearer "+token)
	return resp.StatusCode
}

// TestAgentsExtendE2E: a WORKER given a custom plugin by extension keeps
// its defaults and calls both; a refusal's hint names only tools it may
// call; an edit of the agents file takes effect while serving (rules,
// declared roles, tokens added and revoked); a bad edit keeps the agents
// in force and is logged once; plugin inspect shows the declared roles.
func TestAgentsExtendE2E(t *testing.T) {
	dir := extendPlugins(t)
	file := filepath.Join(t.TempDir(), "agents.json")
	saveAgents(t, file, extendAgents(`"add": ["plugin:counter"], "remove": ["mail_send"]`, ""))
	s := startHTTPServer(t, dir, httpEnv(), "--agents", file, "--watch", "100ms")

	boss, _, err := connectHTTP(t, s.URL, bossToken)
	if err != nil {
		t.Fatal(err)
	}
	worker, _, err := connectHTTP(t, s.URL, workerToken)
	if err != nil {
		t.Fatal(err)
	}
	served := toolNames(t, boss)
	for _, want := range []string{"count", "shelf_count", "mail_send", "mail_list_inbox", "log_decision"} {
		if !slices.Contains(served, want) {
			t.Fatalf("%s is not served: %v", want, served)
		}
	}

	// The custom plugin's tool and the defaults, side by side.
	callOK(t, worker, "count", map[string]any{})
	callOK(t, worker, "mail_list_inbox", map[string]any{})
	callOK(t, worker, "log_decision", map[string]any{"title": "Counted", "body": "the extension gave me count"})
	workerView := toolNames(t, worker)
	for _, want := range []string{"count", "mail_list_inbox", "mail_read", "log_decision", "agent_get_status"} {
		if !slices.Contains(workerView, want) {
			t.Errorf("worker1 does not see %s: %v", want, workerView)
		}
	}
	if slices.Contains(workerView, "mail_send") || slices.Contains(workerView, "shelf_count") {
		t.Errorf("worker1 sees a tool its rules refuse: %v", workerView)
	}

	// Refusals: mail_send (removed), shelf_count (declared for WORKERs, but
	// the file does not opt in). Their hints name no tool worker1 cannot
	// call — no mail_send — and say which setting the operator changes.
	for _, tool := range []string{"mail_send", "shelf_count"} {
		env := callErr(t, worker, tool, map[string]any{"to_agent_id": "boss", "subject": "s", "body": "b"})
		if env.Code != abi.CodePermissionDenied {
			t.Fatalf("%s: %+v", tool, env)
		}
		assertHintCallable(t, env.Hint, served, workerView)
		if !strings.Contains(env.Hint, "permissions.WORKER.add") {
			t.Errorf("%s: hint %q does not name the setting", tool, env.Hint)
		}
	}
	if status := initStatus(t, s, extendWorker2Token); status != http.StatusUnauthorized {
		t.Fatalf("worker2's token before it is configured: HTTP %d", status)
	}

	// A good edit: WORKERs take the plugins declared for them and may mail
	// again; worker2 joins with a token; boss's token is revoked.
	edited := strings.Replace(extendAgents(`"add": ["plugin:counter", "declared"]`,
		`, {"id": "worker2", "type": "WORKER", "supervisor": "boss", "token": "`+extendWorker2Token+`"}`),
		`"token": "`+bossToken+`"`, `"scope": "all"`, 1)
	saveAgents(t, file, edited)
	waitServe(t, s, "the edit in force", func() bool { return strings.Contains(s.Stderr.String(), "agents reloaded") })
	callOK(t, worker, "shelf_count", map[string]any{})
	callOK(t, worker, "count", map[string]any{})
	if view := toolNames(t, worker); !slices.Contains(view, "shelf_count") || !slices.Contains(view, "mail_send") {
		t.Errorf("worker1's tools/list did not follow the edit: %v", view)
	}
	worker2, _, err := connectHTTP(t, s.URL, extendWorker2Token)
	if err != nil {
		t.Fatalf("worker2's new token refused: %v", err)
	}
	callOK(t, worker2, "shelf_count", map[string]any{})
	if status := initStatus(t, s, bossToken); status != http.StatusUnauthorized {
		t.Errorf("boss's revoked token: HTTP %d, want 401", status)
	}
	// The dashboard's sign-in follows too.
	dash := abuseDashboard{t: t, base: "http://" + s.Addr}
	cookie := dash.login(extendWorker2Token)
	if who := dash.who(cookie); who != "worker2" {
		t.Errorf("dashboard signed worker2's token in as %q", who)
	}
	if status, _ := dash.do("POST", "/ui/api/login", `{"token":"`+bossToken+`"}`, nil); status != http.StatusUnauthorized {
		t.Errorf("dashboard sign-in with boss's revoked token: HTTP %d, want 401", status)
	}

	// A bad edit (a plugin entry naming no plugin, an unknown type) is
	// logged once, with every problem placed, and changes nothing.
	bad := strings.Replace(edited, `"plugin:counter"`, `"plugin:"`, 1)
	bad = strings.Replace(bad, `"id": "worker2", "type": "WORKER"`, `"id": "worker2", "type": "WORKR"`, 1)
	saveAgents(t, file, bad)
	const notReloaded = "agents file not reloaded"
	waitServe(t, s, "the bad edit logged", func() bool { return strings.Contains(s.Stderr.String(), notReloaded) })
	time.Sleep(600 * time.Millisecond) // six more polls
	logged := s.Stderr.String()
	if n := strings.Count(logged, notReloaded); n != 1 {
		t.Errorf("the bad edit was logged %d times, want once:\n%s", n, logged)
	}
	line := logged[strings.Index(logged, notReloaded):]
	line, _, _ = strings.Cut(line, "\n")
	for _, want := range []string{file, "permissions.WORKER.add[0]", "names no plugin", "agents[2].type", `unknown type \"WORKR\"`} {
		if !strings.Contains(line, want) {
			t.Errorf("the error line does not name %q: %s", want, line)
		}
	}
	callOK(t, worker, "count", map[string]any{}) // plugin:counter still in force
	callOK(t, worker2, "shelf_count", map[string]any{})
	if n := strings.Count(logged, "agents reloaded"); n != 1 {
		t.Errorf("%d reloads logged, want 1 (the bad edit applied?)", n)
	}

	// Fixed again: it applies, and one more reload is logged.
	saveAgents(t, file, extendAgents(`"add": ["plugin:counter"]`, ""))
	waitServe(t, s, "the fix in force", func() bool { return strings.Count(s.Stderr.String(), "agents reloaded") == 2 })
	if env := callErr(t, worker, "shelf_count", map[string]any{}); env.Code != abi.CodePermissionDenied {
		t.Errorf("shelf_count after declared was dropped: %+v", env)
	}
	if status := initStatus(t, s, extendWorker2Token); status != http.StatusUnauthorized {
		t.Errorf("worker2's token after worker2 was dropped: HTTP %d, want 401", status)
	}
	if who := dash.who(cookie); who != "" {
		t.Errorf("worker2's dashboard session outlived its token: signed in as %q", who)
	}

	// plugin inspect shows the declared roles, and that they grant nothing
	// by themselves.
	out, err := exec.Command(buildtest.Binary(t), "plugin", "inspect", filepath.Join(dir, "shelf.wasm")).CombinedOutput()
	if err != nil {
		t.Fatalf("plugin inspect: %v\n%s", err, out)
	}
	if !regexp.MustCompile(`(?m)^roles: +WORKER \(meant for; granted only where the agents file adds "declared"`).Match(out) {
		t.Errorf("inspect does not show the declared roles:\n%s", out)
	}
	out, err = exec.Command(buildtest.Binary(t), "plugin", "inspect", "--json", filepath.Join(dir, "shelf.wasm")).Output()
	var in struct {
		Manifest abi.Manifest `json:"manifest"`
	}
	if err != nil || json.Unmarshal(out, &in) != nil || !slices.Equal(in.Manifest.Roles, []string{"WORKER"}) {
		t.Errorf("inspect --json roles: %v %s", err, out)
	}
}

// assertHintCallable fails unless every served tool hint names is one the
// caller sees (may call).
func assertHintCallable(t *testing.T, hint string, served, callable []string) {
	t.Helper()
	for _, name := range served {
		if regexp.MustCompile(`\b`+regexp.QuoteMeta(name)+`\b`).MatchString(hint) && !slices.Contains(callable, name) {
			t.Errorf("hint %q names %s, which the caller may not call", hint, name)
		}
	}
}

// TestAgentsReloadFromConfigSection: agents in the configuration file's
// agents section reload the same way; a bad configuration file is logged
// once (by the plugin settings' watcher, which reads the same file), not
// once more for the agents.
func TestAgentsReloadFromConfigSection(t *testing.T) {
	dir := extendPlugins(t)
	conf := filepath.Join(t.TempDir(), "plugboard.json")
	section := func(agents string) string { return `{"agents": {"agents": [` + agents + `]}}` }
	w1 := `{"id": "worker1", "type": "WORKER", "token": "` + workerToken + `"}`
	w2 := `{"id": "worker2", "type": "WORKER", "token": "` + extendWorker2Token + `"}`
	saveAgents(t, conf, section(w1))
	s := startHTTPServer(t, dir, httpEnv(), "--config", conf, "--watch", "100ms")
	if status := initStatus(t, s, extendWorker2Token); status != http.StatusUnauthorized {
		t.Fatalf("worker2's token before it is configured: HTTP %d", status)
	}
	saveAgents(t, conf, section(w1+", "+w2))
	waitServe(t, s, "worker2 in force", func() bool { return initStatus(t, s, extendWorker2Token) == http.StatusOK })

	saveAgents(t, conf, section(strings.Replace(w2, "WORKER", "WORKR", 1)))
	waitServe(t, s, "the bad file logged", func() bool { return strings.Contains(s.Stderr.String(), "configuration file not reloaded") })
	time.Sleep(600 * time.Millisecond)
	logged := s.Stderr.String()
	if n := strings.Count(logged, "level=ERROR"); n != 1 || !strings.Contains(logged, `agents.agents[0].type: unknown type \"WORKR\"`) {
		t.Errorf("%d errors logged for one bad file, want 1 naming agents.agents[0].type:\n%s", n, logged)
	}
	if initStatus(t, s, extendWorker2Token) != http.StatusOK || initStatus(t, s, workerToken) != http.StatusOK {
		t.Error("the bad file changed the agents in force")
	}
}
