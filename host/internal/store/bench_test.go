package store

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/plugboard/plugboard/internal/testing/pgtest"
)

// The benchmarks run each measurement on both stores, as sub-benchmarks
// "sqlite" (a file in a temporary directory, WAL) and "postgres" (a fresh
// database on the test binary's throwaway cluster, skipped when no server
// is installed unless PLUGBOARD_REQUIRE_POSTGRES is set). The cluster runs
// with fsync=off and synchronous_commit=off (internal/testing/pgtest): its write
// figures are a lower bound for a durable server; SQLite's synchronous
// NORMAL does not sync at commit either.

// benchStores runs f as sub-benchmark "sqlite" and "postgres", each with a
// fresh store and its target (the file path or the database URL).
func benchStores(b *testing.B, f func(b *testing.B, s *Store, target string)) {
	b.Helper()
	b.Run("sqlite", func(b *testing.B) {
		target := filepath.Join(b.TempDir(), "bench.db")
		f(b, openTarget(b, target), target)
	})
	b.Run("postgres", func(b *testing.B) {
		target := pgtest.Shared(b).NewDatabase(b)
		f(b, openTarget(b, target), target)
	})
}

// The log page benchmarks read one page of 50 entries from a
// 1,000,000-entry log and, as the baseline measured in the same run, from
// a 1,000-entry log: the ratio shows whether a page's cost depends on the
// log's length.

// benchSeedLog fills one process's normalised channel with n entries and
// returns the process's ID. SQLite is seeded through AppendLogs (10,000
// rows a transaction, what seedLog does); PostgreSQL through COPY on
// log_entries, since AppendLogs sends one INSERT a row, a round trip each,
// and then ANALYZE, as autovacuum would after such a load. The seeding
// time is logged.
func benchSeedLog(b *testing.B, s *Store, target string, n int) string {
	b.Helper()
	start := time.Now()
	if !s.Postgres() {
		pid := seedLog(b, s, n)
		b.Logf("seeded %d entries (AppendLogs) in %v", n, time.Since(start).Round(time.Millisecond))
		return pid
	}
	pid := seedLog(b, s, 0)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, target)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	i := 0
	src := pgx.CopyFromFunc(func() ([]any, error) {
		if i == n {
			return nil, nil
		}
		row := []any{pid, ChannelNormalized, int64(i), string(entry(i))}
		i++
		return row, nil
	})
	if got, err := conn.CopyFrom(ctx, pgx.Identifier{"log_entries"}, []string{"process_id", "channel", "entry_index", "entry"}, src); err != nil || got != int64(n) {
		b.Fatalf("copy %d of %d log entries: %v", got, n, err)
	}
	copied := time.Since(start)
	if _, err := conn.Exec(ctx, `ANALYZE log_entries`); err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d entries (COPY) in %v, ANALYZE %v", n, copied.Round(time.Millisecond),
		(time.Since(start) - copied).Round(time.Millisecond))
	return pid
}

func benchPages(b *testing.B, n int) {
	benchStores(b, func(b *testing.B, s *Store, target string) {
		pid := benchSeedLog(b, s, target, n)
		ctx := context.Background()
		mid := int64(n / 2)
		b.Run("tail", func(b *testing.B) {
			for b.Loop() {
				if p, err := s.LogTail(ctx, pid, ChannelNormalized, -1, 50); err != nil || len(p.Entries) != 50 {
					b.Fatal(err)
				}
			}
		})
		b.Run("cursor", func(b *testing.B) {
			for b.Loop() {
				if p, err := s.LogTail(ctx, pid, ChannelNormalized, mid, 50); err != nil || len(p.Entries) != 50 {
					b.Fatal(err)
				}
			}
		})
		b.Run("after", func(b *testing.B) {
			for b.Loop() {
				if p, err := s.LogAfter(ctx, pid, ChannelNormalized, mid, 50); err != nil || len(p.Entries) != 50 {
					b.Fatal(err)
				}
			}
		})
	})
}

func BenchmarkLogPage1M(b *testing.B)   { benchPages(b, 1_000_000) }
func BenchmarkLogPage1000(b *testing.B) { benchPages(b, 1000) }

// BenchmarkAppendLogs appends a batch of 1,000 entries to one process's
// log per op (AppendLogs, one transaction): what a running agent's log
// writer costs, and why the 1M-entry PostgreSQL log is seeded through
// COPY instead.
func BenchmarkAppendLogs(b *testing.B) {
	benchStores(b, func(b *testing.B, s *Store, _ string) {
		pid := seedLog(b, s, 0)
		ctx := context.Background()
		const batch = 1000
		rows := make([]LogRow, batch)
		next := 0
		for b.Loop() {
			for j := range rows {
				rows[j] = LogRow{ProcessID: pid, Channel: ChannelNormalized, Index: int64(next), Entry: entry(next)}
				next++
			}
			if err := s.AppendLogs(ctx, rows); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/entry")
	})
}

// BenchmarkCreateTask creates one task per op: "plain" is Store.CreateTask
// alone; "keyed" is what create_task with a request_id costs the store —
// the claim (ClaimRequestAs), the task created inside the effect journal's
// transaction (RunEffect, atomic, as boardapi does) and the stored answer
// (CompleteClaim).
func BenchmarkCreateTask(b *testing.B) {
	benchStores(b, func(b *testing.B, s *Store, _ string) {
		p, _ := board(b, s)
		ctx := context.Background()
		b.Run("plain", func(b *testing.B) {
			for b.Loop() {
				if _, err := s.CreateTask(ctx, p.ID, "Fix it", "details"); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("keyed", func(b *testing.B) {
			const tool, hash = "create_task", "sha256:bench"
			for b.Loop() {
				key := "req-" + NewID() // -count reruns this on the same store
				outcome, _, token, err := s.ClaimRequestAs(ctx, time.Now(), tool, key, hash, time.Hour, "bench", nil)
				if err != nil || outcome != ClaimNew {
					b.Fatalf("claim %s: %q, %v", key, outcome, err)
				}
				out, replayed, err := s.RunEffect(ctx, EffectKey{Tool: tool, RequestID: key, PayloadHash: hash,
					Op: "create_task", ArgsHash: "args"}, true, func(ctx context.Context) ([]byte, error) {
					t, err := s.CreateTask(ctx, p.ID, "Fix it", "details")
					return []byte(`{"id":"` + t.ID + `"}`), err
				})
				if err != nil || replayed || !strings.HasPrefix(string(out), `{"id":`) {
					b.Fatalf("effect %s: %s, %v, %v", key, out, replayed, err)
				}
				if held, err := s.CompleteClaim(ctx, tool, key, token, out); err != nil || !held {
					b.Fatalf("complete %s: %v, %v", key, held, err)
				}
			}
		})
	})
}
