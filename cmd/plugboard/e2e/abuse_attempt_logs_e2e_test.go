package e2e

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plugboard/plugboard/abi/tasks"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/pgtest"
)

// Abuse of the attempt logs, through the real binary: an agent process
// that floods its stdout and stderr with text, or writes NUL bytes, must
// not grow the board's store without bound (on a shared PostgreSQL store
// that would fill it for every host). Each test asserts by effect: how
// much the store grew, what an agent reading the log through
// tail_attempt_logs sees, and which logs retention removed.

// The floods: ordinary lines on both streams, and NUL bytes with no line
// end at all.
const (
	textFlood = `yes 'plugboard abuse: an ordinary line of agent output, some eighty bytes long, again' | head -c 40M
yes 'plugboard abuse: a line of stderr, as a compiler or a retry loop prints it' | head -c 8M >&2
echo flood done`
	nulFlood = `head -c 4M /dev/zero; echo; echo nul flood done`
)

// storeBytes is what a SQLite store takes on disk: the database file and
// its write-ahead log.
func storeBytes(t *testing.T, data string) int64 {
	t.Helper()
	var n int64
	for _, f := range []string{"board.db", "board.db-wal"} {
		if fi, err := os.Stat(filepath.Join(data, f)); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// tailLogs reads the newest entries of an attempt's latest process through
// tail_attempt_logs, the tool an agent reads logs with.
func tailLogs(t *testing.T, h *hostProc, attemptID, channel string, limit int) tasks.LogsOut {
	t.Helper()
	var out tasks.LogsOut
	if env := h.call(t, "tail_attempt_logs", map[string]any{"attempt_id": attemptID, "channel": channel, "limit": limit}, &out); env != nil {
		t.Fatalf("tail_attempt_logs %s: %+v", channel, env)
	}
	return out
}

// findEntry returns the first entry of out on stream ("" any) whose
// content holds every one of words.
func findEntry(out tasks.LogsOut, stream string, words ...string) *tasks.LogEntry {
next:
	for i, e := range out.Entries {
		if stream != "" && string(e.Stream) != stream {
			continue
		}
		for _, w := range words {
			if !strings.Contains(e.Content, w) {
				continue next
			}
		}
		return &out.Entries[i]
	}
	return nil
}

// waitRun waits until the attempt's latest process is processID (any
// process, when "") and has ended.
func waitRun(t *testing.T, h *hostProc, attemptID, processID string) tasks.StatusOut {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		var st tasks.StatusOut
		if env := h.call(t, "get_attempt_status", map[string]any{"attempt_id": attemptID}, &st); env != nil {
			t.Fatalf("get_attempt_status: %+v", env)
		}
		latest := st.LatestExecutionProcessID != nil && (processID == "" || *st.LatestExecutionProcessID == processID)
		if latest && st.State != tasks.StateRunning && st.State != tasks.StateIdle {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("attempt %s still %s (process %v), want process %q ended", attemptID, st.State, st.LatestExecutionProcessID, processID)
		}
	}
}

// followUp sends script as a new run of the attempt and returns its
// process.
func followUp(t *testing.T, h *hostProc, attemptID, script string) string {
	t.Helper()
	var out tasks.FollowUpOut
	if env := h.call(t, "follow_up", map[string]any{"action": "send", "attempt_id": attemptID, "prompt": script}, &out); env != nil {
		t.Fatalf("follow_up: %+v", env)
	}
	if out.ExecutionProcessID == nil {
		t.Fatalf("follow_up started no process: %+v", out)
	}
	return *out.ExecutionProcessID
}

// TestAbuseAttemptLogsBounded floods a SQLite board through SHELL
// attempts with the host's default limits: 4 MiB of NUL bytes, then 48 MiB
// of text (40 MiB on stdout, 8 MiB on stderr) in one run, then follow-up
// runs past the attempt's budget. The store grows by what the caps keep,
// not by what the agent wrote; the agent reading its log sees, on stdout,
// on stderr and in the normalized log, that output was dropped and how
// much. A restart with a small --attempt-logs-max-bytes prunes the oldest
// logs, leaving a marker saying so.
func TestAbuseAttemptLogsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary, floods a store")
	}
	dir, _ := buildtest.Plugins(t, taskPlugins...)
	repo := newRepo(t, "hello\n")
	data := t.TempDir()
	project := newProject(t, data, "", "abuse", repo)
	h := startHost(t, "--plugins", dir, "--data", data)

	// 4 MiB of NUL bytes: stored compactly, in far less than the input.
	before := storeBytes(t, data)
	nul := startShellAttempt(t, h, project.ID, "NUL flood", nulFlood)
	waitRun(t, h, nul.AttemptID, "")
	nulGrowth := storeBytes(t, data) - before
	t.Logf("4 MiB of NUL bytes grew the store by %.2f MiB", float64(nulGrowth)/(1<<20))
	if nulGrowth > 1<<20 {
		t.Errorf("4 MiB of NUL bytes grew the store by %d bytes, want at most 1 MiB", nulGrowth)
	}
	raw := tailLogs(t, h, nul.AttemptID, "raw", 100)
	if findEntry(raw, "stdout", "nul flood done") == nil || findEntry(raw, "stdout", "␀×") == nil {
		t.Errorf("the NUL flood's raw log does not show the NULs as a counted run: %+v", raw.Entries)
	}
	for _, e := range raw.Entries {
		if strings.ContainsRune(e.Content, 0) {
			t.Fatalf("a raw entry holds NUL bytes: %q", e.Content[:min(len(e.Content), 80)])
		}
	}

	// 48 MiB of text in one run: the process keeps its 8 MiB.
	before = storeBytes(t, data)
	text := startShellAttempt(t, h, project.ID, "Text flood", textFlood)
	waitRun(t, h, text.AttemptID, "")
	textGrowth := storeBytes(t, data) - before
	t.Logf("48 MiB of text grew the store by %.2f MiB", float64(textGrowth)/(1<<20))
	if textGrowth > 20<<20 {
		t.Fatalf("48 MiB of text grew the store by %.1f MiB, want at most 20 MiB (8 MiB kept per process)", float64(textGrowth)/(1<<20))
	}
	raw = tailLogs(t, h, text.AttemptID, "raw", 20)
	for _, stream := range []string{"stdout", "stderr"} {
		if e := findEntry(raw, stream, "dropped", stream); e == nil {
			t.Errorf("no truncation marker on %s in the newest raw entries: %+v", stream, raw.Entries)
		} else {
			t.Logf("%s marker: %s", stream, e.Content)
		}
	}
	for _, stream := range []string{"stdout", "stderr"} {
		if e := findEntry(raw, stream, "of "+stream+" (", "dropped"); e == nil {
			t.Errorf("no total of what %s dropped: %+v", stream, raw.Entries)
		} else {
			t.Logf("%s total: %s", stream, e.Content)
		}
	}
	normalized := tailLogs(t, h, text.AttemptID, "normalized", 20)
	if e := findEntry(normalized, "", "dropped"); e == nil {
		t.Errorf("no truncation marker in the newest normalized entries: %+v", normalized.Entries)
	} else {
		t.Logf("normalized marker (%s): %s", e.EntryType, e.Content)
	}

	// Follow-up runs of the same attempt fill its 32 MiB; the next run
	// keeps nothing of its output but says so.
	before = storeBytes(t, data)
	for range 3 {
		waitRun(t, h, text.AttemptID, followUp(t, h, text.AttemptID, `yes 'plugboard abuse: follow-up output line' | head -c 12M`))
	}
	last := followUp(t, h, text.AttemptID, `echo after the attempt cap`)
	waitRun(t, h, text.AttemptID, last)
	attemptGrowth := storeBytes(t, data) - before + textGrowth
	t.Logf("the attempt's four runs (84 MiB of output) grew the store by %.2f MiB", float64(attemptGrowth)/(1<<20))
	if attemptGrowth > 48<<20 {
		t.Errorf("the attempt grew the store by %.1f MiB, want at most 48 MiB (32 MiB kept per attempt)", float64(attemptGrowth)/(1<<20))
	}
	raw = tailLogs(t, h, text.AttemptID, "raw", 20)
	if findEntry(raw, "", "after the attempt cap") != nil || findEntry(raw, "stdout", "dropped", "per attempt") == nil {
		t.Errorf("the run after the attempt's cap: want only a marker naming the attempt's cap, got %+v", raw.Entries)
	}

	// A restart with a 1 MiB budget prunes the oldest logs: the NUL
	// attempt's log is replaced by a marker; the newest run keeps its own.
	h.session.Close()
	h = startHost(t, "--plugins", dir, "--data", data, "--attempt-logs-max-bytes", "1MiB")
	// A prune pass replaces one process's log at a time: the pass is over
	// when what the logs store fits the budget.
	var pruned tasks.LogsOut
	var kept int64
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		pruned = tailLogs(t, h, nul.AttemptID, "raw", 100)
		sqlQuery(t, data, `SELECT COALESCE(SUM(length(entry)), 0) FROM log_entries`, &kept)
		if findEntry(pruned, "", "pruned") != nil && kept <= 1<<20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the logs were not pruned to the 1 MiB budget: %d bytes kept; the NUL attempt's log: %+v", kept, pruned.Entries)
		}
	}
	if len(pruned.Entries) != 1 || pruned.Page.HasMore {
		t.Errorf("a pruned log: want its marker alone, got %+v", pruned)
	}
	t.Logf("pruned: %s", pruned.Entries[0].Content)
	if raw := tailLogs(t, h, text.AttemptID, "raw", 20); findEntry(raw, "", "pruned") != nil || findEntry(raw, "stdout", "dropped") == nil {
		t.Errorf("the newest run's log was pruned: %+v", raw.Entries)
	}
	t.Logf("after pruning: %d bytes of log entries", kept)
}

