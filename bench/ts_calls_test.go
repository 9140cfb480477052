package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// benchTSClientEcho is BenchmarkFootprint's ts-client/echo: footprintCalls
// sequential tools/call echo with the 1 KiB argument through the official
// TypeScript SDK's Client.callTool over StdioClientTransport
// (conformance/clients/bench-calls.mjs: one Node.js process holding one
// Client per server, each having listed the tools first as clients do, so
// the SDK checks structuredContent against an outputSchema where the tool
// has one), to `plugboard serve` with the echo plugin alone (default flags,
// a fresh --data; measured once the background warm-up has written its
// compiled module), the native go-sdk server and the reference Node.js
// server @modelcontextprotocol/server-everything, after 200 warm-up calls
// each, alternating call by call so load drift hits all three alike; p50
// and p90 of each and the ratios of plugboard's p50 to the others'.
func benchTSClientEcho(b *testing.B, t *footprintTable) {
	node, everything := serverEverything(b)
	clientsDir := filepath.Dir(filepath.Dir(filepath.Dir(node))) // DIR/node_modules/.bin/node
	if _, err := os.Stat(filepath.Join(clientsDir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		b.Skipf("TypeScript-client row skipped: @modelcontextprotocol/sdk is not installed: %v", err)
	}
	plugins, _ := footprintPlugins(b, 1)
	bin, native := plugboardBinary(b), nativeEchoBinary(b)
	var res map[string]tsCallStats
	var versions string
	for b.Loop() {
		data := b.TempDir()
		res, versions = tsCalls(b, clientsDir, footprintCalls, 200, []tsCallServer{{
			Name: "plugboard", Command: bin, Args: []string{"serve", "--plugins", plugins, "--data", data},
			Tool: "echo", Arguments: echoArgs, Expect: echoText,
			WaitFiles: &tsWaitFiles{Dir: filepath.Join(data, "compiled"), Count: 1},
		}, {
			Name: "native", Command: native,
			Tool: "echo", Arguments: echoArgs, Expect: echoText,
		}, {
			Name: "node", Command: node, Args: []string{everything, "stdio"},
			Tool: "echo", Arguments: json.RawMessage(`{"message":"` + echoText + `"}`), Expect: echoText,
		}})
	}
	pb, nv, nd := res["plugboard"], res["native"], res["node"]
	for _, name := range []string{"plugboard", "native", "node"} {
		b.ReportMetric(res[name].P50*1e3, name+"-p50-ns")
		b.ReportMetric(res[name].P90*1e3, name+"-p90-ns")
	}
	b.ReportMetric(pb.P50/nv.P50, "ratio-native-p50")
	b.ReportMetric(pb.P50/nd.P50, "ratio-node-p50")
	b.Logf("%d calls each through %s; outputSchema checked by the client: plugboard %t, native %t, node %t",
		footprintCalls, versions, pb.OutputSchema, nv.OutputSchema, nd.OutputSchema)
	t.add("echo 1 KiB p50, TypeScript SDK client: echo only | native (ratio) / Node (ratio)", fmtDur(pb.p50()),
		fmt.Sprintf("%s (x%.2f) / %s (x%.2f)", fmtDur(nv.p50()), pb.P50/nv.P50, fmtDur(nd.p50()), pb.P50/nd.P50))
	t.add("echo 1 KiB p90, TypeScript SDK client: echo only | native / Node", fmtDur(pb.p90()),
		fmtDur(nv.p90())+" / "+fmtDur(nd.p90()))
}

// tsCallServer is one server of a bench-calls.mjs spec.
type tsCallServer struct {
	Name      string          `json:"name"`
	Command   string          `json:"command"`
	Args      []string        `json:"args,omitempty"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Expect    string          `json:"expect,omitempty"`
	WaitFiles *tsWaitFiles    `json:"waitFiles,omitempty"`
}

// tsWaitFiles holds off the calls until Dir holds Count files.
type tsWaitFiles struct {
	Dir   string `json:"dir"`
	Count int    `json:"count"`
}

// tsCallStats is one server's result of bench-calls.mjs, in microseconds.
type tsCallStats struct {
	Name string  `json:"name"`
	P50  float64 `json:"p50_us"`
	P90  float64 `json:"p90_us"`
	Mean float64 `json:"mean_us"`
	N    int     `json:"n"`
	// OutputSchema: the listed tool has one, so Client.callTool checks
	// every answer's structuredContent against it.
	OutputSchema bool `json:"output_schema"`
}

func (s tsCallStats) p50() time.Duration { return time.Duration(s.P50 * float64(time.Microsecond)) }
func (s tsCallStats) p90() time.Duration { return time.Duration(s.P90 * float64(time.Microsecond)) }

// tsCalls runs conformance/clients/bench-calls.mjs with the Node.js and
// packages of the installation clientsDir (clients.Install): warmup, then
// calls timed calls to each server, alternating between them. It returns
// the results by server name and the Node.js and SDK versions.
func tsCalls(b *testing.B, clientsDir string, calls, warmup int, servers []tsCallServer) (map[string]tsCallStats, string) {
	b.Helper()
	spec, err := json.Marshal(map[string]any{"calls": calls, "warmup": warmup, "servers": servers})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(b.Context(), 20*time.Minute)
	defer cancel()
	script := filepath.Join(buildtest.Root(b), "conformance", "clients", "bench-calls.mjs")
	cmd := exec.CommandContext(ctx, filepath.Join(clientsDir, "node_modules", ".bin", "node"), script, string(spec))
	cmd.Env = append(os.Environ(), "MCP_CLIENTS_DIR="+clientsDir)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		b.Fatalf("bench-calls.mjs: %v\nstderr:\n%.4000s", err, errb.String())
	}
	var res struct {
		Node    string        `json:"node"`
		SDK     string        `json:"sdk"`
		Results []tsCallStats `json:"results"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		b.Fatalf("bench-calls.mjs: bad output %.500q: %v\nstderr:\n%.4000s", out.String(), err, errb.String())
	}
	byName := map[string]tsCallStats{}
	for _, r := range res.Results {
		if r.N != calls {
			b.Fatalf("bench-calls.mjs: %s made %d calls, want %d", r.Name, r.N, calls)
		}
		byName[r.Name] = r
	}
	for _, s := range servers {
		if _, ok := byName[s.Name]; !ok {
			b.Fatalf("bench-calls.mjs: no result for %s in %s", s.Name, out.String())
		}
	}
	return byName, fmt.Sprintf("Node.js %s, @modelcontextprotocol/sdk %s", res.Node, res.SDK)
}
