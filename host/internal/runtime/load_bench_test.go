package runtime_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/runtime"
	"github.com/plugboard/plugboard/host/internal/wasmfile"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// BenchmarkLoad splits a first call with a warm disk cache into its phases
// for the echo module: instrumenting the module (done on every load),
// Engine.Compile with the compiled code already cached (instrumenting,
// wazero's decoding and validation, reading the cache), and that plus
// instantiation and one call with a 1 KiB argument. docs/BENCHMARKS.md
// (section 4) records it; it lives here rather than in bench/ because its
// first phase is internal to the engine.
func BenchmarkLoad(b *testing.B) {
	ctx := context.Background()
	_, wasm := buildtest.Plugins(b, "plugins/echo")
	bin, err := os.ReadFile(wasm["echo"])
	if err != nil {
		b.Fatal(err)
	}
	engine, err := runtime.New(ctx, runtime.Config{CacheDir: b.TempDir(), CacheKey: testKey})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = engine.Close(ctx) })
	warm, err := engine.Compile(ctx, "echo", bin, nil) // populates the cache
	if err != nil {
		b.Fatal(err)
	}
	_ = warm.Close(ctx)

	// The argument and check of bench/'s BenchmarkEcho: {"text": "<1024
	// ASCII chars>"}, answered as structuredContent only.
	text := strings.Repeat("abcdefghijklmnopqrstuvwxyz012345", 32)
	input := request("echo", `{"text":"`+text+`"}`)
	check := func(out []byte) {
		var res struct {
			IsError           bool `json:"isError"`
			StructuredContent struct {
				Text string `json:"text"`
			} `json:"structuredContent"`
		}
		if err := json.Unmarshal(out, &res); err != nil || res.IsError || res.StructuredContent.Text != text {
			b.Fatalf("unexpected echo output (err %v): %.300s", err, out)
		}
	}

	b.Run("instrument", func(b *testing.B) {
		for b.Loop() {
			if _, err := wasmfile.Instrument(bin); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("compile-cached", func(b *testing.B) {
		for b.Loop() {
			p, err := engine.Compile(ctx, "echo", bin, nil)
			if err != nil {
				b.Fatal(err)
			}
			_ = p.Close(ctx)
		}
	})
	b.Run("compile-cached+instantiate+call", func(b *testing.B) {
		for b.Loop() {
			p, err := engine.Compile(ctx, "echo", bin, nil)
			if err != nil {
				b.Fatal(err)
			}
			out, err := p.Call(ctx, abi.ExportCall, input, runtime.CallOptions{})
			if err != nil {
				b.Fatal(err)
			}
			check(out)
			_ = p.Close(ctx)
		}
	})
}
