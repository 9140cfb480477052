package gitops

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The trust boundary of the package: nothing an attempt writes into its
// clone (git configuration, hooks, attributes, links) makes the host run
// anything or hand on content from outside the clone.

// evil returns a command that records each run in the returned marker
// file; with no arguments it passes its input through, as a filter.
func evil(t *testing.T) (cmd, marker string) {
	t.Helper()
	dir := t.TempDir()
	cmd, marker = filepath.Join(dir, "evil.sh"), filepath.Join(dir, "ran")
	script := fmt.Sprintf("#!/bin/sh\necho \"$*\" >> %q\nif [ $# -eq 0 ]; then exec cat; fi\nexit 0\n", marker)
	if err := os.WriteFile(cmd, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return cmd, marker
}

// poison makes the clone at wt run cmd from every place git reads: its
// config (shared, per-worktree, included), hooks (its own and through
// core.hooksPath), info/attributes and a committed .gitattributes naming
// filter, diff and merge drivers.
func poison(t *testing.T, wt, cmd string) {
	t.Helper()
	hooks := filepath.Join(t.TempDir(), "hooks")
	for _, dir := range []string{hooks, filepath.Join(wt, ".git", "hooks")} {
		for _, h := range []string{"post-checkout", "post-merge", "post-commit", "pre-commit", "reference-transaction",
			"post-index-change", "pre-auto-gc", "fsmonitor-watchman", "post-rewrite"} {
			writeFiles(t, dir, map[string]string{h: "#!/bin/sh\nexec " + cmd + " hook " + h + "\n"})
			os.Chmod(filepath.Join(dir, h), 0o755)
		}
	}
	inc := filepath.Join(t.TempDir(), "evil.inc")
	writeFiles(t, filepath.Dir(inc), map[string]string{"evil.inc": "[core]\n\tfsmonitor = " + cmd + "\n[diff \"evil\"]\n\ttextconv = " + cmd + "\n"})
	for _, kv := range [][2]string{
		{"filter.evil.clean", cmd}, {"filter.evil.smudge", cmd}, {"filter.evil.required", "true"},
		{"diff.evil.textconv", cmd}, {"diff.evil.command", cmd}, {"diff.external", cmd},
		{"merge.evil.driver", cmd + " %O %A %B"}, {"core.pager", cmd}, {"core.sshCommand", cmd},
		{"core.alternateRefsCommand", cmd}, {"uploadpack.packObjectsHook", cmd}, {"include.path", inc},
		{"core.hooksPath", hooks}, {"core.fsmonitor", cmd}, {"extensions.worktreeConfig", "true"},
	} {
		gitT(t, wt, "config", kv[0], kv[1])
	}
	gitT(t, wt, "config", "--worktree", "core.fsmonitor", cmd)
	writeFiles(t, wt, map[string]string{
		".git/info/attributes": "* filter=evil diff=evil merge=evil\n",
		".gitattributes":       "* filter=evil diff=evil merge=evil\n",
	})
	gitT(t, wt, "add", ".gitattributes")
	gitT(t, wt, "commit", "-q", "--no-verify", "-m", "attributes")
}

func TestHostIgnoresAttemptConfig(t *testing.T) {
	cmd, marker := evil(t)
	repo := newRepo(t, map[string]string{"a.txt": "one\n", "b.txt": "b\n"})
	c, base := newClone(t, repo, "pb/x", "main")
	poison(t, c.Dir, cmd)
	// A nested repository, poisoned too: git looks at its HEAD.
	nested := filepath.Join(c.Dir, "nested")
	gitT(t, c.Dir, "init", "-q", nested)
	writeFiles(t, nested, map[string]string{"inner.txt": "inner\n"})
	gitT(t, nested, "add", "-A")
	gitT(t, nested, "commit", "-q", "-m", "inner")
	poison(t, nested, cmd)
	writeFiles(t, c.Dir, map[string]string{"a.txt": "one\ntwo\n", "new.txt": "new\n"})
	os.Remove(marker) // the agent's own git ran it; only the host's runs count now
	// The host's own environment cannot bring configuration in either.
	t.Setenv("GIT_CONFIG_COUNT", "1")
	t.Setenv("GIT_CONFIG_KEY_0", "core.fsmonitor")
	t.Setenv("GIT_CONFIG_VALUE_0", cmd)
	t.Setenv("GIT_CONFIG_PARAMETERS", "'core.hooksPath'='"+filepath.Dir(cmd)+"'")
	check := func(what string) {
		t.Helper()
		if b, _ := os.ReadFile(marker); len(b) > 0 {
			t.Fatalf("%s ran the attempt's command:\n%s", what, b)
		}
	}
	ctx := t.Context()

	changes, _, err := Changes(ctx, c, base)
	check("Changes")
	if err != nil || len(changes) != 4 {
		t.Fatalf("Changes = %+v, %v", changes, err)
	}
	patch, err := Patch(ctx, c, base, nil)
	check("Patch")
	if err != nil || !strings.Contains(string(patch), "+two\n") || !strings.Contains(string(patch), "+new\n") {
		t.Fatalf("Patch = %q, %v", patch, err)
	}
	p, err := PrepareMerge(ctx, MergeSpec{Repo: c, TargetBranch: "main", Branch: "pb/x", Base: base})
	check("PrepareMerge")
	if err != nil || !p.Ready() {
		t.Fatalf("PrepareMerge = %+v, %v", p, err)
	}
	res, err := p.Apply(ctx, "merge")
	check("Apply")
	if err != nil || res.Via != MergedViaWorktree {
		t.Fatalf("Apply = %+v, %v", res, err)
	}
	// The merged files reached the user's checkout, unfiltered.
	if b, _ := os.ReadFile(filepath.Join(repo, "a.txt")); string(b) != "one\ntwo\n" {
		t.Fatalf("a.txt in the checkout = %q", b)
	}
	if err := RemoveClone(ctx, c, "pb/x"); err != nil {
		t.Fatal(err)
	}
	check("RemoveClone")
}

// TestHostIgnoresRedirectedGitDir: an attempt that points its .git at a
// git dir of its making (a gitfile), or removes it, changes nothing of what
// the host reads.
func TestHostIgnoresRedirectedGitDir(t *testing.T) {
	cmd, marker := evil(t)
	repo := newRepo(t, map[string]string{"a.txt": "one\n"})
	c, base := newClone(t, repo, "pb/x", "main")
	evilGit := filepath.Join(t.TempDir(), "evil.git")
	gitT(t, t.TempDir(), "init", "-q", "--bare", evilGit)
	gitT(t, evilGit, "config", "core.fsmonitor", cmd)
	gitT(t, evilGit, "config", "core.bare", "false")
	if err := os.RemoveAll(filepath.Join(c.Dir, ".git")); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, c.Dir, map[string]string{".git": "gitdir: " + evilGit + "\n", "a.txt": "changed\n"})
	changes, _, err := Changes(t.Context(), c, base)
	if err != nil || len(changes) != 1 || changes[0].Path != "a.txt" {
		t.Fatalf("Changes = %+v, %v", changes, err)
	}
	if _, err := Patch(t.Context(), c, base, nil); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(marker); len(b) > 0 {
		t.Fatalf("the host ran the attempt's command:\n%s", b)
	}
}

