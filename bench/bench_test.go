package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/plugin"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// Every figure is a ratio between paths measured side by side in one run
// (sub-benchmarks of one Benchmark function, same process, same machine
// state); docs/BENCHMARKS.md records them with the command that reproduces
// each one.

// echoText is the 1 KiB argument of every echo call: plain ASCII, so no path
// pays for escaping.
var echoText = strings.Repeat("abcdefghijklmnopqrstuvwxyz012345", 32)

var (
	// echoArgs are the tool arguments, {"text": "<1024 chars>"}.
	echoArgs = json.RawMessage(`{"text":"` + echoText + `"}`)
	// echoInput is the input of the plugin's call export: the CallRequest
	// the dispatcher sends (a context object makes the guest answer with
	// structuredContent only).
	echoInput = []byte(`{"params":{"name":"echo","arguments":` + string(echoArgs) + `},"context":{}}`)

	// echoCode is 1 KiB of Go source: its newlines, tabs and quotes are
	// escaped in the JSON of the call.
	echoCode = strings.Repeat("\tif err != nil {\n\t\treturn fmt.Errorf(\"read %q: %w\", name, err)\n\t}\n", 16)[:1024]
	// echoCodeInput is the call export's input for {"text": echoCode}.
	echoCodeInput = func() []byte {
		args, _ := json.Marshal(map[string]string{"text": echoCode})
		return []byte(`{"params":{"name":"echo","arguments":` + string(args) + `},"context":{}}`)
	}()
)

// latencySamples is how many individually timed calls feed median-ns and
// p99-ns.
const latencySamples = 2000

// reportLatency times latencySamples calls one by one, outside the ns/op
// measurement, and reports their median and 99th percentile.
func reportLatency(b *testing.B, call func()) {
	b.Helper()
	d := make([]time.Duration, latencySamples)
	for i := range d {
		t0 := time.Now()
		call()
		d[i] = time.Since(t0)
	}
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2]), "median-ns")
	b.ReportMetric(float64(d[len(d)*99/100]), "p99-ns")
}

// checkEchoOutput fails unless out is a call result whose structuredContent
// is {"text": echoText}.
func checkEchoOutput(tb testing.TB, out []byte) {
	tb.Helper()
	var res struct {
		IsError           bool `json:"isError"`
		StructuredContent struct {
			Text string `json:"text"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal(out, &res); err != nil || res.IsError || res.StructuredContent.Text != echoText {
		tb.Fatalf("unexpected echo output (err %v): %.300s", err, out)
	}
}

// nativeEcho is what the echo plugin does, as a plain Go function: decode
// the CallRequest, decode the arguments, encode the result.
func nativeEcho(input []byte) ([]byte, error) {
	var req struct {
		Params struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"params"`
		Context json.RawMessage `json:"context"`
	}
	if err := json.Unmarshal(input, &req); err != nil {
		return nil, err
	}
	var in struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
		return nil, err
	}
	type output struct {
		Text string `json:"text"`
	}
	return json.Marshal(struct {
		StructuredContent output `json:"structuredContent"`
	}{output{Text: in.Text}})
}

// echoSet loads the echo plugin in process as serve does (registry and call
// pipeline, with an in-memory compile cache) and returns the set and the
// compiled plugin serving echo.
func echoSet(b *testing.B) (*plugin.Set, *plugin.Plugin) {
	b.Helper()
	ctx := context.Background()
	dir, _ := buildtest.Plugins(b, "plugins/echo")
	engine, err := plugin.NewEngine(ctx, plugin.Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = engine.Close(ctx) })
	set, err := plugin.LoadDir(ctx, engine, dir, plugin.LoadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = set.Close(ctx) })
	p, err := set.Plugin(ctx, "echo")
	if err != nil {
		b.Fatal(err)
	}
	return set, p
}

