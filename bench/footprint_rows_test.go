package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/conformance/clients"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// The http/8-sessions row: sessions go-sdk clients, each its own session,
// httpWarmup calls each, then httpCalls calls each, timed; httpRounds
// rounds alternating plugboard and native.
const (
	httpSessions = 8
	httpWarmup   = 50
	httpCalls    = 500
	httpRounds   = 5
)

// benchHTTPSessions is BenchmarkFootprint's http/8-sessions: `plugboard
// serve --http 127.0.0.1:PORT` with every first-party plugin and default
// flags otherwise (loopback needs no token; the caller is the local
// SUPERVISOR), against bench/nativeecho -http (the go-sdk's
// mcp.NewStreamableHTTPHandler). Each round connects httpSessions go-sdk
// clients (mcp.StreamableClientTransport, protocol 2025-11-25 so that each
// holds an Mcp-Session-Id session; each its own http.Transport, as separate
// clients would have), makes httpWarmup echo calls (1 KiB) on every
// session concurrently, then times httpCalls calls on every session
// concurrently: calls/s is all of them over the wall time. Rounds
// alternate plugboard and native (the first one changing every round) so
// load drift hits both; the median round of each is reported.
func benchHTTPSessions(b *testing.B, t *footprintTable) {
	dir, _ := footprintPlugins(b, 7)
	bin, native := plugboardBinary(b), nativeEchoBinary(b)
	var pbRate, nvRate float64
	var pbRates, nvRates []float64
	for b.Loop() {
		data := b.TempDir()
		pb := startHTTPServer(b, bin, "serve", "--http", "ADDR", "--plugins", dir, "--data", data)
		// Measured once the background warm-up has compiled every plugin,
		// as a server that has been up for a while.
		waitFiles(b, filepath.Join(data, "compiled"), 7)
		nv := startHTTPServer(b, native, "-http", "ADDR")
		pbRates, nvRates = nil, nil
		for r := range httpRounds {
			both := []func(){
				func() { pbRates = append(pbRates, httpRound(b, pb)) },
				func() { nvRates = append(nvRates, httpRound(b, nv)) },
			}
			if r%2 == 1 {
				slices.Reverse(both)
			}
			for _, f := range both {
				f()
			}
		}
		pbRate, nvRate = medianOf(pbRates), medianOf(nvRates)
		pb.stop()
		nv.stop()
	}
	b.ReportMetric(pbRate, "plugboard-calls/s")
	b.ReportMetric(nvRate, "native-calls/s")
	b.ReportMetric(pbRate/nvRate, "ratio")
	b.Logf("calls/s by round: plugboard %.0f, native %.0f", pbRates, nvRates)
	t.goal(goalHTTP, fmt.Sprintf("%.0f calls/s", pbRate), fmt.Sprintf("%.0f calls/s", nvRate),
		xRatio(pbRate/nvRate), pbRate/nvRate >= 1.0)
}

// httpServer is an MCP server child process serving streamable HTTP.
type httpServer struct {
	cmd    *exec.Cmd
	url    string // http://ADDR/mcp
	stderr *clitest.SyncBuffer
	done   bool
}

// startHTTPServer starts the command with the argument "ADDR" replaced by
// 127.0.0.1 and a free port, and waits until the port accepts connections.
func startHTTPServer(b *testing.B, name string, args ...string) *httpServer {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	args = slices.Clone(args)
	for i, a := range args {
		if a == "ADDR" {
			args[i] = addr
		}
	}
	s := &httpServer{cmd: exec.Command(name, args...), url: "http://" + addr + "/mcp", stderr: &clitest.SyncBuffer{}}
	s.cmd.Env = benchEnv() // no token from the caller's environment
	s.cmd.Stderr = s.stderr
	if err := s.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.stop)
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return s
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s does not listen on %s after 60 s\nstderr:\n%.2000s", filepath.Base(name), addr, s.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop interrupts the process (a graceful shutdown), waits up to 10 s,
// then kills it.
func (s *httpServer) stop() {
	if s.done {
		return
	}
	s.done = true
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	exited := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-exited
	}
}

