package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/plugboard/plugboard/abi"
	plughost "github.com/plugboard/plugboard/host"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// auditRow is one decision log row as the decision log writes it.
type auditRow struct {
	kind, agent, role, tool, requestID, input, result, errorCode, errorJSON, status, title string
	duration                                                                               *int64
	finished                                                                               bool
}

// seedAudit writes three calls (ok, envelope, still running) and one
// decision to the board in data, a second apart and oldest first.
func seedAudit(t *testing.T, data string) {
	t.Helper()
	ms := func(n int64) *int64 { return &n }
	env, _ := json.Marshal(abi.NewEnvelope(abi.CodeMissingRequired, "project_id is required\nmore", "pass it"))
	insertAudit(t, data, time.Now().Add(-4*time.Second),
		auditRow{kind: "call", agent: "w1", role: "WORKER", tool: "echo", input: `{"text":"hi"}`, result: `{"text":"hi"}`,
			status: "ok", duration: ms(3), finished: true},
		auditRow{kind: "call", agent: "s1", role: "SUPERVISOR", tool: "create_task", requestID: "r-1", input: `{}`,
			errorCode: abi.CodeMissingRequired, errorJSON: string(env), status: "error", duration: ms(1), finished: true},
		auditRow{kind: "call", agent: "w1", role: "WORKER", tool: "start_task_attempt", input: `{}`, status: "invoked"},
		auditRow{kind: "decision", agent: "w1", role: "WORKER", tool: "log_decision", status: "ok", title: "Chose Redis", finished: true},
	)
}

// insertAudit adds rows to the decision log of the board in data (created
// by opening it, so the schema is the board's own), the first at start and
// each next a second later. The CLI reads the log as a server wrote it.
func insertAudit(t *testing.T, data string, start time.Time, rows ...auditRow) {
	t.Helper()
	b, err := plughost.OpenBoard(context.Background(), plughost.BoardConfig{DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	db, err := sql.Open("sqlite", filepath.Join(data, "board.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	null := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	for i, r := range rows {
		at := plughost.FormatTime(start.Add(time.Duration(i) * time.Second))
		var finished any
		if r.finished {
			finished = at
		}
		attempts := 0
		if r.status == "ok" && r.kind == "call" {
			attempts = 1
		}
		if _, err := db.Exec(`INSERT INTO decision_log (id, kind, agent_id, agent_type, tool, request_id, input, result,
			error_code, error, status, duration_ms, attempts, title, created_at, finished_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			fmt.Sprintf("%s-%d-%d", t.Name(), start.UnixNano(), i), r.kind, r.agent, r.role, r.tool, r.requestID, null(r.input), null(r.result),
			r.errorCode, null(r.errorJSON), r.status, r.duration, attempts, r.title, at, finished); err != nil {
			t.Fatal(err)
		}
	}
}

func TestAuditTail(t *testing.T) {
	data := t.TempDir()
	seedAudit(t, data)
	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"audit", "tail", "--data", data}, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	ts := `\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} `
	want := []string{
		ts + `w1\(WORKER\) echo ok 3ms \{"text":"hi"\}$`,
		ts + `s1\(SUPERVISOR\) create_task error 1ms req=r-1 missing_required: project_id is required …$`,
		ts + `w1\(WORKER\) start_task_attempt invoked -$`,
		ts + `w1\(WORKER\) log_decision decision - Chose Redis$`,
	}
	if len(lines) != len(want) {
		t.Fatalf("output:\n%s", out.String())
	}
	for i, re := range want {
		if !regexp.MustCompile("^" + re).MatchString(lines[i]) {
			t.Errorf("line %d = %q, want %s", i, lines[i], re)
		}
	}

	out.Reset()
	if err := run(context.Background(), []string{"audit", "tail", "--data", data, "--agent", "w1", "--tool", "echo", "--json"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	var d plughost.Decision
	if err := json.Unmarshal(out.Bytes(), &d); err != nil || d.Tool != "echo" || d.Status != "ok" || strings.Count(out.String(), "\n") != 1 {
		t.Fatalf("--json output %q: %v", out.String(), err)
	}

	out.Reset()
	if err := run(context.Background(), []string{"audit", "tail", "--data", data, "--limit", "1"}, &out, &errb); err != nil ||
		!strings.Contains(out.String(), "Chose Redis") || strings.Count(out.String(), "\n") != 1 {
		t.Fatalf("--limit 1: %q %v", out.String(), err)
	}
	for _, args := range [][]string{{"audit"}, {"audit", "head"}, {"audit", "tail", "--limit", "0", "--data", data}, {"audit", "tail", "x", "--data", data}} {
		if err := run(context.Background(), args, &out, &errb); auditExitCode(err) != 2 {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
	if err := run(context.Background(), []string{"audit", "tail", "--data", t.TempDir()}, &out, &errb); err == nil ||
		!strings.Contains(err.Error(), "no board in") {
		t.Errorf("empty data directory: %v", err)
	}
}

func auditExitCode(err error) int {
	if ee, ok := err.(*exitError); ok {
		return ee.code
	}
	if err != nil {
		return 1
	}
	return 0
}

func TestAuditTailFollow(t *testing.T) {
	data := t.TempDir()
	seedAudit(t, data)
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb clitest.SyncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"audit", "tail", "--follow", "--agent", "w1", "--data", data}, &out, &errb)
	}()
	waitFor := func(what string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(out.String(), what) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q in:\n%s\nstderr: %s", what, out.String(), errb.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("Chose Redis")

	later := time.Now().Add(time.Second)
	insertAudit(t, data, later,
		auditRow{kind: "call", agent: "w1", role: "WORKER", tool: "echo", input: `{"text":"later"}`, result: `{"text":"later"}`,
			status: "ok", duration: new(int64), finished: true},
		auditRow{kind: "call", agent: "s1", tool: "echo", input: `{"text":"not w1"}`, result: `{"text":"not w1"}`, status: "ok", finished: true},
	)
	waitFor(`{"text":"later"}`)
	time.Sleep(3 * followPoll)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if strings.Count(out.String(), "later") != 1 || strings.Contains(out.String(), "not w1") {
		t.Fatalf("followed output:\n%s", out.String())
	}
}
