package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// The HTTP end-to-end tests run the real binary with --http 127.0.0.1:0,
// read the URL it prints, and drive it with the go-sdk's streamable HTTP
// client.

// envHTTPToken is the environment variable `serve --http` takes its bearer
// token from when neither --http-token nor --http-token-file gives one.
const envHTTPToken = "PLUGBOARD_HTTP_TOKEN"

// httpServer is a `plugboard serve --http` process (clitest.LaunchHTTP).
type httpServer = clitest.HTTPServer

// httpEnv is the environment without a PLUGBOARD_HTTP_TOKEN of the caller's.
func httpEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, envHTTPToken+"=") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// startHTTPServer runs `plugboard serve --http 127.0.0.1:0` on pluginDir
// and waits for the URL it prints.
func startHTTPServer(t *testing.T, pluginDir string, env []string, extra ...string) *httpServer {
	t.Helper()
	return clitest.LaunchHTTP(t, env, append([]string{"serve", "--http", "127.0.0.1:0", "--plugins", pluginDir, "--data", t.TempDir()}, extra...))
}

// bearer adds Authorization: Bearer token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// progressLog collects a client's progress notifications.
type progressLog struct {
	mu   sync.Mutex
	seen []mcp.ProgressNotificationParams
}

func (p *progressLog) all() []mcp.ProgressNotificationParams {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]mcp.ProgressNotificationParams(nil), p.seen...)
}

// connectHTTP opens an MCP session to url with token ("" for none).
// connectHTTP opens a session at MCP 2025-11-25, the last revision with
// sessions, which most HTTP tests are about; connectHTTPAt asks for
// another revision, with more client options.
func connectHTTP(t *testing.T, url, token string) (*mcp.ClientSession, *progressLog, error) {
	t.Helper()
	return connectHTTPAt(t, legacyRevision, url, token, nil)
}

func connectHTTPAt(t *testing.T, version, url, token string, opts *mcp.ClientOptions) (*mcp.ClientSession, *progressLog, error) {
	t.Helper()
	progress := &progressLog{}
	if opts == nil {
		opts = &mcp.ClientOptions{}
	}
	opts.ProgressNotificationHandler = func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
		progress.mu.Lock()
		progress.seen = append(progress.seen, *req.Params)
		progress.mu.Unlock()
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-http", Version: "1"}, opts)
	httpClient := &http.Client{}
	if token != "" {
		httpClient.Transport = bearer{token}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	session, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: httpClient},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		return nil, nil, err
	}
	if got := session.InitializeResult().ProtocolVersion; got != version {
		session.Close()
		return nil, nil, fmt.Errorf("negotiated MCP %s, asked for %s", got, version)
	}
	t.Cleanup(func() { session.Close() })
	return session, progress, nil
}

