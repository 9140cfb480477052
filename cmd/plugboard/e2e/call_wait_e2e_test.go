package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/abi/tasks"
	plughost "github.com/plugboard/plugboard/host"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// TestCallStaysForTheAttempt: `plugboard call start_task_attempt` and
// `call follow_up` stay until the processes they started end, instead of
// killing them on exit, and say how the attempt ended.
func TestCallStaysForTheAttempt(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	plugins, _ := buildtest.Plugins(t, "plugins/tasks-read", "plugins/tasks-control")
	data, projectID := boardData(t)
	b, err := plughost.OpenBoard(context.Background(), plughost.BoardConfig{DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	task, err := b.CreateTask(context.Background(), tasks.CreateTaskArgs{ProjectID: projectID, Title: "slow",
		Description: "sleep 1; echo first > first.txt"})
	b.Close()
	if err != nil {
		t.Fatal(err)
	}

	out, stderr, code := runCLI(t, "call", "start_task_attempt", `{"task_id":"`+task.TaskID+`","executor":"SHELL"}`,
		"--plugins", plugins, "--data", data)
	var started struct {
		AttemptID string `json:"attempt_id"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &started) != nil || started.AttemptID == "" {
		t.Fatalf("call start_task_attempt: exit %d\n%s\n%s", code, out, stderr)
	}
	if !strings.Contains(stderr, "attempt "+started.AttemptID+" ended: completed") {
		t.Fatalf("call did not wait for the attempt and report its end:\n%s", stderr)
	}
	worktree := filepath.Join(data, "worktrees", started.AttemptID, "app")
	if b, err := os.ReadFile(filepath.Join(worktree, "first.txt")); err != nil || string(b) != "first\n" {
		t.Fatalf("the script did not run to its end: %q, %v", b, err)
	}

	// SHELL runs each prompt as a script: the follow-up's writes a file.
	out, stderr, code = runCLI(t, "call", "follow_up",
		`{"action":"send","attempt_id":"`+started.AttemptID+`","prompt":"sleep 1; echo second > second.txt"}`,
		"--plugins", plugins, "--data", data)
	if code != 0 || !strings.Contains(stderr, "ended: completed") {
		t.Fatalf("call follow_up: exit %d\n%s\n%s", code, out, stderr)
	}
	if b, err := os.ReadFile(filepath.Join(worktree, "second.txt")); err != nil || string(b) != "second\n" {
		t.Fatalf("the follow-up was stopped when call exited: %q, %v", b, err)
	}
}
