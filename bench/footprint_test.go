package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/conformance/clients"
	"github.com/plugboard/plugboard/host/plugin"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// BenchmarkFootprint measures plugboard the way users run it: `plugboard
// serve` with default flags (background warm-up on, the decision log on)
// serving every first-party plugin, next to the native go-sdk echo server
// (bench/nativeecho) and, when the pinned Node.js is installed, the
// reference TypeScript server @modelcontextprotocol/server-everything
// (ts-client/echo also through the official TypeScript SDK client, with
// plugboard serving echo alone). Each sub-benchmark does its whole
// measurement once per iteration (fixed call counts; `-benchtime 1x` runs
// each once) and reports the last iteration's figures as metrics; the
// last, summary, prints the seven rows (issue 31) with their goals
// as one table, and every other row as a second. docs/BENCHMARKS.md
// section 11 records the figures.
func BenchmarkFootprint(b *testing.B) {
	t := &footprintTable{goals: newGoalRows()}
	// summary prints the seven rows as one table, then every other
	// row measured above as a second one (a parent benchmark's own log is
	// not printed once it has sub-benchmarks).
	defer b.Run("summary", func(b *testing.B) {
		for b.Loop() {
		}
		t.print()
	})

	// idle-rss: process start, initialize, tools/list, then the settle of
	// waitSettled; RSS of the idle server.
	for _, n := range []int{1, 7, 30} {
		b.Run(fmt.Sprintf("idle-rss/plugboard-%d", n), func(b *testing.B) {
			dir, count := footprintPlugins(b, n)
			bin := plugboardBinary(b)
			var rss float64
			for b.Loop() {
				srv := startRPC(b, bin, "serve", "--plugins", dir, "--data", b.TempDir())
				if got := srv.toolCount(b); got < count {
					b.Fatalf("tools/list lists %d tools, want at least %d", got, count)
				}
				rss = srv.waitSettled(b, n)
				srv.stop()
			}
			b.ReportMetric(rss, "rss-MiB")
			t.add("RSS idle: 1 / 7 / 30 plugins | native go-sdk", fmt.Sprintf("%.1f MiB", rss), "")
		})
	}
	b.Run("idle-rss/native-go-sdk", func(b *testing.B) {
		bin := nativeEchoBinary(b)
		var rss float64
		for b.Loop() {
			srv := startRPC(b, bin)
			srv.toolCount(b)
			rss = srv.waitSettled(b, 0)
			srv.stop()
		}
		b.ReportMetric(rss, "rss-MiB")
		t.add("RSS idle: 1 / 7 / 30 plugins | native go-sdk", "", fmt.Sprintf("%.1f MiB", rss))
	})

	// calls: 2,000 sequential tools/call echo with the 1 KiB argument over
	// stdio through a plain JSON-RPC client, plugboard (every first-party
	// plugin) and the native go-sdk server alternating call by call so that
	// load drift hits both; p50 of each, their ratio, and each process's RSS
	// after the calls.
	b.Run("calls/plugboard-vs-native", func(b *testing.B) {
		dir, _ := footprintPlugins(b, 7)
		bin, native := plugboardBinary(b), nativeEchoBinary(b)
		var pbRSS, nRSS float64
		var pbP50, nP50 time.Duration
		for b.Loop() {
			pb := startRPC(b, bin, "serve", "--plugins", dir, "--data", b.TempDir())
			pb.toolCount(b)
			pb.waitSettled(b, 7)
			nv := startRPC(b, native)
			nv.toolCount(b)
			var dp, dn []time.Duration
			for i := range footprintCalls {
				if i%2 == 0 {
					dp = append(dp, pb.timedEcho(b))
					dn = append(dn, nv.timedEcho(b))
				} else {
					dn = append(dn, nv.timedEcho(b))
					dp = append(dp, pb.timedEcho(b))
				}
			}
			pbP50, nP50 = median(dp), median(dn)
			pbRSS, nRSS = pb.rss(b), nv.rss(b)
			pb.stop()
			nv.stop()
		}
		b.ReportMetric(pbRSS, "plugboard-rss-MiB")
		b.ReportMetric(nRSS, "native-rss-MiB")
		b.ReportMetric(float64(pbP50.Nanoseconds()), "plugboard-p50-ns")
		b.ReportMetric(float64(nP50.Nanoseconds()), "native-p50-ns")
		b.ReportMetric(float64(pbP50)/float64(nP50), "ratio-p50")
		t.add(fmt.Sprintf("RSS after %d echo calls: 7 plugins | native go-sdk / Node everything", footprintCalls),
			fmt.Sprintf("%.1f MiB", pbRSS), fmt.Sprintf("%.1f MiB", nRSS))
		t.add("echo 1 KiB p50, plain JSON-RPC: 7 plugins | native (ratio) / Node",
			fmtDur(pbP50), fmt.Sprintf("%s (x%.2f)", fmtDur(nP50), float64(pbP50)/float64(nP50)))
		r := float64(pbP50) / float64(nP50)
		t.goal(goalEchoStdio, fmtDur(pbP50), fmtDur(nP50), xRatio(r), r <= 1.1)
	})

	// http/8-sessions: streamable HTTP, 8 concurrent go-sdk sessions,
	// calls/s of plugboard (every first-party plugin) and native
	// (benchHTTPSessions).
	b.Run("http/8-sessions", func(b *testing.B) { benchHTTPSessions(b, t) })

	// rss/warmed: RSS 20 s after start, every plugin called once
	// (benchRSSWarmed).
	b.Run("rss/warmed", func(b *testing.B) { benchRSSWarmed(b, t) })

	// calls/node-server-everything: the same 2,000 calls to the reference
	// TypeScript server's echo tool ({"message": ...}), RSS after them.
	b.Run("calls/node-server-everything", func(b *testing.B) {
		node, script := serverEverything(b)
		var rss float64
		var p50 time.Duration
		for b.Loop() {
			srv := startRPC(b, node, script, "stdio")
			srv.toolCount(b)
			var ds []time.Duration
			args := json.RawMessage(`{"message":"` + echoText + `"}`)
			for range footprintCalls {
				t0 := time.Now()
				srv.call(b, "echo", args, echoText)
				ds = append(ds, time.Since(t0))
			}
			p50 = median(ds)
			rss = srv.rss(b)
			srv.stop()
		}
		b.ReportMetric(rss, "rss-MiB")
		b.ReportMetric(float64(p50.Nanoseconds()), "p50-ns")
		t.add(fmt.Sprintf("RSS after %d echo calls: 7 plugins | native go-sdk / Node everything", footprintCalls), "", fmt.Sprintf("%.1f MiB", rss))
		t.add("echo 1 KiB p50, plain JSON-RPC: 7 plugins | native (ratio) / Node", "", fmtDur(p50))
	})

	// ts-client/echo: the same 2,000 echo calls through the official
	// TypeScript SDK's Client.callTool, to plugboard serving echo alone,
	// the native go-sdk server and server-everything, alternating call by
	// call (benchTSClientEcho).
	b.Run("ts-client/echo", func(b *testing.B) { benchTSClientEcho(b, t) })

	// ts-client/list-tools-cold: the TypeScript client's first
	// listTools() of the 30 first-party tools in a fresh Node process
	// against a fresh server (benchListToolsCold).
	b.Run("ts-client/list-tools-cold", func(b *testing.B) { benchListToolsCold(b, t) })

	// wasm-size: the size of the .wasm files users install.
	b.Run("wasm-size", func(b *testing.B) {
		_, wasm := buildtest.Plugins(b, "plugins/echo", "plugins/tasks-read")
		sizes := map[string]float64{} // bytes
		for b.Loop() {
			for _, name := range []string{"echo", "tasks-read"} {
				fi, err := os.Stat(wasm[name])
				if err != nil {
					b.Fatal(err)
				}
				sizes[name] = float64(fi.Size())
			}
		}
		for _, name := range []string{"echo", "tasks-read"} {
			b.ReportMetric(sizes[name]/(1<<20), name+"-MiB")
			t.add(".wasm size: echo / tasks-read", fmt.Sprintf("%.2f MiB", sizes[name]/(1<<20)), "")
		}
		t.goal(goalWasm, mb(sizes["echo"]), "", "", sizes["echo"] <= 2.5e6)
	})

	// first-call: process start until the first echo call is answered, all
	// 7 plugins served: an empty data directory (empty compile cache), and
	// a new process on the data directory of a finished run (warm cache).
	b.Run("first-call", func(b *testing.B) {
		dir, _ := footprintPlugins(b, 7)
		bin := plugboardBinary(b)
		first := func(data string) (time.Duration, *rpcServer) {
			t0 := time.Now()
			srv := startRPC(b, bin, "serve", "--plugins", dir, "--data", data)
			srv.call(b, "echo", echoArgs, echoText)
			return time.Since(t0), srv
		}
		var cold, warm time.Duration
		for b.Loop() {
			data := b.TempDir()
			var srv *rpcServer
			cold, srv = first(data)
			srv.waitSettled(b, 7) // the warm-up fills the compile cache
			srv.stop()
			warm, srv = first(data)
			srv.stop()
		}
		b.ReportMetric(float64(cold.Nanoseconds()), "cold-cache-ns")
		b.ReportMetric(float64(warm.Nanoseconds()), "warm-cache-ns")
		t.add("first echo call from process start: empty / warm compile cache", fmtDur(cold), "")
		t.add("first echo call from process start: empty / warm compile cache", fmtDur(warm), "")
		t.goal(goalFirstWarm, fmtDur(warm), "", "", warm <= 20*time.Millisecond)
		t.goal(goalFirstEmpty, fmtDur(cold), "", "", cold <= 250*time.Millisecond)
	})

	// The in-process rows, from their packages' benchmarks.
	inProcessRows(b, t)
}

