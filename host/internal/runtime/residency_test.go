package runtime_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/runtime"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// TestCodeResidency checks the release of a plugin that is not being
// called: its instances and compiled module go after CodeIdleTimeout, the
// next call loads it again from the disk cache, a warm-up compilation can
// be released at once, calls racing the janitor all succeed (run with
// -race), and a module whose bytes changed on disk is refused, not run.
func TestCodeResidency(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins")
	}
	_, wasm := buildtest.Plugins(t, "plugins/echo")
	orig, err := os.ReadFile(wasm["echo"])
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	e, err := runtime.New(ctx, runtime.Config{CacheDir: t.TempDir(), CacheKey: testKey, MaxInstances: 4,
		IdleTimeout: 5 * time.Millisecond, CodeIdleTimeout: 40 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	var reloads atomic.Int32
	var replaced atomic.Bool
	reload := func() ([]byte, error) {
		reloads.Add(1)
		if replaced.Load() {
			return append([]byte(nil), orig[:len(orig)-1]...), nil
		}
		return orig, nil
	}
	echo, err := e.CompileWith(ctx, "echo", orig, runtime.PluginOptions{Reload: reload})
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close(ctx)
	call := func(text string) error {
		out, err := echo.Call(ctx, abi.ExportCall, request("echo", `{"text":"`+text+`"}`), runtime.CallOptions{})
		if err == nil && !strings.Contains(string(out), text) {
			return errors.New("echo answered " + string(out))
		}
		return err
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting until %s", what)
			}
		}
	}

	// What the warm-up does: compiled, then released because unused.
	if !echo.ReleaseUnused() || echo.Loaded() {
		t.Fatal("an unused plugin's module was not released")
	}
	if !echo.HasExport(abi.ExportCall) {
		t.Error("HasExport needs the module loaded")
	}
	if err := call("first"); err != nil {
		t.Fatal(err)
	}
	if !echo.Loaded() || reloads.Load() != 1 {
		t.Fatalf("after a call: loaded %v, reloads %d; want loaded after 1", echo.Loaded(), reloads.Load())
	}
	if echo.ReleaseUnused() {
		t.Error("ReleaseUnused released a module whose instance is in the pool")
	}
	waitFor("the idle plugin is released", func() bool { return !echo.Loaded() && echo.IdleInstances() == 0 })

	// Calls racing the janitor's releases.
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 10 {
				if err := call("race"); err != nil {
					t.Error(err)
					return
				}
				time.Sleep(time.Duration((g*7+i*13)%60) * time.Millisecond)
			}
		})
	}
	wg.Wait()
	waitFor("the plugin is released after the race", func() bool { return !echo.Loaded() })

	// The file changed behind the host's back: refused, retryable, and
	// nothing of the other module runs.
	replaced.Store(true)
	err = call("changed")
	if err == nil {
		t.Fatal("a changed module was loaded and called")
	}
	if env := envelope(t, err); env.Code != abi.CodeUnavailable || !env.Retryable || !strings.Contains(env.Message, "no longer holds") {
		t.Errorf("changed module: envelope %+v", env)
	}
	if echo.Loaded() {
		t.Error("a refused reload left a module loaded")
	}
	replaced.Store(false)
	if err := call("back"); err != nil {
		t.Fatal(err)
	}
}

