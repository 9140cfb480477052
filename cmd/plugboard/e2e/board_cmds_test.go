package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plugboard/plugboard/abi/tasks"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// The board CLI tests drive the real binary against real git repositories,
// each test in its own data directory.

// boardEnv is one test's board: a data directory and the binary.
type boardEnv struct {
	t    *testing.T
	bin  string
	data string
}

func newBoardEnv(t *testing.T) *boardEnv {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary and runs processes")
	}
	return &boardEnv{t: t, bin: buildtest.Binary(t), data: t.TempDir()}
}

func (e *boardEnv) command(args ...string) *exec.Cmd {
	cmd := exec.Command(e.bin, append(args, "--data", e.data)...)
	cmd.Env = append(os.Environ(), "PLUGBOARD_DATA=") // only --data counts
	return cmd
}

// run runs one command to its end and returns stdout, stderr and the exit
// code.
func (e *boardEnv) run(args ...string) (string, string, int) {
	e.t.Helper()
	cmd := e.command(args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return stdout.String(), stderr.String(), exit.ExitCode()
	} else if err != nil {
		e.t.Fatal(err)
	}
	return stdout.String(), stderr.String(), 0
}

// ok runs a command that must succeed and returns its stdout.
func (e *boardEnv) ok(args ...string) string {
	e.t.Helper()
	out, stderr, code := e.run(args...)
	if code != 0 {
		e.t.Fatalf("%q: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, out, stderr)
	}
	return out
}

// json runs a command that must succeed and decodes its JSON stdout.
func (e *boardEnv) json(into any, args ...string) {
	e.t.Helper()
	out := e.ok(append(args, "--json")...)
	if err := json.Unmarshal([]byte(out), into); err != nil {
		e.t.Fatalf("%q: %v\n%s", args, err, out)
	}
}

// bgCmd is a command running in the background.
type bgCmd struct {
	cmd            *exec.Cmd
	stdout, stderr *clitest.SyncBuffer
	exited         chan struct{} // closed once cmd.Wait returned
}

// background starts a command and kills it when the test ends.
func (e *boardEnv) background(args ...string) *bgCmd {
	e.t.Helper()
	bg := &bgCmd{cmd: e.command(args...), stdout: &clitest.SyncBuffer{}, stderr: &clitest.SyncBuffer{}, exited: make(chan struct{})}
	bg.cmd.Stdout, bg.cmd.Stderr = bg.stdout, bg.stderr
	if err := bg.cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	go func() { bg.cmd.Wait(); close(bg.exited) }()
	e.t.Cleanup(func() {
		bg.cmd.Process.Kill()
		<-bg.exited
		if e.t.Failed() {
			e.t.Logf("%q stdout:\n%s\nstderr:\n%s", args, bg.stdout, bg.stderr)
		}
	})
	return bg
}

// wait waits for the command to exit and returns nil when it succeeded.
func (bg *bgCmd) wait(timeout time.Duration) error {
	select {
	case <-bg.exited:
	case <-time.After(timeout):
		return errors.New("still running")
	}
	if bg.cmd.ProcessState.Success() {
		return nil
	}
	return errors.New(bg.cmd.ProcessState.String())
}

// waitFor polls cond until it holds, failing the test after timeout.
func (e *boardEnv) waitFor(what string, timeout time.Duration, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// latestAttempt returns the id of the task's newest attempt, "" if none.
func (e *boardEnv) latestAttempt(taskID string) string {
	e.t.Helper()
	var res tasks.AttemptsOut
	e.json(&res, "attempt", "list", taskID)
	if res.LatestAttemptID == nil {
		return ""
	}
	return *res.LatestAttemptID
}

func (e *boardEnv) status(attemptID string) tasks.StatusOut {
	e.t.Helper()
	var st tasks.StatusOut
	e.json(&st, "attempt", "status", attemptID)
	return st
}

// boardRepo makes a git repository with one commit on main and the extra
// branches given.
func boardRepo(t *testing.T, name string, branches ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "README.md"), []byte("# "+name+"\n"), 0o644)
	cmds := [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "initial"}}
	for _, b := range branches {
		cmds = append(cmds, []string{"branch", b})
	}
	for _, args := range cmds {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

var uuidLine = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\n$`)

// TestBoardSetupFlow sets a board up the way a person does: a project of
// two repos (one on another branch), a third repo added, tasks created and
// listed.
func TestBoardSetupFlow(t *testing.T) {
	t.Parallel()
	e := newBoardEnv(t)
	app, lib, extra := boardRepo(t, "app"), boardRepo(t, "lib", "dev"), boardRepo(t, "extra")

	out := e.ok("project", "create", "demo", "--repo", app, "--repo", lib+"@dev", "--setup-script", "true")
	if !regexp.MustCompile(`(?m)^project [0-9a-f-]{36}  demo$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^[0-9a-f-]{36}  app +main +setup +`+regexp.QuoteMeta(app)+`$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^[0-9a-f-]{36}  lib +dev +setup +`+regexp.QuoteMeta(lib)+`$`).MatchString(out) {
		t.Errorf("project create printed:\n%s", out)
	}

	var projects tasks.ProjectsOut
	e.json(&projects, "project", "list")
	if len(projects.Projects) != 1 || projects.Projects[0].Name != "demo" || projects.Projects[0].RepoCount != 2 {
		t.Fatalf("project list --json = %+v", projects)
	}
	projectID := projects.Projects[0].ProjectID
	if out := e.ok("project", "list"); !strings.Contains(out, projectID) || !strings.Contains(out, "demo") {
		t.Errorf("project list printed:\n%s", out)
	}

	// repo add takes the project by id; the flag may come first.
	e.ok("repo", "add", "--name", "other", projectID, "--repo", extra)
	var repos tasks.ReposOut
	e.json(&repos, "repo", "list", "demo")
	branches := map[string]string{}
	for _, r := range repos.Repos {
		branches[r.RepoName] = r.TargetBranch
	}
	if repos.ProjectID != projectID || len(repos.Repos) != 3 || branches["app"] != "main" || branches["lib"] != "dev" || branches["other"] != "main" {
		t.Errorf("repo list --json = %+v", repos)
	}
	if out := e.ok("repo", "list", projectID); !strings.Contains(out, "other") || !strings.Contains(out, extra) {
		t.Errorf("repo list printed:\n%s", out)
	}

	descFile := filepath.Join(t.TempDir(), "desc.md")
	os.WriteFile(descFile, []byte("details\nover two lines\n"), 0o644)
	id, stderr, code := e.run("task", "create", "demo", "First task", "--description-file", descFile)
	if code != 0 || !uuidLine.MatchString(id) || !strings.Contains(stderr, `created task "First task"`) {
		t.Fatalf("task create: exit %d, stdout %q, stderr %q", code, id, stderr)
	}
	firstID := strings.TrimSpace(id)
	var second struct {
		TaskID, Title, Description, Status string
	}
	e.json(&second, "task", "create", projectID, "Second task", "--description", "inline")
	if second.Title != "Second task" || second.Description != "inline" || second.Status != "todo" {
		t.Errorf("task create --json = %+v", second)
	}

	var tasks tasks.TasksOut
	e.json(&tasks, "task", "list", "demo")
	if tasks.Count != 2 {
		t.Fatalf("task list --json = %+v", tasks)
	}
	for _, tk := range tasks.Tasks {
		if tk.Status != "todo" || tk.HasInProgressAttempt || tk.LastAttemptFailed || tk.LatestAttemptID != nil {
			t.Errorf("task %+v", tk)
		}
		if tk.TaskID == firstID && tk.Description != "details\nover two lines\n" {
			t.Errorf("description = %q", tk.Description)
		}
	}
	out = e.ok("task", "list", "demo")
	if !regexp.MustCompile(`(?m)^`+firstID+`  todo +none +- +First task$`).MatchString(out) || !strings.Contains(out, "Second task") {
		t.Errorf("task list printed:\n%s", out)
	}
	e.json(&tasks, "task", "list", "demo", "--status", "done")
	if tasks.Count != 0 {
		t.Errorf("task list --status done = %+v", tasks)
	}
}

// TestBoardAttemptStart runs a SHELL attempt in the foreground on one of
// two repos and checks what it printed and what the board recorded.
func TestBoardAttemptStart(t *testing.T) {
	t.Parallel()
	e := newBoardEnv(t)
	app, lib := boardRepo(t, "app"), boardRepo(t, "lib")
	var project struct {
		Repos []struct {
			ID   string `json:"repo_id"`
			Name string `json:"repo_name"`
		}
	}
	e.json(&project, "project", "create", "demo", "--repo", app, "--repo", lib)
	appID := project.Repos[0].ID
	if project.Repos[0].Name != "app" {
		t.Fatalf("repos = %+v", project.Repos)
	}
	// stdout and stderr are read apart: the pause keeps their order.
	script := "echo oops >&2\nsleep 0.5\necho line one\necho line two\necho edited > hello.txt\necho line three\n"
	taskID := strings.TrimSpace(e.ok("task", "create", "demo", "Say hello", "--description", script))

	out, stderr, code := e.run("attempt", "start", taskID, "--executor", "SHELL", "--repo", appID)
	if code != 0 {
		t.Fatalf("attempt start: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	attemptID := e.latestAttempt(taskID)
	want := []string{
		"attempt " + attemptID + " started: executor SHELL",
		"  repo app from main at ",
		"== codingagent process ",
		"error_message: oops",
		"system_message: line one",
		"system_message: line two",
		"system_message: line three",
		"attempt " + attemptID + " completed (task inreview)",
	}
	assertInOrder(t, out, want)
	if strings.Contains(out, "repo lib") {
		t.Errorf("--repo selected app only, yet:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^#1 \d\d:\d\d:\d\d\.\d{3} system_message: line one$`).MatchString(out) {
		t.Errorf("entry format:\n%s", out)
	}
	if !strings.Contains(stderr, "stays in the foreground") {
		t.Errorf("no foreground note on stderr:\n%s", stderr)
	}

	st := e.status(attemptID)
	if st.State != tasks.StateCompleted || st.FailureSummary != nil || st.TaskStatus != "inreview" || st.Executor != "SHELL" {
		t.Errorf("status = %+v", st)
	}
	edited, err := os.ReadFile(filepath.Join(e.data, "worktrees", attemptID, "app", "hello.txt"))
	if err != nil || string(edited) != "edited\n" {
		t.Errorf("worktree file: %q, %v", edited, err)
	}
	if _, err := os.Stat(filepath.Join(app, "hello.txt")); err == nil {
		t.Error("the script wrote into the repository, not its worktree")
	}
	if out := e.ok("attempt", "status", attemptID); !regexp.MustCompile(`(?m)^state +completed$`).MatchString(out) ||
		!strings.Contains(out, st.WorkspaceBranch) {
		t.Errorf("attempt status printed:\n%s", out)
	}

	out = e.ok("attempt", "logs", attemptID, "--limit", "2")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "#2 ") || !strings.HasSuffix(lines[0], "system_message: line two") ||
		!strings.HasPrefix(lines[1], "#3 ") || !strings.HasSuffix(lines[1], "system_message: line three") {
		t.Errorf("attempt logs --limit 2 printed:\n%s", out)
	}
	out = e.ok("attempt", "logs", "--channel", "raw", "--json", attemptID, "--limit", "1")
	var raw struct {
		Index int64 `json:"entry_index"`
		Entry struct{ Stream, Content string }
	}
	if err := json.Unmarshal([]byte(out), &raw); err != nil || raw.Index != 3 || raw.Entry.Stream != "stdout" || raw.Entry.Content != "line three" {
		t.Errorf("attempt logs --channel raw --json: %v\n%s", err, out)
	}

	out = e.ok("attempt", "list", taskID)
	if !regexp.MustCompile(`(?m)^` + attemptID + `  completed +SHELL +` + regexp.QuoteMeta(st.WorkspaceBranch) + ` `).MatchString(out) {
		t.Errorf("attempt list printed:\n%s", out)
	}
	if out := e.ok("task", "list", "demo"); !regexp.MustCompile(`(?m)^` + taskID + `  inreview +finished +` + attemptID).MatchString(out) {
		t.Errorf("task list printed:\n%s", out)
	}

	// A failing script: exit status 1, the failure in the last line.
	failing := strings.TrimSpace(e.ok("task", "create", "demo", "Fail", "--description", "echo bad; exit 3"))
	out, _, code = e.run("attempt", "start", failing, "--executor", "SHELL", "--repo", appID)
	if code != 1 || !strings.Contains(out, "failed: failed (exit_code=3) (task inreview)") {
		t.Errorf("failing attempt: exit %d\n%s", code, out)
	}
	if out := e.ok("task", "list", "demo", "--status", "inreview"); !regexp.MustCompile(`(?m)^` + failing + `  inreview +failed `).MatchString(out) {
		t.Errorf("task list printed:\n%s", out)
	}
}