// footprintCalls is how many echo calls the calls rows make.
const footprintCalls = 2000

// firstParty is every first-party plugin, as users install them.
var firstParty = []string{
	"plugins/echo", "plugins/textdiff", "plugins/agents", "plugins/tasks-read",
	"plugins/tasks-write", "plugins/tasks-control", "plugins/tasks-workspace",
}

// footprintPlugins returns a plugin directory of n plugins and the number
// of tools at least served: 1 is echo alone, 7 every first-party plugin,
// more adds n-7 copies of echo.wasm whose manifest section (abi.
// ManifestSection) is rewritten with a distinct plugin name (echo-copy-K)
// and tool name (echo_copy_K), so the registry serves each as its own
// plugin (its own compiled module, instance pool and tools).
func footprintPlugins(tb testing.TB, n int) (dir string, tools int) {
	tb.Helper()
	if n == 1 {
		dir, _ = buildtest.Plugins(tb, "plugins/echo")
		return dir, 1
	}
	dir, wasm := buildtest.Plugins(tb, firstParty...)
	if n <= len(firstParty) {
		return dir, len(firstParty)
	}
	src, err := os.ReadFile(wasm["echo"])
	if err != nil {
		tb.Fatal(err)
	}
	section, ok, err := plugin.CustomSection(src, abi.ManifestSection)
	if err != nil || !ok {
		tb.Fatalf("echo.wasm has no %s section (%v)", abi.ManifestSection, err)
	}
	for k := 1; k <= n-len(firstParty); k++ {
		var m map[string]any
		if err := json.Unmarshal(section, &m); err != nil {
			tb.Fatal(err)
		}
		m["plugin"].(map[string]any)["name"] = fmt.Sprintf("echo-copy-%d", k)
		for _, tool := range m["tools"].([]any) {
			tool.(map[string]any)["name"] = fmt.Sprintf("echo_copy_%d", k)
		}
		content, err := json.Marshal(m)
		if err != nil {
			tb.Fatal(err)
		}
		out, err := plugin.SetCustomSection(src, abi.ManifestSection, content)
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("echo-copy-%d.wasm", k)), out, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return dir, n
}

