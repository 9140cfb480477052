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

func TestCloneAddRemove(t *testing.T) {
	repo := newRepo(t, map[string]string{"a.txt": "a\n"})
	writeFiles(t, filepath.Join(repo, ".git"), map[string]string{"info/exclude": "*.secret\n"})
	// The target branch is ahead of the checked-out one, so a clone
	// started from HEAD instead would be caught.
	gitT(t, repo, "checkout", "-q", "-b", "target")
	writeFiles(t, repo, map[string]string{"b.txt": "b\n"})
	gitT(t, repo, "add", "-A")
	gitT(t, repo, "commit", "-q", "-m", "target work")
	gitT(t, repo, "checkout", "-q", "main")
	targetTip := gitT(t, repo, "rev-parse", "target")
	configBefore, _ := os.ReadFile(filepath.Join(repo, ".git", "config"))
	ctx := t.Context()

	c := Clone{Source: repo, Dir: filepath.Join(t.TempDir(), "attempts", "a1", "repo"), // parents do not exist yet
		HostDir: filepath.Join(t.TempDir(), "gitdirs", "a1", "repo")}
	const branch = "pb/a1-do-it"
	base, err := AddClone(ctx, c, branch, "target")
	if err != nil {
		t.Fatal(err)
	}
	if base != targetTip || len(base) != 40 {
		t.Errorf("base = %q, want target tip %s", base, targetTip)
	}
	wt := c.Dir
	if head := gitT(t, wt, "rev-parse", "HEAD"); head != targetTip {
		t.Errorf("clone HEAD = %s, want %s", head, targetTip)
	}
	if b := gitT(t, wt, "symbolic-ref", "--short", "HEAD"); b != branch {
		t.Errorf("clone branch = %s, want %s", b, branch)
	}
	if _, err := os.Stat(filepath.Join(wt, "b.txt")); err != nil {
		t.Errorf("target branch content missing: %v", err)
	}
	// A clone of its own: its own git dir, Source's objects borrowed.
	if gd := gitT(t, wt, "rev-parse", "--path-format=absolute", "--git-common-dir"); gd != filepath.Join(wt, ".git") {
		t.Errorf("clone's git dir = %s", gd)
	}
	if alt, _ := os.ReadFile(filepath.Join(wt, ".git", "objects", "info", "alternates")); !strings.Contains(string(alt), filepath.Join(repo, ".git", "objects")) {
		t.Errorf("clone's alternates = %q", alt)
	}
	if entries, _ := os.ReadDir(filepath.Join(wt, ".git", "hooks")); len(entries) != 0 {
		t.Errorf("clone has hooks: %v", entries)
	}
	if b, _ := os.ReadFile(filepath.Join(wt, ".git", "info", "exclude")); string(b) != "*.secret\n" {
		t.Errorf("clone's info/exclude = %q, want Source's", b)
	}
	// Fetching from Source works; pushing to it does not, nor is there an
	// upstream to push to.
	gitT(t, wt, "fetch", "-q", "origin")
	if exec.Command("git", "-C", wt, "config", "branch."+branch+".merge").Run() == nil {
		t.Error("attempt branch got an upstream")
	}
	if out, err := exec.Command("git", "-C", wt, "push", "-q", "origin", "HEAD:refs/heads/pushed").CombinedOutput(); err == nil ||
		!strings.Contains(string(out), "approve_attempt") {
		t.Errorf("push from the clone: %v: %s", err, out)
	}
	if ok, _ := BranchExists(ctx, repo, "pushed"); ok {
		t.Error("the clone pushed into Source")
	}
	// Source has the branch at base, and nothing else changed.
	if tip := gitT(t, repo, "rev-parse", branch); tip != base {
		t.Errorf("Source's %s at %s, want %s", branch, tip, base)
	}
	if after, _ := os.ReadFile(filepath.Join(repo, ".git", "config")); string(after) != string(configBefore) {
		t.Errorf("Source's config changed:\n%s", after)
	}
	// The host git dir reads the clone's files against base.
	for _, f := range []string{"HEAD", "config", "index", "objects/info/alternates", "info/exclude"} {
		if _, err := os.Stat(filepath.Join(c.HostDir, filepath.FromSlash(f))); err != nil {
			t.Errorf("host git dir: %v", err)
		}
	}

	if _, err := AddClone(ctx, Clone{Source: repo, Dir: filepath.Join(t.TempDir(), "x"), HostDir: filepath.Join(t.TempDir(), "hx")}, "pb/other", "no-such-branch"); !errors.Is(err, ErrBranchNotFound) || !strings.Contains(err.Error(), "no-such-branch") {
		t.Errorf("AddClone from missing branch: %v", err)
	}
	other := Clone{Source: repo, Dir: filepath.Join(t.TempDir(), "y"), HostDir: filepath.Join(t.TempDir(), "hy")}
	if _, err := AddClone(ctx, other, branch, "main"); !errors.Is(err, ErrBranchExists) || !strings.Contains(err.Error(), branch) {
		t.Errorf("AddClone onto existing branch: %v", err)
	}
	for _, d := range []string{other.Dir, other.HostDir} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("failed AddClone left %s behind", d)
		}
	}
	// A failure after the branch was made in Source removes it again.
	taken := Clone{Source: repo, Dir: t.TempDir(), HostDir: filepath.Join(t.TempDir(), "hz")}
	writeFiles(t, taken.Dir, map[string]string{"occupied": "x"})
	if _, err := AddClone(ctx, taken, "pb/occupied", "main"); err == nil {
		t.Error("AddClone into an existing directory: no error")
	}
	if ok, _ := BranchExists(ctx, repo, "pb/occupied"); ok {
		t.Error("failed AddClone left its branch in Source")
	}

	writeFiles(t, wt, map[string]string{"dirty.txt": "uncommitted\n", "a.txt": "changed\n"})
	// Directories without write permission, as Go's module cache makes.
	writeFiles(t, wt, map[string]string{"ro/dir/f": "x"})
	os.Chmod(filepath.Join(wt, "ro", "dir"), 0o555)
	os.Chmod(filepath.Join(wt, "ro"), 0o555)
	for i := range 2 {
		if err := RemoveClone(ctx, c, branch); err != nil {
			t.Fatalf("RemoveClone #%d: %v", i+1, err)
		}
	}
	for _, d := range []string{wt, c.HostDir} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s still there: %v", d, err)
		}
	}
	if ok, _ := BranchExists(ctx, repo, branch); ok {
		t.Error("branch not deleted")
	}
	if ok, _ := BranchExists(ctx, repo, "target"); !ok {
		t.Error("target branch lost")
	}
}

