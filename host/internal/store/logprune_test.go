package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// logProcess adds a process to a new attempt of task with n raw and n
// normalized entries of size bytes each, last written at updatedAt, and
// ends it unless running.
func logProcess(t *testing.T, s *Store, taskID string, n, size int, updatedAt string, running bool) Process {
	t.Helper()
	ctx := context.Background()
	a := addAttempt(t, s, taskID, Now())
	p := &Process{AttemptID: a.ID, RunReason: ReasonCodingAgent, Command: "x"}
	if err := s.CreateProcess(ctx, p); err != nil {
		t.Fatal(err)
	}
	var rows []LogRow
	for i := range n {
		// size bytes exactly: 15 before the padding, 2 after.
		e := json.RawMessage(fmt.Sprintf(`{"n":%04d,"p":"%s"}`, i, strings.Repeat("x", size-17)))
		rows = append(rows, LogRow{ProcessID: p.ID, Channel: ChannelRaw, Index: int64(i), Entry: e},
			LogRow{ProcessID: p.ID, Channel: ChannelNormalized, Index: int64(i), Entry: e})
	}
	if err := s.AppendLogs(ctx, rows); err != nil {
		t.Fatal(err)
	}
	if !running {
		if err := s.FinishProcess(ctx, p.ID, ProcCompleted, nil, ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.db.ExecContext(ctx, `UPDATE execution_processes SET updated_at = ? WHERE id = ?`, updatedAt, p.ID); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetProcess(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func logBytesOf(t *testing.T, s *Store, processID string) int64 {
	t.Helper()
	var n int64
	if err := s.db.QueryRowContext(context.Background(), `SELECT log_bytes FROM execution_processes WHERE id = ?`, processID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func testMarker(p PrunedLog) json.RawMessage {
	data, _ := json.Marshal(map[string]any{"pruned": p.Entries, "bytes": p.Bytes, "by_age": p.ByAge})
	return data
}

// TestLogBytesAndRetention: AppendLogs counts what each process's log
// stores; PruneLogs replaces old logs by a marker at the index after their
// last entry, by age and then by size, never the logs of an attempt with a
// process running, each log once when several hosts prune at once.
func TestLogBytesAndRetention(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func() *Store) {
		ctx := context.Background()
		s := open()
		_, task := board(t, s)
		const n, size = 10, 1000
		perLog := int64(2 * n * (size + LogRowOverhead))
		old := logProcess(t, s, task.ID, n, size, "2020-01-01T00:00:00.000000Z", false)
		running := logProcess(t, s, task.ID, n, size, "2020-01-02T00:00:00.000000Z", true)
		middle := logProcess(t, s, task.ID, n, size, "2024-01-01T00:00:00.000000Z", false)
		newest := logProcess(t, s, task.ID, n, size, "2025-01-01T00:00:00.000000Z", false)
		if got := logBytesOf(t, s, old.ID); got != perLog {
			t.Fatalf("log_bytes = %d, want %d", got, perLog)
		}
		if got, err := s.AttemptLogBytes(ctx, old.AttemptID); err != nil || got != perLog {
			t.Fatalf("AttemptLogBytes = %d, %v; want %d", got, err, perLog)
		}
		if got, err := s.AllLogBytes(ctx); err != nil || got != 4*perLog {
			t.Fatalf("AllLogBytes = %d, %v; want %d", got, err, 4*perLog)
		}
		// A cursor a reader holds before the prune.
		cursor := int64(n - 3)

		// By age: the old log goes, the running attempt's older one stays.
		pruned, err := s.PruneLogs(ctx, "2021-01-01T00:00:00.000000Z", 0, testMarker)
		if err != nil || pruned != 1 {
			t.Fatalf("prune by age = %d, %v; want 1", pruned, err)
		}
		for _, channel := range []string{ChannelRaw, ChannelNormalized} {
			page, err := s.LogTail(ctx, old.ID, channel, -1, 50)
			if err != nil || len(page.Entries) != 1 || page.Entries[0].Index != n || page.HasMore || page.NextCursor != nil {
				t.Fatalf("%s tail of a pruned log = %v more=%v, %v", channel, indexes(page.Entries), page.HasMore, err)
			}
			want := fmt.Sprintf(`{"by_age":true,"bytes":%d,"pruned":%d}`, n*size, n)
			if string(page.Entries[0].Entry) != want {
				t.Fatalf("marker = %s, want %s", page.Entries[0].Entry, want)
			}
			// A reader's after_entry_index cursor meets the marker.
			after, _ := s.LogAfter(ctx, old.ID, channel, cursor, 50)
			if len(after.Entries) != 1 || after.Entries[0].Index != n || after.HasMore {
				t.Fatalf("after the old cursor = %v more=%v", indexes(after.Entries), after.HasMore)
			}
			if next, _ := s.LogCount(ctx, old.ID, channel); next != n+1 {
				t.Fatalf("next index after the marker = %d", next)
			}
		}
		if got := logBytesOf(t, s, old.ID); got != 0 {
			t.Fatalf("a pruned log still counts %d bytes", got)
		}
		if page, _ := s.LogTail(ctx, running.ID, ChannelRaw, -1, 50); len(page.Entries) != n {
			t.Fatalf("the running attempt's log was pruned: %v", indexes(page.Entries))
		}
		// Pruning again finds nothing more.
		if pruned, err := s.PruneLogs(ctx, "2021-01-01T00:00:00.000000Z", 0, testMarker); err != nil || pruned != 0 {
			t.Fatalf("second prune = %d, %v", pruned, err)
		}

		// By size: newest kept first. With room for one log, middle goes,
		// and the running attempt's log, older still, stays.
		pruned, err = s.PruneLogs(ctx, "", perLog, testMarker)
		if err != nil || pruned != 1 {
			t.Fatalf("prune by size = %d, %v; want 1", pruned, err)
		}
		if got := logBytesOf(t, s, middle.ID); got != 0 {
			t.Fatalf("middle log keeps %d bytes", got)
		}
		if got := logBytesOf(t, s, newest.ID); got != perLog {
			t.Fatalf("the newest log keeps %d bytes, want %d", got, perLog)
		}
		if page, _ := s.LogTail(ctx, middle.ID, ChannelNormalized, -1, 5); len(page.Entries) != 1 ||
			!strings.Contains(string(page.Entries[0].Entry), `"by_age":false`) {
			t.Fatalf("middle's marker = %+v", page.Entries)
		}
		// Its end makes the running process's log the newest (ending
		// writes updated_at): with room for one log, newest, now older,
		// goes; hosts pruning at once prune it once.
		if err := s.FinishProcess(ctx, running.ID, ProcCompleted, nil, ""); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		var total int64
		for range 4 {
			wg.Go(func() {
				n, err := s.PruneLogs(ctx, "", perLog, testMarker)
				if err != nil {
					t.Errorf("concurrent prune: %v", err)
				}
				mu.Lock()
				total += n
				mu.Unlock()
			})
		}
		wg.Wait()
		if total != 1 {
			t.Fatalf("four hosts pruning at once pruned %d logs, want 1", total)
		}
		if logBytesOf(t, s, newest.ID) != 0 || logBytesOf(t, s, running.ID) != perLog {
			t.Fatalf("after the concurrent prunes: newest keeps %d bytes, the ended one %d", logBytesOf(t, s, newest.ID), logBytesOf(t, s, running.ID))
		}
		if got, _ := s.AllLogBytes(ctx); got != perLog {
			t.Fatalf("after pruning, logs take %d bytes, want %d", got, perLog)
		}
	})
}

// TestLogPageBytes: a page of long entries stops short of maxLogPageBytes,
// so tail_attempt_logs can answer it; one entry larger than that is a page
// alone.
func TestLogPageBytes(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func() *Store) {
		ctx := context.Background()
		s := open()
		_, task := board(t, s)
		p := logProcess(t, s, task.ID, 40, 64<<10, Now(), false)
		page, err := s.LogTail(ctx, p.ID, ChannelRaw, -1, 500)
		if err != nil || len(page.Entries) != 8 || page.Entries[7].Index != 39 || !page.HasMore || *page.NextCursor != 32 {
			t.Fatalf("tail of 64 KiB entries = %v more=%v, %v", indexes(page.Entries), page.HasMore, err)
		}
		page, _ = s.LogAfter(ctx, p.ID, ChannelRaw, -1, 500)
		if len(page.Entries) != 8 || page.Entries[0].Index != 0 || !page.HasMore {
			t.Fatalf("after page of 64 KiB entries = %v more=%v", indexes(page.Entries), page.HasMore)
		}
		big := logProcess(t, s, task.ID, 2, 1<<20, Now(), false)
		page, _ = s.LogTail(ctx, big.ID, ChannelRaw, -1, 500)
		if len(page.Entries) != 1 || page.Entries[0].Index != 1 || !page.HasMore {
			t.Fatalf("tail of 1 MiB entries = %v more=%v", indexes(page.Entries), page.HasMore)
		}
	})
}
