package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The review flow through `plugboard serve`: review_queue, approve_attempt
// and request_changes over a real repository (newScenario's "app", whose
// main is checked out and clean) with SHELL attempts.

// gitIn runs git in dir and returns its trimmed output.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// inReview runs a SHELL attempt of script until its task is in review.
func (sc *specScenario) inReview(title, script string) (taskID, attemptID string) {
	sc.t.Helper()
	taskID = sc.createTask(title, script)
	attemptID = sc.startShell(taskID).str("attempt_id")
	if st := sc.waitSettled(attemptID); st.str("task_status") != "inreview" || st.str("state") != "completed" {
		sc.t.Fatalf("attempt did not end in review: %v", st)
	}
	return taskID, attemptID
}

func TestScenarioReviewApproveMergesIntoTheRepo(t *testing.T) {
	sc := newScenario(t, scenarioOptions{})
	taskID, attemptID := sc.inReview("Document the app", "echo 'More docs.' >> README.md")
	mainTip := gitIn(t, sc.repo, "rev-parse", "main")

	queue := sc.ok("review_queue", map[string]any{"project_id": sc.projectID})
	items := queue.list("tasks")
	if len(items) != 1 || items[0].str("task_id") != taskID || items[0].str("attempt_id") != attemptID ||
		items[0].obj("changes").num("file_count") != 1 || items[0].list("repos")[0].str("target_branch") != "main" {
		t.Fatalf("review_queue = %v", queue)
	}

	res := sc.ok("approve_attempt", map[string]any{"attempt_id": attemptID})
	repos := res.list("repos")
	if res.str("task_status") != "done" || len(repos) != 1 || repos[0].str("merged_via") != "worktree" ||
		repos[0].str("repo_name") != "app" || repos[0].null("changes_commit") {
		t.Fatalf("approve_attempt = %v", res)
	}
	// The source repository has the merge, in its checkout too.
	head := gitIn(t, sc.repo, "rev-parse", "HEAD")
	if head != repos[0].str("merge_commit") {
		t.Fatalf("main at %s, want the merge commit %s", head, repos[0].str("merge_commit"))
	}
	log := gitIn(t, sc.repo, "log", "--format=%P %s", "-1", "main")
	if want := "Merge attempt " + attemptID[:8] + ": Document the app"; !strings.HasPrefix(log, mainTip+" ") || !strings.HasSuffix(log, want) {
		t.Fatalf("git log: %q; want parents from %s and %q", log, mainTip, want)
	}
	if b, _ := os.ReadFile(filepath.Join(sc.repo, "README.md")); string(b) != "# app\nMore docs.\n" {
		t.Fatalf("README.md in the checkout = %q", b)
	}
	if st := gitIn(t, sc.repo, "status", "--porcelain"); st != "" {
		t.Fatalf("checkout not clean after the merge: %q", st)
	}
	if s := sc.ok("get_task", map[string]any{"task_id": taskID}).str("status"); s != "done" {
		t.Fatalf("task %s, want done", s)
	}
	if n := sc.ok("review_queue", map[string]any{}).num("count"); n != 0 {
		t.Fatalf("%d tasks still in review", n)
	}
	env := sc.fail("approve_attempt", map[string]any{"attempt_id": attemptID}, "conflict")
	if !strings.Contains(env.Message, "already done") {
		t.Fatalf("second approval: %+v", env)
	}
}

func TestScenarioReviewApproveConflictChangesNothing(t *testing.T) {
	sc := newScenario(t, scenarioOptions{})
	taskID, attemptID := sc.inReview("Rename the app", "echo '# renamed' > README.md")
	// Meanwhile main gets a conflicting commit.
	os.WriteFile(filepath.Join(sc.repo, "README.md"), []byte("# app, by hand\n"), 0o644)
	gitIn(t, sc.repo, "commit", "-q", "-am", "conflicting edit")
	mainTip := gitIn(t, sc.repo, "rev-parse", "main")
	branch := sc.ok("get_attempt_status", map[string]any{"attempt_id": attemptID}).str("workspace_branch")
	branchTip := gitIn(t, sc.repo, "rev-parse", branch)

	env := sc.fail("approve_attempt", map[string]any{"attempt_id": attemptID}, "conflict")
	paths, _ := env.Details["conflicting_paths"].([]any)
	if env.Details["repo"] != "app" || len(paths) != 1 || paths[0] != "app/README.md" || !strings.Contains(env.Hint, "request_changes") {
		t.Fatalf("envelope = %+v", env)
	}
	if gitIn(t, sc.repo, "rev-parse", "main") != mainTip || gitIn(t, sc.repo, "rev-parse", branch) != branchTip {
		t.Fatal("a refused approval moved a branch")
	}
	if st := gitIn(t, sc.repo, "status", "--porcelain"); st != "" {
		t.Fatalf("the checkout changed: %q", st)
	}
	if s := sc.ok("get_task", map[string]any{"task_id": taskID}).str("status"); s != "inreview" {
		t.Fatalf("task %s, want still inreview", s)
	}
	// The attempt's uncommitted work is still there, uncommitted.
	changes := sc.ok("get_attempt_changes", map[string]any{"attempt_id": attemptID})
	if files := changes.list("files"); len(files) != 1 || files[0].str("path") != "app/README.md" {
		t.Fatalf("attempt changes = %v", changes)
	}

	// Sent back to the agent, which takes main's version (the host shows
	// its clone the repository's main as origin/main; the sandbox lets it
	// not fetch): then it merges.
	rc := sc.ok("request_changes", map[string]any{"attempt_id": attemptID,
		"feedback": "git checkout origin/main -- README.md"})
	if rc.str("action") != "send" || rc.str("task_status") != "inprogress" {
		t.Fatalf("request_changes = %v", rc)
	}
	sc.waitSettled(attemptID)
	res := sc.ok("approve_attempt", map[string]any{"attempt_id": attemptID})
	if res.str("task_status") != "done" {
		t.Fatalf("approve after the fix = %v", res)
	}
	if b, _ := os.ReadFile(filepath.Join(sc.repo, "README.md")); string(b) != "# app, by hand\n" {
		t.Fatalf("README.md = %q", b)
	}
}
