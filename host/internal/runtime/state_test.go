package runtime_test

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/runtime"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

type counts struct{ Global, Var int }

func count(t *testing.T, ctx context.Context, p *runtime.Plugin, sleepMS int) (counts, error) {
	t.Helper()
	b, _ := json.Marshal(map[string]int{"sleep_ms": sleepMS})
	text, err := toolText(ctx, p, "count", string(b), runtime.CallOptions{})
	var c counts
	if err == nil {
		if jerr := json.Unmarshal([]byte(text), &c); jerr != nil {
			t.Fatalf("%q: %v", text, jerr)
		}
	}
	return c, err
}

// overlapping runs two calls at once, each holding its instance for 300 ms.
func overlapping(t *testing.T, ctx context.Context, p *runtime.Plugin) []counts {
	t.Helper()
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		got []counts
	)
	for range 2 {
		wg.Go(func() {
			c, err := count(t, ctx, p, 300)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			got = append(got, c)
			mu.Unlock()
		})
	}
	wg.Wait()
	slices.SortFunc(got, func(a, b counts) int { return a.Global - b.Global })
	return got
}

func TestState(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins")
	}
	_, wasm := buildtest.Plugins(t, "testdata/plugins/counter", "testdata/plugins/hog")
	code, err := os.ReadFile(wasm["counter"])
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	e, err := runtime.New(ctx, runtime.Config{CacheDir: t.TempDir(), CacheKey: testKey, MemoryLimitPages: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)

	t.Run("stateful: one instance, calls serialised, globals and vars kept until a failure", func(t *testing.T) {
		p, err := e.CompileWith(ctx, "counter", code, runtime.PluginOptions{Stateful: true, MaxInstances: 8})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close(ctx)
		if got := overlapping(t, ctx, p); !slices.Equal(got, []counts{{1, 1}, {2, 2}}) {
			t.Errorf("overlapping calls: %+v", got)
		}
		if c, err := count(t, ctx, p, 0); err != nil || c != (counts{3, 3}) {
			t.Errorf("third call: %+v, %v", c, err)
		}
		// A call that times out discards the instance; the next starts over.
		cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		if _, err := count(t, cctx, p, 2000); envelope(t, err).Code != abi.CodePluginTimeout {
			t.Errorf("timed out call: %v", err)
		}
		if c, err := count(t, ctx, p, 0); err != nil || c != (counts{1, 1}) {
			t.Errorf("after the failure: %+v, %v", c, err)
		}
	})

	t.Run("pooled: overlapping calls run on separate instances", func(t *testing.T) {
		p, err := e.CompileWith(ctx, "counter", code, runtime.PluginOptions{MaxInstances: 4})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close(ctx)
		if got := overlapping(t, ctx, p); !slices.Equal(got, []counts{{1, 1}, {1, 1}}) {
			t.Errorf("overlapping calls: %+v", got)
		}
	})

	t.Run("max instances 1 serialises a pooled plugin", func(t *testing.T) {
		p, err := e.CompileWith(ctx, "counter", code, runtime.PluginOptions{MaxInstances: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close(ctx)
		if got := overlapping(t, ctx, p); !slices.Equal(got, []counts{{1, 1}, {2, 2}}) {
			t.Errorf("overlapping calls: %+v", got)
		}
	})

	t.Run("a plugin's memory limit below the engine's", func(t *testing.T) {
		hogCode, err := os.ReadFile(wasm["hog"])
		if err != nil {
			t.Fatal(err)
		}
		p, err := e.CompileWith(ctx, "hog", hogCode, runtime.PluginOptions{MemoryLimitPages: 512})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close(ctx)
		_, err = p.Call(ctx, abi.ExportCall, request("hog", `{}`), runtime.CallOptions{})
		env := envelope(t, err)
		if env.Code != abi.CodeResourceExhausted || env.Details["max_bytes"] != int64(512)<<16 ||
			!strings.Contains(env.Hint, "plugins.settings.hog.memory_limit_mib") {
			t.Errorf("got %+v", env)
		}
		if _, err := e.CompileWith(ctx, "hog", hogCode, runtime.PluginOptions{MemoryLimitPages: 2048}); err == nil ||
			!strings.Contains(err.Error(), "above the engine's cap") {
			t.Errorf("a limit above the engine's: %v", err)
		}
	})
}
