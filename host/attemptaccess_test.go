package host

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/abi/tasks"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// accessBearer adds a bearer token to every request.
type accessBearer struct{ token string }

func (b accessBearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// accessWorld is an open host with the task plugins and echo, over a
// board with two tasks, each with a finished SHELL attempt.
type accessWorld struct {
	h                 *Host
	repo              string
	mineTask, mine    string
	theirTask, theirs string
}

func openAccessWorld(t *testing.T) *accessWorld {
	t.Helper()
	if testing.Short() {
		t.Skip("builds plugins")
	}
	dir, _ := buildtest.Plugins(t, "plugins/echo", "plugins/tasks-read", "plugins/tasks-control")
	ctx := context.Background()
	h, err := Open(ctx, Config{DataDir: t.TempDir(), PluginDirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	b, err := h.Board(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w := &accessWorld{h: h, repo: gitRepo(t)}
	p, err := b.CreateProject(ctx, "demo", []RepoSpec{{Path: w.repo}})
	if err != nil {
		t.Fatal(err)
	}
	w.mineTask, w.mine = finishedAttempt(t, b, p.ID, "mine")
	w.theirTask, w.theirs = finishedAttempt(t, b, p.ID, "theirs")
	return w
}

// gitRepo makes a repository with one commit on main.
func gitRepo(t *testing.T) string {
	t.Helper()
	repo := filepath.Join(t.TempDir(), "app")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "start"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return repo
}

func gitHead(t *testing.T, repo string) string {
	t.Helper()
	out, err := exec.Command("git", "-C", repo, "rev-parse", "main").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// finishedAttempt creates a task whose SHELL attempt commits a file, and
// waits for the attempt to complete.
func finishedAttempt(t *testing.T, b *Board, projectID, title string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	task, err := b.CreateTask(ctx, tasks.CreateTaskArgs{ProjectID: projectID, Title: title,
		Description: "echo " + title + " > " + title + ".txt"})
	if err != nil {
		t.Fatal(err)
	}
	started, err := b.StartTaskAttempt(ctx, tasks.StartArgs{TaskID: task.TaskID, Executor: "SHELL"})
	if err != nil {
		t.Fatal(err)
	}
	for {
		st, err := b.GetAttemptStatus(ctx, tasks.AttemptIn{AttemptID: started.AttemptID})
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case st.State == tasks.StateCompleted:
			return task.TaskID, started.AttemptID
		case st.State == tasks.StateFailed || ctx.Err() != nil:
			t.Fatalf("attempt %s did not complete: %+v", title, st)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// issue asks the host's issuer for an attempt's access, as the board does
// before each attempt process, and returns its URL, token and port.
func issue(t *testing.T, h *Host, attemptID, taskID string) (url, token string, revoke func()) {
	t.Helper()
	if h.access == nil {
		t.Fatal("the host wired no attempt access")
	}
	acc, err := h.access.issue(attemptID, taskID)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range acc.Env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case EnvAttemptURL:
			url = v
		case EnvAttemptToken:
			token = v
		default:
			t.Errorf("access gives %s, which is none of PLUGBOARD_URL and PLUGBOARD_TOKEN", k)
		}
	}
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, MCPPath) || len(token) != 64 {
		t.Fatalf("access env %q", acc.Env)
	}
	if len(acc.Ports) != 1 || !strings.Contains(url, ":"+strconv.Itoa(int(acc.Ports[0]))+"/") {
		t.Fatalf("ports %v do not match the URL %s", acc.Ports, url)
	}
	return url, token, acc.Revoke
}

func connectAccess(ctx context.Context, url, token string) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "attempt", Version: "1"}, nil)
	return client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: accessBearer{token}}}, nil)
}