// rawRequest sends one request to the server: a POST of an initialize to
// /mcp unless method is GET; host overrides the Host header when set.
func rawRequest(t *testing.T, method, url, host, authorization string) *http.Response {
	t.Helper()
	body := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if method == http.MethodGet {
		req.Body, req.ContentLength = nil, 0
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if host != "" {
		req.Host = host
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestHTTPEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	dir, _ := buildtest.Plugins(t, "plugins/echo", "plugins/textdiff", "testdata/plugins/loop", "testdata/plugins/sleepy")
	const token = "e2e-token-0123456789abcdef0123456789"
	srv := startHTTPServer(t, dir, httpEnv(), "--http-token", token, "--call-timeout", "5s")
	ctx := context.Background()
	session, progress, err := connectHTTP(t, srv.URL, token)
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, srv.Stderr.String())
	}
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") || strings.HasSuffix(srv.Addr, ":0") {
		t.Errorf("printed URL %q does not carry the chosen port", srv.URL)
	}

	t.Run("tools/list", func(t *testing.T) {
		res, err := session.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]*mcp.Tool{}
		for _, tool := range res.Tools {
			got[tool.Name] = tool
		}
		for _, want := range []string{"echo", "text_diff", "spin", "sleep"} {
			if got[want] == nil {
				t.Errorf("tools/list lacks %s (has %v)", want, keys(got))
			}
		}
		if echo := got["echo"]; echo != nil && (echo.OutputSchema == nil || echo.Annotations == nil) {
			t.Errorf("echo lost its output schema or annotations: %+v", echo)
		}
	})

	t.Run("echo", func(t *testing.T) {
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "héllo over HTTP"}})
		if err != nil {
			t.Fatal(err)
		}
		var out struct{ Text string }
		structured(t, res, &out)
		if out.Text != "héllo over HTTP" {
			t.Errorf("echo returned %q", out.Text)
		}
	})

	t.Run("progress reaches the client", func(t *testing.T) {
		params := &mcp.CallToolParams{Name: "text_diff", Arguments: map[string]any{
			"old_text": "one\ntwo\nthree\n", "new_text": "one\n2\nthree\nfour\n",
		}}
		params.SetProgressToken("http-diff-1")
		res, err := session.CallTool(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		var out struct{ Added, Removed int }
		structured(t, res, &out)
		if out.Added != 2 || out.Removed != 1 {
			t.Errorf("diff result: %+v", out)
		}
		// Progress travels on the call's own event stream; the client may
		// hand notifications to its handler after the result.
		deadline := time.Now().Add(3 * time.Second)
		for {
			seen := progress.all()
			done := false
			for _, p := range seen {
				if p.ProgressToken != "http-diff-1" {
					t.Fatalf("progress with token %v, want http-diff-1", p.ProgressToken)
				}
				done = done || (p.Progress == 100 && p.Total == 100)
			}
			if done {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no progress at 100/100 arrived; saw %+v", seen)
			}
			time.Sleep(10 * time.Millisecond)
		}
	})

	t.Run("cancellation interrupts the plugin", func(t *testing.T) {
		spinCancelled := func(after time.Duration) {
			cctx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() {
				_, err := session.CallTool(cctx, &mcp.CallToolParams{Name: "spin", Arguments: map[string]any{}})
				done <- err
			}()
			time.Sleep(after)
			cancel()
			<-done
		}
		// A first cancelled call makes sure the plugin is compiled (a loaded
		// machine can take longer than the wait below to do that), so the
		// measured call is cancelled while it really spins.
		spinCancelled(500 * time.Millisecond)
		warm := time.Now().Add(60 * time.Second)
		for !strings.Contains(srv.Stderr.String(), "tool=spin code=") {
			if time.Now().After(warm) {
				t.Fatalf("the first cancelled spin never ended; stderr:\n%s", srv.Stderr.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		before := strings.Count(srv.Stderr.String(), "tool=spin code=cancelled")
		spinCancelled(500 * time.Millisecond)
		begin := time.Now()
		deadline := time.Now().Add(3 * time.Second)
		for strings.Count(srv.Stderr.String(), "tool=spin code=cancelled") <= before {
			if time.Now().After(deadline) {
				t.Fatalf("the cancelled call was not interrupted as cancelled; stderr:\n%s", srv.Stderr.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		if took := time.Since(begin); took > 4*time.Second {
			t.Errorf("cancellation took %v, no faster than the 5s deadline", took)
		}
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "after cancel"}})
		if err != nil || res.IsError {
			t.Errorf("echo after the cancel: %v %s", err, clitest.Text(res))
		}
	})

	t.Run("no token is 401", func(t *testing.T) {
		resp := rawRequest(t, http.MethodPost, srv.URL, "", "")
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("no token: %d WWW-Authenticate=%q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
		if _, _, err := connectHTTP(t, srv.URL, ""); err == nil {
			t.Error("a client without the token connected")
		}
	})

	t.Run("wrong token is 401", func(t *testing.T) {
		for _, auth := range []string{"Bearer wrong", "Bearer " + token + "x", "Bearer " + token[:len(token)-1], "Basic " + token} {
			resp := rawRequest(t, http.MethodPost, srv.URL, "", auth)
			if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%q: %d WWW-Authenticate=%q", auth, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
			}
		}
		if _, _, err := connectHTTP(t, srv.URL, "wrong"); err == nil {
			t.Error("a client with a wrong token connected")
		}
		if resp := rawRequest(t, http.MethodPost, srv.URL, "", "Bearer "+token); resp.StatusCode != http.StatusOK {
			t.Errorf("right token: %d", resp.StatusCode)
		}
	})

	t.Run("foreign Host is 403", func(t *testing.T) {
		_, port, _ := net.SplitHostPort(srv.Addr)
		for _, host := range []string{"evil.example:" + port, "evil.example", "localhost.evil.example:" + port, "127.0.0.1:1"} {
			resp := rawRequest(t, http.MethodPost, srv.URL, host, "Bearer "+token)
			var body struct{ Error string }
			_ = json.NewDecoder(resp.Body).Decode(&body)
			if resp.StatusCode != http.StatusForbidden || body.Error != "forbidden_host" {
				t.Errorf("Host %q: %d %+v, want 403 forbidden_host", host, resp.StatusCode, body)
			}
		}
		for _, host := range []string{"localhost:" + port, "127.0.0.1:" + port, "[::1]:" + port} {
			if resp := rawRequest(t, http.MethodPost, srv.URL, host, "Bearer "+token); resp.StatusCode != http.StatusOK {
				t.Errorf("Host %q: %d, want 200", host, resp.StatusCode)
			}
		}
	})

	t.Run("foreign Origin is 403", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", "https://evil.example")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("Origin evil: %d, want 403", resp.StatusCode)
		}
	})

	t.Run("healthz", func(t *testing.T) {
		resp := rawRequest(t, http.MethodGet, "http://"+srv.Addr+"/healthz", "", "")
		if resp.StatusCode != http.StatusOK {
			t.Errorf("healthz on loopback without a token: %d", resp.StatusCode)
		}
	})

	t.Run("two concurrent sessions", func(t *testing.T) {
		a, _, err := connectHTTP(t, srv.URL, token)
		if err != nil {
			t.Fatal(err)
		}
		b, _, err := connectHTTP(t, srv.URL, token)
		if err != nil {
			t.Fatal(err)
		}
		if a.ID() == "" || a.ID() == b.ID() {
			t.Errorf("session ids %q and %q, want two distinct ones", a.ID(), b.ID())
		}
		// Warm the sleep plugin's pool, then overlap a slow call on each
		// session with echo calls on both.
		for _, s := range []*mcp.ClientSession{a, b} {
			if _, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 0}}); err != nil {
				t.Fatal(err)
			}
		}
		type span struct {
			StartedUnixNano int64 `json:"started_unix_nano"`
			EndedUnixNano   int64 `json:"ended_unix_nano"`
		}
		spans := make([]span, 2)
		var wg sync.WaitGroup
		for i, s := range []*mcp.ClientSession{a, b} {
			wg.Go(func() {
				res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 400}})
				if err != nil || res.IsError {
					t.Errorf("session %d sleep: %v %s", i, err, clitest.Text(res))
					return
				}
				b, _ := json.Marshal(res.StructuredContent)
				_ = json.Unmarshal(b, &spans[i])
			})
			for j := range 5 {
				wg.Go(func() {
					want := fmt.Sprintf("session %d call %d", i, j)
					res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": want}})
					if err != nil {
						t.Errorf("%s: %v", want, err)
						return
					}
					var out struct{ Text string }
					structured(t, res, &out)
					if out.Text != want {
						t.Errorf("%s: answer %q went to the wrong call or session", want, out.Text)
					}
				})
			}
		}
		wg.Wait()
		if overlap := min(spans[0].EndedUnixNano, spans[1].EndedUnixNano) - max(spans[0].StartedUnixNano, spans[1].StartedUnixNano); overlap <= 0 {
			t.Errorf("the two sessions' calls did not run at the same time: %+v", spans)
		}
	})
}