// TestBoardAttemptLogsFollow follows an attempt from a second process
// while the first runs it.
func TestBoardAttemptLogsFollow(t *testing.T) {
	t.Parallel()
	e := newBoardEnv(t)
	e.ok("project", "create", "demo", "--repo", boardRepo(t, "app"))
	script := "for i in 1 2 3 4 5 6; do echo tick $i; sleep 0.3; done"
	taskID := strings.TrimSpace(e.ok("task", "create", "demo", "Tick", "--description", script))

	start := e.background("attempt", "start", taskID, "--executor", "SHELL")
	var attemptID string
	e.waitFor("the attempt to start", 20*time.Second, func() bool {
		attemptID = e.latestAttempt(taskID)
		return attemptID != ""
	})

	follow := e.background("attempt", "logs", attemptID, "--follow")
	if err := follow.wait(30 * time.Second); err != nil {
		t.Fatalf("attempt logs --follow did not end with the attempt: %v", err)
	}
	out := follow.stdout.String()
	var want []string
	for i := 1; i <= 6; i++ {
		want = append(want, fmt.Sprintf("system_message: tick %d", i))
	}
	assertInOrder(t, out, append(want, "attempt "+attemptID+" completed (task inreview)"))
	if n := strings.Count(out, "tick "); n != 6 {
		t.Errorf("%d ticks printed, want 6 (each once):\n%s", n, out)
	}
	if err := start.wait(10 * time.Second); err != nil {
		t.Errorf("attempt start: %v", err)
	}
	assertInOrder(t, start.stdout.String(), want)
}