func accessToolNames(t *testing.T, s *mcp.ClientSession) []string {
	t.Helper()
	res, err := s.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

func accessCall(t *testing.T, s *mcp.ClientSession, tool string, args any) (map[string]any, *abi.Envelope) {
	t.Helper()
	res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if res.IsError {
		var env abi.Envelope
		if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &env); err != nil {
			t.Fatalf("%s: isError without an envelope: %v", tool, res.Content)
		}
		return nil, &env
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out, nil
}

// TestAttemptAccessEndpoint: the issuer the host gives the board hands an
// attempt a URL on 127.0.0.1 and a token whose caller is that attempt's
// WORKER. Through it, get_context is listed and answers the attempt's own
// context; approving another attempt (WORKER rules) and reading another
// attempt (scope) are refused and nothing is merged; the host's other
// callers see no get_context, as before. A revoked token, an unknown one
// and none are refused with 401, and the endpoint closes with the host.
func TestAttemptAccessEndpoint(t *testing.T) {
	w := openAccessWorld(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	url, token, revoke := issue(t, w.h, w.mine, w.mineTask)

	s, err := connectAccess(ctx, url, token)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	names := accessToolNames(t, s)
	if !slices.Contains(names, "get_context") || slices.Contains(names, "approve_attempt") || slices.Contains(names, "echo") {
		t.Errorf("tools/list for the attempt's WORKER = %v: want get_context, without approve_attempt and echo", names)
	}
	got, env := accessCall(t, s, "get_context", map[string]any{})
	if env != nil {
		t.Fatalf("get_context: %+v", env)
	}
	if got["attempt_id"] != w.mine || got["task_id"] != w.mineTask || got["project_name"] != "demo" {
		t.Errorf("get_context = %v, want attempt %s of task %s", got, w.mine, w.mineTask)
	}
	if _, env := accessCall(t, s, "get_attempt_status", map[string]any{"attempt_id": w.mine}); env != nil {
		t.Errorf("the attempt cannot read its own status: %+v", env)
	}

	before := gitHead(t, w.repo)
	if _, env := accessCall(t, s, "approve_attempt", map[string]any{"attempt_id": w.theirs}); env == nil || env.Code != abi.CodePermissionDenied {
		t.Errorf("approve_attempt of another task's attempt: %+v, want permission_denied", env)
	} else if env.Details["agent_id"] != "attempt:"+w.mine || env.Details["agent_type"] != "WORKER" {
		t.Errorf("the refusal names %v, want the attempt's WORKER", env.Details)
	}
	if _, env := accessCall(t, s, "get_attempt_status", map[string]any{"attempt_id": w.theirs}); env == nil || env.Code != abi.CodePermissionDenied {
		t.Errorf("another attempt's status: %+v, want permission_denied (scope)", env)
	}
	if after := gitHead(t, w.repo); after != before {
		t.Errorf("main moved from %s to %s", before, after)
	}

	// The host's own callers are as they were: no get_context.
	if res := w.h.Call(ctx, "get_context", json.RawMessage(`{}`), nil); !res.IsError() || res.Envelope.Code != abi.CodeToolNotFound {
		t.Errorf("get_context for the local caller: %+v, want tool_not_found", res.Envelope)
	}
	local := mcp.NewClient(&mcp.Implementation{Name: "local", Version: "1"}, nil)
	ct, st := mcp.NewInMemoryTransports()
	go func() { _ = w.h.Server("plugboard", "test").Run(ctx, st) }()
	ls, err := local.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	if names := accessToolNames(t, ls); slices.Contains(names, "get_context") || !slices.Contains(names, "approve_attempt") {
		t.Errorf("tools/list for the local caller = %v: want approve_attempt and no get_context", names)
	}

	// Another process of the attempt gets its own token on the same
	// endpoint; revoking one leaves the other.
	url2, token2, revoke2 := issue(t, w.h, w.mine, w.mineTask)
	if url2 != url || token2 == token {
		t.Errorf("second access: %s %s…, want the same endpoint and a new token", url2, token2[:8])
	}
	revoke()
	revoke()
	if _, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "get_context", Arguments: map[string]any{}}); err == nil {
		t.Error("a session kept working after its token was revoked")
	}
	for name, auth := range map[string]string{"revoked": "Bearer " + token, "unknown": "Bearer " + strings.Repeat("0", 64), "none": ""} {
		if code := postInitialize(t, url, auth); code != http.StatusUnauthorized {
			t.Errorf("%s token: status %d, want 401", name, code)
		}
	}
	if code := postInitialize(t, url, "Bearer "+token2); code != http.StatusOK {
		t.Errorf("the other live token: status %d, want 200", code)
	}
	revoke2()

	if err := w.h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := w.h.access.issue(w.mine, w.mineTask); err == nil {
		t.Error("the issuer gave access after the host closed")
	}
	if _, err := http.Get(strings.TrimSuffix(url, MCPPath) + "/healthz"); err == nil {
		t.Error("the agent endpoint still answers after the host closed")
	}
}

// postInitialize sends an initialize to url with the Authorization header
// auth ("" for none) and returns the status.
func postInitialize(t *testing.T, url, auth string) int {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestAttemptAccessEmbedderIssuer: an embedder's own issuer is kept, and
// the host then neither starts an endpoint nor serves get_context.
func TestAttemptAccessEmbedderIssuer(t *testing.T) {
	ctx := context.Background()
	called := false
	h, err := Open(ctx, Config{DataDir: t.TempDir(), PluginDirs: []string{t.TempDir()},
		Board: BoardConfig{Access: func(string, string) (Access, error) { called = true; return Access{}, nil }}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	if h.access != nil {
		t.Fatal("the host replaced the embedder's issuer")
	}
	if called {
		t.Fatal("the issuer was called with no attempt running")
	}
}
