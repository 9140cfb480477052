package bench

import (
	"context"
	"sync/atomic"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/plugboard/plugboard/build/buildtest"
	"github.com/plugboard/plugboard/host/plugin"
)

// discard is a span exporter that drops what it is sent, counting the
// spans: the SDK's whole path (spans, attributes, the batch processor's
// queue and export) runs, and no collector's speed is measured.
type discard struct{ spans atomic.Int64 }

func (d *discard) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	d.spans.Add(int64(len(spans)))
	return nil
}

func (d *discard) Shutdown(context.Context) error { return nil }

// BenchmarkEchoTraces measures BenchmarkEcho's in-process echo call (the
// whole pipeline, 1 KiB argument) with tracing off (no tracer provider)
// and on (plugin.LoadOptions.Tracer: an SDK provider with the batch span
// processor, exporting to a discarding exporter; two spans a call,
// dispatch and plugin run, as serve --otlp-endpoint makes below each
// request's tools/call span): what traces add to every call is the
// difference.
func BenchmarkEchoTraces(b *testing.B) {
	ctx := context.Background()
	dir, _ := buildtest.Plugins(b, "plugins/echo")
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			var tp trace.TracerProvider
			exp := &discard{}
			if on {
				sdk := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
				b.Cleanup(func() { _ = sdk.Shutdown(ctx) })
				tp = sdk
			}
			engine, err := plugin.NewEngine(ctx, plugin.Config{})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = engine.Close(ctx) })
			set, err := plugin.LoadDir(ctx, engine, dir, plugin.LoadOptions{Tracer: tp})
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
			call() // warm: compile, instantiate, resolve the schema
			b.ReportAllocs()
			for b.Loop() {
				call()
			}
			reportLatency(b, call)
			if !on {
				return
			}
			// The spans were made and exported.
			if err := tp.(*sdktrace.TracerProvider).ForceFlush(ctx); err != nil {
				b.Fatal(err)
			}
			if exp.spans.Load() == 0 {
				b.Fatal("tracing on, and no span was exported")
			}
		})
	}
}
