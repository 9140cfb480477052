package gitops

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestOpen(t *testing.T) {
	repo := newRepo(t, map[string]string{"src/a.go": "package a\n"})
	got, err := Open(t.Context(), filepath.Join(repo, "src"))
	if err != nil {
		t.Fatal(err)
	}
	wantTop, _ := filepath.EvalSymlinks(repo)
	if gotTop, _ := filepath.EvalSymlinks(got.Path); gotTop != wantTop || got.Branch != "main" {
		t.Errorf("Open = %+v, want top %s on main", got, wantTop)
	}

	plain := t.TempDir()
	_, err = Open(t.Context(), plain)
	if !errors.Is(err, ErrNotWorkTree) || !strings.Contains(err.Error(), plain) || !strings.Contains(err.Error(), "git init") {
		t.Errorf("Open(plain dir) error = %v; want ErrNotWorkTree naming the path and the fix", err)
	}
	missing := filepath.Join(plain, "nope")
	if _, err := Open(t.Context(), missing); !errors.Is(err, ErrNotWorkTree) || !strings.Contains(err.Error(), missing) {
		t.Errorf("Open(missing) error = %v", err)
	}
	bare := filepath.Join(t.TempDir(), "bare.git")
	gitT(t, plain, "init", "-q", "--bare", bare)
	if _, err := Open(t.Context(), bare); !errors.Is(err, ErrNotWorkTree) {
		t.Errorf("Open(bare) error = %v", err)
	}

	gitT(t, repo, "checkout", "-q", "--detach")
	got, err = Open(t.Context(), repo)
	if err != nil || got.Branch != "" {
		t.Errorf("Open(detached) = %+v, %v; want no branch, no error", got, err)
	}
}

func TestDefaultBranchAndBranchExists(t *testing.T) {
	repo := newRepo(t, map[string]string{"a": "a\n"})
	gitT(t, repo, "branch", "feature/x")
	ctx := t.Context()
	if b, err := DefaultBranch(ctx, repo); err != nil || b != "main" {
		t.Errorf("DefaultBranch = %q, %v", b, err)
	}
	for branch, want := range map[string]bool{"main": true, "feature/x": true, "feature": false, "nope": false} {
		if got, err := BranchExists(ctx, repo, branch); err != nil || got != want {
			t.Errorf("BranchExists(%q) = %v, %v; want %v", branch, got, err, want)
		}
	}
	if _, err := BranchExists(ctx, repo, "--all"); err == nil {
		t.Error("BranchExists accepted an option as branch name")
	}
	if _, err := BranchExists(ctx, t.TempDir(), "main"); err == nil {
		t.Error("BranchExists outside a repository: no error")
	}
	gitT(t, repo, "checkout", "-q", "--detach")
	if _, err := DefaultBranch(ctx, repo); !errors.Is(err, ErrDetachedHead) || !strings.Contains(err.Error(), repo) {
		t.Errorf("DefaultBranch(detached) error = %v", err)
	}
}

func TestWorktreeAddRemove(t *testing.T) {
	repo := newRepo(t, map[string]string{"a.txt": "a\n"})
	// The target branch is ahead of the checked-out one, so a worktree
	// started from HEAD instead would be caught.
	gitT(t, repo, "checkout", "-q", "-b", "target")
	writeFiles(t, repo, map[string]string{"b.txt": "b\n"})
	gitT(t, repo, "add", "-A")
	gitT(t, repo, "commit", "-q", "-m", "target work")
	gitT(t, repo, "checkout", "-q", "main")
	targetTip := gitT(t, repo, "rev-parse", "target")
	ctx := t.Context()

	wt := filepath.Join(t.TempDir(), "attempts", "a1") // parent does not exist yet
	const branch = "pb/a1-do-it"
	base, err := AddWorktree(ctx, repo, wt, branch, "target")
	if err != nil {
		t.Fatal(err)
	}
	if base != targetTip || len(base) != 40 {
		t.Errorf("base = %q, want target tip %s", base, targetTip)
	}
	if head := gitT(t, wt, "rev-parse", "HEAD"); head != targetTip {
		t.Errorf("worktree HEAD = %s, want %s", head, targetTip)
	}
	if b := gitT(t, wt, "symbolic-ref", "--short", "HEAD"); b != branch {
		t.Errorf("worktree branch = %s, want %s", b, branch)
	}
	if _, err := os.Stat(filepath.Join(wt, "b.txt")); err != nil {
		t.Errorf("target branch content missing: %v", err)
	}
	if upstream := exec.Command("git", "-C", repo, "config", "branch."+branch+".merge"); upstream.Run() == nil {
		t.Error("attempt branch got an upstream")
	}

	if _, err := AddWorktree(ctx, repo, filepath.Join(t.TempDir(), "x"), "pb/other", "no-such-branch"); !errors.Is(err, ErrBranchNotFound) || !strings.Contains(err.Error(), "no-such-branch") {
		t.Errorf("AddWorktree from missing branch: %v", err)
	}
	other := filepath.Join(t.TempDir(), "y")
	if _, err := AddWorktree(ctx, repo, other, branch, "main"); !errors.Is(err, ErrBranchExists) || !strings.Contains(err.Error(), branch) {
		t.Errorf("AddWorktree onto existing branch: %v", err)
	}
	if _, err := os.Stat(other); !os.IsNotExist(err) {
		t.Errorf("failed AddWorktree left %s behind", other)
	}

	writeFiles(t, wt, map[string]string{"dirty.txt": "uncommitted\n", "a.txt": "changed\n"})
	for i := range 2 {
		if err := RemoveWorktree(ctx, repo, wt, branch); err != nil {
			t.Fatalf("RemoveWorktree #%d: %v", i+1, err)
		}
	}
	if _, err := os.Stat(wt); !os.IsNotExist(err) {
		t.Errorf("worktree directory still there: %v", err)
	}
	if ok, _ := BranchExists(ctx, repo, branch); ok {
		t.Error("branch not deleted")
	}
	if list := gitT(t, repo, "worktree", "list", "--porcelain"); strings.Contains(list, "attempts") {
		t.Errorf("worktree still registered:\n%s", list)
	}
	if ok, _ := BranchExists(ctx, repo, "target"); !ok {
		t.Error("target branch lost")
	}
}

