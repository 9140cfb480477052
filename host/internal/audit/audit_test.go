package audit_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/audit"
	"github.com/plugboard/plugboard/host/internal/dispatch"
	"github.com/plugboard/plugboard/host/internal/mail"
	"github.com/plugboard/plugboard/host/internal/policy"
	"github.com/plugboard/plugboard/host/internal/registry"
	"github.com/plugboard/plugboard/host/internal/runtime"
	"github.com/plugboard/plugboard/host/internal/store"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

var compiledCache = filepath.Join(os.TempDir(), "plugboard-test-compiled")

func openStore(tb testing.TB) *store.Store {
	tb.Helper()
	st, err := store.Open(context.Background(), filepath.Join(tb.TempDir(), "board.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	return st
}

// loadPlugins builds the echo and crash plugins and returns their registry.
func loadPlugins(tb testing.TB) *registry.Registry {
	tb.Helper()
	if testing.Short() {
		tb.Skip("builds plugins")
	}
	ctx := context.Background()
	dir, _ := buildtest.Plugins(tb, "plugins/echo", "testdata/plugins/crash")
	engine, err := runtime.New(ctx, runtime.Config{CacheDir: compiledCache, CacheKey: testCacheKey})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = engine.Close(ctx) })
	reg, err := registry.Load(ctx, registry.Options{Dirs: []string{dir}, DataDir: tb.TempDir(), Engine: engine})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { reg.Close(ctx) })
	return reg
}

// allowAll is a policy admitting every call; critical names the critical
// tools.
type allowAll struct{ critical string }

func (allowAll) Allow(context.Context, *abi.Caller, policy.Tool) *abi.Envelope { return nil }
func (p allowAll) Critical(t policy.Tool) bool                                 { return t.Def.Name == p.critical }

func TestAuditRowsThroughTheDispatcher(t *testing.T) {
	reg := loadPlugins(t)
	st := openStore(t)
	dir := map[string]mail.AgentInfo{"w1": {ID: "w1", Type: "WORKER", Supervisor: "s1"}, "s1": {ID: "s1", Type: "SUPERVISOR"}}
	m := mail.New(mail.Static(st), mail.Options{Agents: mail.AgentsFunc(func(id string) (mail.AgentInfo, bool) { a, ok := dir[id]; return a, ok })})
	log := audit.New(audit.Static(st), nil)
	defer log.Close()
	d := dispatch.New(reg, dispatch.Options{Auditor: log, Escalator: m, Policy: allowAll{critical: "crash"},
		Retry: dispatch.Retry{Max: -1}})
	w1 := &abi.Caller{ID: "w1", Role: "WORKER"}
	ctx := context.Background()

	if res := d.Call(ctx, dispatch.Request{Tool: "echo", Arguments: json.RawMessage(`{"text":"hi"}`), Caller: w1}); res.IsError() {
		t.Fatal(res.Envelope)
	}
	if res := d.Call(ctx, dispatch.Request{Tool: "echo", Arguments: json.RawMessage(`{"text":5}`), Caller: w1}); !res.IsError() {
		t.Fatal("echo with a number answered")
	}
	if res := d.Call(ctx, dispatch.Request{Tool: "crash", Arguments: json.RawMessage(`{}`), Caller: w1}); !res.IsError() ||
		res.Envelope.Code != abi.CodePluginFailed {
		t.Fatalf("crash answered %+v", res)
	}
	if err := log.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := st.ListDecisions(ctx, store.DecisionFilter{})
	if err != nil || len(rows) != 3 {
		t.Fatalf("rows = %d, %v", len(rows), err)
	}
	trap, invalid, ok := rows[0], rows[1], rows[2] // newest first
	for _, r := range rows {
		if r.Kind != store.DecisionKindCall || r.AgentID != "w1" || r.AgentType != "WORKER" || r.FinishedAt == nil || r.DurationMS == nil {
			t.Errorf("row %+v", r)
		}
	}
	if ok.Tool != "echo" || ok.Status != store.DecisionOK || string(ok.Input) != `{"text":"hi"}` || string(ok.Result) != `{"text":"hi"}` ||
		ok.ErrorCode != "" || ok.Error != nil || ok.Attempts != 1 {
		t.Errorf("success row %+v", ok)
	}
	var env abi.Envelope
	if invalid.Status != store.DecisionError || invalid.ErrorCode != abi.CodeInvalidArgument || invalid.Result != nil ||
		json.Unmarshal(invalid.Error, &env) != nil || env.Code != abi.CodeInvalidArgument || invalid.Attempts != 0 {
		t.Errorf("envelope row %+v (%s)", invalid, invalid.Error)
	}
	if trap.Tool != "crash" || trap.Status != store.DecisionError || trap.ErrorCode != abi.CodePluginFailed ||
		!strings.Contains(string(trap.Error), "deliberate panic") || trap.Attempts != 1 {
		t.Errorf("trap row %+v (%s)", trap, trap.Error)
	}

	// The trap failed for good: its supervisor is told, and the human
	// inbox too, crash being critical. The invalid input is the caller's
	// own error and escalates nothing.
	sup, _ := st.ListInbox(ctx, "s1", true, 0)
	human, _ := st.ListInbox(ctx, mail.Human, true, 0)
	if len(sup) != 1 || sup[0].Subject != "Escalation: crash failed for w1" || sup[0].FromAgentID != mail.System ||
		!strings.Contains(sup[0].Body, abi.CodePluginFailed) {
		t.Fatalf("supervisor inbox = %+v", sup)
	}
	if len(human) != 1 || !strings.HasPrefix(human[0].Subject, "CRITICAL") {
		t.Fatalf("human inbox = %+v", human)
	}
}

