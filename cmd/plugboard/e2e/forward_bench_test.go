package e2e

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/plugboard/plugboard/abi/tasks"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/pgtest"
)

// BenchmarkForwardedCall measures what a workspace read costs when the
// call reaches a host that does not hold the attempt: two `plugboard
// serve` hosts with separate data directories and one store, a running
// SHELL attempt on host A, and get_attempt_changes called through A
// (local) and through B (queued in the store for A, answered back),
// alternating, forwardedCalls of each. On a shared SQLite file the hosts
// poll for commands and answers (50 ms); on PostgreSQL they wake each
// other with LISTEN/NOTIFY. docs/BENCHMARKS.md section 12 records the
// figures.
func BenchmarkForwardedCall(b *testing.B) {
	dir, _ := buildtest.Plugins(b, taskPlugins...)
	for _, kind := range []string{"sqlite-file", "postgres"} {
		b.Run(kind, func(b *testing.B) {
			target := filepath.Join(b.TempDir(), "shared.db")
			if kind == "postgres" {
				target = pgtest.Start(b).NewDatabase(b)
			}
			hostA, hostB, attemptID := forwardingPair(b, dir, target)
			changes := func(h *hostProc) time.Duration {
				start := time.Now()
				var out tasks.ChangesOut
				if env := h.call(b, "get_attempt_changes", map[string]any{"attempt_id": attemptID}, &out); env != nil {
					b.Fatalf("get_attempt_changes: %+v", env)
				}
				return time.Since(start)
			}
			// Settle before timing: the plugins compile in the background
			// after start-up (first calls run interpreted), and on SQLite A
			// polls for commands once its heartbeat (5 s) has seen B.
			for range 20 {
				changes(hostA)
				changes(hostB)
			}
			var local, forwarded []time.Duration
			for b.Loop() {
				local, forwarded = local[:0], forwarded[:0]
				for range forwardedCalls {
					local = append(local, changes(hostA))
					forwarded = append(forwarded, changes(hostB))
				}
			}
			l, f := p50(local), p50(forwarded)
			b.ReportMetric(float64(l.Microseconds())/1000, "local-p50-ms")
			b.ReportMetric(float64(f.Microseconds())/1000, "forwarded-p50-ms")
			b.ReportMetric(float64(p90(forwarded).Microseconds())/1000, "forwarded-p90-ms")
			b.Logf("%s: get_attempt_changes p50 local %v, forwarded %v (+%v), forwarded p90 %v",
				kind, l.Round(10*time.Microsecond), f.Round(10*time.Microsecond), (f - l).Round(10*time.Microsecond),
				p90(forwarded).Round(10*time.Microsecond))
		})
	}
}

// forwardedCalls is how many calls of each kind BenchmarkForwardedCall
// times per iteration.
const forwardedCalls = 60

// forwardingPair starts hosts A and B over target with a project, and a
// SHELL attempt running on A that has written one file.
func forwardingPair(b *testing.B, plugins, target string) (hostA, hostB *hostProc, attemptID string) {
	repo := newRepo(b, "hello\n")
	dataA, dataB := b.TempDir(), b.TempDir()
	project := newProject(b, dataA, target, "shared", repo)
	hostA = startHost(b, "--plugins", plugins, "--data", dataA, "--store", target)
	hostB = startHost(b, "--plugins", plugins, "--data", dataB, "--store", target)
	started := startShellAttempt(b, hostA, project.ID, "Forwarded reads", "echo changed > notes.txt; echo started; sleep 600")
	waitState(b, hostA, started.AttemptID, tasks.StateRunning, 30*time.Second)
	b.Cleanup(func() {
		hostA.call(b, "stop_attempt", map[string]any{"attempt_id": started.AttemptID, "force": true}, nil)
	})
	return hostA, hostB, started.AttemptID
}

func p50(ds []time.Duration) time.Duration { return quantile(ds, 0.5) }
func p90(ds []time.Duration) time.Duration { return quantile(ds, 0.9) }

func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		panic(fmt.Sprintf("quantile %v of no samples", q))
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}
