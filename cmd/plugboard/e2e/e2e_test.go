package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// The end-to-end tests drive the real binary over stdio with the go-sdk
// client, against plugins built from plugins/ and testdata/plugins/.

var allPlugins = []string{
	"plugins/echo", "plugins/textdiff",
	"testdata/plugins/loop", "testdata/plugins/hog", "testdata/plugins/crash",
	"testdata/plugins/sleepy", "testdata/plugins/rawpdk", "testdata/plugins/misbehave",
}

type server struct {
	session *mcp.ClientSession
	stderr  *clitest.SyncBuffer
	pid     int // the serve process's id, for reading /proc
}

// startServer runs `plugboard serve` on pluginDir and connects a client.
func startServer(t *testing.T, pluginDir string, extra ...string) *server {
	t.Helper()
	opts := &mcp.ClientOptions{
		ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
			progressMu.Lock()
			progressSeen = append(progressSeen, *req.Params)
			progressMu.Unlock()
		},
	}
	return dialServe(t, nil, opts, append([]string{"--plugins", pluginDir, "--data", t.TempDir()}, extra...)...)
}

// dialServe runs `plugboard serve ARGS...` with env (nil: this process's)
// over stdio and connects a go-sdk client with opts; the server's stderr
// is logged when the test fails.
func dialServe(t *testing.T, env []string, opts *mcp.ClientOptions, args ...string) *server {
	t.Helper()
	return dialServeAt(t, "", env, opts, args...)
}

// dialServeAt is dialServe with the client asking for MCP revision version
// ("" for the newest the go-sdk speaks).
func dialServeAt(t *testing.T, version string, env []string, opts *mcp.ClientOptions, args ...string) *server {
	t.Helper()
	cmd := exec.Command(buildtest.Binary(t), append([]string{"serve"}, args...)...)
	cmd.Env = env
	stderr := &clitest.SyncBuffer{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	session, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, opts).Connect(ctx, &mcp.CommandTransport{Command: cmd},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, stderr.String())
	}
	t.Cleanup(func() {
		session.Close()
		if t.Failed() {
			// The tail: a plugin flooding its log makes megabytes of it.
			t.Logf("server stderr (tail):\n%s", tail(stderr.String(), 64<<10))
		}
	})
	return &server{session: session, stderr: stderr, pid: cmd.Process.Pid}
}

var (
	progressMu   sync.Mutex
	progressSeen []mcp.ProgressNotificationParams
)

func (s *server) call(t *testing.T, ctx context.Context, tool string, args any) *mcp.CallToolResult {
	t.Helper()
	return callSession(t, ctx, s.session, tool, args)
}

// callSession calls tool through sess and fails the test on a protocol
// error; a tool's error result is returned, for the test to judge.
func callSession(t testing.TB, ctx context.Context, sess *mcp.ClientSession, tool string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: protocol error %v", tool, err)
	}
	return res
}

func structured(t *testing.T, res *mcp.CallToolResult, into any) {
	t.Helper()
	if res.IsError {
		t.Fatalf("unexpected error result: %s", clitest.Text(res))
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, into); err != nil {
		t.Fatalf("structuredContent %s: %v", b, err)
	}
	if !json.Valid([]byte(clitest.Text(res))) {
		t.Errorf("text content is not compact JSON: %q", clitest.Text(res))
	}
}