func TestHTTPNonLoopbackNeedsToken(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildtest.Binary(t)
	plugins := t.TempDir()
	run := func(env []string, args ...string) (int, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, append([]string{"serve", "--plugins", plugins, "--data", t.TempDir()}, args...)...)
		cmd.Env = env
		out, _ := cmd.CombinedOutput()
		return cmd.ProcessState.ExitCode(), string(out)
	}
	for _, addr := range []string{"0.0.0.0:0", ":0"} {
		code, out := run(httpEnv(), "--http", addr)
		if code != 2 || !strings.Contains(out, "needs a bearer token") || !strings.Contains(out, "--http-token") {
			t.Errorf("--http %s without a token: exit %d, want 2 naming the token flags:\n%s", addr, code, out)
		}
		if strings.Contains(out, "serving MCP") || strings.Contains(out, "plugins loaded") {
			t.Errorf("--http %s without a token got as far as loading plugins:\n%s", addr, out)
		}
	}
	for _, c := range []struct {
		args []string
		in   string
	}{
		{[]string{"--http-token", "x"}, "need --http"},
		{[]string{"--http", "127.0.0.1:0", "--http-token", "x", "--http-token-file", "f"}, "not both"},
		{[]string{"--http", "127.0.0.1:0", "--http-token", "two words"}, "without spaces"},
		{[]string{"--http", "127.0.0.1:0", "--http-token-file", filepath.Join(t.TempDir(), "absent")}, "--http-token-file"},
	} {
		code, out := run(httpEnv(), c.args...)
		if code == 0 || !strings.Contains(out, c.in) {
			t.Errorf("%q: exit %d, want a failure mentioning %q:\n%s", c.args, code, c.in, out)
		}
	}
}

