package audit_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/audit"
	"github.com/plugboard/plugboard/host/internal/dispatch"
	"github.com/plugboard/plugboard/host/internal/store"
	"github.com/plugboard/plugboard/internal/testing/pgtest"
)

// BenchmarkAuditStores is BenchmarkAuditEcho's audited echo call with the
// decision log on each store: "sqlite" (a file, as BenchmarkAuditEcho)
// and "postgres" (a database on a throwaway cluster of the benchmark's
// own, opened with store.OpenURL; skipped when no server is installed,
// unless PLUGBOARD_REQUIRE_POSTGRES is set). The cluster runs with
// fsync=off and synchronous_commit=off (internal/testing/pgtest).
//
// "audited" and "audited-paced" are BenchmarkAuditEcho's (call-ns/op: the
// calls back to back, the writer's work and the queue's back-pressure
// counting; or the queue drained between calls, outside the measured
// time). "write" measures what the store itself costs a call: the hooks
// (Invoked, Finished) and the Flush that waits for the writer to store
// both rows, per call (write-ns/op). cpu-ns/op counts this process only,
// not the PostgreSQL server's backends.
func BenchmarkAuditStores(b *testing.B) {
	reg := loadPlugins(b)
	for _, target := range []struct {
		name string
		open func(tb testing.TB) *store.Store
	}{
		{"sqlite", openStore},
		{"postgres", func(tb testing.TB) *store.Store {
			return openURL(tb, pgtest.Start(tb).NewDatabase(tb))
		}},
	} {
		b.Run(target.name, func(b *testing.B) {
			st := target.open(b)
			args := json.RawMessage(`{"text":"hello"}`)
			caller := &abi.Caller{ID: "w1", Role: "WORKER"}
			ctx := context.Background()
			l := audit.New(audit.Static(st), nil)
			b.Cleanup(func() { l.Close() })
			d := dispatch.New(reg, dispatch.Options{Auditor: l})
			d.Call(ctx, dispatch.Request{Tool: "echo", Arguments: args, Caller: caller}) // instantiate
			if err := l.Flush(ctx); err != nil {
				b.Fatal(err)
			}
			for _, paced := range []bool{false, true} {
				name := "audited"
				if paced {
					name = "audited-paced"
				}
				b.Run(name, func(b *testing.B) {
					var calls time.Duration
					cpu0 := cpuTime()
					for i := 0; i < b.N; i++ {
						start := time.Now()
						if res := d.Call(ctx, dispatch.Request{Tool: "echo", Arguments: args, Caller: caller}); res.IsError() {
							b.Fatal(res.Envelope)
						}
						calls += time.Since(start)
						if paced {
							_ = l.Flush(ctx)
						}
					}
					b.ReportMetric(float64(calls.Nanoseconds())/float64(b.N), "call-ns/op")
					b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
				})
				_ = l.Flush(ctx)
			}
			b.Run("write", func(b *testing.B) {
				var spent time.Duration
				for i := 0; i < b.N; i++ {
					start := time.Now()
					id := l.Invoked(ctx, dispatch.AuditCall{Caller: caller, Tool: "echo", Input: args})
					l.Finished(ctx, id, dispatch.AuditOutcome{Result: args, Duration: time.Microsecond, Attempts: 1})
					if err := l.Flush(ctx); err != nil {
						b.Fatal(err)
					}
					spent += time.Since(start)
				}
				b.ReportMetric(float64(spent.Nanoseconds())/float64(b.N), "write-ns/op")
			})
		})
	}
}

// openURL opens the store target names (store.OpenURL), closed when tb
// ends.
func openURL(tb testing.TB, target string) *store.Store {
	tb.Helper()
	st, err := store.OpenURL(context.Background(), target)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	return st
}
