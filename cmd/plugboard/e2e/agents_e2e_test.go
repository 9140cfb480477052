package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/abi"
	plughost "github.com/plugboard/plugboard/host"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// The agent tests run the real binary with an agents file: tools/list shows
// each identity only what its type may call (stdio: --agent; HTTP: the
// bearer token), a hidden tool called anyway answers permission_denied, and
// POST /mcp/execute runs calls for the token's agent.

const (
	bossToken   = "boss-token-0123456789abcdef0123456789"
	workerToken = "worker-token-0123456789abcdef0123456789"
)

func agentsFile(t *testing.T) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "agents.json")
	body := `{"agents": [
	  {"id": "boss", "type": "SUPERVISOR", "token": "` + bossToken + `"},
	  {"id": "worker1", "type": "WORKER", "supervisor": "boss", "token": "` + workerToken + `"}
	]}`
	if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func agentPlugins(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	dir, _ := buildtest.Plugins(t, "plugins/echo", "plugins/tasks-read", "testdata/plugins/flaky")
	return dir
}

// toolNames lists the names of the tools s is served, sorted.
func toolNames(t *testing.T, s *mcp.ClientSession) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var names []string
	for tool, err := range s.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// workerView is names filtered by the default WORKER rules.
func workerView(names []string) []string {
	p := plughost.DefaultAgents()
	var out []string
	for _, n := range names {
		if ok, _ := p.Permits("WORKER", n); ok {
			out = append(out, n)
		}
	}
	return out
}

func wantDenied(t *testing.T, res *mcp.CallToolResult, agent, typ, tool string) {
	t.Helper()
	env := clitest.EnvelopeOf(t, res)
	if env.Code != abi.CodePermissionDenied || env.Details["agent_id"] != agent || env.Details["agent_type"] != typ ||
		env.Details["tool"] != tool || env.Hint == "" {
		t.Fatalf("envelope %+v, want permission_denied for %s (%s) calling %s", env, agent, typ, tool)
	}
}

