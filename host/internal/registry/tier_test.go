package registry_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/registry"
	"github.com/plugboard/plugboard/host/internal/runtime"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// TestInterpretedFirstCall: the first call to a plugin never compiled is
// served by an interpreted copy while the engine compiles it; later calls
// go to the compiled plugin; a host whose cache holds the machine code
// never interprets; a stateful plugin waits for its compilation; and a
// copy closed with the registry answers a straggler at once, retryably.
func TestInterpretedFirstCall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins")
	}
	dir, _ := buildtest.Plugins(t, "plugins/echo")
	ctx := context.Background()
	cache := t.TempDir()
	open := func(settings map[string]registry.Settings) *registry.Registry {
		t.Helper()
		engine, err := runtime.New(ctx, runtime.Config{CacheDir: cache, CacheKey: testCacheKey})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { engine.Close(ctx) })
		interp, err := runtime.New(ctx, runtime.Config{Interpreter: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { interp.Close(ctx) })
		reg, err := registry.Load(ctx, registry.Options{Dirs: []string{dir}, Engine: engine, Interpreter: interp, Settings: settings})
		if err != nil {
			t.Fatal(err)
		}
		return reg
	}
	call := func(rt *runtime.Plugin) error {
		out, err := rt.Call(ctx, abi.ExportCall, []byte(`{"params":{"name":"echo","arguments":{"text":"tier"}},"context":{}}`), runtime.CallOptions{})
		if err == nil && !strings.Contains(string(out), "tier") {
			err = errors.New("echo answered " + string(out))
		}
		return err
	}
	runtimeOf := func(reg *registry.Registry) *runtime.Plugin {
		t.Helper()
		tool, ok := reg.Tool("echo")
		if !ok {
			t.Fatal("echo not served")
		}
		rt, err := tool.Plugin.Runtime(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return rt
	}

	// Stateful: no interpreted copy; the call waits for the compilation
	// (which fills the cache for what follows).
	stateful := open(map[string]registry.Settings{"echo": {Options: runtime.PluginOptions{Stateful: true}}})
	first := runtimeOf(stateful)
	if again := runtimeOf(stateful); again != first {
		t.Error("a stateful plugin was served by two runtimes")
	}
	stateful.Close(ctx)

	cache = t.TempDir() // nothing compiled yet
	reg := open(nil)
	// The background warm-up is compiling it when the first call comes;
	// a plugin calls use keeps its module loaded once compiled, or the
	// next call would wait for a reload.
	reg.Warm(ctx, 1, slog.New(slog.DiscardHandler))
	time.Sleep(50 * time.Millisecond)
	interpreted := runtimeOf(reg)
	if err := call(interpreted); err != nil {
		t.Fatal(err)
	}
	var compiled *runtime.Plugin
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if compiled = runtimeOf(reg); compiled != interpreted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("calls still go to the interpreted copy two minutes later")
		}
	}
	time.Sleep(200 * time.Millisecond) // the warm-up's turn after the compilation
	if !compiled.Loaded() {
		t.Error("the warm-up released the module of a plugin calls were using")
	}
	if err := call(compiled); err != nil {
		t.Fatal(err)
	}
	if err := reg.Close(ctx); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err := call(interpreted)
	var env *abi.Envelope
	if !errors.As(err, &env) || env.Code != abi.CodeUnavailable || !env.Retryable || time.Since(start) > 5*time.Second {
		t.Errorf("a call to the closed copy: %v after %v", err, time.Since(start))
	}

	// The same cache in a new host: loaded from it, never interpreted.
	warm := open(nil)
	defer warm.Close(ctx)
	rt := runtimeOf(warm)
	if err := call(rt); err != nil {
		t.Fatal(err)
	}
	if again := runtimeOf(warm); again != rt {
		t.Error("a plugin in the cache was served by an interpreted copy first")
	}
}