// TestAbuseAttemptLogsSharedPostgres floods a PostgreSQL store two hosts
// share: the flood grows the database by what the cap keeps; a second host
// started with --attempt-logs-max-age 1ns prunes the finished attempt's
// log, but not the log of the attempt still running on the first host,
// whose tail is read unchanged.
func TestAbuseAttemptLogsSharedPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary, starts PostgreSQL")
	}
	url := pgtest.Start(t).NewDatabase(t)
	dir, _ := buildtest.Plugins(t, taskPlugins...)
	repo := newRepo(t, "hello\n")
	dataA, dataB := t.TempDir(), t.TempDir()
	project := newProject(t, dataA, url, "shared", repo)
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	size := func() int64 {
		var n int64
		if err := db.QueryRow(`SELECT pg_database_size(current_database())`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	hostA := startHost(t, "--plugins", dir, "--data", dataA, "--store", url)
	before := size()
	flood := startShellAttempt(t, hostA, project.ID, "Text flood", textFlood)
	waitRun(t, hostA, flood.AttemptID, "")
	growth := size() - before
	t.Logf("48 MiB of text grew the shared database by %.2f MiB", float64(growth)/(1<<20))
	if growth > 24<<20 {
		t.Fatalf("48 MiB of text grew the shared database by %.1f MiB, want at most 24 MiB (8 MiB kept per process)", float64(growth)/(1<<20))
	}
	if raw := tailLogs(t, hostA, flood.AttemptID, "raw", 20); findEntry(raw, "stdout", "dropped") == nil || findEntry(raw, "stderr", "dropped") == nil {
		t.Errorf("no truncation markers on stdout and stderr: %+v", raw.Entries)
	}

	running := startShellAttempt(t, hostA, project.ID, "Still running", "echo still here; sleep 600")
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if findEntry(tailLogs(t, hostA, running.AttemptID, "raw", 10), "stdout", "still here") != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the running attempt logged nothing")
		}
	}
	hostB := startHost(t, "--plugins", dir, "--data", dataB, "--store", url, "--attempt-logs-max-age", "1ns")
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if findEntry(tailLogs(t, hostB, flood.AttemptID, "raw", 10), "", "pruned") != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("host B did not prune the finished attempt's log")
		}
	}
	raw := tailLogs(t, hostB, running.AttemptID, "raw", 10)
	if findEntry(raw, "stdout", "still here") == nil || findEntry(raw, "", "pruned") != nil {
		t.Errorf("the running attempt's log was pruned: %+v", raw.Entries)
	}
	var entries int64
	if err := db.QueryRow(`SELECT count(*) FROM log_entries l JOIN execution_processes p ON p.id = l.process_id
		WHERE p.attempt_id = $1`, flood.AttemptID).Scan(&entries); err != nil || entries > 2 {
		t.Errorf("the pruned attempt keeps %d entries (%v), want its two markers", entries, err)
	}
	if env := hostB.call(t, "stop_attempt", map[string]any{"attempt_id": running.AttemptID, "force": true}, nil); env != nil {
		t.Errorf("stop_attempt: %+v", env)
	}
}
