package dispatch_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/dispatch"
	"github.com/plugboard/plugboard/host/internal/registry"
	"github.com/plugboard/plugboard/host/internal/runtime"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// loadDispatcher loads the plugins of srcs with an engine configured by
// cfg behind a dispatcher with opts, r recording and escalating.
func loadDispatcher(t *testing.T, cfg runtime.Config, opts dispatch.Options, srcs ...string) (*dispatch.Dispatcher, *recorder) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds plugins")
	}
	ctx := context.Background()
	dir, _ := buildtest.Plugins(t, srcs...)
	engine, err := runtime.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = engine.Close(ctx) })
	reg, err := registry.Load(ctx, registry.Options{Dirs: []string{dir}, DataDir: t.TempDir(), Engine: engine})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close(ctx) })
	r := &recorder{}
	opts.Auditor, opts.Escalator = r, r
	return dispatch.New(reg, opts), r
}

// TestRetriesShareTheDeadline: a keyed call that times out is retried
// (plugin_timeout is retryable) but within the one deadline of the call,
// not with a fresh deadline per run.
func TestRetriesShareTheDeadline(t *testing.T) {
	d, r := loadDispatcher(t, runtime.Config{CacheDir: compiledCache, CacheKey: testCacheKey},
		dispatch.Options{DefaultTimeout: 400 * time.Millisecond, Retry: dispatch.Retry{Backoff: time.Millisecond}}, "testdata/plugins/nonce")
	ctx := context.Background()
	// Compile first: compilation is not part of the deadline.
	if res := d.Call(ctx, dispatch.Request{Tool: "nonce", Arguments: json.RawMessage(`{}`)}); res.IsError() {
		t.Fatalf("warm-up: %s", res.Structured)
	}
	start := time.Now()
	res := d.Call(ctx, dispatch.Request{Tool: "nonce", Arguments: json.RawMessage(`{"sleep_ms":5000,"request_id":"slow"}`)})
	took := time.Since(start)
	if !res.IsError() || res.Envelope.Code != abi.CodePluginTimeout {
		t.Fatalf("result %s", res.Structured)
	}
	if took > 900*time.Millisecond {
		t.Fatalf("a call with a 400ms deadline took %v over %d runs", took, r.finished[len(r.finished)-1].Attempts)
	}
}

// TestLoadFailureIsNotRetried: a plugin that cannot be compiled (here its
// memory exceeds the cap) answers unavailable, not retryable, after one
// attempt: the failure is remembered, so retrying only delays the answer.
func TestLoadFailureIsNotRetried(t *testing.T) {
	d, r := loadDispatcher(t, runtime.Config{MemoryLimitPages: 16}, dispatch.Options{Retry: dispatch.Retry{Backoff: time.Millisecond}},
		"testdata/plugins/flaky")
	res := d.Call(context.Background(), dispatch.Request{Tool: "flaky_read", Arguments: json.RawMessage(`{"mode":"ok"}`)})
	if !res.IsError() || res.Envelope.Code != abi.CodeUnavailable || res.Envelope.Retryable || res.Envelope.Details["attempts"] != nil {
		t.Fatalf("result %s", res.Structured)
	}
	if len(r.finished) != 1 || r.finished[0].Attempts != 1 {
		t.Fatalf("audited %+v, want one call of one attempt", r.finished)
	}
}