func TestHTTPNonLoopbackWithTokenFile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	dir, _ := buildtest.Plugins(t, "plugins/echo")
	file := filepath.Join(t.TempDir(), "token")
	const token = "file-token-0123456789abcdef0123456789"
	if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := clitest.LaunchHTTP(t, httpEnv(envHTTPToken+"=env-token-is-ignored"),
		[]string{"serve", "--http", "0.0.0.0:0", "--http-token-file", file, "--plugins", dir, "--data", t.TempDir()})
	url := s.URL
	// The server listens on every interface; reach it through loopback.
	_, port, _ := net.SplitHostPort(strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/mcp"))
	local := "http://127.0.0.1:" + port
	if resp := rawRequest(t, http.MethodGet, local+"/healthz", "", ""); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("healthz without a token on a non-loopback server: %d, want 401", resp.StatusCode)
	}
	if resp := rawRequest(t, http.MethodGet, local+"/healthz", "", "Bearer "+token); resp.StatusCode != http.StatusOK {
		t.Errorf("healthz with the file's token: %d", resp.StatusCode)
	}
	if resp := rawRequest(t, http.MethodGet, local+"/healthz", "", "Bearer env-token-is-ignored"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the env token was honoured over the file's: %d", resp.StatusCode)
	}
	session, _, err := connectHTTP(t, local+"/mcp", token)
	if err != nil {
		t.Fatalf("connect with the file's token: %v\n%s", err, s.Stderr.String())
	}
	res, err := session.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "via the file token"}})
	if err != nil || res.IsError {
		t.Errorf("echo: %v %s", err, clitest.Text(res))
	}
}

func TestHTTPGracefulShutdown(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	dir, _ := buildtest.Plugins(t, "testdata/plugins/sleepy")
	const token = "env-token-0123456789abcdef0123456789"
	srv := startHTTPServer(t, dir, httpEnv(envHTTPToken+"="+token))
	session, _, err := connectHTTP(t, srv.URL, token)
	if err != nil {
		t.Fatalf("connect with the token from the environment: %v", err)
	}
	ctx := context.Background()
	if _, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 0}}); err != nil {
		t.Fatal(err) // the first call waits for compilation
	}
	done := make(chan error, 1)
	go func() {
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 1500}})
		if err == nil && res.IsError {
			err = fmt.Errorf("error result %s", clitest.Text(res))
		}
		done <- err
	}()
	time.Sleep(400 * time.Millisecond)
	if err := srv.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// New connections are refused at once.
	deadline := time.Now().Add(time.Second)
	for {
		conn, err := net.DialTimeout("tcp", srv.Addr, 200*time.Millisecond)
		if err != nil {
			break
		}
		conn.Close()
		if time.Now().After(deadline) {
			t.Fatal("still accepting connections a second after SIGTERM")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := <-done; err != nil {
		t.Errorf("the call in flight at SIGTERM did not finish: %v", err)
	}
	select {
	case <-srv.Exited:
	case <-time.After(10 * time.Second):
		t.Fatalf("serve did not exit after its last call:\n%s", srv.Stderr.String())
	}
	if code := srv.Cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0:\n%s", code, srv.Stderr.String())
	}
}
