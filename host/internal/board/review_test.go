package board

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/abi/tasks"
	"github.com/plugboard/plugboard/host/internal/board/gitops"
	"github.com/plugboard/plugboard/host/internal/store"
)

func taskStatus(t *testing.T, b *Board, taskID string) string {
	t.Helper()
	task, err := b.GetTask(context.Background(), TaskArgs{TaskID: taskID})
	if err != nil {
		t.Fatal(err)
	}
	return string(task.Status)
}

func revParse(t *testing.T, dir, rev string) string {
	t.Helper()
	return strings.TrimSpace(git(t, dir, "rev-parse", rev))
}

// reviewed runs a SHELL attempt of script to its end: the task is inreview.
func reviewed(t *testing.T, f fixture, title, script string) StartResult {
	t.Helper()
	task := f.task(t, title, script)
	res := f.start(t, task.TaskID)
	if st := settle(t, f.b, res.AttemptID); st.TaskStatus != store.StatusInReview || st.State != StateCompleted {
		t.Fatalf("attempt did not end in review: %+v", st)
	}
	return res
}

func TestApproveAttemptMerges(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	// The agent edits a tracked file and adds one, committing nothing.
	res := reviewed(t, f, "Greet the world", "echo world >> README.md; echo new > added.txt")
	mainTip := revParse(t, f.repo, "main")

	q, err := f.b.ReviewQueue(ctx, ReviewQueueArgs{})
	if err != nil || q.Count != 1 {
		t.Fatalf("review_queue = %+v, %v", q, err)
	}
	item := q.Tasks[0]
	if *item.AttemptID != res.AttemptID || *item.WorkspaceBranch != res.WorkspaceBranch || *item.State != StateCompleted ||
		item.Changes == nil || *item.Changes != (ReviewChanges{FileCount: 2, Added: 2, Deleted: 0}) ||
		!slices.Equal(item.Repos, []ReviewRepo{{RepoName: "app", TargetBranch: "main"}}) {
		t.Fatalf("review item = %+v (changes %+v)", item, item.Changes)
	}

	out, err := f.b.ApproveAttempt(ctx, ApproveArgs{AttemptID: res.AttemptID})
	if err != nil {
		t.Fatal(err)
	}
	if out.TaskStatus != store.StatusDone || len(out.Repos) != 1 {
		t.Fatalf("approve = %+v", out)
	}
	m := out.Repos[0]
	// main is checked out in the repo, clean: merged there.
	if m.RepoName != "app" || m.TargetBranch != "main" || m.MergedVia != gitops.MergedViaWorktree || m.ChangesCommit == nil {
		t.Fatalf("merged repo = %+v", m)
	}
	if got := revParse(t, f.repo, "HEAD"); got != m.MergeCommit {
		t.Fatalf("main at %s, want the merge commit %s", got, m.MergeCommit)
	}
	parents := strings.Fields(git(t, f.repo, "log", "-1", "--format=%P", "main"))
	if !slices.Equal(parents, []string{mainTip, *m.ChangesCommit}) {
		t.Fatalf("merge parents %v", parents)
	}
	if subject := strings.TrimSpace(git(t, f.repo, "log", "-1", "--format=%s", "main")); subject != "Merge attempt "+res.AttemptID[:8]+": Greet the world" {
		t.Fatalf("merge subject %q", subject)
	}
	if subject := strings.TrimSpace(git(t, f.repo, "log", "-1", "--format=%s", res.WorkspaceBranch)); subject != "plugboard: changes of attempt "+res.AttemptID[:8] {
		t.Fatalf("changes commit subject %q", subject)
	}
	if b, _ := os.ReadFile(filepath.Join(f.repo, "README.md")); string(b) != "hello\nworld\n" {
		t.Fatalf("README.md in the checkout = %q", b)
	}
	if s := git(t, f.repo, "status", "--porcelain"); s != "" {
		t.Fatalf("checkout not clean: %q", s)
	}
	if s := taskStatus(t, f.b, res.TaskID); s != store.StatusDone {
		t.Fatalf("task %s, want done", s)
	}
	if q, _ := f.b.ReviewQueue(ctx, ReviewQueueArgs{}); q.Count != 0 {
		t.Fatalf("approved task still queued: %+v", q)
	}
	// A second approval is refused.
	_, err = f.b.ApproveAttempt(ctx, ApproveArgs{AttemptID: res.AttemptID})
	envelope(t, err, abi.CodeConflict)
}

func TestApproveAttemptIntoBranchCheckedOutNowhere(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	res := reviewed(t, f, "Edit", "echo more >> src/main.go")
	git(t, f.repo, "checkout", "-q", "-b", "elsewhere")
	out, err := f.b.ApproveAttempt(ctx, ApproveArgs{AttemptID: res.AttemptID})
	if err != nil {
		t.Fatal(err)
	}
	if m := out.Repos[0]; m.MergedVia != gitops.MergedViaRef || revParse(t, f.repo, "main") != m.MergeCommit {
		t.Fatalf("merged repo = %+v", m)
	}
	if got := git(t, f.repo, "show", "main:src/main.go"); got != "package main\nmore\n" {
		t.Fatalf("main:src/main.go = %q", got)
	}
}

