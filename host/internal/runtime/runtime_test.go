package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/runtime"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

func compile(t *testing.T, e *runtime.Engine, wasmPath string) *runtime.Plugin {
	t.Helper()
	wasm, err := os.ReadFile(wasmPath)
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.Compile(context.Background(), "test", wasm, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func request(tool, args string) []byte {
	return []byte(`{"params":{"name":"` + tool + `","arguments":` + args + `},"context":{}}`)
}

func envelope(t *testing.T, err error) *abi.Envelope {
	t.Helper()
	var env *abi.Envelope
	if !errors.As(err, &env) {
		t.Fatalf("error %v is not an envelope", err)
	}
	return env
}

func TestRuntime(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins")
	}
	_, wasm := buildtest.Plugins(t, "plugins/echo", "testdata/plugins/loop", "testdata/plugins/hog",
		"testdata/plugins/crash", "testdata/plugins/rawpdk", "testdata/plugins/sleepy")
	ctx := context.Background()
	e, err := runtime.New(ctx, runtime.Config{CacheDir: t.TempDir(), CacheKey: testKey, MemoryLimitPages: 1024, MaxOutputBytes: 64 << 10, MaxInputBytes: 128 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	echo := compile(t, e, wasm["echo"])

	t.Run("echo through the direct path and the kernel path agree", func(t *testing.T) {
		in := request("echo", `{"text":"a \"quoted\" ü"}`)
		out, err := echo.Call(ctx, abi.ExportCall, in, runtime.CallOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var res abi.CallResult
		if err := json.Unmarshal(out, &res); err != nil || res.IsError {
			t.Fatalf("result %s: %v", out, err)
		}
		var v struct{ Text string }
		json.Unmarshal(res.StructuredContent, &v)
		if v.Text != `a "quoted" ü` {
			t.Errorf("echo = %q", v.Text)
		}
	})

	t.Run("input cap", func(t *testing.T) {
		_, err := echo.Call(ctx, abi.ExportCall, request("echo", `{"text":"`+strings.Repeat("x", 130<<10)+`"}`), runtime.CallOptions{})
		if env := envelope(t, err); env.Code != abi.CodeResourceExhausted || env.Details["limit"] != "input" {
			t.Errorf("got %+v", env)
		}
	})

	t.Run("output cap", func(t *testing.T) {
		// 100 KiB in is under the input cap; echoed back it is over the
		// 64 KiB output cap.
		_, err := echo.Call(ctx, abi.ExportCall, request("echo", `{"text":"`+strings.Repeat("y", 100<<10)+`"}`), runtime.CallOptions{})
		if env := envelope(t, err); env.Code != abi.CodeResourceExhausted || env.Details["limit"] != "output" {
			t.Errorf("got %+v", env)
		}
		if _, err := echo.Call(ctx, abi.ExportCall, request("echo", `{"text":"fine"}`), runtime.CallOptions{}); err != nil {
			t.Errorf("after the cap: %v", err)
		}
	})

	t.Run("deadline interrupts a spinning guest", func(t *testing.T) {
		loop := compile(t, e, wasm["loop"])
		_ = loop.Warm(ctx)
		cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := loop.Call(cctx, abi.ExportCall, request("spin", `{}`), runtime.CallOptions{})
		if env := envelope(t, err); env.Code != abi.CodePluginTimeout {
			t.Errorf("got %+v", env)
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("interrupted after %v, deadline was 300ms", took)
		}
	})

	t.Run("deadline interrupts a sleeping guest", func(t *testing.T) {
		// A guest asleep in poll_oneoff is not in a loop the yield check
		// reaches; the host's nanosleep must wake it at the deadline, and
		// cancellation likewise.
		sleepy := compile(t, e, wasm["sleepy"])
		_ = sleepy.Warm(ctx)
		cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := sleepy.Call(cctx, abi.ExportCall, request("sleep", `{"ms":3600000}`), runtime.CallOptions{})
		if env := envelope(t, err); env.Code != abi.CodePluginTimeout {
			t.Errorf("got %+v", env)
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("interrupted after %v, deadline was 300ms", took)
		}
		cctx, cancelNow := context.WithCancel(ctx)
		time.AfterFunc(100*time.Millisecond, cancelNow)
		_, err = sleepy.Call(cctx, abi.ExportCall, request("sleep", `{"ms":3600000}`), runtime.CallOptions{})
		if env := envelope(t, err); env.Code != abi.CodeCancelled {
			t.Errorf("cancelled sleep: got %+v", env)
		}
		// Sleeps that end in time still work, on a fresh instance.
		out, err := sleepy.Call(ctx, abi.ExportCall, request("sleep", `{"ms":20}`), runtime.CallOptions{})
		if err != nil || !strings.Contains(string(out), "ended_unix_nano") {
			t.Errorf("short sleep: %s, %v", out, err)
		}
	})

	t.Run("a spinning guest does not stall the garbage collector", func(t *testing.T) {
		loop := compile(t, e, wasm["loop"])
		_ = loop.Warm(ctx)
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		done := make(chan struct{})
		go func() {
			defer close(done)
			loop.Call(cctx, abi.ExportCall, request("spin", `{}`), runtime.CallOptions{})
		}()
		time.Sleep(100 * time.Millisecond)
		gcDone := make(chan struct{})
		go func() { goruntimeGC(); close(gcDone) }()
		select {
		case <-gcDone:
		case <-done:
			t.Fatal("the spin ended before the collection could be tested")
		}
		select {
		case <-done:
			t.Error("spin finished before its deadline")
		default:
		}
		<-done
	})

	t.Run("close waits for calls in flight", func(t *testing.T) {
		loop := compile(t, e, wasm["loop"])
		_ = loop.Warm(ctx)
		cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		done := make(chan error, 1)
		go func() {
			_, err := loop.Call(cctx, abi.ExportCall, request("spin", `{}`), runtime.CallOptions{})
			done <- err
		}()
		time.Sleep(100 * time.Millisecond)
		short, cancelShort := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancelShort()
		if err := loop.Close(short); !errors.Is(err, runtime.ErrBusy) {
			t.Fatalf("Close during a call = %v, want ErrBusy", err)
		}
		<-done
		// closeOnce was spent by the busy attempt: a second plugin shows the
		// waiting path end to end.
		loop2 := compile(t, e, wasm["loop"])
		_ = loop2.Warm(ctx)
		go func() {
			_, err := loop2.Call(cctx, abi.ExportCall, request("spin", `{}`), runtime.CallOptions{})
			done <- err
		}()
		time.Sleep(50 * time.Millisecond)
		long, cancelLong := context.WithTimeout(ctx, 5*time.Second)
		defer cancelLong()
		if err := loop2.Close(long); err != nil {
			t.Fatalf("Close after the call's deadline = %v", err)
		}
		select {
		case err := <-done:
			if env := envelope(t, err); env.Code != abi.CodePluginTimeout {
				t.Errorf("in-flight call: %+v", env)
			}
		default:
			t.Error("Close returned while the call was still running")
		}
	})

	t.Run("memory cap", func(t *testing.T) {
		hog := compile(t, e, wasm["hog"])
		_, err := hog.Call(ctx, abi.ExportCall, request("hog", `{}`), runtime.CallOptions{})
		if env := envelope(t, err); env.Code != abi.CodeResourceExhausted || env.Details["limit"] != "memory" {
			t.Errorf("got %+v", env)
		}
	})

	t.Run("panic", func(t *testing.T) {
		crash := compile(t, e, wasm["crash"])
		_, err := crash.Call(ctx, abi.ExportCall, request("crash", `{}`), runtime.CallOptions{})
		env := envelope(t, err)
		if env.Code != abi.CodePluginFailed || !strings.Contains(env.Message, "deliberate panic") {
			t.Errorf("got %+v", env)
		}
	})

	t.Run("raw go-pdk plugin through the kernel", func(t *testing.T) {
		raw := compile(t, e, wasm["rawpdk"])
		out, err := raw.Call(ctx, abi.ExportCall, []byte(`{"params":{"name":"raw_upper","arguments":{"text":"abc"}}}`), runtime.CallOptions{})
		if err != nil || !strings.Contains(string(out), "ABC") {
			t.Errorf("raw_upper: %s %v", out, err)
		}
	})

	t.Run("parallel calls", func(t *testing.T) {
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Go(func() {
				text := strings.Repeat("z", i*100)
				out, err := echo.Call(ctx, abi.ExportCall, request("echo", `{"text":"`+text+`"}`), runtime.CallOptions{})
				if err != nil || !strings.Contains(string(out), text+`"`) {
					t.Errorf("call %d: %v", i, err)
				}
			})
		}
		wg.Wait()
	})
}
