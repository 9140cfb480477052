package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// fakeEndpoint is an agent endpoint: an MCP server over streamable HTTP
// that admits one bearer token, with a tool "work" reporting progress.
func fakeEndpoint(t *testing.T, token string) (*httptest.Server, *mcp.Server) {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "endpoint", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "work", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if tok := req.Params.GetProgressToken(); tok != nil {
				for i := 1; i <= 2; i++ {
					_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: 2, Message: "step"})
				}
				// A client handles notifications apart from responses:
				// give the proxy's time to pass them on while the call
				// still runs (later ones are dropped, as is their due).
				time.Sleep(300 * time.Millisecond)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done " + string(req.Params.Arguments)}}}, nil
		})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts, srv
}

// TestAttemptProxy: the proxy a nested serve runs lists the endpoint's
// tools, calls them with the attempt's token, passes progress back under
// the client's own token, follows the endpoint's list changes, and sends
// a call of a tool it does not list to the endpoint all the same.
func TestAttemptProxy(t *testing.T) {
	const token = "attempt-token-0123456789abcdef0123456789abcdef"
	ts, remote := fakeEndpoint(t, token)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := startAttemptProxy(ctx, attemptEnv{url: ts.URL, token: token, attempt: "a1"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.remote.Close()

	var mu sync.Mutex
	var progress []mcp.ProgressNotificationParams
	changed := make(chan struct{}, 10)
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, *req.Params)
			mu.Unlock()
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	ct, st := mcp.NewInMemoryTransports()
	go func() { _ = p.local.Run(ctx, st) }()
	s, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	names := func() []string {
		res, err := s.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tl := range res.Tools {
			out = append(out, tl.Name)
		}
		return out
	}
	if got := names(); !slices.Equal(got, []string{"work"}) {
		t.Fatalf("tools %v, want [work]", got)
	}
	params := &mcp.CallToolParams{Name: "work", Arguments: map[string]any{"n": 1}}
	params.SetProgressToken(7)
	res, err := s.CallTool(ctx, params)
	if err != nil || res.IsError || clitest.Text(res) != `done {"n":1}` {
		t.Fatalf("work: %v %v", res, err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		mu.Lock()
		n := len(progress)
		mu.Unlock()
		if n == 2 || time.Now().After(deadline) {
			break
		}
	}
	mu.Lock()
	if len(progress) != 2 || progress[1].Progress != 2 || progress[1].Total != 2 {
		t.Errorf("progress %+v, want 2 reports", progress)
	}
	for _, pr := range progress {
		// The client's own token, with its JSON type.
		if tok, ok := pr.ProgressToken.(float64); !ok || tok != 7 {
			t.Errorf("progress token %#v, want the client's 7", pr.ProgressToken)
		}
	}
	mu.Unlock()

	// The endpoint's list changes: the proxy follows.
	remote.AddTool(&mcp.Tool{Name: "later", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "later"}}}, nil
		})
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Contains(names(), "later") {
		if time.Now().After(deadline) {
			t.Fatalf("the proxy never listed the endpoint's new tool: %v", names())
		}
		select {
		case <-changed:
		case <-time.After(100 * time.Millisecond):
		}
	}
	remote.RemoveTools("work")
	for slices.Contains(names(), "work") {
		if time.Now().After(deadline) {
			t.Fatalf("the proxy still lists a tool the endpoint withdrew: %v", names())
		}
		time.Sleep(50 * time.Millisecond)
	}

	// A tool it does not list goes to the endpoint anyway, whose answer
	// (here: no such tool) is the agent's.
	res, err = s.CallTool(ctx, &mcp.CallToolParams{Name: "work", Arguments: map[string]any{}})
	if err != nil || !res.IsError || clitest.EnvelopeOf(t, res).Code != "tool_not_found" {
		t.Errorf("a withdrawn tool: %v %v, want a tool_not_found envelope", res, err)
	}
}

// TestAttemptProxyRefusedToken: a token the endpoint refuses stops the
// proxy at once, saying where it tried.
func TestAttemptProxyRefusedToken(t *testing.T) {
	ts, _ := fakeEndpoint(t, "the-right-token-0123456789abcdef0123456789")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := startAttemptProxy(ctx, attemptEnv{url: ts.URL, token: "a-revoked-token", attempt: "a1"})
	if err == nil {
		t.Fatal("the proxy connected with a refused token")
	}
	for _, want := range []string{"inside attempt a1", "cannot reach the board", ts.URL} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