func TestApproveAttemptConflict(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	res := reviewed(t, f, "Rewrite", "echo agent > README.md")
	// Meanwhile main gets a conflicting commit.
	os.WriteFile(filepath.Join(f.repo, "README.md"), []byte("main\n"), 0o644)
	git(t, f.repo, "commit", "-q", "-am", "conflicting")
	mainTip := revParse(t, f.repo, "main")
	branchTip := revParse(t, f.repo, res.WorkspaceBranch)

	_, err := f.b.ApproveAttempt(ctx, ApproveArgs{AttemptID: res.AttemptID})
	env := envelope(t, err, abi.CodeConflict)
	if env.Details["repo"] != "app" || !slices.Equal(env.Details["conflicting_paths"].([]string), []string{"app/README.md"}) ||
		!strings.Contains(env.Hint, "request_changes") {
		t.Fatalf("envelope = %+v", env)
	}
	// Nothing changed: branches, the attempt's uncommitted work, the task.
	if revParse(t, f.repo, "main") != mainTip || revParse(t, f.repo, res.WorkspaceBranch) != branchTip {
		t.Fatal("a branch moved")
	}
	wt := filepath.Join(f.b.attemptRoot(res.AttemptID), "app")
	if s := git(t, wt, "status", "--porcelain"); s != " M README.md\n" {
		t.Fatalf("attempt worktree status %q", s)
	}
	if s := taskStatus(t, f.b, res.TaskID); s != store.StatusInReview {
		t.Fatalf("task %s after a refused approval", s)
	}

	// Resolved in the attempt (the agent takes main's line): it merges.
	if err := os.WriteFile(filepath.Join(wt, "README.md"), []byte("main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The clone sees main as it was when the attempt started, until it
	// fetches from the repository.
	git(t, wt, "fetch", "-q", "origin")
	git(t, wt, "merge", "-q", "-s", "ours", "origin/main", "-m", "take main")
	if _, err := f.b.ApproveAttempt(ctx, ApproveArgs{AttemptID: res.AttemptID}); err != nil {
		t.Fatal(err)
	}
	if s := taskStatus(t, f.b, res.TaskID); s != store.StatusDone {
		t.Fatalf("task %s", s)
	}
}

func TestApproveAttemptDirtyCheckout(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	res := reviewed(t, f, "Edit", "echo more >> src/main.go")
	// The user has an uncommitted edit in the checkout of main.
	os.WriteFile(filepath.Join(f.repo, "old.txt"), []byte("mine\n"), 0o644)
	mainTip := revParse(t, f.repo, "main")
	_, err := f.b.ApproveAttempt(ctx, ApproveArgs{AttemptID: res.AttemptID})
	env := envelope(t, err, abi.CodeConflict)
	if !slices.Equal(env.Details["dirty_paths"].([]string), []string{"app/old.txt"}) || env.Details["checkout"] == nil {
		t.Fatalf("envelope = %+v", env)
	}
	if revParse(t, f.repo, "main") != mainTip || taskStatus(t, f.b, res.TaskID) != store.StatusInReview {
		t.Fatal("a refused approval changed something")
	}
}

func TestApproveRefusedWhileRunning(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	gate := filepath.Join(t.TempDir(), "go")
	task := f.task(t, "slow", "while [ ! -e "+gate+" ]; do sleep 0.02; done; echo x > x.txt")
	res := f.start(t, task.TaskID)
	waitState(t, f.b, res.AttemptID, StateRunning)
	_, err := f.b.ApproveAttempt(ctx, ApproveArgs{AttemptID: res.AttemptID})
	envelope(t, err, abi.CodeProcessRunning)
	os.WriteFile(gate, nil, 0o644)
	settle(t, f.b, res.AttemptID)
	if _, err := f.b.ApproveAttempt(ctx, ApproveArgs{AttemptID: res.AttemptID}); err != nil {
		t.Fatal(err)
	}
	for _, a := range []ApproveArgs{{}, {AttemptID: "nope"}, {AttemptID: store.NewID()}} {
		if _, err := f.b.ApproveAttempt(ctx, a); err == nil {
			t.Errorf("approve %+v: no error", a)
		}
	}
}

func TestRequestChanges(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	res := reviewed(t, f, "Change", "echo first > notes.txt")

	_, err := f.b.RequestChanges(ctx, RequestChangesArgs{AttemptID: res.AttemptID, Feedback: "  "})
	envelope(t, err, abi.CodeMissingRequired)

	// Nothing runs: sent at once, the task goes back to inprogress.
	out, err := f.b.RequestChanges(ctx, RequestChangesArgs{AttemptID: res.AttemptID, Feedback: "echo second >> notes.txt"})
	if err != nil || out.Action != ActionSend || out.ExecutionProcessID == nil || out.TaskStatus != store.StatusInProgress {
		t.Fatalf("request_changes = %+v, %v", out, err)
	}
	settle(t, f.b, res.AttemptID)
	file, err := f.b.GetAttemptFile(ctx, FileArgs{AttemptID: res.AttemptID, Path: "app/notes.txt"})
	if err != nil || file.Content != "first\nsecond\n" {
		t.Fatalf("notes.txt = %+v, %v", file, err)
	}
	msgs, _ := f.b.TailSessionMessages(ctx, MessagesArgs{AttemptID: res.AttemptID})
	if len(msgs.Messages) != 2 || msgs.Messages[1].Prompt != "echo second >> notes.txt" {
		t.Fatalf("turns = %+v", msgs.Messages)
	}

	// A run going on: the feedback is queued behind it.
	gate := filepath.Join(t.TempDir(), "go")
	if _, err := f.b.FollowUp(ctx, FollowUpArgs{Action: ActionSend, AttemptID: res.AttemptID,
		Prompt: "while [ ! -e " + gate + " ]; do sleep 0.02; done"}); err != nil {
		t.Fatal(err)
	}
	waitState(t, f.b, res.AttemptID, StateRunning)
	out, err = f.b.RequestChanges(ctx, RequestChangesArgs{AttemptID: res.AttemptID, Feedback: "echo third >> notes.txt"})
	if err != nil || out.Action != ActionQueue || out.ExecutionProcessID != nil || !out.Queue.Queued || !out.Queue.ProcessRunning ||
		taskStatus(t, f.b, res.TaskID) != store.StatusInProgress {
		t.Fatalf("request_changes while running = %+v, %v", out, err)
	}
	os.WriteFile(gate, nil, 0o644)
	deadline := time.Now().Add(20 * time.Second)
	for {
		file, _ := f.b.GetAttemptFile(ctx, FileArgs{AttemptID: res.AttemptID, Path: "app/notes.txt"})
		if file.Content == "first\nsecond\nthird\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("queued feedback never ran: %q", file.Content)
		}
		time.Sleep(20 * time.Millisecond)
	}
	settle(t, f.b, res.AttemptID)

	// An attempt without a session yet has nobody to send to.
	_, err = f.b.RequestChanges(ctx, RequestChangesArgs{AttemptID: store.NewID(), Feedback: "x"})
	envelope(t, err, abi.CodeNotFound)
}

func TestReviewQueueOrder(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	first := reviewed(t, f, "First in review", "echo 1 > one.txt")
	second := reviewed(t, f, "Second in review", "echo 2 > two.txt")
	todo := f.task(t, "Not started", "true")
	// A task put back in review later goes to the end.
	third := f.task(t, "Third, by hand", "")
	inreview := tasks.TaskStatus(store.StatusInReview)
	if _, err := f.b.UpdateTask(ctx, UpdateTaskArgs{TaskID: third.TaskID, Status: &inreview}); err != nil {
		t.Fatal(err)
	}
	q, err := f.b.ReviewQueue(ctx, ReviewQueueArgs{ProjectID: f.project.ID})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, it := range q.Tasks {
		ids = append(ids, it.TaskID)
	}
	if want := []string{first.TaskID, second.TaskID, third.TaskID}; !slices.Equal(ids, want) || q.Count != 3 {
		t.Fatalf("queue %v, want %v (not %s)", ids, want, todo.TaskID)
	}
	if it := q.Tasks[2]; it.AttemptID != nil || it.Changes != nil || len(it.Repos) != 0 {
		t.Fatalf("task without attempt: %+v", it)
	}
	if q, _ := f.b.ReviewQueue(ctx, ReviewQueueArgs{Limit: 1}); q.Count != 1 || q.Tasks[0].TaskID != first.TaskID {
		t.Fatalf("limit 1: %+v", q)
	}
	// Another project's queue is its own.
	other, err := f.b.CreateProject(ctx, "other", nil)
	if err != nil {
		t.Fatal(err)
	}
	if q, err := f.b.ReviewQueue(ctx, ReviewQueueArgs{ProjectID: other.ID}); err != nil || q.Count != 0 || q.Tasks == nil {
		t.Fatalf("other project: %+v, %v", q, err)
	}
	_, err = f.b.ReviewQueue(ctx, ReviewQueueArgs{ProjectID: store.NewID()})
	envelope(t, err, abi.CodeNotFound)
	_, err = f.b.ReviewQueue(ctx, ReviewQueueArgs{Limit: -1})
	envelope(t, err, abi.CodeInvalidArgument)
}
