package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"testing"
	"time"
)

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestMigrationsFromEmptyAndReopen(t *testing.T) {
	forEachTarget(t, func(t *testing.T, target string) {
		ctx := context.Background()
		s, err := OpenURL(ctx, target)
		if err != nil {
			t.Fatal(err)
		}
		v, err := s.Version(ctx)
		if err != nil || v != len(migrations) {
			t.Fatalf("version = %d, %v; want %d", v, err, len(migrations))
		}
		if !s.Postgres() {
			var fk int
			if err := s.db.QueryRowContext(ctx, `PRAGMA foreign_keys`).Scan(&fk); err != nil || fk != 1 {
				t.Fatalf("foreign_keys = %d, %v", fk, err)
			}
			var mode string
			if err := s.db.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
				t.Fatalf("journal_mode = %q, %v", mode, err)
			}
		}
		for _, table := range []string{"projects", "repos", "project_repos", "tasks", "attempts", "attempt_repos", "sessions",
			"execution_processes", "log_entries", "turns", "queued_messages", "idempotency_records"} {
			if !hasTable(t, s, table) {
				t.Errorf("table %s missing", table)
			}
		}
		if _, err := s.CreateProject(ctx, "p"); err != nil {
			t.Fatal(err)
		}
		s.Close()
		// Reopening applies nothing twice and keeps the data.
		s, err = OpenURL(ctx, target)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ps, err := s.ListProjects(ctx)
		if err != nil || len(ps) != 1 {
			t.Fatalf("projects after reopen = %v, %v", ps, err)
		}
		// A database from a newer binary is refused with a clear error.
		if _, err := s.db.ExecContext(ctx, `INSERT INTO schema_migrations VALUES (999, ?)`, Now()); err != nil {
			t.Fatal(err)
		}
		s.Close()
		if _, err := OpenURL(ctx, target); err == nil || !regexp.MustCompile(`newer than this binary`).MatchString(err.Error()) {
			t.Fatalf("open newer schema: %v", err)
		}
	})
}

func TestIDsAndTimes(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := NewID()
		if !uuidRE.MatchString(id) || seen[id] {
			t.Fatalf("bad or repeated id %q", id)
		}
		seen[id] = true
	}
	now := Now()
	if _, err := time.Parse(time.RFC3339, now); err != nil {
		t.Fatalf("Now() = %q is not RFC3339: %v", now, err)
	}
	a := FormatTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	b := FormatTime(time.Date(2026, 1, 2, 3, 4, 5, 100000, time.UTC))
	if !(a < b) || a != "2026-01-02T03:04:05.000000Z" {
		t.Fatalf("text order broken: %q vs %q", a, b)
	}
}

// board builds a project with one repo and one task.
func board(t testing.TB, s *Store) (Project, Task) {
	t.Helper()
	ctx := context.Background()
	p, err := s.CreateProject(ctx, "demo")
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.EnsureRepo(ctx, "app", "/src/app")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AddProjectRepo(ctx, p.ID, ProjectRepo{Repo: r, TargetBranch: "main"}); err != nil {
		t.Fatal(err)
	}
	task, err := s.CreateTask(ctx, p.ID, "Fix it", "details")
	if err != nil {
		t.Fatal(err)
	}
	return p, task
}