func TestPatchRefusesLinkedFiles(t *testing.T) {
	repo := newRepo(t, map[string]string{"a.txt": "a\n"})
	c, base := newClone(t, repo, "pb/x", "main")
	secret := filepath.Join(t.TempDir(), "secret")
	writeFiles(t, filepath.Dir(secret), map[string]string{"secret": "SECRET\n"})
	if err := os.Link(secret, filepath.Join(c.Dir, "leak.txt")); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, c.Dir, map[string]string{"a.txt": "changed\n"})
	// A symlink out is not followed by git (the patch shows its target's
	// name), so it is no leak.
	if err := os.Symlink(secret, filepath.Join(c.Dir, "link")); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for _, paths := range [][]string{nil, {"leak.txt"}, {"a.txt", "leak.txt"}} {
		out, err := Patch(ctx, c, base, paths)
		var linked *LinkedFilesError
		if !errors.As(err, &linked) || !slices.Equal(linked.Paths, []string{"leak.txt"}) || strings.Contains(string(out), "SECRET") {
			t.Fatalf("Patch(%q) = %q, %v; want a LinkedFilesError for leak.txt", paths, out, err)
		}
	}
	out, err := Patch(ctx, c, base, []string{"a.txt", "link"})
	if err != nil || !strings.Contains(string(out), "+changed") || strings.Contains(string(out), "SECRET") {
		t.Fatalf("Patch(a.txt, link) = %q, %v", out, err)
	}
	// Changes lists it (no content is handed on), sized as it is.
	if changes, _, err := Changes(ctx, c, base); err != nil || len(changes) != 3 {
		t.Fatalf("Changes = %+v, %v", changes, err)
	}
}