// BenchmarkEcho measures one echo call with a 1 KiB argument in process:
// through plugboard's dispatcher (schema check, sandboxed wasm call, result
// normalisation), through plugboard's runtime alone, as native Go, and
// through the Extism go-sdk host running the same .wasm.
func BenchmarkEcho(b *testing.B) {
	ctx := context.Background()

	b.Run("plugboard", func(b *testing.B) {
		d, _ := echoSet(b)
		req := plugin.Request{Tool: "echo", Arguments: echoArgs}
		call := func() {
			if res := d.Call(ctx, req); res.IsError() {
				b.Fatalf("echo: %s", res.Structured)
			}
		}
		res := d.Call(ctx, req) // warm: instantiate, resolve the schema (echoSet compiled it)
		if res.IsError() {
			b.Fatalf("echo: %s", res.Structured)
		}
		var out struct{ Text string }
		if err := json.Unmarshal(res.Structured, &out); err != nil || out.Text != echoText {
			b.Fatalf("unexpected echo result: %.300s", res.Structured)
		}
		b.ReportAllocs()
		for b.Loop() {
			call()
		}
		reportLatency(b, call)
	})

	b.Run("plugboard-runtime", func(b *testing.B) {
		_, p := echoSet(b)
		call := func() []byte {
			out, err := p.Call(ctx, abi.ExportCall, echoInput, plugin.CallOptions{})
			if err != nil {
				b.Fatal(err)
			}
			return out
		}
		checkEchoOutput(b, call())
		b.ReportAllocs()
		for b.Loop() {
			call()
		}
		reportLatency(b, func() { call() })
	})

	// The same, with 1 KiB of source code as the text: newlines, tabs and
	// quotes, escaped in JSON, as most agents' arguments are.
	b.Run("plugboard-runtime-code", func(b *testing.B) {
		_, p := echoSet(b)
		call := func() []byte {
			out, err := p.Call(ctx, abi.ExportCall, echoCodeInput, plugin.CallOptions{})
			if err != nil {
				b.Fatal(err)
			}
			return out
		}
		var res struct {
			StructuredContent struct {
				Text string `json:"text"`
			} `json:"structuredContent"`
		}
		if out := call(); json.Unmarshal(out, &res) != nil || res.StructuredContent.Text != echoCode {
			b.Fatalf("unexpected echo output: %.300s", out)
		}
		b.ReportAllocs()
		for b.Loop() {
			call()
		}
		reportLatency(b, func() { call() })
	})

	b.Run("native-go", func(b *testing.B) {
		call := func() []byte {
			out, err := nativeEcho(echoInput)
			if err != nil {
				b.Fatal(err)
			}
			return out
		}
		checkEchoOutput(b, call())
		b.ReportAllocs()
		for b.Loop() {
			call()
		}
		reportLatency(b, func() { call() })
	})

	b.Run("extism-go-sdk", func(b *testing.B) {
		_, wasm := buildtest.Plugins(b, "plugins/echo")
		data, err := os.ReadFile(wasm["echo"])
		if err != nil {
			b.Fatal(err)
		}
		extism.SetLogLevel(extism.LogLevelOff)
		manifest := extism.Manifest{Wasm: []extism.Wasm{extism.WasmData{Data: data, Name: "echo"}}}
		compiled, err := extism.NewCompiledPlugin(ctx, manifest, extism.PluginConfig{EnableWasi: true}, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = compiled.Close(ctx) })
		plugin, err := compiled.Instance(ctx, extism.PluginInstanceConfig{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = plugin.Close(ctx) })
		call := func() []byte {
			rc, out, err := plugin.Call(abi.ExportCall, echoInput)
			if err != nil || rc != 0 {
				b.Fatalf("extism call: rc %d, err %v", rc, err)
			}
			return out
		}
		checkEchoOutput(b, call())
		b.ReportAllocs()
		for b.Loop() {
			call()
		}
		reportLatency(b, func() { call() })
	})
}

// nativeEchoBinary builds bench/nativeecho into a temporary directory.
func nativeEchoBinary(tb testing.TB) string {
	tb.Helper()
	out := filepath.Join(tb.TempDir(), "nativeecho")
	cmd := exec.Command("go", "build", "-o", out, "./bench/nativeecho")
	cmd.Dir = buildtest.Root(tb)
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go build ./bench/nativeecho: %v\n%s", err, b)
	}
	return out
}

// connect starts the server command and connects an MCP client over stdio;
// the returned stop closes the session and waits for the process to exit.
func connect(tb testing.TB, name string, args ...string) (*mcp.ClientSession, func(), error) {
	tb.Helper()
	s, stop, _, err := connectCmd(tb, name, args...)
	return s, stop, err
}

// connectKill is connect whose stop kills the process instead of waiting for
// a graceful exit: a plugboard that is still compiling plugins in the
// background would otherwise finish that compilation first, which makes
// start-up iterations seconds long outside the measured window.
func connectKill(tb testing.TB, name string, args ...string) (*mcp.ClientSession, func(), error) {
	tb.Helper()
	s, stop, cmd, err := connectCmd(tb, name, args...)
	if err != nil {
		return nil, nil, err
	}
	return s, func() {
		_ = cmd.Process.Kill()
		stop()
	}, nil
}

