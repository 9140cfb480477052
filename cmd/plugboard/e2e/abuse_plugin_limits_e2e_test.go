package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/plugin"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// A hostile plugin (testdata/plugins/hoard) against the caps on what a
// plugin can make the host keep, write or hold, end to end through `plugboard
// serve` with a configuration file's plugins.settings. Each item is judged by
// its effect on the serving process — its resident memory (/proc), the bytes
// it wrote to its log, the notifications its client got, the connections its
// HTTP client held open at a server — and by the envelope naming the setting:
//
//   - vars: distinct long keys (the values one byte), then many short ones;
//   - kernel blocks: a flood of one-byte blocks;
//   - log lines: one line written again and again;
//   - progress notifications: one report sent again and again;
//   - HTTP records: one request with a long URL made again and again (each
//     a record the decision log keeps for the call);
//   - HTTP response headers: a response with more headers than the setting;
//   - HTTP connections: calls holding connections open at once, to a server
//     that never answers their TLS handshake: two hold theirs, the others
//     are refused at once; once the calls end the connections are gone.

// hoardAnswer is the hoard plugin's answer.
type hoardAnswer struct {
	Done       int    `json:"done"`
	Refused    int    `json:"refused"`
	FirstError string `json:"first_error"`
	Status     int    `json:"status"`
}

// procStatusKiB reads a field of /proc/PID/status (VmRSS, VmHWM) in KiB.
func procStatusKiB(t *testing.T, pid int, field string) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("%s: %v", field, err)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// heldConns is a TCP server that accepts connections and never answers: a
// TLS client's handshake waits on it. It counts the connections open, and
// the most open at once.
type heldConns struct {
	ln        net.Listener
	open, max atomic.Int64
}

func newHeldConns(t *testing.T) *heldConns {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &heldConns{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n := h.open.Add(1)
			for m := h.max.Load(); n > m && !h.max.CompareAndSwap(m, n); m = h.max.Load() {
			}
			go func() {
				// Read until the client closes: its handshake timed out or
				// its request ended.
				io.Copy(io.Discard, c)
				c.Close()
				h.open.Add(-1)
			}()
		}
	}()
	return h
}