func TestAgentStdioToolsList(t *testing.T) {
	dir := agentPlugins(t)
	agents := agentsFile(t)
	all := toolNames(t, startServer(t, dir).session)
	if !slices.Contains(all, "echo") || !slices.Contains(all, "get_attempt_status") {
		t.Fatalf("the local identity does not see every tool: %v", all)
	}
	if got := toolNames(t, startServer(t, dir, "--agents", agents, "--agent", "boss").session); !slices.Equal(got, all) {
		t.Errorf("supervisor sees %v, want %v", got, all)
	}
	w := startServer(t, dir, "--agents", agents, "--agent", "worker1")
	got := toolNames(t, w.session)
	want := workerView(all)
	if !slices.Equal(got, want) || len(got) == 0 || slices.Contains(got, "echo") || slices.Contains(got, "list_projects") {
		t.Fatalf("worker1 sees %v, want %v", got, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wantDenied(t, w.call(t, ctx, "echo", map[string]any{"text": "hi"}), "worker1", "WORKER", "echo")
}

func TestAgentFlagErrors(t *testing.T) {
	dir := agentPlugins(t)
	agents := agentsFile(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--agents", agents, "--agent", "ghost"}, "no such agent"},
		{[]string{"--agent", "boss"}, "needs --agents"},
		{[]string{"--agents", filepath.Join(t.TempDir(), "none.json")}, "agents file"},
	} {
		cmd := exec.Command(buildtest.Binary(t), append([]string{"serve", "--plugins", dir, "--data", t.TempDir()}, tc.args...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("serve %v: %v, stderr %q; want exit 2 mentioning %q", tc.args, err, stderr.String(), tc.want)
		}
	}
}

func TestAgentHTTPToolsList(t *testing.T) {
	dir := agentPlugins(t)
	s := startHTTPServer(t, dir, httpEnv(), "--agents", agentsFile(t), "--http-token", "local-token-0123456789abcdef0123456789")
	boss, _, err := connectHTTP(t, s.URL, bossToken)
	if err != nil {
		t.Fatal(err)
	}
	worker, _, err := connectHTTP(t, s.URL, workerToken)
	if err != nil {
		t.Fatal(err)
	}
	local, _, err := connectHTTP(t, s.URL, "local-token-0123456789abcdef0123456789")
	if err != nil {
		t.Fatal(err)
	}
	all := toolNames(t, boss)
	if !slices.Contains(all, "echo") || !slices.Contains(all, "flaky_read") {
		t.Fatalf("boss sees %v", all)
	}
	if got := toolNames(t, local); !slices.Equal(got, all) {
		t.Errorf("the --http-token (local SUPERVISOR) sees %v, want %v", got, all)
	}
	got := toolNames(t, worker)
	if want := workerView(all); !slices.Equal(got, want) || slices.Contains(got, "echo") {
		t.Fatalf("worker1 sees %v, want %v", got, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := worker.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	wantDenied(t, res, "worker1", "WORKER", "echo")
	res, err = boss.CallTool(ctx, &mcp.CallToolParams{Name: "flaky_read", Arguments: map[string]any{"mode": "ok"}})
	if err != nil || res.IsError {
		t.Fatalf("boss flaky_read: %v %v", err, res)
	}
	var who struct {
		ID   string `json:"caller_id"`
		Role string `json:"caller_role"`
	}
	structured(t, res, &who)
	if who.ID != "boss" || who.Role != "SUPERVISOR" {
		t.Errorf("the plugin saw caller %+v, want boss/SUPERVISOR", who)
	}
	// No token, or an unknown one: 401.
	if _, _, err := connectHTTP(t, s.URL, ""); err == nil {
		t.Error("connected without a token")
	}
	for _, auth := range []string{"", "Bearer nope"} {
		if resp := rawRequest(t, http.MethodPost, s.URL, "", auth); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("Authorization %q: status %d, want 401", auth, resp.StatusCode)
		}
	}
}

type restReply struct {
	Success   bool            `json:"success"`
	Data      json.RawMessage `json:"data"`
	Error     *abi.Envelope   `json:"error"`
	Timestamp string          `json:"timestamp"`
}

func rest(t *testing.T, s *httpServer, token, body string) (int, restReply) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL+"/execute", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r restReply
	if resp.StatusCode != http.StatusUnauthorized {
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			t.Fatalf("status %d: body not JSON: %v", resp.StatusCode, err)
		}
		if _, err := time.Parse(time.RFC3339Nano, r.Timestamp); err != nil {
			t.Errorf("timestamp %q: %v", r.Timestamp, err)
		}
	}
	return resp.StatusCode, r
}

func TestRESTExecute(t *testing.T) {
	dir := agentPlugins(t)
	s := startHTTPServer(t, dir, httpEnv(), "--agents", agentsFile(t))

	// Success.
	status, r := rest(t, s, bossToken, `{"agentId":"boss","toolName":"echo","input":{"text":"hi"}}`)
	if status != http.StatusOK || !r.Success || r.Error != nil || string(r.Data) != `{"text":"hi"}` {
		t.Fatalf("echo: %d %+v %s", status, r, r.Data)
	}
	// An alias resolves to its tool; the caller reaches the plugin.
	status, r = rest(t, s, bossToken, `{"agentId":"boss","toolName":"mcp__flaky__read","input":{"mode":"ok"}}`)
	if status != http.StatusOK || !r.Success || !strings.Contains(string(r.Data), `"caller_id":"boss"`) {
		t.Fatalf("alias: %d %+v %s", status, r, r.Data)
	}
	// A validation error: the envelope, with its hint.
	status, r = rest(t, s, bossToken, `{"agentId":"boss","toolName":"echo","input":{"text":5}}`)
	if status != http.StatusOK || r.Success || r.Error == nil || r.Error.Code != abi.CodeInvalidArgument || r.Error.Retryable || r.Error.Hint == "" {
		t.Fatalf("validation: %d %+v", status, r)
	}
	// The policy applies.
	status, r = rest(t, s, workerToken, `{"agentId":"worker1","toolName":"echo","input":{"text":"hi"}}`)
	if status != http.StatusOK || r.Success || r.Error == nil || r.Error.Code != abi.CodePermissionDenied || r.Error.Details["agent_type"] != "WORKER" {
		t.Fatalf("worker echo: %d %+v", status, r)
	}
	// An unknown tool.
	if _, r = rest(t, s, bossToken, `{"agentId":"boss","toolName":"mcp__nope__x","input":{}}`); r.Error == nil || r.Error.Code != abi.CodeToolNotFound {
		t.Fatalf("unknown tool: %+v", r)
	}
	// The token's agent must be agentId: 403.
	if status, r = rest(t, s, workerToken, `{"agentId":"boss","toolName":"echo","input":{"text":"hi"}}`); status != http.StatusForbidden ||
		r.Error == nil || r.Error.Code != abi.CodePermissionDenied {
		t.Fatalf("impersonation: %d %+v", status, r)
	}
	// No token, an unknown token: 401.
	for _, tok := range []string{"", "unknown-token"} {
		if status, _ = rest(t, s, tok, `{"agentId":"boss","toolName":"echo","input":{"text":"hi"}}`); status != http.StatusUnauthorized {
			t.Errorf("token %q: status %d, want 401", tok, status)
		}
	}
	// A malformed body: 400.
	if status, r = rest(t, s, bossToken, `{"agent":"boss"}`); status != http.StatusBadRequest || r.Error == nil {
		t.Errorf("malformed body: %d %+v", status, r)
	}
	if status, r = rest(t, s, bossToken, `{"agentId":"boss"}`); status != http.StatusBadRequest || r.Error == nil || r.Error.Code != abi.CodeMissingRequired {
		t.Errorf("no toolName: %d %+v", status, r)
	}
}