func TestAuditMasking(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"user":"u","password":"p","nested":{"password":"kept"}}`, `{"nested":{"password":"kept"},"password":"***","user":"u"}`},
		{`{"user":"u"}`, `{"user":"u"}`},
		{`[1,2]`, `"***"`},
		{``, ``},
	} {
		if got := audit.Mask(json.RawMessage(c.in), []string{"password", "token"}); string(got) != c.want {
			t.Errorf("Mask(%s) = %s, want %s", c.in, got, c.want)
		}
	}
	if got := audit.Mask(json.RawMessage(`{"password":"p"}`), nil); string(got) != `{"password":"p"}` {
		t.Errorf("nothing sensitive: %s", got)
	}

	st := openStore(t)
	l := audit.New(audit.Static(st), nil)
	ctx := context.Background()
	id := l.Invoked(ctx, dispatch.AuditCall{Caller: &abi.Caller{ID: "a"}, Tool: "login", RequestID: "r1",
		Input: json.RawMessage(`{"user":"u","token":"secret"}`), Sensitive: []string{"token"}})
	l.Finished(ctx, id, dispatch.AuditOutcome{Result: json.RawMessage(`{"ok":true}`), Duration: 1500 * time.Microsecond, Attempts: 2})
	l.Close() // drains the queue
	r, err := st.GetDecision(ctx, id)
	if err != nil || strings.Contains(string(r.Input), "secret") || string(r.Input) != `{"token":"***","user":"u"}` ||
		r.RequestID != "r1" || *r.DurationMS != 1 || r.Attempts != 2 {
		t.Fatalf("row = %+v, %v", r, err)
	}
}

func TestAuditWithoutStoreNeverFailsTheCall(t *testing.T) {
	l := audit.New(func(context.Context) (audit.Store, error) { return nil, os.ErrNotExist }, nil)
	id := l.Invoked(context.Background(), dispatch.AuditCall{Tool: "echo"})
	l.Finished(context.Background(), id, dispatch.AuditOutcome{}) // nothing written, nothing fails
	if err := l.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Deliberate(context.Background(), nil, "t", "b"); err != audit.ErrNoCaller {
		t.Fatalf("deliberate without a caller: %v", err)
	}
	l.Close()
	l.Close() // twice is fine
}

func TestAuditAfterCloseWritesAtOnce(t *testing.T) {
	st := openStore(t)
	l := audit.New(audit.Static(st), nil)
	l.Close()
	ctx := context.Background()
	id := l.Invoked(ctx, dispatch.AuditCall{Tool: "echo", Input: json.RawMessage(`{}`)})
	l.Finished(ctx, id, dispatch.AuditOutcome{Envelope: abi.NewEnvelope(abi.CodeInternal, "boom", "")})
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := st.GetDecision(ctx, id)
	if err != nil || r.Status != store.DecisionError || r.ErrorCode != abi.CodeInternal {
		t.Fatalf("row = %+v, %v", r, err)
	}
}

// BenchmarkAuditEcho measures a call to echo through the dispatcher
// without and with the decision log (one INSERT and one UPDATE in SQLite,
// queued for the log's writer). "audited" runs calls back to back, so the
// writer's work (and the queue's back-pressure once it is full) counts;
// "audited-paced" drains the queue between calls, outside the measured
// time (call-ns/op), as when calls are not back to back.
func BenchmarkAuditEcho(b *testing.B) {
	reg := loadPlugins(b)
	st := openStore(b)
	args := json.RawMessage(`{"text":"hello"}`)
	caller := &abi.Caller{ID: "w1", Role: "WORKER"}
	ctx := context.Background()
	plain := dispatch.New(reg, dispatch.Options{})
	l := audit.New(audit.Static(st), nil)
	b.Cleanup(func() { l.Close() })
	audited := dispatch.New(reg, dispatch.Options{Auditor: l})
	for _, c := range []struct {
		name  string
		d     *dispatch.Dispatcher
		paced bool
	}{{"plain", plain, false}, {"audited", audited, false}, {"audited-paced", audited, true}} {
		c.d.Call(ctx, dispatch.Request{Tool: "echo", Arguments: args, Caller: caller}) // instantiate
		b.Run(c.name, func(b *testing.B) {
			var calls time.Duration
			cpu0 := cpuTime()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				if res := c.d.Call(ctx, dispatch.Request{Tool: "echo", Arguments: args, Caller: caller}); res.IsError() {
					b.Fatal(res.Envelope)
				}
				calls += time.Since(start)
				if c.paced {
					_ = l.Flush(ctx)
				}
			}
			b.ReportMetric(float64(calls.Nanoseconds())/float64(b.N), "call-ns/op")
			// The process's CPU per call (calls, writer, GC): what the
			// log costs in all, and less sensitive than time to other
			// load on the machine.
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkAuditHooks measures what the decision log adds on a call's
// path: Invoked and Finished (masking, ids, queueing); the writes happen
// in the writer, drained between iterations outside the measured time
// (hooks-ns/op).
func BenchmarkAuditHooks(b *testing.B) {
	st := openStore(b)
	l := audit.New(audit.Static(st), nil)
	b.Cleanup(func() { l.Close() })
	ctx := context.Background()
	caller := &abi.Caller{ID: "w1", Role: "WORKER"}
	var spent time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		id := l.Invoked(ctx, dispatch.AuditCall{Caller: caller, Tool: "echo", Input: json.RawMessage(`{"text":"hello"}`)})
		l.Finished(ctx, id, dispatch.AuditOutcome{Result: json.RawMessage(`{"text":"hello"}`), Duration: time.Microsecond, Attempts: 1})
		spent += time.Since(start)
		_ = l.Flush(ctx)
	}
	b.ReportMetric(float64(spent.Nanoseconds())/float64(b.N), "hooks-ns/op")
}