func TestRemoveWorktreeDeletedByHand(t *testing.T) {
	repo := newRepo(t, map[string]string{"a.txt": "a\n"})
	ctx := t.Context()
	wt := filepath.Join(t.TempDir(), "wt")
	if _, err := AddWorktree(ctx, repo, wt, "pb/gone", "main"); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(wt); err != nil {
		t.Fatal(err)
	}
	if err := RemoveWorktree(ctx, repo, wt, "pb/gone"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := BranchExists(ctx, repo, "pb/gone"); ok {
		t.Error("branch not deleted")
	}
	// The same name can be used again: nothing of the old attempt remains.
	if _, err := AddWorktree(ctx, repo, wt, "pb/gone", "main"); err != nil {
		t.Fatal(err)
	}
	// Removing a directory that is not a worktree must not delete it.
	notWT := t.TempDir()
	writeFiles(t, notWT, map[string]string{"keep": "me"})
	if err := RemoveWorktree(ctx, repo, notWT, ""); err == nil {
		t.Error("RemoveWorktree of a plain directory: no error")
	}
	if _, err := os.Stat(filepath.Join(notWT, "keep")); err != nil {
		t.Errorf("plain directory damaged: %v", err)
	}
}

func TestCancelledContext(t *testing.T) {
	repo := newRepo(t, map[string]string{"a": "a\n"})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := BranchExists(ctx, repo, "main")
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want context.Canceled", err)
	}
}

func TestBranchName(t *testing.T) {
	long := strings.Repeat("word ", 30)
	cases := []struct{ id, title, want string }{
		{"1a2b3c4d", "Fix the login bug", "pb/1a2b3c4d-fix-the-login-bug"},
		{"1a2b3c4d", "", "pb/1a2b3c4d-task"},
		{"1a2b3c4d", "!!! ??? ...", "pb/1a2b3c4d-task"},
		{"1a2b3c4d", "Ünïcödé naïve café 日本語 test", "pb/1a2b3c4d-n-c-d-na-ve-caf-test"},
		{"1a2b3c4d", "  --Leading and trailing--  ", "pb/1a2b3c4d-leading-and-trailing"},
		{"1a2b3c4d", "../etc/passwd.lock", "pb/1a2b3c4d-etc-passwd-lock"},
		{"1a2b3c4d", "a..b/c//d@{e}~^:?*[\\", "pb/1a2b3c4d-a-b-c-d-e"},
		{"1a2b3c4d", "refs/heads/main", "pb/1a2b3c4d-refs-heads-main"},
		{"1a2b3c4d", long, "pb/1a2b3c4d-word-word-word-word-word-word-word-word"},
		{"1a2b3c4d", strings.Repeat("x", 60), "pb/1a2b3c4d-" + strings.Repeat("x", 40)},
		{"1a2b3c4d", strings.Repeat("abcd", 10) + "-tail", "pb/1a2b3c4d-" + strings.Repeat("abcd", 10)},
		{"", "Title", "pb/title"},
		{"AB/CD", "Title", "pb/ab-cd-title"},
		{"1a2b3c4d", "HEAD", "pb/1a2b3c4d-head"},
		{"1a2b3c4d", "@", "pb/1a2b3c4d-task"},
	}
	for _, c := range cases {
		got := BranchName(c.id, c.title)
		if got != c.want {
			t.Errorf("BranchName(%q, %q) = %q, want %q", c.id, c.title, got, c.want)
		}
		if slug := strings.TrimPrefix(got, "pb/"); len(slug) > len(c.id)+1+maxSlug {
			t.Errorf("BranchName(%q, %q) = %q: slug too long", c.id, c.title, got)
		}
		out, err := exec.Command("git", "check-ref-format", "--branch", got).Output()
		if err != nil || strings.TrimSpace(string(out)) != got {
			t.Errorf("BranchName(%q, %q) = %q: not a valid branch name (%v)", c.id, c.title, got, err)
		}
	}
}

// TestBranchNameAlphabet checks the property that makes every result a
// valid ref, over many titles, without running git for each.
func TestBranchNameAlphabet(t *testing.T) {
	titles := []string{"", "-", "a", "A-B", "x.lock", "é", "\x00\x7f", "a\tb\nc", "ＡＢＣ", "1.2.3", "--", "a--b"}
	for i := range 300 {
		titles = append(titles, strings.Repeat(string(rune('a'+i%26))+"-.", i%50))
	}
	for _, title := range titles {
		got := BranchName("ab12", title)
		slug := strings.TrimPrefix(got, "pb/ab12-")
		if slug == got || slug == "" || strings.HasPrefix(slug, "-") || strings.HasSuffix(slug, "-") || strings.Contains(slug, "--") || len(slug) > maxSlug {
			t.Errorf("BranchName(%q) = %q", title, got)
		}
		for _, r := range slug {
			if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
				t.Errorf("BranchName(%q) = %q: character %q", title, got, r)
			}
		}
	}
}