func TestAbusePluginLimits(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a plugin and the binary")
	}
	if runtime.GOOS != "linux" {
		t.Skip("reads the server's memory from /proc")
	}
	pluginDir, wasm := buildtest.Plugins(t, "testdata/plugins/hoard")
	// hold: the same module named hold in its embedded manifest, so that
	// it has settings of its own (8 instances, 2 connections).
	hoardWasm, err := os.ReadFile(wasm["hoard"])
	if err != nil {
		t.Fatal(err)
	}
	holdWasm := bytes.Clone(hoardWasm)
	section, ok, err := plugin.CustomSection(holdWasm, abi.ManifestSection)
	if err != nil || !ok {
		t.Fatalf("manifest section: %v %v", ok, err)
	}
	var m abi.Manifest
	if err := json.Unmarshal(section, &m); err != nil {
		t.Fatal(err)
	}
	m.Plugin.Name = "hold"
	section, _ = json.Marshal(m)
	if holdWasm, err = plugin.SetCustomSection(holdWasm, abi.ManifestSection, section); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pluginDir, "hold.wasm"), holdWasm, 0o644); err != nil {
		t.Fatal(err)
	}

	// records answers every request with no body; /headers with 16 KiB of
	// headers.
	records := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/headers" {
			for i := range 64 {
				w.Header().Set(fmt.Sprintf("X-Pad-%d", i), strings.Repeat("h", 256))
			}
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(records.Close)
	recordsHost := strings.TrimPrefix(records.URL, "http://")
	held := newHeldConns(t)
	heldHost := held.ln.Addr().String()

	dir := t.TempDir()
	cfg := writeJSON(t, filepath.Join(dir, "plugboard.json"), `{"plugins": {"settings": {
  "hoard": {"stateful": true, "allowed_hosts": ["`+recordsHost+`"], "allow_private": true, "call_timeout": "60s",
    "max_vars": 100, "max_log_bytes": "64KiB", "max_notification_bytes": "64KiB", "max_http_requests": 32,
    "max_http_header_bytes": "8KiB"},
  "hold": {"prefix": "hold_", "allowed_hosts": ["`+heldHost+`"], "allow_private": true, "call_timeout": "60s",
    "max_instances": 8, "max_http_connections": 2}
}}}`)
	var progressCount, progressBytes atomic.Int64
	opts := &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			progressCount.Add(1)
			progressBytes.Add(int64(len(req.Params.Message)))
		},
	}
	s := dialServe(t, cleanEnv(), opts, "--config", cfg, "--plugins", pluginDir, "--data", filepath.Join(dir, "data"))
	pid := s.pid
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	call := func(t *testing.T, tool string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		return s.call(t, ctx, tool, args)
	}
	answer := func(t *testing.T, res *mcp.CallToolResult) hoardAnswer {
		t.Helper()
		if res.IsError {
			t.Fatalf("unexpected error: %s", clitest.Text(res))
		}
		var a hoardAnswer
		if err := json.Unmarshal([]byte(clitest.Text(res)), &a); err != nil {
			t.Fatalf("answer %q: %v", clitest.Text(res), err)
		}
		return a
	}
	// atCap checks that res is resource_exhausted naming setting.
	atCap := func(t *testing.T, res *mcp.CallToolResult, setting string) {
		t.Helper()
		if !res.IsError {
			t.Errorf("want resource_exhausted naming %s, got success %s", setting, clitest.Text(res))
			return
		}
		env := clitest.EnvelopeOf(t, res)
		if env.Code != abi.CodeResourceExhausted || env.Details["setting"] != setting || !strings.Contains(env.Hint, setting) {
			t.Errorf("want resource_exhausted naming %s, got %s", setting, clitest.Text(res))
		}
	}
	const mib = 1 << 10 // in KiB, as /proc reports
	// waitCompiled waits for serve's warm-up to have compiled a plugin
	// (its compile mark in the data directory): its first calls would
	// otherwise be served by an interpreted copy, a plugin of its own.
	waitCompiled := func(t *testing.T, wasm []byte) {
		t.Helper()
		sum := sha256.Sum256(wasm)
		mark := filepath.Join(dir, "data", "compiled", "*", "instrumented", hex.EncodeToString(sum[:])+"-*.compiled-*")
		for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
			if m, _ := filepath.Glob(mark); len(m) > 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the plugin was not compiled: no %s", mark)
			}
		}
	}

	t.Run("vars_keys_count_against_the_cap", func(t *testing.T) {
		// Measured on the compiled plugin: on an empty cache the first
		// calls are served by an interpreted copy, and the compiled one
		// arriving mid-loop would add its machine code and instance
		// (48 MiB in a CI run) to what the keys cost.
		waitCompiled(t, hoardWasm)
		answer(t, call(t, "hoard_vars", map[string]any{"count": 1, "key_bytes": 8, "tag": "warm"}))
		before := procStatusKiB(t, pid, "VmRSS")
		// 20 calls, each setting 200 distinct keys of 64 KiB (one-byte
		// values): 250 MiB of keys if the host kept them.
		for i := range 20 {
			res := call(t, "hoard_vars", map[string]any{"count": 200, "key_bytes": 64 << 10, "tag": fmt.Sprint(i)})
			if i == 0 || i == 19 {
				atCap(t, res, "plugins.settings.hoard.max_var_bytes")
			}
		}
		grown := procStatusKiB(t, pid, "VmRSS") - before
		t.Logf("resident memory grew by %d MiB over 20 calls", grown/mib)
		if grown > 48*mib {
			t.Errorf("resident memory grew by %d MiB: the vars' keys are not capped", grown/mib)
		}
		// Many short keys: the number of vars is capped too.
		atCap(t, call(t, "hoard_vars", map[string]any{"count": 5000, "key_bytes": 1, "tag": "n"}), "plugins.settings.hoard.max_vars")
	})

	t.Run("kernel_blocks_count_against_the_kernel_cap", func(t *testing.T) {
		// Eight calls at once on hold (8 instances), each allocating 1.5
		// million one-byte blocks: every instance would keep the
		// bookkeeping of its blocks (a map of 1.5 million entries).
		waitCompiled(t, holdWasm)
		before := procStatusKiB(t, pid, "VmRSS")
		var wg sync.WaitGroup
		results := make([]*mcp.CallToolResult, 8)
		for i := range results {
			wg.Go(func() {
				res, err := s.session.CallTool(ctx, &mcp.CallToolParams{Name: "hold_hoard_blocks", Arguments: map[string]any{"count": 1_500_000}})
				if err != nil {
					t.Errorf("protocol error: %v", err)
				}
				results[i] = res
			})
		}
		wg.Wait()
		grown := procStatusKiB(t, pid, "VmRSS") - before
		t.Logf("resident memory grew by %d MiB", grown/mib)
		if grown > 128*mib {
			t.Errorf("resident memory grew by %d MiB: the blocks' bookkeeping is not capped", grown/mib)
		}
		for _, res := range results {
			if res != nil && (!res.IsError || clitest.EnvelopeOf(t, res).Details["limit"] != "kernel memory") {
				t.Errorf("1.5M one-byte blocks: want the kernel memory cap, got %s", clitest.Text(res))
			}
		}
	})

	t.Run("log_lines_count_against_the_cap", func(t *testing.T) {
		const marker = "HOARDLOG-7f3a"
		res := call(t, "hoard_logs", map[string]any{"count": 2000, "bytes": 1024, "marker": marker})
		// The server wrote its log before it answered, but this process
		// reads it through a pipe: wait for a line logged after them.
		answer(t, call(t, "hoard_logs", map[string]any{"count": 1, "bytes": 32, "marker": "HOARDEND-7f3a"}))
		for deadline := time.Now().Add(time.Minute); !strings.Contains(s.stderr.String(), "HOARDEND-7f3a"); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the server's log never showed the last line")
			}
		}
		logged := strings.Count(s.stderr.String(), marker) * 1024
		t.Logf("the host logged %d KiB of the plugin's lines", logged>>10)
		if logged > 64<<10 {
			t.Errorf("the host logged %d KiB of one call's lines, over max_log_bytes 64KiB", logged>>10)
		}
		atCap(t, res, "plugins.settings.hoard.max_log_bytes")
	})

	t.Run("progress_notifications_count_against_the_cap", func(t *testing.T) {
		params := &mcp.CallToolParams{Name: "hoard_progress", Arguments: map[string]any{"count": 2000, "bytes": 1024}}
		params.SetProgressToken("hoard")
		res, err := s.session.CallTool(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		a := answer(t, res)
		t.Logf("host accepted %d reports, refused %d; the client got %d (%d KiB)", a.Done, a.Refused, progressCount.Load(), progressBytes.Load()>>10)
		if a.Done*1024 > 64<<10 || a.Refused == 0 || !strings.Contains(a.FirstError, "plugins.settings.hoard.max_notification_bytes") {
			t.Errorf("host accepted %d reports of 1 KiB and refused %d (first error %q): want at most 64 KiB, then errors naming max_notification_bytes",
				a.Done, a.Refused, a.FirstError)
		}
		if got := progressBytes.Load(); got > 64<<10 {
			t.Errorf("the client got %d KiB of progress messages, over max_notification_bytes", got>>10)
		}
	})

	t.Run("http_records_count_against_the_cap", func(t *testing.T) {
		before := procStatusKiB(t, pid, "VmHWM")
		// 400 requests whose URL is 256 KiB long: 100 MiB of records if the
		// host kept each whole until the call ends.
		res := call(t, "hoard_requests", map[string]any{"count": 400, "url": records.URL, "path_bytes": 256 << 10})
		grown := procStatusKiB(t, pid, "VmHWM") - before
		t.Logf("peak resident memory grew by %d MiB", grown/mib)
		if grown > 48*mib {
			t.Errorf("peak resident memory grew by %d MiB in one call: the HTTP records are not capped", grown/mib)
		}
		atCap(t, res, "plugins.settings.hoard.max_http_requests")
	})

	t.Run("http_response_headers_count_against_the_cap", func(t *testing.T) {
		atCap(t, call(t, "hoard_fetch", map[string]any{"url": records.URL + "/headers"}), "plugins.settings.hoard.max_http_header_bytes")
		if a := answer(t, call(t, "hoard_fetch", map[string]any{"url": records.URL + "/small"})); a.Status != http.StatusNoContent {
			t.Errorf("a response under the cap: status %d", a.Status)
		}
	})

	t.Run("http_connections_count_against_the_cap", func(t *testing.T) {
		waitCompiled(t, holdWasm)
		waitOpen := func(t *testing.T, n int64) {
			t.Helper()
			for deadline := time.Now().Add(time.Minute); held.open.Load() != n; time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%d connections open at the server, waiting for %d", held.open.Load(), n)
				}
			}
		}
		fetchHeld := func(ctx context.Context) (*mcp.CallToolResult, error) {
			return s.session.CallTool(ctx, &mcp.CallToolParams{Name: "hold_hoard_fetch", Arguments: map[string]any{"url": "https://" + heldHost + "/"}})
		}
		// Two calls hold a connection each until cancelled.
		hctx, cancelHolders := context.WithCancel(ctx)
		var holders sync.WaitGroup
		for n := range int64(2) {
			holders.Go(func() { fetchHeld(hctx) })
			waitOpen(t, n+1)
		}
		// Six more at once: each is refused, none gets a connection.
		var wg sync.WaitGroup
		results := make([]*mcp.CallToolResult, 6)
		for i := range results {
			wg.Go(func() {
				res, err := fetchHeld(ctx)
				if err != nil {
					t.Errorf("protocol error: %v", err)
				}
				results[i] = res
			})
		}
		wg.Wait()
		t.Logf("at most %d connections open at once", held.max.Load())
		if m := held.max.Load(); m > 2 {
			t.Errorf("the plugin held %d connections open at once, over max_http_connections 2", m)
		}
		for _, res := range results {
			if res != nil {
				atCap(t, res, "plugins.settings.hold.max_http_connections")
			}
		}
		// Calls that end take their connections with them.
		cancelHolders()
		holders.Wait()
		waitOpen(t, 0)
	})
}

