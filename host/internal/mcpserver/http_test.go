package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// testServer is an MCP server with one tool, whoami, answering the
// identity of the caller's token.
func testServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "whoami", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			id := "<none>"
			if ti := req.Extra.TokenInfo; ti != nil {
				id = ti.UserID
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: id}}}, nil
		})
	return srv
}

// do sends one request to h: method and path, the Host header, and extra
// headers as name, value pairs. A POST to MCPPath carries an initialize.
func do(t *testing.T, h http.Handler, method, path, host string, headers ...string) *httptest.ResponseRecorder {
	t.Helper()
	var body *strings.Reader
	if method == http.MethodPost {
		body = strings.NewReader(initializeBody)
	} else {
		body = strings.NewReader("")
	}
	req := httptest.NewRequest(method, path, body)
	req.Host = host
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func wantError(t *testing.T, rec *httptest.ResponseRecorder, status int, code string) {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status %d, want %d; body %s", rec.Code, status, rec.Body)
	}
	var body struct{ Error, Message string }
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Error != code || body.Message == "" {
		t.Errorf("body %q, want JSON error %q with a message", rec.Body, code)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
}

func TestHTTPLoopbackGuardHost(t *testing.T) {
	h := NewHTTP(testServer(), HTTPOptions{Loopback: true, Port: "43817"})
	for _, c := range []struct {
		host string
		ok   bool
	}{
		{"127.0.0.1:43817", true},
		{"localhost:43817", true},
		{"LocalHost:43817", true},
		{"[::1]:43817", true},
		{"127.0.0.2:43817", true},
		{"evil.example:43817", false},
		{"evil.example", false},
		{"localhost.evil.example:43817", false},
		{"127.0.0.1.nip.io:43817", false},
		{"127.0.0.1:8080", false}, // another port
		{"localhost", false},      // port 80, not ours
		{"192.168.1.10:43817", false},
		{"[::1%lo]:43817", false},
		{"::1:43817", false},
		{"", false},
	} {
		rec := do(t, h, http.MethodGet, HealthPath, c.host)
		if c.ok {
			if rec.Code != http.StatusOK || rec.Body.String() != "ok\n" {
				t.Errorf("Host %q: %d %q, want 200 ok", c.host, rec.Code, rec.Body)
			}
			continue
		}
		if rec.Code != http.StatusForbidden {
			t.Errorf("Host %q: status %d, want 403", c.host, rec.Code)
			continue
		}
		wantError(t, rec, http.StatusForbidden, "forbidden_host")
	}
	// The MCP endpoint is guarded too.
	wantError(t, do(t, h, http.MethodPost, MCPPath, "evil.example:43817"), http.StatusForbidden, "forbidden_host")
	if rec := do(t, h, http.MethodPost, MCPPath, "localhost:43817"); rec.Code != http.StatusOK {
		t.Errorf("initialize from localhost: %d %s", rec.Code, rec.Body)
	}
}

func TestHTTPLoopbackGuardPort80(t *testing.T) {
	h := NewHTTP(testServer(), HTTPOptions{Loopback: true, Port: "80"})
	for _, host := range []string{"localhost", "127.0.0.1", "[::1]", "localhost:80"} {
		if rec := do(t, h, http.MethodGet, HealthPath, host); rec.Code != http.StatusOK {
			t.Errorf("Host %q on port 80: %d", host, rec.Code)
		}
	}
}

func TestHTTPLoopbackGuardOrigin(t *testing.T) {
	h := NewHTTP(testServer(), HTTPOptions{Loopback: true, Port: "43817"})
	for _, c := range []struct {
		origin string
		ok     bool
	}{
		{"", true},
		{"http://localhost:43817", true},
		{"http://127.0.0.1:43817", true},
		{"http://[::1]:43817", true},
		// Loopback is not a credential: a page on another local port is
		// another origin.
		{"http://127.0.0.1:3000", false},
		{"http://localhost:43818", false},
		{"http://localhost", false},
		{"https://[::1]", false},
		{"https://localhost:43817", false},
		{"https://evil.example", false},
		{"http://evil.example:43817", false},
		{"http://localhost.evil.example", false},
		{"null", false},
		{"file://", false},
		{"chrome-extension://abcdef", false},
	} {
		var rec *httptest.ResponseRecorder
		if c.origin == "" {
			rec = do(t, h, http.MethodPost, MCPPath, "127.0.0.1:43817")
		} else {
			rec = do(t, h, http.MethodPost, MCPPath, "127.0.0.1:43817", "Origin", c.origin)
		}
		if c.ok {
			if rec.Code != http.StatusOK {
				t.Errorf("Origin %q: %d %s, want 200", c.origin, rec.Code, rec.Body)
			}
			continue
		}
		if rec.Code != http.StatusForbidden {
			t.Errorf("Origin %q: status %d, want 403", c.origin, rec.Code)
			continue
		}
		wantError(t, rec, http.StatusForbidden, "forbidden_origin")
	}
}

func TestHTTPNotLoopbackHasNoHostGuard(t *testing.T) {
	h := NewHTTP(testServer(), HTTPOptions{Port: "8080", Authenticate: StaticToken("s3cret")})
	rec := do(t, h, http.MethodGet, HealthPath, "mcp.example.com:8080", "Authorization", "Bearer s3cret")
	if rec.Code != http.StatusOK {
		t.Errorf("non-loopback server refused Host mcp.example.com: %d %s", rec.Code, rec.Body)
	}
}

func TestHTTPBearerToken(t *testing.T) {
	h := NewHTTP(testServer(), HTTPOptions{Loopback: true, Port: "43817", Authenticate: StaticToken("s3cret-token")})
	const host = "127.0.0.1:43817"

	rec := do(t, h, http.MethodPost, MCPPath, host)
	wantError(t, rec, http.StatusUnauthorized, "unauthorized")
	if got := rec.Header().Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") || strings.Contains(got, "invalid_token") {
		t.Errorf("missing token: WWW-Authenticate %q, want a plain Bearer challenge", got)
	}

	for _, auth := range []string{
		"Bearer wrong",
		"Bearer s3cret-toke",   // a prefix
		"Bearer s3cret-token2", // longer
		"Bearer S3CRET-TOKEN",
		"Bearer s3cret-token extra",
		"Basic s3cret-token",
		"s3cret-token",
		"Bearer",
	} {
		rec := do(t, h, http.MethodPost, MCPPath, host, "Authorization", auth)
		wantError(t, rec, http.StatusUnauthorized, "unauthorized")
		if got := rec.Header().Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
			t.Errorf("%q: WWW-Authenticate %q", auth, got)
		}
	}

	for _, auth := range []string{"Bearer s3cret-token", "bearer s3cret-token", "BEARER  s3cret-token"} {
		if rec := do(t, h, http.MethodPost, MCPPath, host, "Authorization", auth); rec.Code != http.StatusOK {
			t.Errorf("%q: %d %s, want 200", auth, rec.Code, rec.Body)
		}
	}

	// The guard runs before authentication: a rebinding attempt learns
	// nothing about the token.
	wantError(t, do(t, h, http.MethodPost, MCPPath, "evil.example:43817", "Authorization", "Bearer s3cret-token"),
		http.StatusForbidden, "forbidden_host")
}

