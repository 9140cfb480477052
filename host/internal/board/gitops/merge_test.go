package gitops

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// attempt is an attempt's clone with its base commit.
type attempt struct {
	Clone
	base string
}

// attemptRepo is a repository on main with a clone on branch "pb/x"
// (started from main), as an attempt has.
func attemptRepo(t *testing.T) (string, attempt) {
	t.Helper()
	repo := newRepo(t, map[string]string{"a.txt": "one\ntwo\nthree\n", "b.txt": "b\n"})
	c, base := newClone(t, repo, "pb/x", "main")
	return repo, attempt{c, base}
}

func spec(a attempt) MergeSpec {
	return MergeSpec{Repo: a.Clone, TargetBranch: "main", Branch: "pb/x", Base: a.base, ChangesMessage: "plugboard: changes of attempt 12345678"}
}

func prepare(t *testing.T, s MergeSpec) *MergePlan {
	t.Helper()
	p, err := PrepareMerge(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// parents returns the parents of commit.
func parents(t *testing.T, repo, commit string) []string {
	t.Helper()
	return strings.Fields(gitT(t, repo, "log", "-1", "--format=%P", commit))
}

func TestReviewMergeIntoBranchCheckedOutNowhere(t *testing.T) {
	repo, a := attemptRepo(t)
	wt := a.Dir
	gitT(t, repo, "checkout", "-q", "-b", "other") // main is now checked out nowhere
	writeFiles(t, wt, map[string]string{"a.txt": "one\nTWO\nthree\n"})
	gitT(t, wt, "commit", "-q", "-am", "agent work")
	attemptTip := gitT(t, wt, "rev-parse", "HEAD")
	mainTip := gitT(t, repo, "rev-parse", "main")

	p := prepare(t, spec(a))
	if !p.Ready() || p.Checkout != "" || p.UpToDate || p.ChangesCommitted || p.Source != attemptTip {
		t.Fatalf("plan = %+v", p)
	}
	if gitT(t, repo, "rev-parse", "main") != mainTip {
		t.Fatal("PrepareMerge moved main")
	}
	res, err := p.Apply(t.Context(), "Merge attempt 12345678: Shout two")
	if err != nil {
		t.Fatal(err)
	}
	if res.Via != MergedViaRef || res.ChangesCommit != "" {
		t.Fatalf("result = %+v", res)
	}
	if got := gitT(t, repo, "rev-parse", "main"); got != res.Commit {
		t.Fatalf("main at %s, want the merge commit %s", got, res.Commit)
	}
	if got := parents(t, repo, res.Commit); !slices.Equal(got, []string{mainTip, attemptTip}) {
		t.Fatalf("merge parents %v, want [%s %s]", got, mainTip, attemptTip)
	}
	if msg := gitT(t, repo, "log", "-1", "--format=%s", "main"); msg != "Merge attempt 12345678: Shout two" {
		t.Fatalf("message %q", msg)
	}
	if got := gitT(t, repo, "show", "main:a.txt"); got != "one\nTWO\nthree" {
		t.Fatalf("main:a.txt = %q", got)
	}
	if got := gitT(t, repo, "status", "--porcelain"); got != "" {
		t.Fatalf("the checkout of other changed: %q", got)
	}
}

func TestReviewMergeIntoCleanCheckout(t *testing.T) {
	repo, a := attemptRepo(t)
	wt := a.Dir
	// main moved on meanwhile, on another file: a real merge.
	writeFiles(t, repo, map[string]string{"b.txt": "b changed on main\n"})
	gitT(t, repo, "commit", "-q", "-am", "main work")
	mainTip := gitT(t, repo, "rev-parse", "main")
	writeFiles(t, wt, map[string]string{"a.txt": "one\nTWO\nthree\n"})
	gitT(t, wt, "commit", "-q", "-am", "agent work")

	p := prepare(t, spec(a))
	wantCheckout, _ := filepath.EvalSymlinks(repo)
	if gotCheckout, _ := filepath.EvalSymlinks(p.Checkout); !p.Ready() || gotCheckout != wantCheckout {
		t.Fatalf("plan = %+v; want ready, checked out in %s", p, repo)
	}
	res, err := p.Apply(t.Context(), "Merge attempt 12345678: Shout two")
	if err != nil {
		t.Fatal(err)
	}
	if res.Via != MergedViaWorktree {
		t.Fatalf("via %s", res.Via)
	}
	if got := gitT(t, repo, "rev-parse", "HEAD"); got != res.Commit {
		t.Fatalf("HEAD %s, want %s", got, res.Commit)
	}
	if p := parents(t, repo, res.Commit); len(p) != 2 || p[0] != mainTip {
		t.Fatalf("parents %v", p)
	}
	// The checkout follows: files and index, nothing left uncommitted.
	if b, _ := os.ReadFile(filepath.Join(repo, "a.txt")); string(b) != "one\nTWO\nthree\n" {
		t.Fatalf("a.txt in the checkout = %q", b)
	}
	if got := gitT(t, repo, "status", "--porcelain"); got != "" {
		t.Fatalf("checkout not clean after the merge: %q", got)
	}
}

func TestReviewMergeRefusedOnDirtyCheckout(t *testing.T) {
	repo, a := attemptRepo(t)
	wt := a.Dir
	writeFiles(t, wt, map[string]string{"a.txt": "one\nTWO\nthree\n", "new.txt": "new\n"})
	gitT(t, wt, "add", "-A")
	gitT(t, wt, "commit", "-q", "-m", "agent work")
	mainTip := gitT(t, repo, "rev-parse", "main")

	// An untracked file the merge does not write is no obstacle.
	writeFiles(t, repo, map[string]string{"notes.txt": "mine\n"})
	if p := prepare(t, spec(a)); !p.Ready() {
		t.Fatalf("an unrelated untracked file blocked the merge: %+v", p)
	}
	// One it would overwrite is, and so is any change to a tracked file.
	writeFiles(t, repo, map[string]string{"new.txt": "mine too\n", "b.txt": "edited, not committed\n"})
	p := prepare(t, spec(a))
	if p.Ready() || !slices.Equal(p.Dirty, []string{"b.txt", "new.txt"}) || len(p.Conflicts) != 0 {
		t.Fatalf("plan = %+v; want dirty b.txt and new.txt", p)
	}
	if _, err := p.Apply(t.Context(), "m"); err == nil {
		t.Fatal("Apply went ahead on a dirty checkout")
	}
	if gitT(t, repo, "rev-parse", "main") != mainTip {
		t.Fatal("main moved")
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "b.txt")); string(b) != "edited, not committed\n" {
		t.Fatal("the user's change was touched")
	}
}

func TestReviewMergeConflictListsPaths(t *testing.T) {
	repo, a := attemptRepo(t)
	wt := a.Dir
	gitT(t, repo, "checkout", "-q", "--detach")
	writeFiles(t, wt, map[string]string{"a.txt": "one\nagent\nthree\n", "b.txt": "agent b\n", "c.txt": "clean\n"})
	gitT(t, wt, "add", "-A")
	gitT(t, wt, "commit", "-q", "-m", "agent work")
	branchTip := gitT(t, wt, "rev-parse", "HEAD")
	gitT(t, repo, "checkout", "-q", "main")
	writeFiles(t, repo, map[string]string{"a.txt": "one\nmain\nthree\n", "b.txt": "main b\n"})
	gitT(t, repo, "commit", "-q", "-am", "main work")
	mainTip := gitT(t, repo, "rev-parse", "main")

	recorded := gitT(t, repo, "rev-parse", "pb/x")
	p := prepare(t, spec(a))
	if p.Ready() || !slices.Equal(p.Conflicts, []string{"a.txt", "b.txt"}) || p.BranchTip != branchTip {
		t.Fatalf("plan = %+v; want conflicts a.txt, b.txt", p)
	}
	if gitT(t, repo, "rev-parse", "main") != mainTip || gitT(t, repo, "rev-parse", "pb/x") != recorded || gitT(t, wt, "rev-parse", "HEAD") != branchTip {
		t.Fatal("a branch moved")
	}
	if got := gitT(t, repo, "status", "--porcelain"); got != "" {
		t.Fatalf("the checkout changed: %q", got)
	}
}

func TestReviewMergeCommitsUncommittedChangesFirst(t *testing.T) {
	repo, a := attemptRepo(t)
	wt := a.Dir
	gitT(t, repo, "checkout", "-q", "--detach")
	base := gitT(t, repo, "rev-parse", "main")
	// Staged, unstaged, untracked and ignored files, and a deletion.
	writeFiles(t, wt, map[string]string{".gitignore": "*.log\n", "staged.txt": "s\n"})
	gitT(t, wt, "add", ".gitignore", "staged.txt")
	writeFiles(t, wt, map[string]string{"a.txt": "one\nTWO\nthree\n", "untracked.txt": "u\n", "debug.log": "ignored\n"})
	os.Remove(filepath.Join(wt, "b.txt"))

	p := prepare(t, spec(a))
	if !p.Ready() || !p.ChangesCommitted || p.Source == base {
		t.Fatalf("plan = %+v", p)
	}
	// Preparing commits nothing for real.
	if gitT(t, wt, "rev-parse", "HEAD") != base || gitT(t, wt, "status", "--porcelain", "--untracked-files=no") == "" {
		t.Fatal("PrepareMerge changed the attempt branch or index")
	}
	statusBefore := gitT(t, wt, "status", "--porcelain")
	res, err := p.Apply(t.Context(), "Merge attempt 12345678: t")
	if err != nil {
		t.Fatal(err)
	}
	// Recorded on the attempt branch in the user's repository; the clone,
	// the agent's, is left as it was.
	if res.ChangesCommit != p.Source || gitT(t, repo, "rev-parse", "pb/x") != res.ChangesCommit {
		t.Fatalf("attempt branch not at the changes commit: %+v", res)
	}
	if msg := gitT(t, repo, "log", "-1", "--format=%s", "pb/x"); msg != "plugboard: changes of attempt 12345678" {
		t.Fatalf("changes commit message %q", msg)
	}
	if gitT(t, wt, "rev-parse", "HEAD") != base || gitT(t, wt, "status", "--porcelain") != statusBefore {
		t.Fatal("Apply changed the attempt's clone")
	}
	files := strings.Fields(gitT(t, repo, "ls-tree", "-r", "--name-only", "main"))
	if want := []string{".gitignore", "a.txt", "staged.txt", "untracked.txt"}; !slices.Equal(files, want) {
		t.Fatalf("main holds %v, want %v", files, want)
	}
	if got := parents(t, repo, res.Commit); !slices.Equal(got, []string{base, res.ChangesCommit}) {
		t.Fatalf("merge parents %v", got)
	}
}

func TestReviewMergeUpToDateAndMovedTarget(t *testing.T) {
	repo, a := attemptRepo(t)
	wt := a.Dir
	gitT(t, repo, "checkout", "-q", "--detach")
	mainTip := gitT(t, repo, "rev-parse", "main")
	p := prepare(t, spec(a))
	if !p.UpToDate || !p.Ready() {
		t.Fatalf("an attempt without changes: plan %+v, want up to date", p)
	}
	res, err := p.Apply(t.Context(), "m")
	if err != nil || res.Via != MergedViaUpToDate || res.Commit != mainTip {
		t.Fatalf("Apply = %+v, %v", res, err)
	}

	writeFiles(t, wt, map[string]string{"a.txt": "changed\n"})
	p = prepare(t, spec(a))
	gitT(t, repo, "checkout", "-q", "main")
	writeFiles(t, repo, map[string]string{"b.txt": "moved\n"})
	gitT(t, repo, "commit", "-q", "-am", "meanwhile")
	gitT(t, repo, "checkout", "-q", "--detach")
	moved := gitT(t, repo, "rev-parse", "main")
	if _, err := p.Apply(t.Context(), "m"); !errors.Is(err, ErrTargetMoved) {
		t.Fatalf("Apply after main moved: %v, want ErrTargetMoved", err)
	}
	if gitT(t, repo, "rev-parse", "main") != moved || gitT(t, wt, "rev-parse", "HEAD") != mainTip {
		t.Fatal("a stale plan changed a branch")
	}
}

func TestReviewMergeIdentity(t *testing.T) {
	repo, a := attemptRepo(t)
	wt := a.Dir
	gitT(t, repo, "checkout", "-q", "--detach")
	writeFiles(t, wt, map[string]string{"a.txt": "changed\n"})
	// No identity anywhere: the plugboard default.
	t.Setenv("GIT_AUTHOR_NAME", "")
	t.Setenv("GIT_AUTHOR_EMAIL", "")
	t.Setenv("GIT_COMMITTER_NAME", "")
	t.Setenv("GIT_COMMITTER_EMAIL", "")
	os.Unsetenv("GIT_AUTHOR_NAME")
	os.Unsetenv("GIT_AUTHOR_EMAIL")
	os.Unsetenv("GIT_COMMITTER_NAME")
	os.Unsetenv("GIT_COMMITTER_EMAIL")
	res, err := prepare(t, spec(a)).Apply(t.Context(), "m")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{res.Commit, res.ChangesCommit} {
		if got := gitT(t, repo, "log", "-1", "--format=%an <%ae>|%cn <%ce>", c); got != "plugboard <plugboard@localhost>|plugboard <plugboard@localhost>" {
			t.Fatalf("identity of %s: %q", c, got)
		}
	}
	// The repository's own identity wins.
	gitT(t, repo, "config", "user.name", "Repo Owner")
	gitT(t, repo, "config", "user.email", "owner@example.com")
	writeFiles(t, wt, map[string]string{"a.txt": "changed again\n"})
	res, err = prepare(t, spec(a)).Apply(t.Context(), "m")
	if err != nil {
		t.Fatal(err)
	}
	if got := gitT(t, repo, "log", "-1", "--format=%an <%ae>", res.Commit); got != "Repo Owner <owner@example.com>" {
		t.Fatalf("identity %q", got)
	}
}
