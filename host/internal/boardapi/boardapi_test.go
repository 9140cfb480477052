package boardapi

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/board"
)

// TestOpsAreTheABIs holds the operation table to the wire contract: every
// operation of abi.BoardOps has a row with a handler, every row is one of
// them, an operation with an effect needs a write capability, and the
// operations acting for the caller (abi.CapMail) reach only the caller's
// own, so they are not scoped like board work.
func TestOpsAreTheABIs(t *testing.T) {
	for name, capability := range abi.BoardOps() {
		row, ok := ops[name]
		if !ok || row.run == nil {
			t.Errorf("operation %s in abi.BoardOps has no row with a handler in ops", name)
			continue
		}
		if row.effect != readOnly && (capability == abi.CapBoardRead || capability == abi.CapWorkspaceRead) {
			t.Errorf("%s has an effect, yet needs only %q", name, capability)
		}
		if capability == abi.CapMail && (row.scope.check != nil || row.scope.filter != nil) {
			t.Errorf("%s acts for the caller, yet is scoped like board work", name)
		}
	}
	for name := range ops {
		if _, ok := abi.BoardOpCapability(name); !ok {
			t.Errorf("ops has %s, which is not in abi.BoardOps", name)
		}
	}
}

func newAPI(t *testing.T) (*API, string) {
	t.Helper()
	repo := filepath.Join(t.TempDir(), "app")
	os.MkdirAll(repo, 0o755)
	os.WriteFile(filepath.Join(repo, "a.txt"), []byte("a\n"), 0o644)
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "-m", "i"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	b, err := board.Open(context.Background(), board.Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	p, err := b.CreateProject(context.Background(), "demo", []board.RepoSpec{{Path: repo}})
	if err != nil {
		t.Fatal(err)
	}
	return New(b, nil), p.ID
}

func grants(caps ...string) func(string) bool {
	return func(c string) bool {
		for _, g := range caps {
			if g == c {
				return true
			}
		}
		return false
	}
}

func call(t *testing.T, a *API, granted func(string) bool, op string, args any) (json.RawMessage, *abi.Envelope) {
	t.Helper()
	req, _ := json.Marshal(abi.BoardRequest{Op: op, Args: args})
	return a.Handle(context.Background(), granted, req)
}

func TestHandle(t *testing.T) {
	a, projectID := newAPI(t)
	readOnly := grants(abi.CapBoardRead)

	out, env := call(t, a, readOnly, abi.OpListProjects, nil)
	if env != nil {
		t.Fatal(env)
	}
	var projects board.ProjectsResult
	if err := json.Unmarshal(out, &projects); err != nil || len(projects.Projects) != 1 || projects.Projects[0].ProjectID != projectID {
		t.Fatalf("list_projects = %s", out)
	}

	// A write needs board.write: refused with the capability named, and
	// nothing is created.
	_, env = call(t, a, readOnly, abi.OpCreateTask, map[string]any{"project_id": projectID, "title": "x"})
	if env == nil || env.Code != abi.CodePermissionDenied || env.Details["capability"] != abi.CapBoardWrite {
		t.Fatalf("create_task without grant = %+v", env)
	}
	out, _ = call(t, a, readOnly, abi.OpListTasks, map[string]any{"project_id": projectID})
	var tasks board.TasksResult
	json.Unmarshal(out, &tasks)
	if tasks.Count != 0 {
		t.Fatalf("task created without grant: %s", out)
	}

	rw := grants(abi.CapBoardRead, abi.CapBoardWrite)
	out, env = call(t, a, rw, abi.OpCreateTask, map[string]any{"project_id": projectID, "title": "Write docs"})
	if env != nil {
		t.Fatal(env)
	}
	var task struct {
		TaskID string `json:"task_id"`
		Status string `json:"status"`
	}
	json.Unmarshal(out, &task)
	if task.Status != "todo" || task.TaskID == "" {
		t.Fatalf("create_task = %s", out)
	}

	// Strict arguments: an unknown field and a wrong type name the field.
	_, env = call(t, a, rw, abi.OpCreateTask, map[string]any{"project_id": projectID, "title": "x", "titel": "y"})
	if env == nil || env.Code != abi.CodeInvalidArgument || env.Details["field"] != "titel" {
		t.Fatalf("unknown field = %+v", env)
	}
	_, env = call(t, a, rw, abi.OpListTasks, map[string]any{"project_id": projectID, "limit": "ten"})
	if env == nil || env.Code != abi.CodeInvalidArgument || env.Details["field"] != "limit" {
		t.Fatalf("wrong type = %+v", env)
	}
	// Board envelopes pass through unchanged.
	_, env = call(t, a, rw, abi.OpGetTask, map[string]any{"task_id": "0f0f0f0f-0000-4000-8000-000000000000"})
	if env == nil || env.Code != abi.CodeNotFound || env.Hint == "" {
		t.Fatalf("missing task = %+v", env)
	}
	_, env = call(t, a, rw, "drop_tables", nil)
	if env == nil || env.Code != abi.CodeInvalidArgument {
		t.Fatalf("unknown op = %+v", env)
	}
	if _, env := a.Handle(context.Background(), rw, []byte("not json")); env == nil || env.Code != abi.CodeInvalidArgument {
		t.Fatalf("garbage request = %+v", env)
	}
}