// TestAbusePluginLimitsInspect: `plugboard plugin inspect` shows the caps a
// plugin runs under and the settings that change them.
func TestAbusePluginLimitsInspect(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a plugin and the binary")
	}
	_, wasm := buildtest.Plugins(t, "testdata/plugins/hoard")
	out, errOut, code := runPB(t, t.TempDir(), cleanEnv(), "plugin", "inspect", wasm["hoard"])
	if code != 0 {
		t.Fatalf("inspect: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"limits", "max_var_bytes", "max_vars", "max_log_bytes", "max_notification_bytes",
		"max_http_requests", "max_http_connections", "max_http_header_bytes", "plugins.settings.hoard."} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect does not show %s:\n%s", want, out)
		}
	}
	out, errOut, code = runPB(t, t.TempDir(), cleanEnv(), "plugin", "inspect", "--json", wasm["hoard"])
	var got struct {
		Limits map[string]int64 `json:"limits"`
	}
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil {
		t.Fatalf("inspect --json: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	if got.Limits["max_var_bytes"] != 1<<20 || got.Limits["max_vars"] <= 0 || got.Limits["max_http_connections"] <= 0 {
		t.Errorf("inspect --json limits %v", got.Limits)
	}

	// With the configuration file serve would read, the caps in force.
	conf := filepath.Join(t.TempDir(), "plugboard.json")
	if err := os.WriteFile(conf, []byte(`{"plugins": {"max_instances": 3, "settings": {"hoard": {"max_vars": 10, "max_var_bytes": "64KiB", "max_http_connections": 2}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = runPB(t, t.TempDir(), cleanEnv(), "plugin", "inspect", "--json", "--config", conf, wasm["hoard"])
	got.Limits = nil
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil {
		t.Fatalf("inspect --json --config: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	want := map[string]int64{"max_vars": 10, "max_var_bytes": 64 << 10, "max_http_connections": 2, "max_instances": 3, "max_log_bytes": 1 << 20}
	for k, v := range want {
		if got.Limits[k] != v {
			t.Errorf("inspect --config: %s = %d, want %d (%v)", k, got.Limits[k], v, got.Limits)
		}
	}
}
