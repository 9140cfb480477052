package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/abi/tasks"
	plughost "github.com/plugboard/plugboard/host"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// newProject opens the board of data (in store; "" for the data
// directory's SQLite file), creates a project name over the git repository
// repo and closes the board again, as an operator does before starting
// hosts on it.
func newProject(t testing.TB, data, store, name, repo string) plughost.Project {
	t.Helper()
	ctx := context.Background()
	b, err := plughost.OpenBoard(ctx, plughost.BoardConfig{DataDir: data, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	p, err := b.CreateProject(ctx, name, []plughost.RepoSpec{{Path: repo}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// boardData makes a data directory holding a board with one project over
// a real git repository, and returns it with the project id.
func boardData(t *testing.T) (string, string) {
	t.Helper()
	repo := newRepo(t, "hello\n")
	data := t.TempDir()
	p := newProject(t, data, "", "demo", repo)
	return data, p.ID
}

// newRepo makes a git repository "app" on branch main with one commit of
// README.md holding readme.
func newRepo(t testing.TB, readme string) string {
	t.Helper()
	repo := filepath.Join(t.TempDir(), "app")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "README.md"), []byte(readme), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, repo, "init", "-q", "-b", "main")
	git(t, repo, "add", "-A")
	git(t, repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "initial")
	return repo
}

// git runs git in dir and returns its output, failing the test on error.
func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func boardCall(t *testing.T, s *server, op string, args any, into any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	in := map[string]any{"op": op}
	if args != nil {
		in["args"] = args
	}
	res := s.call(t, ctx, "board_call", in)
	if into != nil {
		var out struct {
			Result json.RawMessage `json:"result"`
		}
		structured(t, res, &out)
		if err := json.Unmarshal(out.Result, into); err != nil {
			t.Fatalf("%s result %s: %v", op, out.Result, err)
		}
	}
	return res
}

// TestBoardThroughPlugin drives the task board from a WebAssembly plugin
// through plugboard serve: the board host function, its capability gate,
// a SHELL attempt run by the server, and envelopes passed through.
func TestBoardThroughPlugin(t *testing.T) {
	dir, _ := buildtest.Plugins(t, "testdata/plugins/boardprobe")
	data, projectID := boardData(t)
	s := startServer(t, dir, "--data", data)

	var projects tasks.ProjectsOut
	boardCall(t, s, abi.OpListProjects, nil, &projects)
	if len(projects.Projects) != 1 || projects.Projects[0].ProjectID != projectID {
		t.Fatalf("list_projects = %+v", projects)
	}
	var task struct {
		TaskID string `json:"task_id"`
	}
	boardCall(t, s, abi.OpCreateTask, map[string]any{"project_id": projectID, "title": "Add a file",
		"description": "echo from-the-agent > added.txt; echo done"}, &task)
	var started tasks.StartOut
	boardCall(t, s, abi.OpStartTaskAttempt, map[string]any{"task_id": task.TaskID, "executor": "shell"}, &started)
	if started.Executor != "SHELL" || started.AttemptID == "" {
		t.Fatalf("start = %+v", started)
	}
	var status tasks.StatusOut
	deadline := time.Now().Add(30 * time.Second)
	for {
		boardCall(t, s, abi.OpGetAttemptStatus, map[string]any{"attempt_id": started.AttemptID}, &status)
		if status.State == tasks.StateCompleted && status.TaskStatus == "inreview" {
			break
		}
		if time.Now().After(deadline) || status.State == tasks.StateFailed {
			t.Fatalf("attempt did not complete: %+v", status)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var logs plughost.LogsResult
	boardCall(t, s, abi.OpTailAttemptLogs, map[string]any{"attempt_id": started.AttemptID}, &logs)
	if len(logs.Entries) == 0 || !strings.Contains(string(logs.Entries[len(logs.Entries)-1].Entry), "done") {
		t.Fatalf("logs = %+v", logs)
	}
	var changes tasks.ChangesOut
	boardCall(t, s, abi.OpGetAttemptChanges, map[string]any{"attempt_id": started.AttemptID}, &changes)
	if len(changes.Files) != 1 || changes.Files[0].Path != "app/added.txt" {
		t.Fatalf("changes = %+v", changes)
	}
	var file tasks.BoardFile
	boardCall(t, s, abi.OpGetAttemptFile, map[string]any{"attempt_id": started.AttemptID, "path": "app/added.txt"}, &file)
	if file.Content != "from-the-agent\n" {
		t.Fatalf("file = %+v", file)
	}

	// A board envelope reaches the agent unchanged, hint included.
	env := clitest.EnvelopeOf(t, boardCall(t, s, abi.OpFollowUp, map[string]any{"action": "send",
		"attempt_id": started.AttemptID, "session_id": *status.LatestSessionID, "prompt": "x"}, nil))
	if env.Code != abi.CodeAmbiguousTarget || env.Hint == "" {
		t.Fatalf("follow_up with two targets = %+v", env)
	}
	env = clitest.EnvelopeOf(t, boardCall(t, s, "no_such_op", nil, nil))
	if env.Code != abi.CodeInvalidArgument {
		t.Fatalf("unknown op = %+v", env)
	}
}

// TestBoardGrantsNarrowCapabilities runs the probe under a grants file
// that withholds everything but board.read.
func TestBoardGrantsNarrowCapabilities(t *testing.T) {
	dir, _ := buildtest.Plugins(t, "testdata/plugins/boardprobe")
	data, projectID := boardData(t)
	grantsFile := filepath.Join(t.TempDir(), "grants.json")
	os.WriteFile(grantsFile, []byte(`{"plugins":{"boardprobe":["board.read"]}}`), 0o644)
	s := startServer(t, dir, "--data", data, "--grants", grantsFile)

	var projects tasks.ProjectsOut
	boardCall(t, s, abi.OpListProjects, nil, &projects)
	env := clitest.EnvelopeOf(t, boardCall(t, s, abi.OpCreateTask, map[string]any{"project_id": projectID, "title": "x"}, nil))
	if env.Code != abi.CodePermissionDenied || env.Details["capability"] != abi.CapBoardWrite {
		t.Fatalf("create_task without board.write = %+v", env)
	}
	var tasks tasks.TasksOut
	boardCall(t, s, abi.OpListTasks, map[string]any{"project_id": projectID}, &tasks)
	if tasks.Count != 0 {
		t.Fatalf("a refused call changed the board: %+v", tasks)
	}
	if !strings.Contains(s.stderr.String(), "withheld") {
		t.Errorf("no log line about withheld capabilities:\n%s", s.stderr.String())
	}
}
