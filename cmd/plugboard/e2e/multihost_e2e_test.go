package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/abi/tasks"
	plughost "github.com/plugboard/plugboard/host"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
	"github.com/plugboard/plugboard/internal/testing/pgtest"
)

// hostProc is a `plugboard serve` over stdio whose process the test can
// kill.
type hostProc struct {
	session *mcp.ClientSession
	cmd     *exec.Cmd
	stderr  *clitest.SyncBuffer
}

func startHost(t testing.TB, args ...string) *hostProc {
	t.Helper()
	return connectHost(t, exec.Command(buildtest.Binary(t), append([]string{"serve"}, args...)...))
}

// connectHost starts cmd (a plugboard serve over stdio) and connects a
// go-sdk client to it; its stderr is shown if the test fails.
func connectHost(t testing.TB, cmd *exec.Cmd) *hostProc {
	t.Helper()
	stderr := &clitest.SyncBuffer{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	session, err := mcp.NewClient(&mcp.Implementation{Name: "multihost", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, stderr.String())
	}
	h := &hostProc{session: session, cmd: cmd, stderr: stderr}
	t.Cleanup(func() {
		session.Close()
		if t.Failed() {
			t.Logf("host %v stderr:\n%s", cmd.Args[1:], stderr.String())
		}
	})
	return h
}

// call calls a tool and decodes its structured answer into out; an
// envelope is returned instead (out untouched), also for a protocol error
// or an answer that does not decode (codes of the test's own), so
// goroutines can call it.
func (h *hostProc) call(t testing.TB, tool string, args, out any) *abi.Envelope {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := h.session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return &abi.Envelope{Code: "protocol_error", Message: tool + ": " + err.Error()}
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if res.IsError {
		var env abi.Envelope
		if err := json.Unmarshal(raw, &env); err != nil || env.Code == "" {
			if err := json.Unmarshal([]byte(clitest.Text(res)), &env); err != nil || env.Code == "" {
				env = abi.Envelope{Code: "no_envelope", Message: clitest.Text(res)}
			}
		}
		return &env
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return &abi.Envelope{Code: "bad_result", Message: tool + ": " + string(raw) + ": " + err.Error()}
		}
	}
	return nil
}

