package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/audit"
	"github.com/plugboard/plugboard/host/board/store"
	"github.com/plugboard/plugboard/host/dispatch"
)

// seedAudit writes three calls (ok, envelope, still running) and one
// decision to the board in data.
func seedAudit(t *testing.T, data string) *store.Store {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(data, "board.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	l := audit.New(audit.Static(st), nil)
	defer l.Close()
	w1 := &abi.Caller{ID: "w1", Role: "WORKER"}
	id := l.Invoked(ctx, dispatch.AuditCall{Caller: w1, Tool: "echo", Input: json.RawMessage(`{"text":"hi"}`)})
	l.Finished(ctx, id, dispatch.AuditOutcome{Result: json.RawMessage(`{"text":"hi"}`), Duration: 3 * time.Millisecond, Attempts: 1})
	id = l.Invoked(ctx, dispatch.AuditCall{Caller: &abi.Caller{ID: "s1", Role: "SUPERVISOR"}, Tool: "create_task", RequestID: "r-1",
		Input: json.RawMessage(`{}`)})
	l.Finished(ctx, id, dispatch.AuditOutcome{Envelope: abi.NewEnvelope(abi.CodeMissingRequired, "project_id is required\nmore", "pass it"),
		Duration: time.Millisecond, Attempts: 0})
	l.Invoked(ctx, dispatch.AuditCall{Caller: w1, Tool: "start_task_attempt", Input: json.RawMessage(`{}`)})
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Deliberate(ctx, w1, "Chose Redis", "it scales"); err != nil {
		t.Fatal(err)
	}
	return st
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
	var d store.Decision
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
	st := seedAudit(t, data)
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb syncBuffer
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

	l := audit.New(audit.Static(st), nil)
	w1 := &abi.Caller{ID: "w1", Role: "WORKER"}
	id := l.Invoked(ctx, dispatch.AuditCall{Caller: w1, Tool: "echo", Input: json.RawMessage(`{"text":"later"}`)})
	l.Finished(ctx, id, dispatch.AuditOutcome{Result: json.RawMessage(`{"text":"later"}`), Duration: 2 * time.Millisecond, Attempts: 1})
	other := l.Invoked(ctx, dispatch.AuditCall{Caller: &abi.Caller{ID: "s1"}, Tool: "echo", Input: json.RawMessage(`{"text":"not w1"}`)})
	l.Finished(ctx, other, dispatch.AuditOutcome{Result: json.RawMessage(`{"text":"not w1"}`)})
	l.Close()
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