// serverEverything installs the pinned Node.js and MCP clients
// (conformance/clients/install.sh) and returns node and the entry point of
// @modelcontextprotocol/server-everything, or skips.
func serverEverything(b *testing.B) (node, script string) {
	b.Helper()
	dir, err := clients.Install(b.Context(), buildtest.Root(b))
	if err != nil {
		b.Skipf("Node.js reference row skipped: %v", err)
	}
	script = filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(script); err != nil {
		b.Skipf("Node.js reference row skipped: @modelcontextprotocol/server-everything is not installed: %v", err)
	}
	return filepath.Join(dir, "node_modules", ".bin", "node"), script
}

// rpcServer is an MCP server child process driven over stdio by a plain
// JSON-RPC client: one request at a time, newline-delimited JSON, no SDK.
type rpcServer struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *clitest.SyncBuffer
	data   string // --data of a plugboard serve, "" otherwise
	// started is the time just before the process was started.
	started time.Time
	id      int
	done    bool
}

// startRPC starts the command and completes the MCP initialize handshake.
func startRPC(tb testing.TB, name string, args ...string) *rpcServer {
	tb.Helper()
	s := &rpcServer{cmd: exec.Command(name, args...), stderr: &clitest.SyncBuffer{}}
	for i, a := range args {
		if a == "--data" && i+1 < len(args) {
			s.data = args[i+1]
		}
	}
	s.cmd.Stderr = s.stderr
	var err error
	if s.in, err = s.cmd.StdinPipe(); err != nil {
		tb.Fatal(err)
	}
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	s.out = bufio.NewReaderSize(stdout, 64<<10)
	s.started = time.Now()
	if err := s.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.stop)
	s.request(tb, "initialize", json.RawMessage(`{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench-footprint","version":"1"}}`))
	s.write(tb, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	return s
}