// TestCodeResidencyKept checks what is never released: a stateful plugin
// (its state is its instance), a plugin without Reload, and every plugin
// when CodeIdleTimeout < 0.
func TestCodeResidencyKept(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins")
	}
	_, wasm := buildtest.Plugins(t, "plugins/echo")
	orig, err := os.ReadFile(wasm["echo"])
	if err != nil {
		t.Fatal(err)
	}
	reload := func() ([]byte, error) { return orig, nil }
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		cfg  runtime.Config
		opts runtime.PluginOptions
	}{
		{"stateful", runtime.Config{CodeIdleTimeout: 10 * time.Millisecond}, runtime.PluginOptions{Reload: reload, Stateful: true}},
		{"no reload", runtime.Config{CodeIdleTimeout: 10 * time.Millisecond}, runtime.PluginOptions{}},
		{"kept by config", runtime.Config{CodeIdleTimeout: -1}, runtime.PluginOptions{Reload: reload}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.CacheDir, tc.cfg.CacheKey = t.TempDir(), testKey
			e, err := runtime.New(ctx, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close(ctx)
			p, err := e.CompileWith(ctx, "echo", orig, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close(ctx)
			if p.ReleaseUnused() {
				t.Fatal("released")
			}
			if _, err := p.Call(ctx, abi.ExportCall, request("echo", `{"text":"x"}`), runtime.CallOptions{}); err != nil {
				t.Fatal(err)
			}
			time.Sleep(60 * time.Millisecond)
			if !p.Loaded() {
				t.Error("released")
			}
		})
	}
}

// TestCachedMark checks what the warm-up asks before compiling: a module
// compiled once into a cache directory is Cached for a new engine on that
// directory, and nothing else is.
func TestCachedMark(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins")
	}
	_, wasm := buildtest.Plugins(t, "plugins/echo")
	orig, err := os.ReadFile(wasm["echo"])
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	dir := t.TempDir()
	first, err := runtime.New(ctx, runtime.Config{CacheDir: dir, CacheKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	if first.Cached(orig) {
		t.Fatal("Cached before any compilation")
	}
	p, err := first.Compile(ctx, "echo", orig, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.Close(ctx)
	first.Close(ctx)
	second, err := runtime.New(ctx, runtime.Config{CacheDir: dir, CacheKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close(ctx)
	if !second.Cached(orig) {
		t.Error("a module compiled into the directory is not Cached for the next engine")
	}
	if second.Cached(append(append([]byte(nil), orig...), 0)) {
		t.Error("other bytes are Cached")
	}
	if noCache, _ := runtime.New(ctx, runtime.Config{}); noCache.Cached(orig) {
		t.Error("an engine without a cache directory reports Cached")
	}
}

// TestInterpreterLimits attacks an interpreting engine (what serves first
// calls while a plugin compiles) the way TestRuntime attacks the compiler:
// the loop instrumentation still ends a spinning guest at its deadline,
// the memory cap still holds, a panic is still an envelope, and the host
// carries on.
func TestInterpreterLimits(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins")
	}
	_, wasm := buildtest.Plugins(t, "plugins/echo", "testdata/plugins/loop", "testdata/plugins/hog", "testdata/plugins/crash")
	ctx := context.Background()
	e, err := runtime.New(ctx, runtime.Config{Interpreter: true, MemoryLimitPages: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)

	loop := compile(t, e, wasm["loop"])
	cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = loop.Call(cctx, abi.ExportCall, request("spin", `{}`), runtime.CallOptions{})
	if env := envelope(t, err); env.Code != abi.CodePluginTimeout {
		t.Errorf("spinning guest: %+v", env)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("spinning guest interrupted after %v, deadline 500ms", took)
	}

	hog := compile(t, e, wasm["hog"])
	_, err = hog.Call(ctx, abi.ExportCall, request("hog", `{}`), runtime.CallOptions{})
	if env := envelope(t, err); env.Code != abi.CodeResourceExhausted || env.Details["limit"] != "memory" {
		t.Errorf("memory hog: %+v", env)
	}

	crash := compile(t, e, wasm["crash"])
	_, err = crash.Call(ctx, abi.ExportCall, request("crash", `{}`), runtime.CallOptions{})
	if env := envelope(t, err); env.Code != abi.CodePluginFailed || !strings.Contains(env.Message, "deliberate panic") {
		t.Errorf("panic: %+v", env)
	}

	echo := compile(t, e, wasm["echo"])
	out, err := echo.Call(ctx, abi.ExportCall, request("echo", `{"text":"still here"}`), runtime.CallOptions{})
	if err != nil || !strings.Contains(string(out), "still here") {
		t.Errorf("echo after the attacks: %s %v", out, err)
	}
}