func connectCmd(tb testing.TB, name string, args ...string) (*mcp.ClientSession, func(), *exec.Cmd, error) {
	tb.Helper()
	cmd := exec.Command(name, args...)
	stderr := &clitest.SyncBuffer{}
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("connect %s: %w\nstderr:\n%s", filepath.Base(name), err, stderr.String())
	}
	stop := func() { _ = session.Close() }
	return session, stop, cmd, nil
}

// callEcho calls echo with the 1 KiB argument and checks the answer.
func callEcho(tb testing.TB, s *mcp.ClientSession) {
	res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: echoArgs})
	if err != nil {
		tb.Fatalf("tools/call echo: %v", err)
	}
	if res.IsError {
		tb.Fatalf("tools/call echo returned an error result: %+v", res.Content)
	}
	sc, ok := res.StructuredContent.(map[string]any)
	if !ok || sc["text"] != echoText {
		tb.Fatalf("tools/call echo: unexpected structuredContent %.300v", res.StructuredContent)
	}
}

// BenchmarkStdioEcho measures one tools/call echo round trip over stdio,
// driven by the go-sdk client: the real plugboard binary against a native
// go-sdk server with the same tool compiled in.
func BenchmarkStdioEcho(b *testing.B) {
	servers := []struct {
		name string
		cmd  func(b *testing.B) []string
	}{
		{"plugboard", func(b *testing.B) []string {
			dir, _ := buildtest.Plugins(b, "plugins/echo")
			args := []string{buildtest.Binary(b), "serve", "--plugins", dir, "--data", b.TempDir()}
			if p := os.Getenv("PLUGBOARD_BENCH_CPU_PROFILE"); p != "" {
				args = append(args, "--cpu-profile", p)
			}
			return args
		}},
		{"native-go-sdk", func(b *testing.B) []string {
			return []string{nativeEchoBinary(b)}
		}},
	}
	start := func(b *testing.B, cmd func(b *testing.B) []string) *mcp.ClientSession {
		argv := cmd(b)
		s, stop, err := connect(b, argv[0], argv[1:]...)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(stop)
		for range 10 { // warm: compile and instantiate the plugin, fill the pools
			callEcho(b, s)
		}
		return s
	}
	for _, srv := range servers {
		b.Run(srv.name, func(b *testing.B) {
			s := start(b, srv.cmd)
			for b.Loop() {
				callEcho(b, s)
			}
			reportLatency(b, func() { callEcho(b, s) })
		})
	}
	// Both servers at once, calls alternating (and which goes first
	// alternating too), so drift in the machine's load hits both equally:
	// the ratio metrics are the stdio figure of docs/BENCHMARKS.md. ns/op is
	// one call to each.
	b.Run("interleaved", func(b *testing.B) {
		pb, native := start(b, servers[0].cmd), start(b, servers[1].cmd)
		var tp, tn []time.Duration
		timed := func(s *mcp.ClientSession, into *[]time.Duration) {
			t0 := time.Now()
			callEcho(b, s)
			*into = append(*into, time.Since(t0))
		}
		i := 0
		for b.Loop() {
			if i%2 == 0 {
				timed(pb, &tp)
				timed(native, &tn)
			} else {
				timed(native, &tn)
				timed(pb, &tp)
			}
			i++
		}
		var sp, sn time.Duration
		for k := range tp {
			sp += tp[k]
			sn += tn[k]
		}
		slices.Sort(tp)
		slices.Sort(tn)
		mp, mn := tp[len(tp)/2], tn[len(tn)/2]
		b.ReportMetric(float64(mp), "plugboard-median-ns")
		b.ReportMetric(float64(mn), "native-median-ns")
		b.ReportMetric(float64(mp)/float64(mn), "ratio-median")
		b.ReportMetric(float64(sp)/float64(sn), "ratio-mean")
	})
}

// firstPartyPlugins lists every plugin folder under plugins/, as buildtest
// sources.
func firstPartyPlugins(tb testing.TB) []string {
	tb.Helper()
	entries, err := os.ReadDir(filepath.Join(buildtest.Root(tb), "plugins"))
	if err != nil {
		tb.Fatal(err)
	}
	var srcs []string
	for _, e := range entries {
		// plugins/internal holds packages the plugins share, not a plugin.
		if e.IsDir() && e.Name() != "internal" {
			srcs = append(srcs, "plugins/"+e.Name())
		}
	}
	if len(srcs) == 0 {
		tb.Fatal("no plugins under plugins/")
	}
	return srcs
}

