package runtime_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/runtime"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// TestIdleJanitor runs calls concurrently with a janitor that closes idle
// instances every few milliseconds (run it with -race), then checks that
// the pool drains to KeepIdle and that Close stops everything.
func TestIdleJanitor(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins")
	}
	_, wasm := buildtest.Plugins(t, "plugins/echo")
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		keepIdle int
		want     int
	}{{"keep none", -1, 0}, {"keep one (default)", 0, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := runtime.New(ctx, runtime.Config{CacheDir: t.TempDir(), CacheKey: testKey, MaxInstances: 4,
				IdleTimeout: 5 * time.Millisecond, KeepIdle: tc.keepIdle})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close(ctx)
			echo := compile(t, e, wasm["echo"])
			var wg sync.WaitGroup
			for g := range 6 {
				wg.Go(func() {
					for i := range 8 {
						if _, err := echo.Call(ctx, abi.ExportCall, request("echo", `{"text":"x"}`), runtime.CallOptions{}); err != nil {
							t.Error(err)
							return
						}
						time.Sleep(time.Duration((g+i)%4) * 3 * time.Millisecond)
					}
				})
			}
			wg.Wait()
			deadline := time.Now().Add(5 * time.Second)
			for echo.IdleInstances() != tc.want && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if n := echo.IdleInstances(); n != tc.want {
				t.Errorf("idle instances after the timeout = %d, want %d", n, tc.want)
			}
			// A call after the pool drained starts a new instance.
			if _, err := echo.Call(ctx, abi.ExportCall, request("echo", `{"text":"again"}`), runtime.CallOptions{}); err != nil {
				t.Fatal(err)
			}
			// Close while calls run and the janitor ticks; a call that comes
			// after Close waits for an instance until its context ends.
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			var calls sync.WaitGroup
			for range 3 {
				calls.Go(func() {
					_, _ = echo.Call(cctx, abi.ExportCall, request("echo", `{"text":"y"}`), runtime.CallOptions{})
				})
			}
			if err := echo.Close(ctx); err != nil {
				t.Fatal(err)
			}
			calls.Wait()
			if n := echo.IdleInstances(); n != 0 {
				t.Errorf("idle instances after Close = %d", n)
			}
		})
	}
}

// TestInstrumentCache: the instrumented module is cached by the original
// bytes' sha256; a damaged entry is ignored and rewritten.
func TestInstrumentCache(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins")
	}
	_, wasm := buildtest.Plugins(t, "plugins/echo")
	ctx := context.Background()
	cache := t.TempDir()
	e, err := runtime.New(ctx, runtime.Config{CacheDir: cache, CacheKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	call := func() {
		t.Helper()
		p := compile(t, e, wasm["echo"])
		defer p.Close(ctx)
		if _, err := p.Call(ctx, abi.ExportCall, request("echo", `{"text":"x"}`), runtime.CallOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	call()
	entries, _ := filepath.Glob(filepath.Join(cache, "key-*", "instrumented", "*.wasm"))
	if len(entries) != 1 {
		t.Fatalf("instrumented cache entries: %v", entries)
	}
	good, err := os.ReadFile(entries[0])
	if err != nil {
		t.Fatal(err)
	}
	call() // from the cache
	for _, damage := range [][]byte{good[:len(good)/2], append(bytes.Clone(good[:len(good)-1]), good[len(good)-1]^0xff), []byte("junk")} {
		if err := os.WriteFile(entries[0], damage, 0o644); err != nil {
			t.Fatal(err)
		}
		call()
		if got, _ := os.ReadFile(entries[0]); !bytes.Equal(got, good) {
			t.Errorf("damaged entry not rewritten (%d bytes, want %d)", len(got), len(good))
		}
	}
}