func TestRemoveCloneDeletedByHand(t *testing.T) {
	repo := newRepo(t, map[string]string{"a.txt": "a\n"})
	ctx := t.Context()
	c, _ := newClone(t, repo, "pb/gone", "main")
	if err := os.RemoveAll(c.Dir); err != nil {
		t.Fatal(err)
	}
	if err := RemoveClone(ctx, c, "pb/gone"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := BranchExists(ctx, repo, "pb/gone"); ok {
		t.Error("branch not deleted")
	}
	// The same name can be used again: nothing of the old attempt remains.
	if _, err := AddClone(ctx, c, "pb/gone", "main"); err != nil {
		t.Fatal(err)
	}
}

// TestRemoveCloneOfLinkedWorktree removes an attempt made when attempts
// were linked worktrees of Source: Source forgets the worktree.
func TestRemoveCloneOfLinkedWorktree(t *testing.T) {
	repo := newRepo(t, map[string]string{"a.txt": "a\n"})
	wt := filepath.Join(t.TempDir(), "wt")
	gitT(t, repo, "worktree", "add", "-q", "-b", "pb/old", wt, "main")
	writeFiles(t, wt, map[string]string{"a.txt": "changed\n"})
	c := Clone{Source: repo, Dir: wt, HostDir: filepath.Join(t.TempDir(), "h")}
	// Read through a host git dir made on demand.
	changes, _, err := Changes(t.Context(), c, gitT(t, repo, "rev-parse", "main"))
	if err != nil || len(changes) != 1 || changes[0].Path != "a.txt" {
		t.Fatalf("Changes of a linked worktree = %+v, %v", changes, err)
	}
	if err := RemoveClone(t.Context(), c, "pb/old"); err != nil {
		t.Fatal(err)
	}
	if list := gitT(t, repo, "worktree", "list", "--porcelain"); strings.Contains(list, wt) {
		t.Errorf("worktree still registered:\n%s", list)
	}
	if ok, _ := BranchExists(t.Context(), repo, "pb/old"); ok {
		t.Error("branch not deleted")
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