// TestMultiHostSharedStore runs two hosts — separate data directories, one
// PostgreSQL store — as issue 16's acceptance asks: a project made through
// one is listed by the other; 20 parallel create_task calls with one
// request_id, split across both, create one task; an attempt started on
// host A is stopped through host B (forwarded through the store); host A
// killed with SIGKILL, host B marks its running attempt killed within 30 s.
func TestMultiHostSharedStore(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary, starts PostgreSQL")
	}
	url := pgtest.Start(t).NewDatabase(t)
	dir, _ := buildtest.Plugins(t, taskPlugins...)
	repo := newRepo(t, "hello\n")
	dataA, dataB := t.TempDir(), t.TempDir()
	project := newProject(t, dataA, url, "shared", repo)

	hostA := startHost(t, "--plugins", dir, "--data", dataA, "--store", url)
	hostB := startHost(t, "--plugins", dir, "--data", dataB, "--store", url)

	var projects tasks.ProjectsOut
	if env := hostB.call(t, "list_projects", map[string]any{}, &projects); env != nil {
		t.Fatalf("list_projects on B: %+v", env)
	}
	if len(projects.Projects) != 1 || projects.Projects[0].ProjectID != project.ID {
		t.Fatalf("B lists %+v, want the project A's board made", projects)
	}

	// Exactly once across hosts.
	var wg sync.WaitGroup
	ids := make([]string, 20)
	for i := range ids {
		h := hostA
		if i%2 == 1 {
			h = hostB
		}
		wg.Go(func() {
			args := map[string]any{"project_id": project.ID, "title": "Once", "request_id": "shared-key-1"}
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				var task tasks.Task
				env := h.call(t, "create_task", args, &task)
				if env == nil {
					ids[i] = task.TaskID
					return
				}
				if !env.Retryable || time.Now().After(deadline) {
					t.Errorf("create_task %d: %+v", i, env)
					return
				}
			}
		})
	}
	wg.Wait()
	for i, id := range ids {
		if id == "" || id != ids[0] {
			t.Fatalf("create_task answers differ: %d is %q, 0 is %q", i, id, ids[0])
		}
	}
	var list tasks.TasksOut
	if env := hostB.call(t, "list_tasks", map[string]any{"project_id": project.ID}, &list); env != nil || list.Count != 1 {
		t.Fatalf("list_tasks after 20 keyed creates: %+v %+v", list, env)
	}

	// An attempt on A, stopped through B.
	start := func(title string) tasks.StartOut {
		t.Helper()
		started := startShellAttempt(t, hostA, project.ID, title, "echo started; sleep 600")
		waitState(t, hostB, started.AttemptID, tasks.StateRunning, 30*time.Second)
		return started
	}
	first := start("Stopped through B")
	var stopped tasks.StopOut
	if env := hostB.call(t, "stop_attempt", map[string]any{"attempt_id": first.AttemptID, "force": true}, &stopped); env != nil {
		t.Fatalf("stop_attempt through B: %+v", env)
	}
	if len(stopped.Stopped) == 0 || stopped.State != tasks.StateFailed {
		t.Fatalf("stop through B = %+v", stopped)
	}
	// It was A that stopped it: B queued the stop for A's host.
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var forwarded int
	if err := db.QueryRow(`SELECT count(*) FROM host_commands WHERE op = 'stop_attempt' AND state = 'done' AND error = ''`).Scan(&forwarded); err != nil || forwarded != 1 {
		t.Fatalf("forwarded stops done: %d (%v), want 1", forwarded, err)
	}

	// B's review queue measures A's attempt on A.
	var queue tasks.ReviewQueueOut
	if env := hostB.call(t, "review_queue", map[string]any{"project_id": project.ID}, &queue); env != nil {
		t.Fatalf("review_queue on B: %+v", env)
	}
	found := false
	for _, item := range queue.Tasks {
		if item.AttemptID != nil && *item.AttemptID == first.AttemptID {
			found = true
			if item.Changes == nil || item.ChangesError != nil {
				t.Errorf("B's review of A's attempt: changes %+v, error %v", item.Changes, item.ChangesError)
			}
		}
	}
	if !found {
		t.Errorf("B's review queue lacks A's stopped attempt: %+v", queue)
	}

	// Host A dies; B marks its attempt killed.
	second := start("Orphaned")
	idA, idB := readHostID(t, dataA), readHostID(t, dataB)
	hosts := listHosts(t, dataB, url)
	if a, b := hosts[idA], hosts[idB]; !a.Alive || a.Processes != 1 || a.RunningAttempts != 1 || a.This ||
		!b.Alive || b.Processes != 1 || !b.This || len(hosts) != 2 {
		t.Fatalf("host list before A dies: %+v", hosts)
	}
	if err := hostA.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	waitState(t, hostB, second.AttemptID, tasks.StateFailed, 30*time.Second)
	t.Logf("B marked A's attempt after %v", time.Since(killedAt).Round(time.Millisecond))
	if a := listHosts(t, dataB, url)[idA]; a.Alive || a.Processes != 0 || a.RunningAttempts != 0 || a.LastSeen == "" {
		t.Fatalf("host A in the host list after it died: %+v", a)
	}
}

// startShellAttempt creates a task whose description is script in
// projectID through h, and starts a SHELL attempt of it there.
func startShellAttempt(t testing.TB, h *hostProc, projectID, title, script string) tasks.StartOut {
	t.Helper()
	var task tasks.Task
	if env := h.call(t, "create_task", map[string]any{"project_id": projectID, "title": title, "description": script}, &task); env != nil {
		t.Fatalf("create_task: %+v", env)
	}
	var started tasks.StartOut
	if env := h.call(t, "start_task_attempt", map[string]any{"task_id": task.TaskID, "executor": "SHELL"}, &started); env != nil {
		t.Fatalf("start_task_attempt: %+v", env)
	}
	return started
}

