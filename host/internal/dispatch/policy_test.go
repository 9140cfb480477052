package dispatch_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/caller"
	"github.com/plugboard/plugboard/host/internal/dispatch"
	"github.com/plugboard/plugboard/host/internal/policy"
	"github.com/plugboard/plugboard/host/internal/registry"
	"github.com/plugboard/plugboard/host/internal/runtime"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// The policy, retry, audit and escalation steps are exercised with
// testdata/plugins/flaky, whose tools fail as their mode argument says. A
// plugin keeps no state across instances, so runs are counted by the host:
// the auditor's AuditOutcome.Attempts.

type recorder struct {
	mu        sync.Mutex
	invoked   []dispatch.AuditCall
	ctxCaller []*abi.Caller
	finished  []dispatch.AuditOutcome
	escalated []dispatch.AuditCall
	escEnv    []*abi.Envelope
}

func (r *recorder) Invoked(ctx context.Context, c dispatch.AuditCall) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.invoked = append(r.invoked, c)
	r.ctxCaller = append(r.ctxCaller, caller.From(ctx))
	return c.Tool
}

func (r *recorder) Finished(_ context.Context, id string, o dispatch.AuditOutcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.finished = append(r.finished, o)
}

func (r *recorder) Failed(_ context.Context, c dispatch.AuditCall, env *abi.Envelope) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.escalated = append(r.escalated, c)
	r.escEnv = append(r.escEnv, env)
}

const flakyAgents = `{
  "agents": [
    {"id": "boss", "type": "SUPERVISOR"},
    {"id": "w1", "type": "WORKER", "supervisor": "boss"}
  ],
  "permissions": {"WORKER": {"allow": ["mcp__flaky__*"], "deny": ["flaky_write"]}},
  "critical_tools": ["flaky_read"]
}`

// flakyDispatcher loads the flaky plugin behind a dispatcher with the
// flakyAgents policy, r as auditor and escalator, and the given backoff.
func flakyDispatcher(t *testing.T, backoff time.Duration) (*dispatch.Dispatcher, *recorder, *policy.Policy) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds plugins")
	}
	ctx := context.Background()
	dir, _ := buildtest.Plugins(t, "testdata/plugins/flaky")
	engine, err := runtime.New(ctx, runtime.Config{CacheDir: compiledCache, CacheKey: testCacheKey})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = engine.Close(ctx) })
	reg, err := registry.Load(ctx, registry.Options{Dirs: []string{dir}, DataDir: t.TempDir(), Engine: engine})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close(ctx) })
	if _, ok := reg.Resolve("mcp__flaky__read"); !ok {
		t.Fatalf("flaky_read not served under its alias; problems: %v", reg.Problems())
	}
	pol, err := policy.Parse("agents.json", []byte(flakyAgents))
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{}
	d := dispatch.New(reg, dispatch.Options{Policy: pol, Auditor: r, Escalator: r, Retry: dispatch.Retry{Backoff: backoff}})
	return d, r, pol
}

func boss() *abi.Caller { return &abi.Caller{ID: "boss", Role: policy.Supervisor} }