// TestBoardAttemptCrashRecovery kills the host running an attempt: the
// next plugboard process to open the board marks it killed and nothing of
// it keeps running.
func TestBoardAttemptCrashRecovery(t *testing.T) {
	t.Parallel()
	e := newBoardEnv(t)
	e.ok("project", "create", "demo", "--repo", boardRepo(t, "app"))
	// A sleep of a unique length tells our process apart in /proc; the
	// echo after it keeps bash from exec'ing it, so it is a grandchild
	// that only the recovery's group kill reaches.
	marker := fmt.Sprintf("61.%06d", rand.IntN(1000000))
	t.Cleanup(func() { killMarked(marker) })
	taskID := strings.TrimSpace(e.ok("task", "create", "demo", "Hang", "--description", "echo started; sleep "+marker+"; echo never"))

	start := e.background("attempt", "start", taskID, "--executor", "SHELL")
	var attemptID string
	e.waitFor("the attempt to run and log", 20*time.Second, func() bool {
		if attemptID == "" {
			attemptID = e.latestAttempt(taskID)
			return false
		}
		out, _, _ := e.run("attempt", "logs", attemptID)
		return e.status(attemptID).State == tasks.StateRunning && strings.Contains(out, "system_message: started")
	})
	if len(markedPIDs(marker)) == 0 {
		t.Fatal("the attempt's sleep is not running")
	}

	if err := start.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := start.wait(10 * time.Second); err == nil {
		t.Fatal("attempt start survived SIGKILL")
	}

	st := e.status(attemptID) // a new host: it recovers the dead one's processes
	if st.State != tasks.StateFailed || st.FailureSummary == nil || !strings.HasPrefix(*st.FailureSummary, "killed") || st.TaskStatus != "inreview" {
		t.Errorf("status after the crash = %+v", st)
	}
	e.waitFor("the attempt's processes to be gone", 10*time.Second, func() bool { return len(markedPIDs(marker)) == 0 })
	if out := e.ok("attempt", "status", attemptID); !regexp.MustCompile(`(?m)^failure +killed`).MatchString(out) {
		t.Errorf("attempt status printed:\n%s", out)
	}
}

