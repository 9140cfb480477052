package bench

import (
	"context"
	"sync/atomic"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/plugboard/plugboard/host/plugin"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
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
			benchEchoCalls(b, dir, plugin.LoadOptions{Tracer: tp})
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