// replicate copies every .wasm file of dir into n subdirectories of a new
// directory. The registry reads every copy's manifest and refuses the
// duplicate tool names, so start-up does n times the discovery work while
// the served tool list stays the same.
func replicate(tb testing.TB, dir string, n int) string {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.wasm"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no .wasm files in %s (%v)", dir, err)
	}
	out := tb.TempDir()
	for i := range n {
		sub := filepath.Join(out, fmt.Sprintf("copy%d", i+1))
		if err := os.Mkdir(sub, 0o755); err != nil {
			tb.Fatal(err)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				tb.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(sub, filepath.Base(f)), data, 0o644); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return out
}

// startUntilList starts a server with a fresh data directory, connects and
// lists its tools, and returns how long that took: process start until
// tools/list is answered. The server is killed afterwards, outside the
// measured time. The benchmark timer runs only inside that window.
func startUntilList(b *testing.B, bin string, args func(data string) []string) time.Duration {
	b.Helper()
	b.StopTimer()
	argv := args(b.TempDir())
	b.StartTimer()
	t0 := time.Now()
	s, stop, err := connectKill(b, bin, argv...)
	if err != nil {
		b.Fatal(err)
	}
	res, err := s.ListTools(context.Background(), nil)
	d := time.Since(t0)
	b.StopTimer()
	defer b.StartTimer()
	if err != nil {
		b.Fatalf("tools/list: %v", err)
	}
	if len(res.Tools) == 0 {
		b.Fatal("tools/list is empty")
	}
	stop()
	return d
}

// BenchmarkStartup measures process start until tools/list is answered:
// exec, MCP initialize, tools/list. plugboard serves every first-party
// plugin with an empty data directory (so an empty compile cache) each
// iteration: the plugin set once (plugboard-1x; -no-warm without the
// background compilation that serve starts by default) and three times over
// (plugboard-3x: every manifest is read three times, the copies' tools are
// refused as duplicates). native-go-sdk is the floor any Go MCP server pays.
// interleaved alternates 1x and 3x starts so that drift in the machine's
// load hits both equally; its ratio is the start-up figure of
// docs/BENCHMARKS.md.
func BenchmarkStartup(b *testing.B) {
	serve := func(dir string, extra ...string) func(string) []string {
		return func(data string) []string {
			return append([]string{"serve", "--plugins", dir, "--data", data}, extra...)
		}
	}
	plugins := func(b *testing.B, n int) string {
		dir, _ := buildtest.Plugins(b, firstPartyPlugins(b)...)
		return replicate(b, dir, n)
	}
	cases := []struct {
		name string
		argv func(b *testing.B) (bin string, args func(data string) []string)
	}{
		{"plugboard-1x", func(b *testing.B) (string, func(string) []string) {
			return buildtest.Binary(b), serve(plugins(b, 1))
		}},
		{"plugboard-1x-no-warm", func(b *testing.B) (string, func(string) []string) {
			return buildtest.Binary(b), serve(plugins(b, 1), "--warm=false")
		}},
		{"plugboard-3x", func(b *testing.B) (string, func(string) []string) {
			return buildtest.Binary(b), serve(plugins(b, 3))
		}},
		{"native-go-sdk", func(b *testing.B) (string, func(string) []string) {
			return nativeEchoBinary(b), func(string) []string { return nil }
		}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			bin, args := c.argv(b)
			var ds []time.Duration
			for b.Loop() {
				ds = append(ds, startUntilList(b, bin, args))
			}
			b.ReportMetric(float64(median(ds)), "median-ns")
		})
	}
	b.Run("interleaved", func(b *testing.B) {
		bin := buildtest.Binary(b)
		one, three := serve(plugins(b, 1)), serve(plugins(b, 3))
		var d1, d3 []time.Duration
		i := 0
		for b.Loop() {
			if i%2 == 0 {
				d1 = append(d1, startUntilList(b, bin, one))
				d3 = append(d3, startUntilList(b, bin, three))
			} else {
				d3 = append(d3, startUntilList(b, bin, three))
				d1 = append(d1, startUntilList(b, bin, one))
			}
			i++
		}
		m1, m3 := median(d1), median(d3)
		b.ReportMetric(float64(m1), "1x-median-ns")
		b.ReportMetric(float64(m3), "3x-median-ns")
		b.ReportMetric(float64(m3)/float64(m1), "ratio-median")
	})
}

// median returns the median of ds, sorting ds.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// countFiles counts the regular files under dir.
func countFiles(dir string) int {
	n := 0
	_ = filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			n++
		}
		return nil
	})
	return n
}