// TestBoardCLIErrors checks that envelopes print with their hint (exit 1)
// and misuse prints the usage (exit 2).
func TestBoardCLIErrors(t *testing.T) {
	t.Parallel()
	e := newBoardEnv(t)
	e.ok("project", "create", "demo", "--repo", boardRepo(t, "app"))

	_, stderr, code := e.run("task", "list", "nosuch")
	if code != 1 || !strings.Contains(stderr, `not_found: no project named "nosuch"`) || !strings.Contains(stderr, "hint: run `plugboard project list`") {
		t.Errorf("unknown project: exit %d, stderr %q", code, stderr)
	}
	_, stderr, code = e.run("task", "create", "demo", "   ")
	if code != 1 || !strings.Contains(stderr, "missing_required: title is required") || !strings.Contains(stderr, "hint: ") {
		t.Errorf("blank title: exit %d, stderr %q", code, stderr)
	}
	_, stderr, code = e.run("attempt", "status", "00000000-0000-0000-0000-000000000000")
	if code != 1 || !strings.Contains(stderr, "not_found: ") || !strings.Contains(stderr, "`plugboard attempt list TASK_ID`") {
		t.Errorf("unknown attempt: exit %d, stderr %q", code, stderr)
	}
	_, stderr, code = e.run("project", "create", "demo")
	if code != 1 || !strings.Contains(stderr, "conflict: ") {
		t.Errorf("duplicate project: exit %d, stderr %q", code, stderr)
	}
	for _, args := range [][]string{
		{"project"}, {"project", "frob"}, {"task", "delete", "x"}, {"attempt"},
		{"task", "create", "demo"}, {"task", "create", "demo", "t", "--description", "a", "--description-file", "b"},
		{"attempt", "start", "00000000-0000-0000-0000-000000000000"}, {"attempt", "logs", "x", "--bogus"},
		{"repo", "add", "demo"},
	} {
		if _, stderr, code := e.run(args...); code != 2 || !strings.Contains(stderr, "Usage") {
			t.Errorf("%q: exit %d, want 2 with usage; stderr %q", args, code, stderr)
		}
	}
}

// assertInOrder checks that out holds each of want, in this order.
func assertInOrder(t *testing.T, out string, want []string) {
	t.Helper()
	rest := out
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Errorf("missing (in order) %q in:\n%s", w, out)
			return
		}
		rest = rest[i+len(w):]
	}
}

// markedPIDs lists the live processes running "sleep MARKER".
func markedPIDs(marker string) []int {
	var pids []int
	matches, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, m := range matches {
		b, err := os.ReadFile(m)
		if err != nil || !bytes.Contains(b, []byte("sleep\x00"+marker+"\x00")) {
			continue
		}
		var pid int
		if _, err := fmt.Sscanf(filepath.Base(filepath.Dir(m)), "%d", &pid); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

func killMarked(marker string) {
	for _, pid := range markedPIDs(marker) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}
