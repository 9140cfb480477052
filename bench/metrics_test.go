package bench

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/host/plugin"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// BenchmarkEchoMetrics measures BenchmarkEcho's in-process echo call (the
// whole pipeline, 1 KiB argument) with the host's Prometheus metrics off
// and on (plugin.LoadOptions.Metrics, as serve --metrics records calls):
// what metrics add to every call is the difference.
func BenchmarkEchoMetrics(b *testing.B) {
	dir, _ := buildtest.Plugins(b, "plugins/echo")
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			set := benchEchoCalls(b, dir, plugin.LoadOptions{Metrics: on})
			if !on {
				return
			}
			// The calls were counted.
			rec := httptest.NewRecorder()
			set.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
			if !strings.Contains(rec.Body.String(), `plugboard_tool_calls_total{outcome="ok",plugin="echo",tool="echo"}`) {
				b.Fatalf("no echo calls in the metrics:\n%.2000s", rec.Body.String())
			}
		})
	}
}

// benchEchoCalls loads the plugins of dir with opts in an engine of their
// own, warms echo (compile, instantiate, resolve the schema), then times
// echo calls with a 1 KiB argument, reporting allocations and latency
// percentiles. It returns the set for checks after the loop.
func benchEchoCalls(b *testing.B, dir string, opts plugin.LoadOptions) *plugin.Set {
	b.Helper()
	ctx := context.Background()
	engine, err := plugin.NewEngine(ctx, plugin.Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = engine.Close(ctx) })
	set, err := plugin.LoadDir(ctx, engine, dir, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = set.Close(ctx) })
	req := plugin.Request{Tool: "echo", Arguments: echoArgs}
	call := func() {
		if res := set.Call(ctx, req); res.IsError() {
			b.Fatalf("echo: %s", res.Structured)
		}
	}
	call()
	b.ReportAllocs()
	for b.Loop() {
		call()
	}
	reportLatency(b, call)
	return set
}