func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	dir, _ := buildtest.Plugins(t, allPlugins...)
	// A corrupt module must be skipped without hiding the others.
	if err := os.WriteFile(filepath.Join(dir, "corrupt.wasm"), []byte("\x00asm\x01\x00\x00\x00garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, dir, "--call-timeout", "2s", "--memory-limit", "64")
	ctx := context.Background()

	t.Run("list", func(t *testing.T) {
		res, err := srv.session.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]*mcp.Tool{}
		for _, tool := range res.Tools {
			got[tool.Name] = tool
		}
		for _, want := range []string{"echo", "text_diff", "spin", "hog", "crash", "sleep", "raw_upper", "garbage"} {
			if got[want] == nil {
				t.Errorf("tools/list lacks %s (has %v)", want, keys(got))
			}
		}
		if echo := got["echo"]; echo != nil {
			if !strings.HasPrefix(echo.Description, "Use when:") {
				t.Errorf("echo description does not follow the template: %q", echo.Description)
			}
			if echo.Annotations == nil || !echo.Annotations.ReadOnlyHint {
				t.Errorf("echo annotations lost: %+v", echo.Annotations)
			}
			if echo.OutputSchema == nil {
				t.Error("echo outputSchema lost")
			}
		}
		if !strings.Contains(srv.stderr.String(), "corrupt.wasm") {
			t.Errorf("the corrupt plugin was not reported on stderr:\n%s", srv.stderr.String())
		}
	})

	t.Run("echo", func(t *testing.T) {
		var out struct{ Text string }
		structured(t, srv.call(t, ctx, "echo", map[string]any{"text": "héllo, wörld"}), &out)
		if out.Text != "héllo, wörld" {
			t.Errorf("echo returned %q", out.Text)
		}
	})

	t.Run("schema violation names the field", func(t *testing.T) {
		env := clitest.EnvelopeOf(t, srv.call(t, ctx, "echo", map[string]any{}))
		if env.Code != abi.CodeMissingRequired || env.Details["field"] != "text" || !strings.Contains(env.Hint, "text") {
			t.Errorf("missing field: got %+v", env)
		}
		env = clitest.EnvelopeOf(t, srv.call(t, ctx, "echo", map[string]any{"text": 42}))
		if env.Code != abi.CodeInvalidArgument || env.Details["field"] != "text" {
			t.Errorf("wrong type: got %+v", env)
		}
		env = clitest.EnvelopeOf(t, srv.call(t, ctx, "echo", map[string]any{"text": "x", "colour": "red"}))
		if env.Code != abi.CodeInvalidArgument || env.Details["field"] != "colour" || !strings.Contains(env.Hint, "colour") {
			t.Errorf("unknown field: got %+v", env)
		}
	})

	t.Run("unknown tool", func(t *testing.T) {
		// Answered like any failed call: an envelope, not a protocol error.
		if env := clitest.EnvelopeOf(t, srv.call(t, ctx, "no_such_tool", map[string]any{})); env.Code != abi.CodeToolNotFound || env.Hint == "" {
			t.Errorf("calling an unknown tool: %+v, want tool_not_found with a hint", env)
		}
	})

	t.Run("loop times out near its deadline and the next call is served", func(t *testing.T) {
		// The first call may include compiling the plugin, which the
		// deadline does not cover; the second measures the deadline alone.
		env := clitest.EnvelopeOf(t, srv.call(t, ctx, "spin", map[string]any{}))
		if env.Code != abi.CodePluginTimeout || !env.Retryable {
			t.Errorf("got %+v, want retryable plugin_timeout", env)
		}
		var out struct{ Text string }
		structured(t, srv.call(t, ctx, "echo", map[string]any{"text": "still here"}), &out)
		if out.Text != "still here" {
			t.Errorf("after the timeout echo returned %q", out.Text)
		}
		start := time.Now()
		env = clitest.EnvelopeOf(t, srv.call(t, ctx, "spin", map[string]any{}))
		took := time.Since(start)
		if env.Code != abi.CodePluginTimeout {
			t.Errorf("second spin: %+v", env)
		}
		if took < 2*time.Second || took > 3*time.Second {
			t.Errorf("timeout answered after %v, want close to the 2s deadline", took)
		}
	})

	t.Run("allocation without bound stops at the memory cap", func(t *testing.T) {
		// Its own server, with a deadline far beyond what touching 64 MiB
		// takes even on a loaded machine: the memory cap, not the 2s
		// deadline the spin cases need, must be what stops the plugin.
		srv := startServer(t, dir, "--call-timeout", "60s", "--memory-limit", "64", "--warm=false")
		env := clitest.EnvelopeOf(t, srv.call(t, ctx, "hog", map[string]any{}))
		if env.Code != abi.CodeResourceExhausted || env.Details["limit"] != "memory" {
			t.Errorf("got %+v, want resource_exhausted (memory)", env)
		}
		if got, _ := env.Details["max_bytes"].(float64); got != 64<<20 {
			t.Errorf("max_bytes = %v, want %d", env.Details["max_bytes"], 64<<20)
		}
		var out struct{ Text string }
		structured(t, srv.call(t, ctx, "echo", map[string]any{"text": "ok"}), &out)
	})

	t.Run("panic is plugin_failed", func(t *testing.T) {
		env := clitest.EnvelopeOf(t, srv.call(t, ctx, "crash", map[string]any{}))
		if env.Code != abi.CodePluginFailed || !strings.Contains(env.Message, "deliberate panic") {
			t.Errorf("got %+v", env)
		}
		// The crashed instance was replaced: the plugin answers again.
		env = clitest.EnvelopeOf(t, srv.call(t, ctx, "crash", map[string]any{}))
		if env.Code != abi.CodePluginFailed {
			t.Errorf("second crash: %+v", env)
		}
	})

	t.Run("concurrent calls overlap", func(t *testing.T) {
		const n = 4
		type span struct {
			StartedUnixNano int64 `json:"started_unix_nano"`
			EndedUnixNano   int64 `json:"ended_unix_nano"`
		}
		spans := make([]span, n)
		var wg sync.WaitGroup
		// First fill the instance pool, so the measured calls test parallel
		// execution rather than how fast a loaded machine instantiates.
		for range n {
			wg.Go(func() { srv.call(t, ctx, "sleep", map[string]any{"ms": 50}) })
		}
		wg.Wait()
		for i := range n {
			wg.Go(func() {
				res, err := srv.session.CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 300}})
				if err != nil || res.IsError {
					t.Errorf("sleep %d: %v %s", i, err, clitest.Text(res))
					return
				}
				b, _ := json.Marshal(res.StructuredContent)
				json.Unmarshal(b, &spans[i])
			})
		}
		wg.Wait()
		// Every pair of calls must have run at the same time for a while.
		for i := range n {
			for j := i + 1; j < n; j++ {
				overlap := min(spans[i].EndedUnixNano, spans[j].EndedUnixNano) - max(spans[i].StartedUnixNano, spans[j].StartedUnixNano)
				if overlap <= 0 {
					t.Errorf("calls %d and %d did not overlap: %+v %+v", i, j, spans[i], spans[j])
				}
			}
		}
	})

	t.Run("raw go-pdk plugin", func(t *testing.T) {
		res := srv.call(t, ctx, "raw_upper", map[string]any{"text": "shout"})
		if res.IsError || clitest.Text(res) != "SHOUT" {
			t.Errorf("raw_upper: isError=%v text=%q", res.IsError, clitest.Text(res))
		}
	})

	t.Run("misbehaving output becomes envelopes", func(t *testing.T) {
		cases := []struct{ tool, code, inMessage string }{
			{"garbage", abi.CodePluginFailed, "not a CallToolResult"},
			{"oversize", abi.CodeResourceExhausted, "output"},
			{"text_error", abi.CodeToolError, "the frobnicator is offline"},
			{"status_error", abi.CodePluginFailed, "refusing on purpose"},
		}
		for _, c := range cases {
			env := clitest.EnvelopeOf(t, srv.call(t, ctx, c.tool, map[string]any{}))
			if env.Code != c.code || !strings.Contains(env.Message, c.inMessage) || env.Hint == "" {
				t.Errorf("%s: got %+v, want %s mentioning %q with a hint", c.tool, env, c.code, c.inMessage)
			}
		}
		// 12 MB on stderr: captured and bounded, and the answer still arrives.
		var out struct{ OK bool }
		structured(t, srv.call(t, ctx, "noisy", map[string]any{}), &out)
		if !out.OK {
			t.Error("noisy did not answer")
		}
		var echo struct{ Text string }
		structured(t, srv.call(t, ctx, "echo", map[string]any{"text": "unharmed"}), &echo)
	})

	t.Run("progress reaches the client", func(t *testing.T) {
		progressMu.Lock()
		progressSeen = nil
		progressMu.Unlock()
		params := &mcp.CallToolParams{Name: "text_diff", Arguments: map[string]any{
			"old_text": "one\ntwo\nthree\n", "new_text": "one\n2\nthree\nfour\n",
		}}
		params.SetProgressToken("diff-1")
		res, err := srv.session.CallTool(ctx, params)
		if err != nil || res.IsError {
			t.Fatalf("text_diff: %v %s", err, clitest.Text(res))
		}
		var out struct {
			Diff           string
			Added, Removed int
		}
		structured(t, res, &out)
		if out.Added != 2 || out.Removed != 1 || !strings.Contains(out.Diff, "+four") {
			t.Errorf("diff result: %+v", out)
		}
		deadline := time.Now().Add(2 * time.Second)
		for {
			progressMu.Lock()
			n := len(progressSeen)
			var tok any
			if n > 0 {
				tok = progressSeen[0].ProgressToken
			}
			progressMu.Unlock()
			if n > 0 {
				if tok != "diff-1" {
					t.Errorf("progress token %v, want diff-1", tok)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("no notifications/progress arrived")
			}
			time.Sleep(10 * time.Millisecond)
		}
	})

	t.Run("cancellation interrupts the plugin", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			_, err := srv.session.CallTool(cctx, &mcp.CallToolParams{Name: "spin", Arguments: map[string]any{}})
			done <- err
		}()
		time.Sleep(300 * time.Millisecond)
		cancel()
		<-done
		// The server logs the cancelled call and frees the instance well before
		// the 2s deadline; echo keeps answering.
		var out struct{ Text string }
		structured(t, srv.call(t, ctx, "echo", map[string]any{"text": "after cancel"}), &out)
		deadline := time.Now().Add(1500 * time.Millisecond)
		for !strings.Contains(srv.stderr.String(), "code=cancelled") {
			if time.Now().After(deadline) {
				t.Fatalf("the cancelled call was not interrupted as cancelled; stderr:\n%s", srv.stderr.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// shorten puts s on one line, cut to n runes, so that a log or error
// quoting a process's output stays readable.
func shorten(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
