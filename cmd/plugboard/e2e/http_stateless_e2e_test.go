//lint:file-ignore SA1019 a client at MCP 2026-07-28 still answers sampling, which the revision deprecates but keeps.

package e2e

import (
	"context"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/abi/tasks"
	"github.com/plugboard/plugboard/conformance/clients"
	"github.com/plugboard/plugboard/conformance/scenario"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// roundRobin is a load balancer without sticky routing: each request goes
// to the next host in turn.
type roundRobin struct {
	hosts  []*url.URL
	next   atomic.Int64
	mu     sync.Mutex
	served map[string]int // host → requests
}

func newRoundRobin(t *testing.T, servers ...*httpServer) (*roundRobin, string) {
	rr := &roundRobin{served: map[string]int{}}
	for _, s := range servers {
		u, err := url.Parse("http://" + s.Addr)
		if err != nil {
			t.Fatal(err)
		}
		rr.hosts = append(rr.hosts, u)
	}
	proxy := &httputil.ReverseProxy{
		// The upstream's own address as Host: the servers listen on
		// loopback and refuse any other (DNS-rebinding protection).
		Rewrite: func(r *httputil.ProxyRequest) {
			target := rr.hosts[int(rr.next.Add(1))%len(rr.hosts)]
			rr.mu.Lock()
			rr.served[target.Host]++
			rr.mu.Unlock()
			r.SetURL(target)
		},
		FlushInterval: -1, // event streams pass through as they come
	}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	return rr, srv.URL
}

func (rr *roundRobin) counts() map[string]int {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	out := map[string]int{}
	for k, v := range rr.served {
		out[k] = v
	}
	return out
}

// TestStatelessHTTPBehindRoundRobin: two hosts sharing one store (their
// own data directories, one SQLite file) behind a load balancer that sends
// each request to the next host. With --http-stateless an MCP client works
// through it — tools, calls, a request_id honoured once across both hosts,
// a call's progress — and both hosts answer; without it the second host
// does not know the session the first opened, and the client fails.
func TestStatelessHTTPBehindRoundRobin(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	plugins, _ := buildtest.Plugins(t, append([]string{"plugins/textdiff"}, taskPlugins...)...)
	dataA, _ := dashboardBoard(t)
	shared := filepath.Join(dataA, "board.db")
	serve := func(data string, extra ...string) *httpServer {
		return clitest.LaunchHTTP(t, httpEnv(), append([]string{"serve", "--http", "127.0.0.1:0", "--plugins", plugins,
			"--data", data, "--store", shared}, extra...))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	rr, base := newRoundRobin(t, serve(dataA, "--http-stateless"), serve(t.TempDir(), "--http-stateless"))
	session, progress, err := connectHTTP(t, base+"/mcp", "")
	if err != nil {
		t.Fatalf("connect through the load balancer: %v", err)
	}
	tools, err := session.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list through the load balancer: %v", err)
	}
	if len(tools.Tools) == 0 {
		t.Fatal("tools/list lists no tools")
	}
	var projects tasks.ProjectsOut
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "list_projects", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	structured(t, res, &projects)
	if len(projects.Projects) != 1 {
		t.Fatalf("list_projects = %+v", projects)
	}
	ids := map[string]bool{}
	for range 6 {
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "create_task", Arguments: map[string]any{
			"project_id": projects.Projects[0].ProjectID, "title": "Once", "request_id": "rr-once"}})
		if err != nil {
			t.Fatal(err)
		}
		var task tasks.Task
		structured(t, res, &task)
		ids[task.TaskID] = true
	}
	if len(ids) != 1 {
		t.Fatalf("six keyed create_task calls across both hosts made tasks %v, want one", ids)
	}
	params := &mcp.CallToolParams{Name: "text_diff", Arguments: map[string]any{"old_text": "a\n", "new_text": "b\n"}}
	params.SetProgressToken("rr-diff")
	if _, err := session.CallTool(ctx, params); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(3 * time.Second); len(progress.all()) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no progress of the call reached the client")
		}
	}
	counts := rr.counts()
	if len(counts) != 2 {
		t.Fatalf("requests per host %v, want both hosts to have answered", counts)
	}
	for host, n := range counts {
		if n < 3 {
			t.Errorf("host %s answered %d requests; the balancer should spread them", host, n)
		}
	}

	// The same balancer in front of hosts with sessions: the client's
	// session lives on one host only (before MCP 2026-07-28).
	_, base = newRoundRobin(t, serve(t.TempDir()), serve(t.TempDir()))
	failed := false
	if session, _, err := connectHTTP(t, base+"/mcp", ""); err != nil {
		failed = true
	} else {
		for range 4 {
			if _, err := session.ListTools(ctx, nil); err != nil {
				failed = true
				break
			}
		}
	}
	if !failed {
		t.Error("hosts with sessions worked behind a balancer without sticky routing; the stateless test proves nothing")
	}
}