func TestProjectsReposTasks(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func() *Store) {
		ctx := context.Background()
		s := open()
		p, task := board(t, s)
		if _, err := s.CreateProject(ctx, "demo"); !errors.Is(err, ErrExists) {
			t.Fatalf("duplicate project: %v", err)
		}
		r2, _ := s.EnsureRepo(ctx, "app", "/other/app")
		if err := s.AddProjectRepo(ctx, p.ID, ProjectRepo{Repo: r2, TargetBranch: "main"}); !errors.Is(err, ErrExists) {
			t.Fatalf("second repo named app: %v", err)
		}
		again, _ := s.EnsureRepo(ctx, "ignored", "/src/app")
		if again.Name != "app" {
			t.Fatalf("EnsureRepo re-registered: %+v", again)
		}
		got, err := s.GetProject(ctx, p.ID)
		if err != nil || len(got.Repos) != 1 || got.Repos[0].TargetBranch != "main" {
			t.Fatalf("GetProject = %+v, %v", got, err)
		}
		if _, err := s.CreateTask(ctx, NewID(), "x", ""); !errors.Is(err, ErrNotFound) {
			t.Fatalf("task in missing project: %v", err)
		}
		title := "New title"
		up, err := s.UpdateTask(ctx, task.ID, TaskUpdate{Title: &title})
		if err != nil || up.Title != title || up.Description != "details" || up.Status != StatusTodo {
			t.Fatalf("UpdateTask = %+v, %v", up, err)
		}
		bad := "nope"
		if _, err := s.UpdateTask(ctx, task.ID, TaskUpdate{Status: &bad}); err == nil {
			t.Fatal("invalid status accepted")
		}
		if _, err := s.UpdateTask(ctx, NewID(), TaskUpdate{Title: &title}); !errors.Is(err, ErrNotFound) {
			t.Fatalf("update missing: %v", err)
		}
		if err := s.DeleteTask(ctx, task.ID); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteTask(ctx, task.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("delete twice: %v", err)
		}
	})
}

func addAttempt(t testing.TB, s *Store, taskID, createdAt string) Attempt {
	t.Helper()
	a := Attempt{ID: NewID(), TaskID: taskID, Branch: "pb/x", Executor: "SHELL", Variant: "DEFAULT", Dir: "/tmp/x",
		CreatedAt: createdAt, UpdatedAt: createdAt}
	if err := s.CreateAttempt(context.Background(), a, nil); err != nil {
		t.Fatal(err)
	}
	return a
}

func TestLatestOrderingAndSummary(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func() *Store) {
		ctx := context.Background()
		s := open()
		p, task := board(t, s)

		tasks, err := s.ListTasks(ctx, p.ID, "", 0)
		if err != nil || len(tasks) != 1 || tasks[0].LatestAttemptID != nil || tasks[0].HasInProgressAttempt || tasks[0].LastAttemptFailed {
			t.Fatalf("no-attempt summary = %+v, %v", tasks, err)
		}
		// Two attempts created at the same instant: the smaller id wins.
		at := "2026-01-01T00:00:00.000000Z"
		a1, a2 := addAttempt(t, s, task.ID, at), addAttempt(t, s, task.ID, at)
		want := min(a1.ID, a2.ID)
		older := addAttempt(t, s, task.ID, "2025-01-01T00:00:00.000000Z")
		list, err := s.ListAttempts(ctx, task.ID)
		if err != nil || len(list) != 3 || list[0].ID != want || list[2].ID != older.ID {
			t.Fatalf("ListAttempts order = %+v, %v", list, err)
		}
		sum, err := s.TaskSummary(ctx, task.ID)
		if err != nil || sum.LatestAttemptID == nil || *sum.LatestAttemptID != want || sum.LatestSessionID != nil {
			t.Fatalf("summary = %+v, %v", sum, err)
		}
		if _, err := s.LatestSession(ctx, want); !errors.Is(err, ErrNotFound) {
			t.Fatalf("LatestSession with none: %v", err)
		}
		se, err := s.CreateSession(ctx, want, "SHELL", "DEFAULT")
		if err != nil {
			t.Fatal(err)
		}
		proc := &Process{AttemptID: want, SessionID: &se.ID, RunReason: ReasonCodingAgent, Command: "bash"}
		if err := s.CreateProcess(ctx, proc); err != nil {
			t.Fatal(err)
		}
		sum, _ = s.TaskSummary(ctx, task.ID)
		if sum.LatestSessionID == nil || *sum.LatestSessionID != se.ID || *sum.LatestSessionExecutor != "SHELL" ||
			!sum.HasInProgressAttempt || sum.LastAttemptFailed {
			t.Fatalf("running summary = %+v", sum)
		}
		code := 2
		if err := s.FinishProcess(ctx, proc.ID, ProcFailed, &code, ""); err != nil {
			t.Fatal(err)
		}
		// A second finish (say, crash recovery racing the exit) changes nothing.
		if err := s.FinishProcess(ctx, proc.ID, ProcKilled, nil, ""); err != nil {
			t.Fatal(err)
		}
		got, _ := s.GetProcess(ctx, proc.ID)
		if got.Status != ProcFailed || got.ExitCode == nil || *got.ExitCode != 2 || got.CompletedAt == nil {
			t.Fatalf("finished process = %+v", got)
		}
		sum, _ = s.TaskSummary(ctx, task.ID)
		if sum.HasInProgressAttempt || !sum.LastAttemptFailed {
			t.Fatalf("failed summary = %+v", sum)
		}
		// A dev server never decides the state.
		dev := &Process{AttemptID: want, RunReason: ReasonDevServer, Command: "npm run dev"}
		if err := s.CreateProcess(ctx, dev); err != nil {
			t.Fatal(err)
		}
		latest, err := s.LatestProcess(ctx, want)
		if err != nil || latest.ID != proc.ID {
			t.Fatalf("LatestProcess = %+v, %v", latest, err)
		}
		sum, _ = s.TaskSummary(ctx, task.ID)
		if sum.HasInProgressAttempt {
			t.Fatalf("dev server counted as in progress: %+v", sum)
		}
		filtered, _ := s.ListTasks(ctx, p.ID, StatusDone, 0)
		if len(filtered) != 0 {
			t.Fatalf("status filter: %+v", filtered)
		}
	})
}