func readHostID(t *testing.T, data string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(data, "host-id"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// listHosts runs `plugboard host list --json` and maps its hosts by id.
func listHosts(t *testing.T, data, store string) map[string]plughost.HostInfo {
	t.Helper()
	stdout, stderr, code := runCLI(t, "host", "list", "--json", "--data", data, "--store", store)
	var out struct{ Hosts []plughost.HostInfo }
	if code != 0 || json.Unmarshal([]byte(stdout), &out) != nil {
		t.Fatalf("host list: exit %d\n%s%s", code, stdout, stderr)
	}
	byID := map[string]plughost.HostInfo{}
	for _, h := range out.Hosts {
		byID[h.HostID] = h
	}
	return byID
}

// waitState polls get_attempt_status on h until the attempt is in state.
func waitState(t testing.TB, h *hostProc, attemptID, state string, within time.Duration) tasks.StatusOut {
	t.Helper()
	var status tasks.StatusOut
	deadline := time.Now().Add(within)
	for {
		if env := h.call(t, "get_attempt_status", map[string]any{"attempt_id": attemptID}, &status); env != nil {
			t.Fatalf("get_attempt_status: %+v", env)
		}
		if status.State == state {
			return status
		}
		if time.Now().After(deadline) {
			t.Fatalf("attempt %s is %s after %v, want %s", attemptID, status.State, within, state)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestStorePasswordStaysHidden attacks the store's password through the
// binary: an unreachable store named on the command line, and a reachable
// one given as PLUGBOARD_STORE to a server whose SHELL attempt prints its
// whole environment. The password appears in no output, no log and not in
// the attempt's environment.
func TestStorePasswordStaysHidden(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary, starts PostgreSQL")
	}
	const secret = "s3cret-store-pw"
	out, err := exec.Command(buildtest.Binary(t), "project", "list", "--data", t.TempDir(),
		"--store", "postgres://pb:"+secret+"@127.0.0.1:1/db?sslmode=disable&password="+secret).CombinedOutput()
	if err == nil || strings.Contains(string(out), secret) || !strings.Contains(string(out), "***") {
		t.Fatalf("an unreachable store: err %v, output %s", err, out)
	}

	// The throwaway cluster trusts local connections: any password opens it.
	url := strings.Replace(pgtest.Start(t).NewDatabase(t), "postgres://plugboard@", "postgres://plugboard:"+secret+"@", 1)
	dir, _ := buildtest.Plugins(t, taskPlugins...)
	repo := newRepo(t, "hello\n")
	data := t.TempDir()
	project := newProject(t, data, url, "shared", repo)
	cmd := exec.Command(buildtest.Binary(t), "serve", "--plugins", dir, "--data", data, "--log-level", "debug")
	cmd.Env = append(os.Environ(), "PLUGBOARD_STORE="+url)
	stderr := &clitest.SyncBuffer{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	session, err := mcp.NewClient(&mcp.Implementation{Name: "secret", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	h := &hostProc{session: session, cmd: cmd, stderr: stderr}
	var task tasks.Task
	if env := h.call(t, "create_task", map[string]any{"project_id": project.ID, "title": "Env", "description": "env; echo env-done"}, &task); env != nil {
		t.Fatalf("create_task: %+v", env)
	}
	var started tasks.StartOut
	if env := h.call(t, "start_task_attempt", map[string]any{"task_id": task.TaskID, "executor": "SHELL"}, &started); env != nil {
		t.Fatalf("start_task_attempt: %+v", env)
	}
	var logs struct {
		Entries []struct {
			Content string `json:"content"`
		} `json:"entries"`
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if env := h.call(t, "tail_attempt_logs", map[string]any{"attempt_id": started.AttemptID, "channel": "raw", "limit": 1000}, &logs); env != nil {
			t.Fatalf("tail_attempt_logs: %+v", env)
		}
		raw, _ := json.Marshal(logs)
		if strings.Contains(string(raw), "env-done") {
			if strings.Contains(string(raw), secret) || strings.Contains(string(raw), "PLUGBOARD_STORE") {
				t.Fatalf("the attempt's environment holds the store: %s", raw)
			}
			if !strings.Contains(string(raw), "PATH=") {
				t.Fatalf("the attempt printed no environment: %s", raw)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the attempt did not finish: %s", raw)
		}
	}
	session.Close()
	if strings.Contains(stderr.String(), secret) {
		t.Fatalf("the server's log holds the password:\n%s", stderr.String())
	}
}