func TestRetryCounts(t *testing.T) {
	d, r, _ := flakyDispatcher(t, 10*time.Millisecond)
	for _, tc := range []struct {
		name, tool, args string
		runs             int
		code             string
	}{
		{"retryable read runs 4 times", "flaky_read", `{"mode":"retryable"}`, 4, abi.CodeUnavailable},
		{"retryable read by alias runs 4 times", "mcp__flaky__read", `{"mode":"retryable"}`, 4, abi.CodeUnavailable},
		{"retryable write without request_id runs once", "flaky_write", `{"mode":"retryable"}`, 1, abi.CodeUnavailable},
		{"retryable write with request_id runs 4 times", "flaky_write", `{"mode":"retryable","request_id":"r-1"}`, 4, abi.CodeUnavailable},
		{"non-retryable read runs once", "flaky_read", `{"mode":"fatal"}`, 1, abi.CodeConflict},
		{"success runs once", "flaky_read", `{"mode":"ok"}`, 1, ""},
		{"validation failure never runs", "flaky_read", `{"mode":"nope"}`, 0, abi.CodeInvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(r.finished)
			start := time.Now()
			res := d.Call(context.Background(), dispatch.Request{Tool: tc.tool, Arguments: json.RawMessage(tc.args), Caller: boss()})
			elapsed := time.Since(start)
			if len(r.finished) != before+1 {
				t.Fatalf("auditor finished %d calls, want 1", len(r.finished)-before)
			}
			out := r.finished[len(r.finished)-1]
			if out.Attempts != tc.runs {
				t.Errorf("runs = %d, want %d", out.Attempts, tc.runs)
			}
			if tc.code == "" {
				if res.IsError() {
					t.Fatalf("unexpected envelope %s", res.Structured)
				}
				return
			}
			if !res.IsError() || res.Envelope.Code != tc.code {
				t.Fatalf("result %s, want code %s", res.Structured, tc.code)
			}
			if tc.runs > 1 {
				if got, _ := res.Envelope.Details["attempts"].(int); got != tc.runs {
					t.Errorf("details.attempts = %v, want %d", res.Envelope.Details["attempts"], tc.runs)
				}
				// Backoff 10ms, 20ms, 40ms.
				if elapsed < 70*time.Millisecond {
					t.Errorf("4 runs took %v, less than the backoff (70ms)", elapsed)
				}
			}
		})
	}
}