func entry(i int) json.RawMessage { return json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)) }

func seedLog(t testing.TB, s *Store, n int) string {
	t.Helper()
	ctx := context.Background()
	_, task := board(t, s)
	a := addAttempt(t, s, task.ID, Now())
	p := &Process{AttemptID: a.ID, RunReason: ReasonCodingAgent, Command: "x"}
	if err := s.CreateProcess(ctx, p); err != nil {
		t.Fatal(err)
	}
	const batch = 10000
	rows := make([]LogRow, 0, batch)
	for i := 0; i < n; i++ {
		rows = append(rows, LogRow{ProcessID: p.ID, Channel: ChannelNormalized, Index: int64(i), Entry: entry(i)})
		if len(rows) == batch || i == n-1 {
			if err := s.AppendLogs(ctx, rows); err != nil {
				t.Fatal(err)
			}
			rows = rows[:0]
		}
	}
	return p.ID
}

func indexes(es []LogEntry) []int64 {
	out := make([]int64, len(es))
	for i, e := range es {
		out[i] = e.Index
	}
	return out
}

func TestLogPaging(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func() *Store) {
		ctx := context.Background()
		s := open()
		pid := seedLog(t, s, 120)
		if n, _ := s.LogCount(ctx, pid, ChannelNormalized); n != 120 {
			t.Fatalf("LogCount = %d", n)
		}
		if n, _ := s.LogCount(ctx, pid, ChannelRaw); n != 0 {
			t.Fatalf("raw LogCount = %d", n)
		}
		page, err := s.LogTail(ctx, pid, ChannelNormalized, -1, 50)
		if err != nil || len(page.Entries) != 50 || page.Entries[0].Index != 70 || page.Entries[49].Index != 119 ||
			!page.HasMore || *page.NextCursor != 70 {
			t.Fatalf("tail page = %v more=%v, %v", indexes(page.Entries), page.HasMore, err)
		}
		if string(page.Entries[0].Entry) != `{"n":70}` {
			t.Fatalf("entry = %s", page.Entries[0].Entry)
		}
		page, _ = s.LogTail(ctx, pid, ChannelNormalized, 70, 50)
		if page.Entries[0].Index != 20 || page.Entries[49].Index != 69 || *page.NextCursor != 20 {
			t.Fatalf("older page = %v", indexes(page.Entries))
		}
		page, _ = s.LogTail(ctx, pid, ChannelNormalized, 20, 50)
		if len(page.Entries) != 20 || page.Entries[0].Index != 0 || page.HasMore || page.NextCursor != nil {
			t.Fatalf("oldest page = %v more=%v", indexes(page.Entries), page.HasMore)
		}
		page, _ = s.LogAfter(ctx, pid, ChannelNormalized, 100, 10)
		if len(page.Entries) != 10 || page.Entries[0].Index != 101 || !page.HasMore {
			t.Fatalf("after page = %v more=%v", indexes(page.Entries), page.HasMore)
		}
		page, _ = s.LogAfter(ctx, pid, ChannelNormalized, 110, 10)
		if len(page.Entries) != 9 || page.HasMore {
			t.Fatalf("last after page = %v more=%v", indexes(page.Entries), page.HasMore)
		}
		page, _ = s.LogAfter(ctx, pid, ChannelNormalized, 119, 10)
		if len(page.Entries) != 0 || page.HasMore {
			t.Fatalf("nothing newer = %v", indexes(page.Entries))
		}
		// Indexes are dense: a duplicate is refused.
		if err := s.AppendLogs(ctx, []LogRow{{ProcessID: pid, Channel: ChannelNormalized, Index: 5, Entry: entry(5)}}); err == nil {
			t.Fatal("duplicate index accepted")
		}
		// One append larger than PostgreSQL's multi-row chunk (logChunk),
		// with a duplicate at its end: nothing of it lands.
		var more []LogRow
		for i := 120; i < 120+2*logChunk+50; i++ {
			more = append(more, LogRow{ProcessID: pid, Channel: ChannelNormalized, Index: int64(i), Entry: entry(i)})
		}
		if err := s.AppendLogs(ctx, append(more, more[0])); err == nil {
			t.Fatal("a batch ending in a duplicate was accepted")
		}
		if n, _ := s.LogCount(ctx, pid, ChannelNormalized); n != 120 {
			t.Fatalf("a refused batch left entries: LogCount = %d", n)
		}
		if err := s.AppendLogs(ctx, more); err != nil {
			t.Fatal(err)
		}
		if n, _ := s.LogCount(ctx, pid, ChannelNormalized); n != int64(120+len(more)) {
			t.Fatalf("LogCount after %d more = %d", len(more), n)
		}
		page, _ = s.LogAfter(ctx, pid, ChannelNormalized, 120+logChunk-2, 3)
		if got := indexes(page.Entries); len(got) != 3 || got[0] != 120+logChunk-1 || string(page.Entries[2].Entry) != fmt.Sprintf(`{"n":%d}`, 120+logChunk+1) {
			t.Fatalf("entries across a chunk boundary = %v", got)
		}
	})
}