func TestHTTPHealthz(t *testing.T) {
	// On loopback the health check needs no token.
	h := NewHTTP(testServer(), HTTPOptions{Loopback: true, Port: "43817", Authenticate: StaticToken("t0ken")})
	if rec := do(t, h, http.MethodGet, HealthPath, "localhost:43817"); rec.Code != http.StatusOK || rec.Body.String() != "ok\n" {
		t.Errorf("loopback healthz: %d %q", rec.Code, rec.Body)
	}
	wantError(t, do(t, h, http.MethodPost, HealthPath, "localhost:43817"), http.StatusMethodNotAllowed, "method_not_allowed")
	// Elsewhere it does.
	h = NewHTTP(testServer(), HTTPOptions{Port: "8080", Authenticate: StaticToken("t0ken")})
	wantError(t, do(t, h, http.MethodGet, HealthPath, "10.0.0.1:8080"), http.StatusUnauthorized, "unauthorized")
	if rec := do(t, h, http.MethodGet, HealthPath, "10.0.0.1:8080", "Authorization", "Bearer t0ken"); rec.Code != http.StatusOK {
		t.Errorf("healthz with token: %d", rec.Code)
	}
	// Unknown paths are 404 once authenticated.
	wantError(t, do(t, h, http.MethodGet, "/nope", "10.0.0.1:8080", "Authorization", "Bearer t0ken"), http.StatusNotFound, "not_found")
	wantError(t, do(t, h, http.MethodGet, "/nope", "10.0.0.1:8080"), http.StatusUnauthorized, "unauthorized")
}