func TestRetryRespectsDeadline(t *testing.T) {
	d, r, _ := flakyDispatcher(t, 200*time.Millisecond)
	// Warm the plugin up (compiling it may take longer than the deadline).
	if res := d.Call(context.Background(), dispatch.Request{Tool: "flaky_read", Arguments: json.RawMessage(`{"mode":"ok"}`), Caller: boss()}); res.IsError() {
		t.Fatal(res.Structured)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	start := time.Now()
	res := d.Call(ctx, dispatch.Request{Tool: "flaky_read", Arguments: json.RawMessage(`{"mode":"retryable"}`), Caller: boss()})
	if !res.IsError() || res.Envelope.Code != abi.CodeUnavailable {
		t.Fatalf("result %s", res.Structured)
	}
	if got := r.finished[1].Attempts; got != 1 {
		t.Errorf("runs = %d, want 1: the backoff would pass the deadline", got)
	}
	if time.Since(start) > 150*time.Millisecond {
		t.Errorf("the call waited past its deadline: %v", time.Since(start))
	}
}

func TestEscalation(t *testing.T) {
	d, r, _ := flakyDispatcher(t, time.Millisecond)
	call := func(c *abi.Caller, tool, args string) *dispatch.Result {
		return d.Call(context.Background(), dispatch.Request{Tool: tool, Arguments: json.RawMessage(args), Caller: c})
	}
	w1 := &abi.Caller{ID: "w1", Role: policy.Worker}

	// A final failure after retries: escalated once, critical (flaky_read
	// is in critical_tools).
	call(boss(), "flaky_read", `{"mode":"retryable"}`)
	if len(r.escalated) != 1 || !r.escalated[0].Critical || r.escalated[0].Tool != "flaky_read" || r.escEnv[0].Code != abi.CodeUnavailable {
		t.Fatalf("escalations %+v", r.escalated)
	}
	// A non-retryable plugin failure of a non-critical tool: escalated once,
	// not critical.
	call(boss(), "flaky_write", `{"mode":"fatal"}`)
	if len(r.escalated) != 2 || r.escalated[1].Critical || r.escEnv[1].Code != abi.CodeConflict {
		t.Fatalf("escalations %+v", r.escalated)
	}
	// The caller's own errors are not escalated: validation, permission,
	// unknown tool; nor is a success.
	call(boss(), "flaky_read", `{}`)
	call(boss(), "flaky_read", `{"mode":1}`)
	call(w1, "flaky_write", `{"mode":"retryable"}`)
	call(boss(), "no_such_tool", `{}`)
	call(boss(), "flaky_read", `{"mode":"ok"}`)
	if len(r.escalated) != 2 {
		t.Fatalf("escalated %d times, want 2: %+v", len(r.escalated), r.escalated[2:])
	}
}

func TestPolicyAuditAndCaller(t *testing.T) {
	d, r, _ := flakyDispatcher(t, time.Millisecond)
	w1 := &abi.Caller{ID: "w1", Role: policy.Worker}

	// Allowed through the alias pattern; the caller reaches the plugin and
	// the context.
	res := d.Call(context.Background(), dispatch.Request{Tool: "flaky_read",
		Arguments: json.RawMessage(`{"mode":"ok","secret":"s","token":"t"}`), Caller: w1})
	if res.IsError() {
		t.Fatalf("worker refused flaky_read (allowed by mcp__flaky__*): %s", res.Structured)
	}
	var out struct{ CallerID, CallerRole string }
	if err := json.Unmarshal(res.Structured, &struct {
		ID   *string `json:"caller_id"`
		Role *string `json:"caller_role"`
	}{&out.CallerID, &out.CallerRole}); err != nil || out.CallerID != "w1" || out.CallerRole != policy.Worker {
		t.Fatalf("plugin saw caller %+v (%s)", out, res.Structured)
	}
	if got := r.invoked[0]; got.Tool != "flaky_read" || !slices.Equal(got.Sensitive, []string{"secret", "token"}) || got.Caller != w1 {
		t.Fatalf("audit call %+v", got)
	}
	if r.ctxCaller[0] != w1 {
		t.Fatalf("context caller %+v, want w1", r.ctxCaller[0])
	}

	// Refused by the deny list: audited (invoked and finished with the
	// envelope, no run), with type and tool named.
	res = d.Call(context.Background(), dispatch.Request{Tool: "flaky_write", Arguments: json.RawMessage(`{"mode":"ok","request_id":"k"}`), Caller: w1})
	if !res.IsError() || res.Envelope.Code != abi.CodePermissionDenied {
		t.Fatalf("result %s", res.Structured)
	}
	env := res.Envelope
	if env.Details["agent_id"] != "w1" || env.Details["agent_type"] != policy.Worker || env.Details["tool"] != "flaky_write" || env.Hint == "" {
		t.Fatalf("envelope %+v", env)
	}
	if len(r.invoked) != 2 || r.invoked[1].RequestID != "k" {
		t.Fatalf("refusal not audited with its request_id: %+v", r.invoked)
	}
	if o := r.finished[1]; o.Envelope == nil || o.Envelope.Code != abi.CodePermissionDenied || o.Attempts != 0 {
		t.Fatalf("refusal outcome %+v", o)
	}

	// Without a caller, a policy refuses.
	res = d.Call(context.Background(), dispatch.Request{Tool: "flaky_read", Arguments: json.RawMessage(`{"mode":"ok"}`)})
	if !res.IsError() || res.Envelope.Code != abi.CodePermissionDenied {
		t.Fatalf("call without caller: %s", res.Structured)
	}
	// The caller may come in the context instead.
	ctx := caller.With(context.Background(), boss())
	if res = d.Call(ctx, dispatch.Request{Tool: "flaky_write", Arguments: json.RawMessage(`{"mode":"ok"}`)}); res.IsError() {
		t.Fatalf("call with caller in context: %s", res.Structured)
	}
	// Success outcome carries the result.
	if o := r.finished[len(r.finished)-1]; o.Envelope != nil || len(o.Result) == 0 || o.Attempts != 1 {
		t.Fatalf("success outcome %+v", o)
	}
}

func TestSensitiveFields(t *testing.T) {
	got := dispatch.SensitiveFields(json.RawMessage(`{"type":"object","properties":{"a":{"writeOnly":true},"b":{"x-sensitive":true},"c":{"type":"string"},"d":{"x-sensitive":false}}}`))
	if !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("got %v", got)
	}
	if got := dispatch.SensitiveFields(json.RawMessage(`{"type":"object"}`)); got != nil {
		t.Fatalf("got %v", got)
	}
}