func (s *rpcServer) write(tb testing.TB, line []byte) {
	tb.Helper()
	if _, err := s.in.Write(append(line, '\n')); err != nil {
		tb.Fatalf("write to %s: %v\nstderr:\n%s", filepath.Base(s.cmd.Path), err, s.stderr.String())
	}
}

// request sends one request and returns its result, skipping the
// notifications and server requests the server sends meanwhile.
func (s *rpcServer) request(tb testing.TB, method string, params json.RawMessage) json.RawMessage {
	tb.Helper()
	s.id++
	req, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": s.id, "method": method, "params": params})
	if err != nil {
		tb.Fatal(err)
	}
	s.write(tb, req)
	for {
		line, err := s.out.ReadBytes('\n')
		if err != nil {
			tb.Fatalf("%s: read from %s: %v\nstderr:\n%.2000s", method, filepath.Base(s.cmd.Path), err, s.stderr.String())
		}
		var resp struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(line, &resp); err != nil {
			tb.Fatalf("%s: bad line %.300q: %v", method, line, err)
		}
		if resp.Method != "" || string(resp.ID) != strconv.Itoa(s.id) {
			continue // a notification or a request of the server
		}
		if resp.Error != nil {
			tb.Fatalf("%s: error %s", method, resp.Error)
		}
		return resp.Result
	}
}