// TestModernHTTPBehindRoundRobin: a client at MCP 2026-07-28 behind a
// round-robin balancer, in front of two hosts sharing a store and a
// requestState key, with no flag for statelessness: the revision has no
// sessions. Progress reaches the client, and a plugin that writes to the
// board and then asks the client's user and model gets its answers while
// the call's rounds land on both hosts — the task is made once.
func TestModernHTTPBehindRoundRobin(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	plugins, _ := buildtest.Plugins(t, append([]string{"plugins/textdiff", "testdata/plugins/triage"}, taskPlugins...)...)
	dataA, _ := dashboardBoard(t)
	shared := filepath.Join(dataA, "board.db")
	key := filepath.Join(t.TempDir(), "state.key")
	if err := os.WriteFile(key, []byte(strings.Repeat("k3y", 16)), 0o600); err != nil {
		t.Fatal(err)
	}
	serve := func(data string) *httpServer {
		return clitest.LaunchHTTP(t, httpEnv(), []string{"serve", "--http", "127.0.0.1:0", "--plugins", plugins,
			"--data", data, "--store", shared, "--http-state-key-file", key})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rr, base := newRoundRobin(t, serve(dataA), serve(t.TempDir()))
	var asked atomic.Int32
	opts := &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			asked.Add(1)
			return &mcp.CreateMessageResult{Role: "assistant", Model: "test-model", Content: &mcp.TextContent{Text: "a short summary"}}, nil
		},
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked.Add(1)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"priority": "high"}}, nil
		},
	}
	session, progress, err := connectHTTPAt(t, modernRevision, base+"/mcp", "", opts)
	if err != nil {
		t.Fatalf("connect through the load balancer: %v", err)
	}
	var projects tasks.ProjectsOut
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "list_projects", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	structured(t, res, &projects)
	project := projects.Projects[0].ProjectID

	params := &mcp.CallToolParams{Name: "text_diff", Arguments: map[string]any{"old_text": "a\n", "new_text": "b\n"}}
	params.SetProgressToken("rr-modern-diff")
	if _, err := session.CallTool(ctx, params); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool { return len(progress.all()) > 0 })

	before := rr.counts()
	res, err = session.CallTool(ctx, &mcp.CallToolParams{Name: "triage_task", Arguments: map[string]any{"project_id": project, "title": "Triage me"}})
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		TaskID   string `json:"task_id"`
		Priority string `json:"priority"`
		Summary  string `json:"summary"`
	}
	structured(t, res, &out)
	if out.TaskID == "" || out.Priority != "high" || out.Summary != "a short summary" || asked.Load() != 2 {
		t.Fatalf("triage_task = %+v after %d questions; want the task and both answers", out, asked.Load())
	}
	after := rr.counts()
	for host := range after {
		if after[host] == before[host] {
			t.Errorf("host %s served none of the call's rounds (%v → %v); the test proves nothing", host, before, after)
		}
	}
	// The official TypeScript SDK v2 client through the same balancer.
	dir, err := clients.Install(ctx, buildtest.Root(t))
	if err != nil {
		t.Fatal(err)
	}
	ts, err := clients.ConnectTypeScriptV2(ctx, dir, scenario.Endpoint{URL: base + "/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	res, answered, err := ts.CallToolAnswered(ctx, "triage_task", map[string]any{"project_id": project, "title": "Triage me too"})
	if err != nil {
		t.Fatal(err)
	}
	var tsOut struct {
		TaskID  string `json:"task_id"`
		Summary string `json:"summary"`
	}
	structured(t, res, &tsOut)
	if tsOut.TaskID == "" || tsOut.Summary != clients.TypeScriptV2SamplingText || len(answered.Requests) != 2 || len(answered.Retries) != 1 {
		t.Errorf("triage_task through the TypeScript v2 client = %+v, answered %+v; want the task, the client's summary, two questions in one retry", tsOut, answered)
	}

	res, err = session.CallTool(ctx, &mcp.CallToolParams{Name: "list_tasks", Arguments: map[string]any{"project_id": project}})
	if err != nil {
		t.Fatal(err)
	}
	var listed tasks.TasksOut
	structured(t, res, &listed)
	made := map[string]int{}
	for _, task := range listed.Tasks {
		made[task.Title]++
	}
	for _, title := range []string{"Triage me", "Triage me too"} {
		if made[title] != 1 {
			t.Errorf("%d tasks titled %q after one call in two rounds on two hosts; want 1", made[title], title)
		}
	}
}