// populateCache runs plugboard serve once on dir with data as its data
// directory, calls echo, and waits until the background warm-up has written
// compiled code for every plugin (one cache file each) before stopping it.
func populateCache(b *testing.B, bin, dir, data string, plugins int) {
	b.Helper()
	s, stop, err := connect(b, bin, "serve", "--plugins", dir, "--data", data)
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	callEcho(b, s)
	compiled := filepath.Join(data, "compiled")
	deadline := time.Now().Add(5 * time.Minute)
	for countFiles(compiled) < plugins {
		if time.Now().After(deadline) {
			b.Fatalf("compile cache %s holds %d files after 5 minutes, want %d", compiled, countFiles(compiled), plugins)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // let the last cache write finish
}

// BenchmarkFirstCall measures process start until the first echo call is
// answered, with every first-party plugin served: with a disk cache that a
// previous serve run populated, with an empty data directory (the call
// compiles echo), and for the native go-sdk echo server.
func BenchmarkFirstCall(b *testing.B) {
	// kill stops each server without waiting for it to finish background
	// compilation; the shared warm cache is never killed mid-write.
	run := func(b *testing.B, kill bool, bin string, args func() []string) {
		start := connect
		if kill {
			start = connectKill
		}
		var ds []time.Duration
		for b.Loop() {
			b.StopTimer()
			argv := args()
			b.StartTimer()
			t0 := time.Now()
			s, stop, err := start(b, bin, argv...)
			if err != nil {
				b.Fatal(err)
			}
			callEcho(b, s)
			ds = append(ds, time.Since(t0))
			b.StopTimer()
			stop()
			b.StartTimer()
		}
		b.ReportMetric(float64(median(ds)), "median-ns")
	}
	b.Run("plugboard-warm-cache", func(b *testing.B) {
		srcs := firstPartyPlugins(b)
		dir, _ := buildtest.Plugins(b, srcs...)
		bin := buildtest.Binary(b)
		data := b.TempDir()
		populateCache(b, bin, dir, data, len(srcs))
		run(b, false, bin, func() []string { return []string{"serve", "--plugins", dir, "--data", data} })
	})
	b.Run("plugboard-cold-cache", func(b *testing.B) {
		dir, _ := buildtest.Plugins(b, firstPartyPlugins(b)...)
		bin := buildtest.Binary(b)
		run(b, true, bin, func() []string { return []string{"serve", "--plugins", dir, "--data", b.TempDir()} })
	})
	b.Run("native-go-sdk", func(b *testing.B) {
		run(b, false, nativeEchoBinary(b), func() []string { return nil })
	})
}

// TestNativeEchoServer checks that the baseline server of the stdio
// benchmarks builds and answers echo the way plugboard does.
func TestNativeEchoServer(t *testing.T) {
	s, stop, err := connect(t, nativeEchoBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	callEcho(t, s)
}

// TestNativeEcho checks that the native-go baseline answers what the
// plugin answers.
func TestNativeEcho(t *testing.T) {
	out, err := nativeEcho(echoInput)
	if err != nil {
		t.Fatal(err)
	}
	checkEchoOutput(t, out)
}

// cacheFlusher is larger than the last-level cache of the machines this
// runs on; writing one byte per cache line of it evicts what a call left.
var cacheFlusher = make([]byte, 32<<20)

func flushCaches() {
	for i := 0; i < len(cacheFlusher); i += 64 {
		cacheFlusher[i]++
	}
}

// BenchmarkEchoColdCache is BenchmarkEcho's plugin call and native handler
// with the CPU caches flushed before every call (outside the timed part), as
// they are in a server where the JSON-RPC layer runs between two calls. It
// explains most of the stdio gap of BenchmarkStdioEcho: the sandboxed call
// touches far more code and memory than the native handler.
func BenchmarkEchoColdCache(b *testing.B) {
	ctx := context.Background()
	_, p := echoSet(b)
	for _, c := range []struct {
		name string
		call func() ([]byte, error)
	}{
		{"plugboard-runtime", func() ([]byte, error) {
			return p.Call(ctx, abi.ExportCall, echoInput, plugin.CallOptions{})
		}},
		{"native-go", func() ([]byte, error) { return nativeEcho(echoInput) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			out, err := c.call()
			if err != nil {
				b.Fatal(err)
			}
			checkEchoOutput(b, out)
			for b.Loop() {
				b.StopTimer()
				flushCaches()
				b.StartTimer()
				if _, err := c.call(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