// call calls a tool and checks that its answer holds want.
func (s *rpcServer) call(tb testing.TB, tool string, args json.RawMessage, want string) {
	tb.Helper()
	params, _ := json.Marshal(map[string]any{"name": tool, "arguments": args})
	res := s.request(tb, "tools/call", params)
	var r struct {
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(res, &r); err != nil || r.IsError || !bytes.Contains(res, []byte(want)) {
		tb.Fatalf("tools/call %s: unexpected result %.300s", tool, res)
	}
}

func (s *rpcServer) timedEcho(tb testing.TB) time.Duration {
	t0 := time.Now()
	s.call(tb, "echo", echoArgs, echoText)
	return time.Since(t0)
}

// toolCount lists the tools, every page.
func (s *rpcServer) toolCount(tb testing.TB) int {
	tb.Helper()
	n := 0
	cursor := ""
	for {
		params := json.RawMessage(`{}`)
		if cursor != "" {
			params, _ = json.Marshal(map[string]string{"cursor": cursor})
		}
		var page struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(s.request(tb, "tools/list", params), &page); err != nil {
			tb.Fatal(err)
		}
		n += len(page.Tools)
		if cursor = page.NextCursor; cursor == "" {
			return n
		}
	}
}

// rss is the process's VmRSS in MiB.
func (s *rpcServer) rss(tb testing.TB) float64 {
	tb.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		tb.Fatalf("read VmRSS: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				tb.Fatalf("parse %q: %v", line, err)
			}
			return kb / 1024
		}
	}
	tb.Fatal("no VmRSS in /proc/PID/status")
	return 0
}

// waitSettled waits until start-up has settled and returns the RSS then:
// first, for a plugboard serve, until the background warm-up has written
// compiled code for all plugins (one compile-cache file each under
// DATA/compiled, at most 10 minutes); then it samples VmRSS every 250 ms
// until 8 consecutive samples (2 s) stay within 1% of each other, at most
// 30 s, and returns the last sample.
func (s *rpcServer) waitSettled(tb testing.TB, plugins int) float64 {
	tb.Helper()
	if s.data != "" && plugins > 0 {
		compiled := filepath.Join(s.data, "compiled")
		deadline := time.Now().Add(10 * time.Minute)
		for countFiles(compiled) < plugins {
			if time.Now().After(deadline) {
				tb.Fatalf("compile cache %s holds %d files after 10 minutes, want %d", compiled, countFiles(compiled), plugins)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	var window []float64
	deadline := time.Now().Add(30 * time.Second)
	for {
		window = append(window, s.rss(tb))
		if len(window) > 8 {
			window = window[1:]
		}
		if len(window) == 8 && slices.Max(window) <= slices.Min(window)*1.01 || time.Now().After(deadline) {
			return window[len(window)-1]
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// stop closes stdin, waits up to 10 s for the process to exit, then kills it.
func (s *rpcServer) stop() {
	if s.done {
		return
	}
	s.done = true
	_ = s.in.Close()
	exited := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-exited
	}
}

func fmtDur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
	}
}

// footprintTable collects BenchmarkFootprint's rows: the seven
// (goals, see goal) and the others (add), where a figure added to a row
// already there joins its cell with " / ".
type footprintTable struct {
	mu    sync.Mutex
	goals []goalRow
	rows  [][3]string
}

func (t *footprintTable) add(row, plugboard, reference string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	join := func(a, b string) string {
		if a == "" || b == "" {
			return a + b
		}
		return a + " / " + b
	}
	for i := range t.rows {
		if t.rows[i][0] == row {
			t.rows[i][1] = join(t.rows[i][1], plugboard)
			t.rows[i][2] = join(t.rows[i][2], reference)
			return
		}
	}
	t.rows = append(t.rows, [3]string{row, plugboard, reference})
}

// print writes both tables to stdout: go test cuts a benchmark's log
// (b.Log) after 10 lines, and the two tables are longer.
func (t *footprintTable) print() {
	t.writeGoals(os.Stdout)
	t.mu.Lock()
	defer t.mu.Unlock()
	cells := [][]string{{"row", "plugboard", "reference"}}
	for _, r := range t.rows {
		cells = append(cells, r[:])
	}
	writeCells(os.Stdout, "footprint, other rows:", cells)
}