func TestHTTPStaticToken(t *testing.T) {
	a := StaticToken("correct horse battery staple")
	if id, ok := a("correct horse battery staple"); !ok || id != "token" {
		t.Errorf("right token: %q %v", id, ok)
	}
	for _, bad := range []string{"", "correct", "correct horse battery staplf", "correct horse battery staple!", "CORRECT HORSE BATTERY STAPLE"} {
		if _, ok := a(bad); ok {
			t.Errorf("%q admitted", bad)
		}
	}
	if _, ok := StaticToken("")("x"); ok {
		t.Error("an empty expected token admitted x")
	}
}

// bearerTransport adds a bearer token to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// serve runs h on a loopback listener until the returned stop is called;
// stop waits for Serve and returns its error.
func serve(t *testing.T, h *HTTPServer, ln net.Listener) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Serve(ctx, ln) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() { cancel(); err = <-done })
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

func listen(t *testing.T) (net.Listener, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return ln, port
}

// connect opens a session at MCP 2025-11-25, the last revision with
// sessions, which these tests are about; connectAt asks for another.
func connect(t *testing.T, url, token string) *mcp.ClientSession {
	t.Helper()
	return connectAt(t, "2025-11-25", url, token)
}

func connectAt(t *testing.T, version, url, token string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	session, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: url, HTTPClient: &http.Client{Transport: bearerTransport{token}},
	}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { session.Close() })
	return session
}

func TestHTTPServeIdentityReachesTools(t *testing.T) {
	ln, port := listen(t)
	h := NewHTTP(testServer(), HTTPOptions{Loopback: true, Port: port, Authenticate: func(token string) (string, bool) {
		agent, ok := map[string]string{"tok-a": "agent-a", "tok-b": "agent-b"}[token]
		return agent, ok
	}})
	serve(t, h, ln)
	url := "http://" + ln.Addr().String() + MCPPath
	for token, want := range map[string]string{"tok-a": "agent-a", "tok-b": "agent-b"} {
		session := connect(t, url, token)
		res, err := session.CallTool(context.Background(), &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Content[0].(*mcp.TextContent).Text; got != want {
			t.Errorf("token %s: tool saw identity %q, want %q", token, got, want)
		}
	}
	// A session is bound to the identity that opened it.
	a := connect(t, url, "tok-a")
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", a.ID())
	req.Header.Set("Authorization", "Bearer tok-b")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("agent-b using agent-a's session: %d, want 403", resp.StatusCode)
	}
}

// blockingServer has a tool, block, that returns when release is closed
// or its context ends; started is signalled when it begins.
func blockingServer(started chan<- struct{}, release <-chan struct{}) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "block", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			started <- struct{}{}
			select {
			case <-release:
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "finished"}}}, nil
			case <-ctx.Done():
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "cancelled"}}}, nil
			}
		})
	return srv
}