// httpRound connects httpSessions clients to s, warms them up and returns
// the calls per second of httpCalls concurrent calls per session.
func httpRound(b *testing.B, s *httpServer) float64 {
	b.Helper()
	ctx, cancel := context.WithTimeout(b.Context(), 5*time.Minute)
	defer cancel()
	sessions := make([]*mcp.ClientSession, httpSessions)
	transports := make([]*http.Transport, httpSessions)
	for i := range sessions {
		transports[i] = &http.Transport{MaxIdleConnsPerHost: 4}
		client := mcp.NewClient(&mcp.Implementation{Name: "bench-http", Version: "1"}, nil)
		var err error
		sessions[i], err = client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url,
			HTTPClient: &http.Client{Transport: transports[i]}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			b.Fatalf("connect %s: %v\nstderr:\n%.2000s", s.url, err, s.stderr.String())
		}
	}
	defer func() {
		for i, cs := range sessions {
			_ = cs.Close()
			transports[i].CloseIdleConnections()
		}
	}()
	// run makes n echo calls on every session at once; the first error.
	run := func(n int) error {
		errs := make([]error, len(sessions))
		var wg sync.WaitGroup
		for i, cs := range sessions {
			wg.Go(func() {
				for range n {
					res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: echoArgs})
					if err != nil {
						errs[i] = err
						return
					}
					sc, _ := res.StructuredContent.(map[string]any)
					if res.IsError || sc["text"] != echoText {
						errs[i] = fmt.Errorf("unexpected answer %.300v", res.Content)
						return
					}
				}
			})
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	if err := run(httpWarmup); err != nil {
		b.Fatalf("%s: warm-up: %v\nstderr:\n%.2000s", s.url, err, s.stderr.String())
	}
	t0 := time.Now()
	if err := run(httpCalls); err != nil {
		b.Fatalf("%s: %v\nstderr:\n%.2000s", s.url, err, s.stderr.String())
	}
	return float64(httpSessions*httpCalls) / time.Since(t0).Seconds()
}