func TestTurnsAndQueue(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func() *Store) {
		ctx := context.Background()
		s := open()
		_, task := board(t, s)
		a := addAttempt(t, s, task.ID, Now())
		se, _ := s.CreateSession(ctx, a.ID, "SHELL", "DEFAULT")
		for i := range 5 {
			p := &Process{AttemptID: a.ID, SessionID: &se.ID, RunReason: ReasonCodingAgent, Command: "x"}
			if err := s.CreateProcess(ctx, p); err != nil {
				t.Fatal(err)
			}
			tr, err := s.AddTurn(ctx, se.ID, p.ID, fmt.Sprintf("prompt %d", i))
			if err != nil || tr.Index != int64(i) {
				t.Fatalf("AddTurn = %+v, %v", tr, err)
			}
			if i < 4 {
				if err := s.SetTurnSummary(ctx, p.ID, fmt.Sprintf("done %d", i)); err != nil {
					t.Fatal(err)
				}
			}
		}
		page, err := s.TurnTail(ctx, se.ID, -1, 2)
		if err != nil || len(page.Turns) != 2 || page.Turns[0].Index != 3 || page.Turns[1].Summary != nil || *page.NextCursor != 3 {
			t.Fatalf("turn tail = %+v, %v", page, err)
		}
		page, _ = s.TurnTail(ctx, se.ID, 1, 2)
		if len(page.Turns) != 1 || page.HasMore || *page.Turns[0].Summary != "done 0" {
			t.Fatalf("oldest turns = %+v", page)
		}
		page, _ = s.TurnAfter(ctx, se.ID, 2, 10)
		if len(page.Turns) != 2 || page.HasMore {
			t.Fatalf("turns after = %+v", page)
		}

		if q, _ := s.QueuedMessage(ctx, se.ID); q != nil {
			t.Fatalf("queue not empty: %+v", q)
		}
		s.QueueMessage(ctx, se.ID, "first", "")
		s.QueueMessage(ctx, se.ID, "second", "PLAN")
		q, _ := s.QueuedMessage(ctx, se.ID)
		if q == nil || q.Prompt != "second" || q.Variant != "PLAN" {
			t.Fatalf("queue replaced = %+v", q)
		}
		taken, _ := s.TakeQueuedMessage(ctx, se.ID)
		again, _ := s.TakeQueuedMessage(ctx, se.ID)
		if taken == nil || taken.Prompt != "second" || again != nil {
			t.Fatalf("take = %+v then %+v", taken, again)
		}
		if _, err := s.QueueMessage(ctx, NewID(), "x", ""); !errors.Is(err, ErrNotFound) {
			t.Fatalf("queue on missing session: %v", err)
		}
		// Deleting the task removes everything below it.
		if err := s.DeleteTask(ctx, task.ID); err != nil {
			t.Fatal(err)
		}
		var n int
		s.db.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM turns) + (SELECT COUNT(*) FROM sessions) + (SELECT COUNT(*) FROM execution_processes)`).Scan(&n)
		if n != 0 {
			t.Fatalf("%d rows left after cascade", n)
		}
	})
}

func TestIdempotencyClaims(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func() *Store) {
		ctx := context.Background()
		s := open()
		const workers = 50
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			outcomes = map[string]int{}
		)
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := s.ClaimRequest(ctx, "create_task", "k1", "h1")
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				outcomes[c.Outcome]++
				mu.Unlock()
			}()
		}
		wg.Wait()
		if outcomes[ClaimNew] != 1 || outcomes[ClaimInProgress] != workers-1 {
			t.Fatalf("concurrent claims = %v", outcomes)
		}
		if err := s.CompleteRequest(ctx, "create_task", "k1", []byte(`{"task_id":"t"}`)); err != nil {
			t.Fatal(err)
		}
		c, _ := s.ClaimRequest(ctx, "create_task", "k1", "h1")
		if c.Outcome != ClaimReplay || string(c.Result) != `{"task_id":"t"}` {
			t.Fatalf("replay = %+v", c)
		}
		if c, _ := s.ClaimRequest(ctx, "create_task", "k1", "h2"); c.Outcome != ClaimConflict {
			t.Fatalf("other payload = %+v", c)
		}
		if c, _ := s.ClaimRequest(ctx, "follow_up", "k1", "h2"); c.Outcome != ClaimNew {
			t.Fatalf("same key, other tool = %+v", c)
		}
		if err := s.ReleaseRequest(ctx, "follow_up", "k1"); err != nil {
			t.Fatal(err)
		}
		if c, _ := s.ClaimRequest(ctx, "follow_up", "k1", "h3"); c.Outcome != ClaimNew {
			t.Fatalf("after release = %+v", c)
		}
		// Pruning: the in-progress record is stale after an hour, the completed
		// one after a week; 0 keeps a kind forever.
		later := time.Now().Add(2 * time.Hour)
		if n, _ := s.PruneRequests(ctx, later, 0, time.Hour); n != 1 {
			t.Fatalf("pruned %d stale in-progress records, want 1", n)
		}
		if n, _ := s.PruneRequests(ctx, later, 7*24*time.Hour, time.Hour); n != 0 {
			t.Fatalf("pruned %d young completed records", n)
		}
		if n, _ := s.PruneRequests(ctx, time.Now().Add(8*24*time.Hour), 7*24*time.Hour, 0); n != 1 {
			t.Fatalf("pruned %d old completed records, want 1", n)
		}
	})
}