func TestReviewMergeRefusesLinkedFiles(t *testing.T) {
	repo, a := attemptRepo(t)
	gitT(t, repo, "checkout", "-q", "--detach")
	secret := filepath.Join(t.TempDir(), "secret")
	writeFiles(t, filepath.Dir(secret), map[string]string{"secret": "SECRET\n"})
	if err := os.Link(secret, filepath.Join(a.Dir, "leak.txt")); err != nil {
		t.Fatal(err)
	}
	mainTip := gitT(t, repo, "rev-parse", "main")
	_, err := PrepareMerge(t.Context(), spec(a))
	var linked *LinkedFilesError
	if !errors.As(err, &linked) || !slices.Equal(linked.Paths, []string{"leak.txt"}) {
		t.Fatalf("PrepareMerge = %v; want a LinkedFilesError for leak.txt", err)
	}
	if gitT(t, repo, "rev-parse", "main") != mainTip {
		t.Fatal("main moved")
	}
	// Replaced by a copy, it merges.
	os.Remove(filepath.Join(a.Dir, "leak.txt"))
	writeFiles(t, a.Dir, map[string]string{"leak.txt": "a copy\n"})
	if _, err := prepare(t, spec(a)).Apply(t.Context(), "m"); err != nil {
		t.Fatal(err)
	}
}

// TestReviewMergeRefusesDotGitTree: commits the agent crafted with a tree
// entry git must never check out (.git) do not enter the user's
// repository.
func TestReviewMergeRefusesDotGitTree(t *testing.T) {
	repo, a := attemptRepo(t)
	wt := a.Dir
	cfg := strings.TrimSpace(runIn(t, wt, "[core]\n\tfsmonitor = /bin/false\n", "hash-object", "-w", "--stdin"))
	inner := strings.TrimSpace(runIn(t, wt, "100644 blob "+cfg+"\tconfig\n", "mktree"))
	base := gitT(t, wt, "rev-parse", "HEAD^{tree}")
	entries := gitT(t, wt, "ls-tree", base)
	tree := strings.TrimSpace(runIn(t, wt, entries+"\n040000 tree "+inner+"\t.git\n", "mktree"))
	commit := gitT(t, wt, "commit-tree", tree, "-p", "HEAD", "-m", "smuggle")
	gitT(t, wt, "update-ref", "refs/heads/pb/x", commit)
	mainTip := gitT(t, repo, "rev-parse", "main")
	_, err := PrepareMerge(t.Context(), spec(a))
	if !errors.Is(err, ErrObjectsRefused) {
		t.Fatalf("PrepareMerge = %v; want ErrObjectsRefused", err)
	}
	if gitT(t, repo, "rev-parse", "main") != mainTip || exec.Command("git", "-C", repo, "cat-file", "-e", commit).Run() == nil {
		t.Fatal("the crafted commit entered the repository")
	}
}

// runIn runs git in dir with stdin and returns its output.
func runIn(t *testing.T, dir, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return string(out)
}

// TestReviewMergeAgainAfterMoreWork: the clone is not told of an approval,
// so its files go on from the approved commit while its branch stays where
// the agent left it; a second approval merges only the new work, whether
// the agent committed meanwhile or not.
func TestReviewMergeAgainAfterMoreWork(t *testing.T) {
	repo, a := attemptRepo(t)
	gitT(t, repo, "checkout", "-q", "--detach")
	wt := a.Dir
	writeFiles(t, wt, map[string]string{"a.txt": "one\nTWO\nthree\n"})
	first, err := prepare(t, spec(a)).Apply(t.Context(), "first")
	if err != nil {
		t.Fatal(err)
	}
	// More work, committed by the agent on its branch (still at base).
	writeFiles(t, wt, map[string]string{"b.txt": "b, later\n"})
	gitT(t, wt, "commit", "-q", "-am", "more")
	p := prepare(t, spec(a))
	if !p.Ready() || !slices.Contains(parents(t, repo, p.Source), first.ChangesCommit) {
		t.Fatalf("second plan = %+v; want it ready, on top of %s", p, first.ChangesCommit)
	}
	second, err := p.Apply(t.Context(), "second")
	if err != nil {
		t.Fatal(err)
	}
	if got := gitT(t, repo, "show", "main:a.txt") + "|" + gitT(t, repo, "show", "main:b.txt"); got != "one\nTWO\nthree|b, later" {
		t.Fatalf("main holds %q", got)
	}
	// And uncommitted work once more.
	writeFiles(t, wt, map[string]string{"c.txt": "c\n"})
	third, err := prepare(t, spec(a)).Apply(t.Context(), "third")
	if err != nil {
		t.Fatal(err)
	}
	if got := parents(t, repo, third.ChangesCommit); !slices.Contains(got, second.ChangesCommit) {
		t.Fatalf("third changes commit's parents %v, want %s among them", got, second.ChangesCommit)
	}
	if gitT(t, repo, "rev-parse", "pb/x") != third.ChangesCommit {
		t.Fatal("the attempt branch in the repository is not at the last approval")
	}
}