func TestHTTPShutdownLetsCallsFinish(t *testing.T) {
	started, release := make(chan struct{}, 1), make(chan struct{})
	ln, port := listen(t)
	h := NewHTTP(blockingServer(started, release), HTTPOptions{Loopback: true, Port: port, ShutdownGrace: 5 * time.Second})
	stop := serve(t, h, ln)
	url := "http://" + ln.Addr().String() + MCPPath
	session := connect(t, url, "")
	type result struct {
		res *mcp.CallToolResult
		err error
	}
	called := make(chan result, 1)
	go func() {
		res, err := session.CallTool(context.Background(), &mcp.CallToolParams{Name: "block", Arguments: map[string]any{}})
		called <- result{res, err}
	}()
	<-started
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	// New connections are refused while the call runs.
	deadline := time.Now().Add(2 * time.Second)
	for {
		resp, err := http.Get("http://" + ln.Addr().String() + HealthPath)
		if err != nil {
			break
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still serving new requests during shutdown: %d", resp.StatusCode)
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case err := <-stopped:
		t.Fatalf("Serve returned (%v) before the call in flight finished", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	r := <-called
	if r.err != nil || r.res.IsError || r.res.Content[0].(*mcp.TextContent).Text != "finished" {
		t.Errorf("call in flight during shutdown: %v %+v", r.err, r.res)
	}
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Serve did not return after the last call finished")
	}
}

func TestHTTPShutdownCancelsCallsAfterGrace(t *testing.T) {
	started, release := make(chan struct{}, 1), make(chan struct{})
	defer close(release)
	ln, port := listen(t)
	h := NewHTTP(blockingServer(started, release), HTTPOptions{Loopback: true, Port: port, ShutdownGrace: 300 * time.Millisecond})
	stop := serve(t, h, ln)
	session := connect(t, "http://"+ln.Addr().String()+MCPPath, "")
	called := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := session.CallTool(context.Background(), &mcp.CallToolParams{Name: "block", Arguments: map[string]any{}})
		if err != nil {
			t.Errorf("call: %v", err)
		}
		called <- res
	}()
	<-started
	begin := time.Now()
	if err := stop(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve: %v", err)
	}
	if took := time.Since(begin); took < 300*time.Millisecond || took > 3*time.Second {
		t.Errorf("shutdown took %v, want the 300ms grace and a little more", took)
	}
	select {
	case res := <-called:
		if res == nil || !res.IsError || res.Content[0].(*mcp.TextContent).Text != "cancelled" {
			t.Errorf("the call outliving the grace was not cancelled, or its answer was lost: %+v", res)
		}
	case <-time.After(3 * time.Second):
		t.Error("the client's call never ended")
	}
}

func TestHTTPTokens(t *testing.T) {
	a := Tokens(map[string]string{"tok-a": "agent-a", "tok-b": "agent-b", "": "nobody"})
	for tok, want := range map[string]string{"tok-a": "agent-a", "tok-b": "agent-b"} {
		if id, ok := a(tok); !ok || id != want {
			t.Errorf("%s: %q %v, want %q", tok, id, ok, want)
		}
	}
	for _, tok := range []string{"", "tok-c", "tok-a "} {
		if _, ok := a(tok); ok {
			t.Errorf("%q admitted", tok)
		}
	}
	if _, ok := Tokens(nil)("x"); ok {
		t.Error("an empty token table admitted a token")
	}
	// Each token's identity reaches the session.
	h := NewHTTP(testServer(), HTTPOptions{Port: "8080", Authenticate: a})
	if rec := do(t, h, http.MethodPost, MCPPath, "example.com:8080", "Authorization", "Bearer tok-b"); rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	if rec := do(t, h, http.MethodPost, MCPPath, "example.com:8080", "Authorization", "Bearer tok-c"); rec.Code != http.StatusUnauthorized {
		t.Fatalf("unknown token: status %d", rec.Code)
	}
}

func TestHTTPRequestGuard(t *testing.T) {
	for _, opts := range []HTTPOptions{{Loopback: true, Port: "43817"}, {Authenticate: StaticToken("s3cret-token")}} {
		h := NewHTTP(testServer(), opts)
		auth := []string{"Authorization", "Bearer s3cret-token"}
		// A web page can post these without a CORS preflight; no MCP or
		// REST client sends them.
		for _, ct := range []string{"text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
			"multipart/form-data; boundary=x", "", "application/jsonx", "json"} {
			for _, path := range []string{MCPPath, ExecutePath} {
				wantError(t, do(t, h, http.MethodPost, path, "127.0.0.1:43817", append([]string{"Content-Type", ct}, auth...)...),
					http.StatusUnsupportedMediaType, "unsupported_media_type")
			}
		}
		if rec := do(t, h, http.MethodPost, MCPPath, "127.0.0.1:43817", append([]string{"Content-Type", "Application/JSON; charset=utf-8"}, auth...)...); rec.Code != http.StatusOK {
			t.Errorf("JSON with parameters: %d %s", rec.Code, rec.Body)
		}
		// Two Authorization headers, whatever they hold.
		for _, pair := range [][2]string{{"Bearer s3cret-token", "Bearer s3cret-token"}, {"Bearer s3cret-token", "Bearer other"}, {"Bearer other", "Bearer s3cret-token"}} {
			req := httptest.NewRequest(http.MethodPost, MCPPath, strings.NewReader(initializeBody))
			req.Host = "127.0.0.1:43817"
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Add("Authorization", pair[0])
			req.Header.Add("Authorization", pair[1])
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			wantError(t, rec, http.StatusBadRequest, "ambiguous_authorization")
		}
	}
}

// initializeSession opens a session over h's listener with token and
// returns its id.
func initializeSession(t *testing.T, url, token string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(initializeBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	return resp.Header.Get("Mcp-Session-Id")
}

func pingSession(t *testing.T, url, token, id string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Session-Id", id)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// waitFor polls cond for up to 5s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestHTTPSessionCapPerIdentity(t *testing.T) {
	started, release := make(chan struct{}, 8), make(chan struct{})
	defer close(release)
	ln, port := listen(t)
	h := NewHTTP(blockingServer(started, release), HTTPOptions{Loopback: true, Port: port, MaxSessions: 3,
		Authenticate: Tokens(map[string]string{"tok-a": "agent-a", "tok-b": "agent-b"})})
	serve(t, h, ln)
	url := "http://" + ln.Addr().String() + MCPPath
	var ids []string
	for range 10 {
		ids = append(ids, initializeSession(t, url, "tok-a"))
	}
	// Evicted sessions are closed in the background (Close waits for their
	// handlers), each on its own goroutine, in no particular order: wait
	// for every one of them.
	waitFor(t, "evicted sessions to close", func() bool {
		for _, id := range ids[:7] {
			if pingSession(t, url, "tok-a", id) != http.StatusNotFound {
				return false
			}
		}
		return true
	})
	for i, id := range ids {
		want := http.StatusNotFound
		if i >= 7 {
			want = http.StatusOK
		}
		if got := pingSession(t, url, "tok-a", id); got != want {
			t.Errorf("session %d of 10 (cap 3): ping %d, want %d", i, got, want)
		}
	}
	if n := h.sessions.count("agent-a"); n != 3 {
		t.Errorf("agent-a holds %d sessions, want 3", n)
	}
	// The least recently used goes: session 7 was pinged first above, so
	// after a ping of 8 and 9 it is the oldest.
	pingSession(t, url, "tok-a", ids[8])
	pingSession(t, url, "tok-a", ids[9])
	ids = append(ids, initializeSession(t, url, "tok-a"))
	waitFor(t, "session 7 to be evicted", func() bool { return pingSession(t, url, "tok-a", ids[7]) == http.StatusNotFound })
	// Another identity has its own cap.
	b := connect(t, url, "tok-b")
	if err := b.Ping(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	// A session with a call in flight is never evicted: with all three
	// busy, a fourth initialize is refused.
	busy := []*mcp.ClientSession{connect(t, url, "tok-b"), connect(t, url, "tok-b")}
	busy = append(busy, b)
	for _, s := range busy {
		go s.CallTool(context.Background(), &mcp.CallToolParams{Name: "block", Arguments: map[string]any{}})
		<-started
	}
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(initializeBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer tok-b")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "too many sessions") {
		t.Errorf("a fourth session while three calls run: %d %s", resp.StatusCode, body)
	}
	if n := h.sessions.count("agent-b"); n != 3 {
		t.Errorf("agent-b holds %d sessions, want 3", n)
	}
}

func TestHTTPSessionIdleTimeout(t *testing.T) {
	ln, port := listen(t)
	h := NewHTTP(testServer(), HTTPOptions{Loopback: true, Port: port, SessionIdle: 300 * time.Millisecond,
		Authenticate: StaticToken("tok")})
	serve(t, h, ln)
	url := "http://" + ln.Addr().String() + MCPPath
	id := initializeSession(t, url, "tok")
	for range 4 {
		time.Sleep(150 * time.Millisecond)
		if got := pingSession(t, url, "tok", id); got != http.StatusOK {
			t.Fatalf("a session in use expired: %d", got)
		}
	}
	waitFor(t, "the idle session to expire", func() bool { return h.sessions.count("token") == 0 })
	if got := pingSession(t, url, "tok", id); got != http.StatusNotFound {
		t.Errorf("an idle session: ping %d, want 404", got)
	}
}

func TestHTTPReadTimeout(t *testing.T) {
	ln, port := listen(t)
	h := NewHTTP(testServer(), HTTPOptions{Loopback: true, Port: port, ReadTimeout: 300 * time.Millisecond})
	serve(t, h, ln)
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	begin := time.Now()
	_, _ = io.WriteString(conn, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:"+port+"\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{")
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _ = io.Copy(io.Discard, conn)
	if held := time.Since(begin); held > 2*time.Second {
		t.Errorf("a trickled body held the connection %v (read timeout 300ms)", held)
	}
	// A slow call is not cut by it.
	session := connect(t, "http://"+ln.Addr().String()+MCPPath, "")
	time.Sleep(500 * time.Millisecond)
	if _, err := session.CallTool(context.Background(), &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}}); err != nil {
		t.Errorf("a call after the read timeout: %v", err)
	}
}