// waitFiles waits until dir holds at least n regular files (at most 10
// minutes): DATA/compiled, where plugboard's warm-up writes one compiled
// module per plugin.
func waitFiles(b *testing.B, dir string, n int) {
	b.Helper()
	deadline := time.Now().Add(10 * time.Minute)
	for countFiles(dir) < n {
		if time.Now().After(deadline) {
			b.Fatalf("%s holds %d files after 10 minutes, want %d", dir, countFiles(dir), n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// warmCall is one call of rss/warmed: a cheap, harmless tool of each
// first-party plugin. An envelope error answer (isError with the plugin's
// {"code": ...}) is as good as a result: the plugin was instantiated and ran.
type warmCall struct {
	plugin, tool string
	args         json.RawMessage
}

var warmCalls = []warmCall{
	{"echo", "echo", echoArgs},
	{"textdiff", "text_diff", json.RawMessage(`{"old_text":"a\n","new_text":"b\n"}`)},
	{"agents", "agent_get_status", json.RawMessage(`{}`)},
	{"tasks-read", "list_projects", json.RawMessage(`{}`)},
	// No task or attempt has this id: the plugin answers not_found and
	// changes nothing.
	{"tasks-write", "update_task", json.RawMessage(`{"task_id":"00000000-0000-0000-0000-000000000000","title":"x"}`)},
	{"tasks-control", "stop_attempt", json.RawMessage(`{"attempt_id":"00000000-0000-0000-0000-000000000000"}`)},
	{"tasks-workspace", "get_attempt_changes", json.RawMessage(`{"attempt_id":"00000000-0000-0000-0000-000000000000"}`)},
}

// rssWarmedAfter is when rss/warmed samples VmRSS, from process start.
const rssWarmedAfter = 20 * time.Second

// benchRSSWarmed is BenchmarkFootprint's rss/warmed: `plugboard serve`
// with every first-party plugin and default flags (fresh --data), one call
// to a tool of every plugin right after initialize (warmCalls), then
// VmRSS rssWarmedAfter after the process started; bench/nativeecho the
// same with one echo call. Both run at the same time (they are idle long
// before the sample).
func benchRSSWarmed(b *testing.B, t *footprintTable) {
	dir, _ := footprintPlugins(b, 7)
	bin, native := plugboardBinary(b), nativeEchoBinary(b)
	var pbRSS, nvRSS float64
	for b.Loop() {
		pb := startRPC(b, bin, "serve", "--plugins", dir, "--data", b.TempDir())
		nv := startRPC(b, native)
		for _, c := range warmCalls {
			params, _ := json.Marshal(map[string]any{"name": c.tool, "arguments": c.args})
			res := pb.request(b, "tools/call", params)
			var r struct {
				IsError bool `json:"isError"`
			}
			if err := json.Unmarshal(res, &r); err != nil || r.IsError && !bytes.Contains(res, []byte(`\"code\":`)) {
				b.Fatalf("%s (%s): unexpected answer %.300s", c.tool, c.plugin, res)
			}
		}
		nv.call(b, "echo", echoArgs, echoText)
		time.Sleep(time.Until(pb.started.Add(rssWarmedAfter)))
		pbRSS = pb.rss(b)
		time.Sleep(time.Until(nv.started.Add(rssWarmedAfter)))
		nvRSS = nv.rss(b)
		pb.stop()
		nv.stop()
	}
	b.ReportMetric(pbRSS, "plugboard-rss-MiB")
	b.ReportMetric(nvRSS, "native-rss-MiB")
	const mib = 1 << 20
	t.goal(goalRSSWarmed, fmt.Sprintf("%s (%.1f MiB)", mb(pbRSS*mib), pbRSS), fmt.Sprintf("%s (%.1f MiB)", mb(nvRSS*mib), nvRSS),
		xRatio(pbRSS/nvRSS), pbRSS*mib <= 60e6)
}

// listToolsRuns is how many cold runs ts-client/list-tools-cold makes.
const listToolsRuns = 7

// benchListToolsCold is BenchmarkFootprint's ts-client/list-tools-cold:
// conformance/clients/bench-listtools-cold.mjs with `plugboard serve
// --plugins DIR --data FRESH` (every first-party plugin: 30 tools; default
// flags, so the background warm-up runs while the client lists): the
// official TypeScript client's Client.listTools() as the first request
// after connect, a fresh Node process and a fresh server each run, p50 over
// listToolsRuns runs, and the plain JSON-RPC tools/list of a fresh server
// as the floor. The same with --warm=false (how docs/BENCHMARKS.md section
// 10 measured the 117 ms) goes to the table of other rows.
func benchListToolsCold(b *testing.B, t *footprintTable) {
	dir, err := clients.Install(b.Context(), buildtest.Root(b))
	if err != nil {
		t.notMeasured(goalListTools, fmt.Sprintf("Node.js clients not installed (%v)", err))
		b.Skipf("TypeScript-client row skipped: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		t.notMeasured(goalListTools, "@modelcontextprotocol/sdk not installed")
		b.Skipf("TypeScript-client row skipped: @modelcontextprotocol/sdk is not installed: %v", err)
	}
	plugins, _ := footprintPlugins(b, 7)
	bin := plugboardBinary(b)
	var def, nowarm listToolsCold
	for b.Loop() {
		def = runListToolsCold(b, dir, bin, "serve", "--plugins", plugins, "--data", "-")
		nowarm = runListToolsCold(b, dir, bin, "serve", "--plugins", plugins, "--data", "-", "--warm=false")
	}
	for _, r := range []listToolsCold{def, nowarm} {
		if r.Tools < 30 || r.PlainTools != r.Tools {
			b.Fatalf("the client listed %d tools, the plain client %d; want the same, at least 30", r.Tools, r.PlainTools)
		}
	}
	ts, plain := medianOf(def.TS), medianOf(def.Plain)
	b.ReportMetric(ts*1e6, "ts-p50-ns")
	b.ReportMetric(plain*1e6, "plain-p50-ns")
	b.ReportMetric(medianOf(nowarm.TS)*1e6, "ts-nowarm-p50-ns")
	b.Logf("%d tools, %d runs, Node.js %s, @modelcontextprotocol/sdk %s; listTools() ms: %.1f; plain: %.1f; --warm=false: %.1f, plain %.1f",
		def.Tools, listToolsRuns, def.Node, def.SDK, def.TS, def.Plain, nowarm.TS, nowarm.Plain)
	ms := func(v float64) string { return fmtDur(time.Duration(v * float64(time.Millisecond))) }
	t.goal(goalListTools, ms(ts), "plain tools/list "+ms(plain), xRatio(ts/plain), ts <= 60)
	t.add(fmt.Sprintf("TS client listTools() cold, %d tools, p50: --warm=false | plain tools/list", def.Tools),
		ms(medianOf(nowarm.TS)), ms(medianOf(nowarm.Plain)))
}

// listToolsCold is the output of bench-listtools-cold.mjs (milliseconds).
type listToolsCold struct {
	Node       string    `json:"node"`
	SDK        string    `json:"sdk"`
	Tools      int       `json:"tools"`
	PlainTools int       `json:"plain_tools"`
	TS         []float64 `json:"ts_ms"`
	Plain      []float64 `json:"plain_ms"`
}

// runListToolsCold runs conformance/clients/bench-listtools-cold.mjs with
// the Node.js and packages of clientsDir for the server command bin args
// ("-" after --data: a fresh data directory each run).
func runListToolsCold(b *testing.B, clientsDir, bin string, args ...string) listToolsCold {
	b.Helper()
	spec, err := json.Marshal(map[string]any{"command": bin, "args": args, "runs": listToolsRuns})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(b.Context(), 10*time.Minute)
	defer cancel()
	script := filepath.Join(buildtest.Root(b), "conformance", "clients", "bench-listtools-cold.mjs")
	cmd := exec.CommandContext(ctx, filepath.Join(clientsDir, "node_modules", ".bin", "node"), script, string(spec))
	cmd.Env = append(os.Environ(), "MCP_CLIENTS_DIR="+clientsDir)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		b.Fatalf("bench-listtools-cold.mjs: %v\nstderr:\n%.4000s", err, errb.String())
	}
	var res listToolsCold
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || len(res.TS) != listToolsRuns || len(res.Plain) != listToolsRuns {
		b.Fatalf("bench-listtools-cold.mjs: bad output %.500q (%v)\nstderr:\n%.4000s", out.String(), err, errb.String())
	}
	return res
}
