package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/runtime"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// lockedBuffer is a bytes.Buffer for a logger written from calls.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type hoardAnswer struct {
	Done       int    `json:"done"`
	Refused    int    `json:"refused"`
	FirstError string `json:"first_error"`
	Status     int    `json:"status"`
}

// TestPluginLimits drives testdata/plugins/hoard, a plugin that tries to
// make the host keep, write or hold more than its caps, against small
// caps set in its options (limits.go).
func TestPluginLimits(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins")
	}
	_, wasm := buildtest.Plugins(t, "testdata/plugins/hoard")
	code, err := os.ReadFile(wasm["hoard"])
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	logged := &lockedBuffer{}
	e, err := runtime.New(ctx, runtime.Config{CacheDir: t.TempDir(), CacheKey: testKey, MaxHostHTTPConnections: 3,
		Logger: slog.New(slog.NewTextHandler(logged, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	compile := func(t *testing.T, name string, opts runtime.PluginOptions) *runtime.Plugin {
		t.Helper()
		p, err := e.CompileWith(ctx, name, code, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close(ctx) })
		return p
	}
	call := func(p *runtime.Plugin, tool string, args map[string]any, opts runtime.CallOptions) (hoardAnswer, error) {
		b, _ := json.Marshal(args)
		text, err := toolText(ctx, p, tool, string(b), opts)
		var a hoardAnswer
		if err == nil {
			err = json.Unmarshal([]byte(text), &a)
		}
		return a, err
	}
	// capped checks that err is resource_exhausted naming the setting of
	// plugin name.
	capped := func(t *testing.T, err error, name, setting string) *abi.Envelope {
		t.Helper()
		var env *abi.Envelope
		full := "plugins.settings." + name + "." + setting
		if !errors.As(err, &env) || env.Code != abi.CodeResourceExhausted || env.Details["setting"] != full ||
			!strings.Contains(env.Message, full) || !strings.Contains(env.Hint, full) {
			t.Fatalf("want resource_exhausted naming %s, got %v", full, err)
		}
		return env
	}

	t.Run("the options' limits over the engine's", func(t *testing.T) {
		p := compile(t, "defaults", runtime.PluginOptions{Limits: runtime.Limits{MaxVars: 3}})
		want := runtime.DefaultLimits()
		want.MaxVars = 3
		if p.Limits() != want {
			t.Errorf("Limits() = %+v, want %+v", p.Limits(), want)
		}
	})

	t.Run("vars: keys and values, and their number", func(t *testing.T) {
		p := compile(t, "vars", runtime.PluginOptions{Stateful: true, Limits: runtime.Limits{MaxVarBytes: 4096, MaxVars: 10}})
		// Under both caps: 5 vars of 100-byte keys.
		if _, err := call(p, "hoard_vars", map[string]any{"count": 5, "key_bytes": 100, "tag": "a"}, runtime.CallOptions{}); err != nil {
			t.Fatal(err)
		}
		// Long keys, one-byte values: the keys count.
		_, err := call(p, "hoard_vars", map[string]any{"count": 100, "key_bytes": 1000, "tag": "b"}, runtime.CallOptions{})
		env := capped(t, err, "vars", "max_var_bytes")
		if env.Details["max_bytes"] != 4096 {
			t.Errorf("details %v", env.Details)
		}
		// Short keys: the number counts.
		_, err = call(p, "hoard_vars", map[string]any{"count": 11, "key_bytes": 1, "tag": "c"}, runtime.CallOptions{})
		capped(t, err, "vars", "max_vars")
		// The instance was discarded with its vars: a fresh one has room.
		if _, err := call(p, "hoard_vars", map[string]any{"count": 10, "key_bytes": 1, "tag": "d"}, runtime.CallOptions{}); err != nil {
			t.Errorf("10 vars in a fresh instance: %v", err)
		}
	})

	t.Run("kernel blocks: each charged its bookkeeping", func(t *testing.T) {
		p := compile(t, "blocks", runtime.PluginOptions{})
		// 16 MiB of kernel memory holds two million 8-byte blocks, but
		// not with their bookkeeping.
		_, err := call(p, "hoard_blocks", map[string]any{"count": 1_000_000}, runtime.CallOptions{})
		var env *abi.Envelope
		if !errors.As(err, &env) || env.Code != abi.CodeResourceExhausted || env.Details["limit"] != "kernel memory" {
			t.Fatalf("a million blocks: %v", err)
		}
		if _, err := call(p, "hoard_blocks", map[string]any{"count": 1000}, runtime.CallOptions{}); err != nil {
			t.Errorf("a thousand blocks: %v", err)
		}
	})

	t.Run("log lines: bytes of a call", func(t *testing.T) {
		p := compile(t, "logs", runtime.PluginOptions{Limits: runtime.Limits{MaxLogBytes: 4096}})
		_, err := call(p, "hoard_logs", map[string]any{"count": 100, "bytes": 100, "marker": "LOGCAP"}, runtime.CallOptions{})
		capped(t, err, "logs", "max_log_bytes")
		if n, most := strings.Count(logged.String(), "LOGCAP"), 4096/(100+64); n != most {
			t.Errorf("%d lines logged, want the %d that fit", n, most)
		}
		// The next call has its own budget.
		if _, err := call(p, "hoard_logs", map[string]any{"count": 10, "bytes": 100, "marker": "LOGNEXT"}, runtime.CallOptions{}); err != nil {
			t.Errorf("10 lines in the next call: %v", err)
		}
		// Lines the logger drops are not charged.
		if _, err := call(p, "hoard_vars", map[string]any{"count": 1, "key_bytes": 1}, runtime.CallOptions{}); err != nil {
			t.Error(err)
		}
	})

	t.Run("progress: bytes a call sends the client", func(t *testing.T) {
		p := compile(t, "progress", runtime.PluginOptions{Limits: runtime.Limits{MaxNotificationBytes: 2048}})
		var sent atomic.Int64
		opts := runtime.CallOptions{Progress: func(abi.ProgressRequest) { sent.Add(1) }}
		a, err := call(p, "hoard_progress", map[string]any{"count": 50, "bytes": 100}, opts)
		if err != nil {
			t.Fatal(err)
		}
		if a.Done != int(sent.Load()) || a.Done == 0 || a.Done+a.Refused != 50 ||
			!strings.Contains(a.FirstError, "plugins.settings.progress.max_notification_bytes") {
			t.Errorf("sent %d, answer %+v: want the reports that fit sent, the rest answered errors naming the setting", sent.Load(), a)
		}
		if a.Done*(100+64) > 2048 {
			t.Errorf("%d reports of about 100 bytes sent, over 2048 bytes", a.Done)
		}
		// Without a client asking for progress nothing is sent or charged.
		a, err = call(p, "hoard_progress", map[string]any{"count": 50, "bytes": 100}, runtime.CallOptions{})
		if err != nil || a.Refused != 0 {
			t.Errorf("progress nobody asked for: %+v %v", a, err)
		}
	})

	// A server answering with no body; /headers with 16 KiB of headers.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/headers" {
			for i := range 64 {
				w.Header().Set(fmt.Sprintf("X-Pad-%d", i), strings.Repeat("h", 256))
			}
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	allowSrv := &runtime.Egress{AllowedHosts: []string{strings.TrimPrefix(srv.URL, "http://")}, AllowPrivate: true}

	t.Run("http requests: a call's number, each record cut short", func(t *testing.T) {
		p := compile(t, "requests", runtime.PluginOptions{HTTP: allowSrv, Limits: runtime.Limits{MaxHTTPRequests: 3}})
		var recs []runtime.HTTPRecord
		opts := runtime.CallOptions{HTTP: func(r runtime.HTTPRecord) { recs = append(recs, r) }}
		_, err := call(p, "hoard_requests", map[string]any{"count": 5, "url": srv.URL, "path_bytes": 64 << 10}, opts)
		capped(t, err, "requests", "max_http_requests")
		if len(recs) != 4 || recs[0].Status != http.StatusNoContent || recs[3].Err == "" {
			t.Fatalf("records %+v: want 3 requests and the refusal", len(recs))
		}
		for _, r := range recs {
			if len(r.URL) > 2100 || len(r.Err) > 2100 {
				t.Errorf("a record of %d URL bytes and %d error bytes kept whole", len(r.URL), len(r.Err))
			}
		}
		if !strings.Contains(recs[0].URL, "(65") {
			t.Errorf("a cut URL does not say its length: %.80s…", recs[0].URL)
		}
	})

	t.Run("http response headers", func(t *testing.T) {
		p := compile(t, "headers", runtime.PluginOptions{HTTP: allowSrv, Limits: runtime.Limits{MaxHTTPHeaderBytes: 4096}})
		_, err := call(p, "hoard_fetch", map[string]any{"url": srv.URL + "/headers"}, runtime.CallOptions{})
		capped(t, err, "headers", "max_http_header_bytes")
		if a, err := call(p, "hoard_fetch", map[string]any{"url": srv.URL + "/small"}, runtime.CallOptions{}); err != nil || a.Status != http.StatusNoContent {
			t.Errorf("small headers: %+v %v", a, err)
		}
	})

	t.Run("http connections: the plugin's and the host's", func(t *testing.T) {
		// A server that accepts and never answers: a call's TLS handshake
		// holds its connection until the call ends.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		var open, most atomic.Int64
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				n := open.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				go func() {
					io.Copy(io.Discard, c)
					c.Close()
					open.Add(-1)
				}()
			}
		}()
		waitOpen := func(t *testing.T, n int64) {
			t.Helper()
			for deadline := time.Now().Add(time.Minute); open.Load() != n; time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%d connections open at the server, waiting for %d", open.Load(), n)
				}
			}
		}
		held := &runtime.Egress{AllowedHosts: []string{ln.Addr().String()}, AllowPrivate: true}
		args, _ := json.Marshal(map[string]any{"url": "https://" + ln.Addr().String() + "/"})
		fetchHeld := func(ctx context.Context, p *runtime.Plugin) error {
			_, err := p.Call(ctx, abi.ExportCall, request("hoard_fetch", string(args)), runtime.CallOptions{})
			return err
		}
		// hold starts a call that holds a connection until cancelled.
		var holders sync.WaitGroup
		var cancels []context.CancelFunc
		hold := func(t *testing.T, p *runtime.Plugin, openAfter int64) {
			t.Helper()
			cctx, cancel := context.WithCancel(ctx)
			cancels = append(cancels, cancel)
			holders.Go(func() { fetchHeld(cctx, p) })
			waitOpen(t, openAfter)
		}
		a := compile(t, "conns_a", runtime.PluginOptions{HTTP: held, MaxInstances: 4, Limits: runtime.Limits{MaxHTTPConnections: 2}})
		hold(t, a, 1)
		hold(t, a, 2)
		capped(t, fetchHeld(ctx, a), "conns_a", "max_http_connections")
		// The host's cap (3) is below the sum of the plugins' (2 + 2).
		b := compile(t, "conns_b", runtime.PluginOptions{HTTP: held, MaxInstances: 4, Limits: runtime.Limits{MaxHTTPConnections: 2}})
		hold(t, b, 3)
		var env *abi.Envelope
		if err := fetchHeld(ctx, b); !errors.As(err, &env) || env.Code != abi.CodeResourceExhausted || env.Details["limit"] != "host_http_connections" {
			t.Errorf("over the host's cap: %v", err)
		}
		if m := most.Load(); m > 3 {
			t.Errorf("%d connections open at once, over the host's cap of 3", m)
		}
		// Calls that end take their connections with them, and the slots
		// are free again.
		for _, cancel := range cancels {
			cancel()
		}
		holders.Wait()
		waitOpen(t, 0)
		cancels = nil
		hold(t, a, 1)
		hold(t, a, 2)
		for _, cancel := range cancels {
			cancel()
		}
		holders.Wait()
	})
}
