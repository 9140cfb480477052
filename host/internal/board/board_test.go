package board

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/abi/tasks"
	"github.com/plugboard/plugboard/host/internal/store"
)

// gitRepo makes a real repository with a few committed files on main.
func gitRepo(t *testing.T, name string, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	for p, content := range files {
		full := filepath.Join(dir, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, dir, "init", "-q", "-b", "main")
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "initial")
	return dir
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	os.MkdirAll(dir, 0o755)
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func openBoard(t *testing.T, cfg Config) *Board {
	t.Helper()
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	if cfg.StopGrace == 0 {
		cfg.StopGrace = 500 * time.Millisecond
	}
	b, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// fixture is a board with one project over one repo.
type fixture struct {
	b       *Board
	project store.Project
	repo    string
}

func newFixture(t *testing.T, specs ...RepoSpec) fixture {
	t.Helper()
	b := openBoard(t, Config{})
	repo := gitRepo(t, "app", map[string]string{"README.md": "hello\n", "old.txt": "remove me\n", "src/main.go": "package main\n"})
	if len(specs) == 0 {
		specs = []RepoSpec{{Path: repo}}
	}
	p, err := b.CreateProject(context.Background(), "demo", specs)
	if err != nil {
		t.Fatal(err)
	}
	return fixture{b: b, project: p, repo: repo}
}

func (f fixture) task(t *testing.T, title, script string) tasks.Task {
	t.Helper()
	task, err := f.b.CreateTask(context.Background(), CreateTaskArgs{ProjectID: f.project.ID, Title: title, Description: script})
	if err != nil {
		t.Fatal(err)
	}
	return task
}

func (f fixture) start(t *testing.T, taskID string) StartResult {
	t.Helper()
	res, err := f.b.StartTaskAttempt(context.Background(), StartArgs{TaskID: taskID, Executor: "shell"})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// settle waits until the attempt is no longer running and its task has
// left inprogress (the chain, cleanup included, is over).
func settle(t *testing.T, b *Board, attemptID string) StatusResult {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, err := b.GetAttemptStatus(context.Background(), AttemptArgs{AttemptID: attemptID})
		if err != nil {
			t.Fatal(err)
		}
		if st.State != StateRunning && st.State != StateIdle && st.TaskStatus != store.StatusInProgress {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("attempt still running: %+v", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func waitState(t *testing.T, b *Board, attemptID, state string) StatusResult {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, err := b.GetAttemptStatus(context.Background(), AttemptArgs{AttemptID: attemptID})
		if err != nil {
			t.Fatal(err)
		}
		if st.State == state {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("attempt never reached %s: %+v", state, st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitLog waits until the attempt's latest process has logged want, so a
// test knows the script got past its setup (a trap, say).
func waitLog(t *testing.T, b *Board, attemptID, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		page, err := b.TailAttemptLogs(context.Background(), LogsArgs{AttemptID: attemptID, Channel: "raw"})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range entryContents(t, page.Entries) {
			if c == want {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("log never showed %q", want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func envelope(t *testing.T, err error, code string) *abi.Envelope {
	t.Helper()
	var env *abi.Envelope
	if !errors.As(err, &env) || env.Code != code {
		t.Fatalf("want envelope %s, got %v", code, err)
	}
	if env.Hint == "" {
		t.Fatalf("envelope %s has no hint", code)
	}
	return env
}

func entryContents(t *testing.T, es []LogEntry) []string {
	t.Helper()
	out := make([]string, len(es))
	for i, e := range es {
		var v struct {
			Content string `json:"content"`
		}
		if err := json.Unmarshal(e.Entry, &v); err != nil {
			t.Fatal(err)
		}
		out[i] = v.Content
	}
	return out
}

func TestAttemptLifecycleWithShell(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	script := `echo "working in $(basename "$PWD")"
printf 'hello\nworld\n' > README.md
mkdir -p docs && echo "new file" > docs/notes.md
rm old.txt
for i in $(seq 1 120); do echo "line $i"; done
echo "to stderr" >&2`
	task := f.task(t, "Edit the readme", script)
	res := f.start(t, task.TaskID)
	if !strings.HasPrefix(res.WorkspaceBranch, "pb/"+res.AttemptID[:8]+"-edit-the-readme") {
		t.Fatalf("branch = %q", res.WorkspaceBranch)
	}
	if got, _ := f.b.GetTask(ctx, TaskArgs{TaskID: task.TaskID}); got.Status != store.StatusInProgress && got.Status != store.StatusInReview {
		t.Fatalf("task status after start = %s", got.Status)
	}
	st := settle(t, f.b, res.AttemptID)
	if st.State != StateCompleted || st.FailureSummary != nil || st.TaskStatus != store.StatusInReview || st.LatestSessionID == nil {
		t.Fatalf("status = %+v", st)
	}
	// The target branch is untouched; the worktree carries the work.
	if out := git(t, f.repo, "status", "--porcelain"); out != "" {
		t.Fatalf("source repo changed: %q", out)
	}

	ch, err := f.b.GetAttemptChanges(ctx, ChangesArgs{AttemptID: res.AttemptID})
	if err != nil || ch.Blocked {
		t.Fatalf("changes = %+v, %v", ch, err)
	}
	got := map[string]ChangedFile{}
	for _, c := range ch.Files {
		got[c.Path] = c
	}
	if len(ch.Files) != 3 || got["app/README.md"].Status != "modified" || got["app/docs/notes.md"].Status != "added" ||
		got["app/old.txt"].Status != "deleted" {
		t.Fatalf("files = %+v", ch.Files)
	}
	if ch.Summary.FileCount != 3 || ch.Summary.Added != 2 || ch.Summary.Deleted != 1 {
		t.Fatalf("summary = %+v", ch.Summary)
	}

	patch, err := f.b.GetAttemptPatch(ctx, PatchArgs{AttemptID: res.AttemptID, Paths: []string{"app/docs/notes.md", "app/old.txt"}})
	if err != nil || patch.Blocked || patch.Truncated {
		t.Fatalf("patch = %+v, %v", patch, err)
	}
	for _, want := range []string{"+++ b/app/docs/notes.md", "+new file", "--- a/app/old.txt", "-remove me"} {
		if !strings.Contains(patch.Patch, want) {
			t.Fatalf("patch lacks %q:\n%s", want, patch.Patch)
		}
	}
	if strings.Contains(patch.Patch, "README") {
		t.Fatalf("patch has unselected path:\n%s", patch.Patch)
	}
	small, _ := f.b.GetAttemptPatch(ctx, PatchArgs{AttemptID: res.AttemptID, MaxBytes: 40})
	if !small.Truncated || small.Bytes > 40 || small.TotalBytes <= 40 {
		t.Fatalf("small patch = %+v", small)
	}

	file, err := f.b.GetAttemptFile(ctx, FileArgs{AttemptID: res.AttemptID, Path: "app/README.md"})
	if err != nil || file.Content != "hello\nworld\n" || file.Blocked {
		t.Fatalf("file = %+v, %v", file, err)
	}
	if out, _ := f.b.GetAttemptFile(ctx, FileArgs{AttemptID: res.AttemptID, Path: "app/../../etc/passwd"}); !out.Blocked {
		t.Fatalf("escape not blocked: %+v", out)
	}

	// Logs: 123 stdout/stderr lines; tail-first pages in chronological
	// order, older with cursor, newer with after_entry_index.
	page, err := f.b.TailAttemptLogs(ctx, LogsArgs{AttemptID: res.AttemptID, Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	total := *page.Page.LastIndex + 1
	if len(page.Entries) != 50 || !page.Page.HasMore || *page.Page.NextCursor != total-50 {
		t.Fatalf("tail page: %d entries, page %+v", len(page.Entries), page.Page)
	}
	older, err := f.b.TailAttemptLogs(ctx, LogsArgs{AttemptID: res.AttemptID, Limit: 50, Cursor: page.Page.NextCursor})
	if err != nil || older.Entries[len(older.Entries)-1].EntryIndex != total-51 {
		t.Fatalf("older page = %+v, %v", older.Page, err)
	}
	seen := map[string]bool{}
	var cursor *int64
	for {
		p, err := f.b.TailAttemptLogs(ctx, LogsArgs{AttemptID: res.AttemptID, Limit: 50, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range entryContents(t, p.Entries) {
			seen[c] = true
		}
		if !p.Page.HasMore {
			break
		}
		cursor = p.Page.NextCursor
	}
	for _, want := range []string{"working in app", "line 1", "line 120", "to stderr"} {
		if !seen[want] {
			t.Fatalf("log lacks %q", want)
		}
	}
	after := total - 3
	newer, _ := f.b.TailAttemptLogs(ctx, LogsArgs{AttemptID: res.AttemptID, AfterEntryIndex: &after})
	if len(newer.Entries) != 2 || newer.Page.HasMore {
		t.Fatalf("after page = %d entries %+v", len(newer.Entries), newer.Page)
	}
	raw, _ := f.b.TailAttemptLogs(ctx, LogsArgs{AttemptID: res.AttemptID, Channel: "raw", Limit: 1})
	if c := entryContents(t, raw.Entries); len(c) != 1 || c[0] != "to stderr" && c[0] != "line 120" {
		t.Fatalf("raw tail = %v", c)
	}
	_, err = f.b.TailAttemptLogs(ctx, LogsArgs{AttemptID: res.AttemptID, Cursor: &after, AfterEntryIndex: &after})
	envelope(t, err, abi.CodeMixedPagination)

	// The transcript holds the turn with its prompt and summary.
	msgs, err := f.b.TailSessionMessages(ctx, MessagesArgs{AttemptID: res.AttemptID})
	if err != nil || len(msgs.Messages) != 1 || msgs.Messages[0].Prompt != script || msgs.Messages[0].Summary == nil {
		t.Fatalf("transcript = %+v, %v", msgs, err)
	}

	// The list views agree.
	list, _ := f.b.ListTasks(ctx, ListTasksArgs{ProjectID: f.project.ID})
	if len(list.Tasks) != 1 || *list.Tasks[0].LatestAttemptID != res.AttemptID || list.Tasks[0].HasInProgressAttempt ||
		list.Tasks[0].LastAttemptFailed || *list.Tasks[0].LatestSessionExecutor != "SHELL" {
		t.Fatalf("list_tasks = %+v", list.Tasks)
	}
	attempts, _ := f.b.ListTaskAttempts(ctx, TaskArgs{TaskID: task.TaskID})
	if *attempts.LatestAttemptID != res.AttemptID || *attempts.LatestSessionID != *st.LatestSessionID {
		t.Fatalf("list_task_attempts = %+v", attempts)
	}

	// Deleting the task removes its worktree and branch.
	del, err := f.b.DeleteTask(ctx, TaskArgs{TaskID: task.TaskID})
	if err != nil || !del.Deleted || del.RemovedWorktrees != 1 {
		t.Fatalf("delete = %+v, %v", del, err)
	}
	if _, err := os.Stat(filepath.Join(f.b.cfg.DataDir, "worktrees", res.AttemptID)); !os.IsNotExist(err) {
		t.Fatalf("worktree dir left: %v", err)
	}
	if out := git(t, f.repo, "branch", "--list", "pb/*"); out != "" {
		t.Fatalf("branch left: %q", out)
	}
	_, err = f.b.GetAttemptStatus(ctx, AttemptArgs{AttemptID: res.AttemptID})
	envelope(t, err, abi.CodeNotFound)
}

func TestFailedProcessStatus(t *testing.T) {
	f := newFixture(t)
	task := f.task(t, "fail", "echo about to fail; exit 3")
	res := f.start(t, task.TaskID)
	st := settle(t, f.b, res.AttemptID)
	if st.State != StateFailed || st.FailureSummary == nil || *st.FailureSummary != "failed (exit_code=3)" {
		t.Fatalf("status = %+v", st)
	}
	list, _ := f.b.ListTasks(context.Background(), ListTasksArgs{ProjectID: f.project.ID})
	if !list.Tasks[0].LastAttemptFailed {
		t.Fatalf("last_attempt_failed false: %+v", list.Tasks[0])
	}
}

func TestQueuedFollowUpRunsAfterSuccess(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	// The first run waits for a file, so the queue call surely lands while it runs.
	gate := filepath.Join(t.TempDir(), "go")
	task := f.task(t, "queue", "while [ ! -e "+gate+" ]; do sleep 0.02; done; echo first run")
	res := f.start(t, task.TaskID)
	st := waitState(t, f.b, res.AttemptID, StateRunning)

	// send while running → process_running with a hint to queue or stop.
	_, err := f.b.FollowUp(ctx, FollowUpArgs{Action: ActionSend, AttemptID: res.AttemptID, Prompt: "echo nope"})
	envelope(t, err, abi.CodeProcessRunning)

	q, err := f.b.FollowUp(ctx, FollowUpArgs{Action: ActionQueue, AttemptID: res.AttemptID, Prompt: "echo replaced"})
	if err != nil || !q.Queue.Queued || !q.Queue.ProcessRunning {
		t.Fatalf("queue = %+v, %v", q, err)
	}
	// One message per session: the second queue replaces the first.
	q, err = f.b.FollowUp(ctx, FollowUpArgs{Action: ActionQueue, SessionID: *st.LatestSessionID, Prompt: "echo second run > second.txt; echo second done"})
	if err != nil || *q.Queue.Prompt != "echo second run > second.txt; echo second done" {
		t.Fatalf("requeue = %+v, %v", q, err)
	}
	os.WriteFile(gate, nil, 0o644)
	// The queued message starts by itself after the successful run.
	deadline := time.Now().Add(20 * time.Second)
	for {
		msgs, err := f.b.TailSessionMessages(ctx, MessagesArgs{AttemptID: res.AttemptID})
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs.Messages) == 2 && msgs.Messages[1].Summary != nil {
			if msgs.Messages[1].Prompt != "echo second run > second.txt; echo second done" {
				t.Fatalf("second turn = %+v", msgs.Messages[1])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("queued follow-up never ran: %+v", msgs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	st = settle(t, f.b, res.AttemptID)
	if st.State != StateCompleted || st.QueuedFollowUp {
		t.Fatalf("after follow-up: %+v", st)
	}
	file, err := f.b.GetAttemptFile(ctx, FileArgs{AttemptID: res.AttemptID, Path: "app/second.txt"})
	if err != nil || file.Content != "second run\n" {
		t.Fatalf("second run output = %+v, %v", file, err)
	}
	// send now works, and runs in the same session.
	sent, err := f.b.FollowUp(ctx, FollowUpArgs{Action: ActionSend, AttemptID: res.AttemptID, Prompt: "echo third"})
	if err != nil || sent.ExecutionProcessID == nil || sent.SessionID != *st.LatestSessionID {
		t.Fatalf("send = %+v, %v", sent, err)
	}
	settle(t, f.b, res.AttemptID)
}

func TestQueuedFollowUpDiscardedAfterFailure(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	gate := filepath.Join(t.TempDir(), "go")
	task := f.task(t, "queue", "while [ ! -e "+gate+" ]; do sleep 0.02; done; exit 1")
	res := f.start(t, task.TaskID)
	waitState(t, f.b, res.AttemptID, StateRunning)
	if _, err := f.b.FollowUp(ctx, FollowUpArgs{Action: ActionQueue, AttemptID: res.AttemptID, Prompt: "echo never"}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(gate, nil, 0o644)
	st := settle(t, f.b, res.AttemptID)
	if st.State != StateFailed || st.QueuedFollowUp {
		t.Fatalf("status = %+v", st)
	}
	time.Sleep(100 * time.Millisecond)
	msgs, _ := f.b.TailSessionMessages(ctx, MessagesArgs{AttemptID: res.AttemptID})
	if len(msgs.Messages) != 1 {
		t.Fatalf("discarded message ran: %+v", msgs.Messages)
	}
	// cancel clears the queue only; prompt is forbidden with it.
	_, err := f.b.FollowUp(ctx, FollowUpArgs{Action: ActionCancel, AttemptID: res.AttemptID, Prompt: "x"})
	envelope(t, err, abi.CodeInvalidArgument)
	f.b.FollowUp(ctx, FollowUpArgs{Action: ActionQueue, AttemptID: res.AttemptID, Prompt: "echo later"})
	c, err := f.b.FollowUp(ctx, FollowUpArgs{Action: ActionCancel, AttemptID: res.AttemptID})
	if err != nil || c.Queue.Queued {
		t.Fatalf("cancel = %+v, %v", c, err)
	}
}

func TestStopIgnoringSIGINT(t *testing.T) {
	for _, force := range []bool{false, true} {
		name := map[bool]string{false: "graceful", true: "force"}[force]
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			f := newFixture(t)
			task := f.task(t, "stubborn", "trap '' INT; echo ready; while true; do sleep 0.05; done")
			res := f.start(t, task.TaskID)
			waitLog(t, f.b, res.AttemptID, "ready")
			// Stopping also discards a queued follow-up.
			f.b.FollowUp(ctx, FollowUpArgs{Action: ActionQueue, AttemptID: res.AttemptID, Prompt: "echo never"})
			began := time.Now()
			stop, err := f.b.StopAttempt(ctx, StopArgs{AttemptID: res.AttemptID, Force: force})
			took := time.Since(began)
			if err != nil || len(stop.Stopped) != 1 || stop.State != StateFailed || !stop.DiscardedQueuedFollowUp ||
				stop.TaskStatus != store.StatusInReview {
				t.Fatalf("stop = %+v, %v", stop, err)
			}
			if !strings.HasPrefix(*stop.FailureSummary, "killed") {
				t.Fatalf("failure_summary = %q", *stop.FailureSummary)
			}
			// Graceful waits out the grace period (500ms here) because the
			// script ignores SIGINT; force does not wait.
			if !force && took < 400*time.Millisecond {
				t.Fatalf("graceful stop returned after %v, before the grace period", took)
			}
			if force && took > 3*time.Second {
				t.Fatalf("force stop took %v", took)
			}
			again, err := f.b.StopAttempt(ctx, StopArgs{AttemptID: res.AttemptID})
			if err != nil || !again.AlreadyFinished {
				t.Fatalf("second stop = %+v, %v", again, err)
			}
		})
	}
}

func TestSetupAndCleanupScripts(t *testing.T) {
	ctx := context.Background()
	b := openBoard(t, Config{})
	repo := gitRepo(t, "svc", map[string]string{"a.txt": "a\n"})
	p, err := b.CreateProject(ctx, "scripts", []RepoSpec{{Path: repo, SetupScript: "sleep 0.3; echo setup > setup.out",
		CleanupScript: "echo cleanup > cleanup.out"}})
	if err != nil {
		t.Fatal(err)
	}
	task, _ := b.CreateTask(ctx, CreateTaskArgs{ProjectID: p.ID, Title: "t", Description: "cat setup.out > agent.out"})
	res, err := b.StartTaskAttempt(ctx, StartArgs{TaskID: task.TaskID, Executor: "SHELL"})
	if err != nil || res.RunReason != store.ReasonSetupScript {
		t.Fatalf("start = %+v, %v", res, err)
	}
	// While the setup script runs there is no session yet.
	_, err = b.FollowUp(ctx, FollowUpArgs{Action: ActionSend, AttemptID: res.AttemptID, Prompt: "echo hi"})
	env := envelope(t, err, abi.CodeNoSessionYet)
	if !env.Retryable || !strings.Contains(env.Hint, "get_attempt_status") {
		t.Fatalf("no_session_yet envelope = %+v", env)
	}
	st := settle(t, b, res.AttemptID)
	if st.State != StateCompleted || *st.LatestRunReason != store.ReasonCleanupScript {
		t.Fatalf("status = %+v", st)
	}
	for file, want := range map[string]string{"svc/agent.out": "setup\n", "svc/cleanup.out": "cleanup\n"} {
		got, err := b.GetAttemptFile(ctx, FileArgs{AttemptID: res.AttemptID, Path: file})
		if err != nil || got.Content != want {
			t.Fatalf("%s = %+v, %v", file, got, err)
		}
	}
}

func TestMultiRepoAttempt(t *testing.T) {
	ctx := context.Background()
	b := openBoard(t, Config{})
	front := gitRepo(t, "front", map[string]string{"index.html": "<p>hi</p>\n"})
	back := gitRepo(t, "back", map[string]string{"main.go": "package main\n"})
	git(t, back, "checkout", "-q", "-b", "develop")
	p, err := b.CreateProject(ctx, "multi", []RepoSpec{{Path: front}, {Path: back, TargetBranch: "develop"}})
	if err != nil {
		t.Fatal(err)
	}
	repos, _ := b.ListRepos(ctx, ProjectArgs{ProjectID: p.ID})
	if len(repos.Repos) != 2 || repos.Repos[0].RepoName != "back" || repos.Repos[0].TargetBranch != "develop" {
		t.Fatalf("repos = %+v", repos)
	}
	task, _ := b.CreateTask(ctx, CreateTaskArgs{ProjectID: p.ID, Title: "both", Description: "echo x >> front/index.html; echo y > back/new.go"})
	res, err := b.StartTaskAttempt(ctx, StartArgs{TaskID: task.TaskID, Executor: "SHELL"})
	if err != nil || len(res.Repos) != 2 {
		t.Fatalf("start = %+v, %v", res, err)
	}
	settle(t, b, res.AttemptID)
	ch, _ := b.GetAttemptChanges(ctx, ChangesArgs{AttemptID: res.AttemptID})
	var paths []string
	for _, f := range ch.Files {
		paths = append(paths, f.Path)
	}
	if strings.Join(paths, ",") != "back/new.go,front/index.html" {
		t.Fatalf("paths = %v", paths)
	}
	patch, _ := b.GetAttemptPatch(ctx, PatchArgs{AttemptID: res.AttemptID, Paths: []string{"front/index.html"}})
	if !strings.Contains(patch.Patch, "+++ b/front/index.html") || strings.Contains(patch.Patch, "back/") {
		t.Fatalf("patch = %s", patch.Patch)
	}
	// Selecting one repo makes a one-repo attempt.
	one, err := b.StartTaskAttempt(ctx, StartArgs{TaskID: task.TaskID, Executor: "SHELL", Repos: []StartRepoArg{{RepoID: repos.Repos[1].RepoID}}})
	if err != nil || len(one.Repos) != 1 || one.Repos[0].RepoName != "front" {
		t.Fatalf("one-repo start = %+v, %v", one, err)
	}
	settle(t, b, one.AttemptID)
}

func TestGuardBlocksFileList(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.b.guard.MaxFiles = 2
	task := f.task(t, "many", "for i in 1 2 3; do echo $i > f$i.txt; done")
	res := f.start(t, task.TaskID)
	settle(t, f.b, res.AttemptID)
	ch, err := f.b.GetAttemptChanges(ctx, ChangesArgs{AttemptID: res.AttemptID})
	if err != nil || !ch.Blocked || *ch.BlockedReason != BlockedThresholdExceeded || len(ch.Files) != 0 || ch.Summary.FileCount != 3 || ch.Hint == "" {
		t.Fatalf("blocked changes = %+v, %v", ch, err)
	}
	ch, _ = f.b.GetAttemptChanges(ctx, ChangesArgs{AttemptID: res.AttemptID, Force: true})
	if ch.Blocked || len(ch.Files) != 3 {
		t.Fatalf("forced changes = %+v", ch)
	}
}

func TestBadInputChangesNothing(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	task := f.task(t, "x", "true")
	_, err := f.b.StartTaskAttempt(ctx, StartArgs{TaskID: task.TaskID, Executor: "NO_SUCH"})
	envelope(t, err, abi.CodeInvalidArgument)
	_, err = f.b.StartTaskAttempt(ctx, StartArgs{TaskID: task.TaskID, Executor: "SHELL", Variant: "PLAN"})
	envelope(t, err, abi.CodeInvalidArgument)
	_, err = f.b.StartTaskAttempt(ctx, StartArgs{TaskID: "not-a-uuid", Executor: "SHELL"})
	envelope(t, err, abi.CodeInvalidArgument)
	_, err = f.b.StartTaskAttempt(ctx, StartArgs{TaskID: store.NewID(), Executor: "SHELL"})
	envelope(t, err, abi.CodeNotFound)
	_, err = f.b.FollowUp(ctx, FollowUpArgs{Action: ActionSend, AttemptID: store.NewID(), SessionID: store.NewID(), Prompt: "x"})
	envelope(t, err, abi.CodeAmbiguousTarget)
	_, err = f.b.FollowUp(ctx, FollowUpArgs{Action: ActionQueue, AttemptID: store.NewID()})
	envelope(t, err, abi.CodeMissingRequired)
	_, err = f.b.ListTasks(ctx, ListTasksArgs{ProjectID: f.project.ID, Status: "doing"})
	envelope(t, err, abi.CodeInvalidArgument)
	got, _ := f.b.GetTask(ctx, TaskArgs{TaskID: task.TaskID})
	if got.Status != store.StatusTodo || got.LatestAttemptID != nil {
		t.Fatalf("task changed by bad input: %+v", got)
	}
	if entries, _ := os.ReadDir(filepath.Join(f.b.cfg.DataDir, "worktrees")); len(entries) != 0 {
		t.Fatalf("worktrees left: %v", entries)
	}
}

// TestStopFromAnotherHost stops a process that a second board on the same
// data directory (another plugboard process, say) supervises.
func TestStopFromAnotherHost(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	task := f.task(t, "long", "echo ready; sleep 30")
	res := f.start(t, task.TaskID)
	waitLog(t, f.b, res.AttemptID, "ready")
	other := openBoard(t, Config{DataDir: f.b.cfg.DataDir})
	stop, err := other.StopAttempt(ctx, StopArgs{AttemptID: res.AttemptID})
	if err != nil || len(stop.Stopped) != 1 || stop.State != StateFailed || !strings.HasPrefix(*stop.FailureSummary, "killed") {
		t.Fatalf("stop = %+v, %v", stop, err)
	}
	st := settle(t, f.b, res.AttemptID)
	if st.State != StateFailed || st.TaskStatus != store.StatusInReview {
		t.Fatalf("status after foreign stop = %+v", st)
	}
}

// TestRecoverMarksOrphansKilled: a process row left running by a host that
// no longer exists is marked killed when a board opens, its queued
// follow-up discarded and its task moved to inreview; a row owned by a live
// host is left alone.
func TestRecoverMarksOrphansKilled(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	task := f.task(t, "t", "true")
	res := f.start(t, task.TaskID)
	settle(t, f.b, res.AttemptID)
	se, err := f.b.store.LatestSession(ctx, res.AttemptID)
	if err != nil {
		t.Fatal(err)
	}
	f.b.store.SetTaskStatus(ctx, task.TaskID, store.StatusInProgress)
	orphan := &store.Process{AttemptID: res.AttemptID, SessionID: &se.ID, RunReason: store.ReasonCodingAgent,
		Command: "claude", Owner: "999999999/gone", PID: 999999999, Identity: "old-boot/1"}
	live := &store.Process{AttemptID: res.AttemptID, RunReason: store.ReasonDevServer, Command: "npm run dev", Owner: f.b.owner}
	for _, p := range []*store.Process{orphan, live} {
		if err := f.b.store.CreateProcess(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	f.b.store.QueueMessage(ctx, se.ID, "later", "")

	other := openBoard(t, Config{DataDir: f.b.cfg.DataDir})
	got, _ := other.store.GetProcess(ctx, orphan.ID)
	if got.Status != store.ProcKilled || got.CompletedAt == nil {
		t.Fatalf("orphan = %+v", got)
	}
	if got, _ := other.store.GetProcess(ctx, live.ID); got.Status != store.ProcRunning {
		t.Fatalf("live host's process touched: %+v", got)
	}
	st, _ := other.GetAttemptStatus(ctx, AttemptArgs{AttemptID: res.AttemptID})
	if st.State != StateFailed || *st.FailureSummary != "killed (host exited)" || st.QueuedFollowUp || st.TaskStatus != store.StatusInReview {
		t.Fatalf("status after recovery = %+v", st)
	}
	f.b.store.FinishProcess(ctx, live.ID, store.ProcKilled, nil, "")
}

// TestEventsRecorded: creating a task records task.created, and the end of
// an attempt's run records attempt.finished with its state.
func TestEventsRecorded(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	task := f.task(t, "events", "exit 4")
	res := f.start(t, task.TaskID)
	settle(t, f.b, res.AttemptID)
	created, err := f.b.Store().ListEvents(ctx, store.EventTaskCreated, 0, 0)
	if err != nil || len(created) != 1 || created[0].SubjectID != task.TaskID {
		t.Fatalf("task.created = %+v, %v", created, err)
	}
	var finished []store.Event
	deadline := time.Now().Add(5 * time.Second)
	for len(finished) == 0 && time.Now().Before(deadline) {
		finished, _ = f.b.Store().ListEvents(ctx, store.EventAttemptFinished, 0, 0)
		time.Sleep(10 * time.Millisecond)
	}
	if len(finished) != 1 || finished[0].SubjectID != res.AttemptID || !strings.Contains(string(finished[0].Data), `"state":"failed"`) {
		t.Fatalf("attempt.finished = %+v", finished)
	}
}
