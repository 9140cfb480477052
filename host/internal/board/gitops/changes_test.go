package gitops

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

const uniPath = "new dir/sub/ünï cödé file.txt"

var binBase = "\x00\x01\x02base binary\x00"
var binNow = "\x00\x01\x02changed binary, longer\x00\xff"

// attemptFixture is a worktree whose changes against base cover every case
// Changes must handle; see TestChanges for the expected list.
func attemptFixture(t *testing.T) (repo string, c Clone, base string) {
	t.Helper()
	repo = newRepo(t, map[string]string{
		".gitignore":    "*.log\nbuild/\n",
		"keep.txt":      "keep\n",
		"mod.txt":       "one\ntwo\nthree\n",
		"del.txt":       "gone\nbye\n",
		"bin.dat":       binBase,
		"old name.txt":  strings.Repeat("a line that moves with its file\n", 20),
		"committed.txt": "c1\n",
		"touched.txt":   "same\n",
	})
	c, base = newClone(t, repo, "pb/t1-fixture", "main")
	wt := c.Dir
	// A commit on the attempt branch after base still counts against base.
	writeFiles(t, wt, map[string]string{"committed.txt": "c1\nc2\n", "committed-new.txt": "fresh\n"})
	gitT(t, wt, "add", "-A")
	gitT(t, wt, "commit", "-q", "-m", "agent commit")
	// Staged, unstaged, renamed, deleted, untracked and ignored work.
	writeFiles(t, wt, map[string]string{"staged.txt": "staged\n"})
	gitT(t, wt, "add", "staged.txt")
	// An unstaged move: the rename must be found from the files alone.
	if err := os.MkdirAll(filepath.Join(wt, "moved dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(wt, "old name.txt"), filepath.Join(wt, "moved dir", "new name.txt")); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, wt, map[string]string{
		"mod.txt":         "one\nTWO\nthree\nfour\n",
		"bin.dat":         binNow,
		uniPath:           "hello\nworld\n",
		"debug.log":       "ignored\n",
		"build/out.bin":   "ignored too\n",
		"touched.txt":     "same\n", // rewritten identically: not a change
		"keep.txt.orig~":  "",       // empty untracked file
		"moved dir/.keep": "",
	})
	if err := os.Remove(filepath.Join(wt, "del.txt")); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(2 * time.Second)
	if err := os.Chtimes(filepath.Join(wt, "touched.txt"), later, later); err != nil {
		t.Fatal(err)
	}
	return repo, c, base
}

func TestChanges(t *testing.T) {
	_, c, base := attemptFixture(t)
	wt := c.Dir
	indexPath := gitT(t, wt, "rev-parse", "--path-format=absolute", "--git-path", "index")
	statusBefore := gitT(t, wt, "--no-optional-locks", "status", "--porcelain=v2", "-z", "--untracked-files=all")
	indexBefore, err := os.ReadFile(indexPath)
	if err != nil {
		t.Fatal(err)
	}
	fiBefore, _ := os.Stat(indexPath)

	changes, sum, err := Changes(t.Context(), c, base)
	if err != nil {
		t.Fatal(err)
	}
	renamed := int64(len(strings.Repeat("a line that moves with its file\n", 20)))
	want := []FileChange{
		{Path: "bin.dat", Status: StatusModified, Binary: true, Bytes: int64(len(binNow))},
		{Path: "committed-new.txt", Status: StatusAdded, Added: 1, Bytes: 6},
		{Path: "committed.txt", Status: StatusModified, Added: 1, Bytes: 6},
		{Path: "del.txt", Status: StatusDeleted, Deleted: 2, Bytes: 9},
		{Path: "keep.txt.orig~", Status: StatusAdded},
		{Path: "mod.txt", Status: StatusModified, Added: 2, Deleted: 1, Bytes: 19},
		{Path: "moved dir/.keep", Status: StatusAdded},
		{Path: "moved dir/new name.txt", Status: StatusRenamed, OldPath: "old name.txt", Bytes: renamed},
		{Path: uniPath, Status: StatusAdded, Added: 2, Bytes: 12},
		{Path: "staged.txt", Status: StatusAdded, Added: 1, Bytes: 7},
	}
	if !reflect.DeepEqual(changes, want) {
		t.Errorf("Changes:\n got %+v\nwant %+v", changes, want)
	}
	wantSum := Summary{FileCount: len(want), Added: 7, Deleted: 3, TotalBytes: int64(len(binNow)) + 6 + 6 + 9 + 19 + renamed + 12 + 7}
	if sum != wantSum {
		t.Errorf("Summary = %+v, want %+v", sum, wantSum)
	}

	if _, err := Patch(t.Context(), c, base, nil); err != nil {
		t.Fatal(err)
	}
	indexAfter, _ := os.ReadFile(indexPath)
	fiAfter, _ := os.Stat(indexPath)
	if !bytes.Equal(indexBefore, indexAfter) || !fiBefore.ModTime().Equal(fiAfter.ModTime()) {
		t.Error("the worktree's index was rewritten")
	}
	if after := gitT(t, wt, "--no-optional-locks", "status", "--porcelain=v2", "-z", "--untracked-files=all"); after != statusBefore {
		t.Errorf("git status changed:\nbefore %q\n after %q", statusBefore, after)
	}
	// Reading changes must not store the agent's untracked content in the
	// clone's object store or the host's.
	hash := gitT(t, wt, "hash-object", "--", uniPath)
	for _, gitDir := range []string{filepath.Join(wt, ".git"), c.HostDir} {
		if exec.Command("git", "--git-dir="+gitDir, "cat-file", "-e", hash).Run() == nil {
			t.Errorf("Changes wrote the untracked file's blob into %s", gitDir)
		}
	}
	// The host's index still describes base: no snapshot is kept.
	if entries, _ := os.ReadDir(c.HostDir); len(entries) != 6 {
		t.Errorf("host git dir holds %v", entries)
	}
}

func TestChangesErrors(t *testing.T) {
	_, c, base := attemptFixture(t)
	ctx := t.Context()
	for _, bad := range []string{"", "--output=/tmp/x", "0123456789abcdef0123456789abcdef01234567", "no-such-ref"} {
		if _, _, err := Changes(ctx, c, bad); err == nil || !strings.Contains(err.Error(), c.Dir) {
			t.Errorf("Changes(base %q) error = %v; want one naming the attempt directory", bad, err)
		}
	}
	missing := c
	missing.Dir = filepath.Join(t.TempDir(), "missing")
	if _, err := Patch(ctx, missing, base, nil); !errors.Is(err, ErrNotWorkTree) || !strings.Contains(err.Error(), missing.Dir) {
		t.Errorf("Patch of a missing directory: %v", err)
	}
	// An attempt directory swapped for a symlink is not followed.
	link := c
	link.Dir = filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(c.Dir, link.Dir); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Changes(ctx, link, base); !errors.Is(err, ErrNotWorkTree) {
		t.Errorf("Changes through a symlinked directory: %v", err)
	}
	// Without its host git dir and without the repository to rebuild it.
	orphan := Clone{Dir: c.Dir, HostDir: filepath.Join(t.TempDir(), "none")}
	if _, _, err := Changes(ctx, orphan, base); err == nil || !strings.Contains(err.Error(), orphan.HostDir) {
		t.Errorf("Changes without a host git dir: %v", err)
	}
}

func TestChangesClean(t *testing.T) {
	repo := newRepo(t, map[string]string{"a.txt": "a\n"})
	wt, base := newClone(t, repo, "pb/clean", "main")
	changes, sum, err := Changes(t.Context(), wt, base)
	if err != nil || len(changes) != 0 || sum != (Summary{}) {
		t.Errorf("Changes on a clean worktree = %v, %+v, %v", changes, sum, err)
	}
	patch, err := Patch(t.Context(), wt, base, nil)
	if err != nil || len(patch) != 0 {
		t.Errorf("Patch on a clean worktree = %q, %v", patch, err)
	}
}

func TestPatch(t *testing.T) {
	_, wt, base := attemptFixture(t)
	ctx := t.Context()

	one, err := Patch(ctx, wt, base, []string{"mod.txt"})
	if err != nil {
		t.Fatal(err)
	}
	if s := string(one); !strings.HasPrefix(s, "diff --git a/mod.txt b/mod.txt\n") || strings.Count(s, "diff --git") != 1 ||
		!strings.Contains(s, "-two\n+TWO\n three\n+four\n") {
		t.Errorf("Patch(mod.txt):\n%s", s)
	}

	all, err := Patch(ctx, wt, base, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := string(all)
	for _, want := range []string{
		"new file mode 100644\nindex 0000000..", // the untracked file, as a new file
		"--- /dev/null\n",
		"@@ -0,0 +1,2 @@\n+hello\n+world\n",
		"diff --git a/del.txt b/del.txt\ndeleted file mode 100644\n",
		"@@ -1,2 +0,0 @@\n-gone\n-bye\n",
		"rename from old name.txt\nrename to moved dir/new name.txt\n",
		"+c2\n", // committed after base
		"+staged\n",
		"Binary files a/bin.dat and b/bin.dat differ\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("Patch(all) lacks %q", want)
		}
	}
	for _, unwanted := range []string{"debug.log", "out.bin", "touched.txt", "keep.txt\n", "\x1b["} {
		if strings.Contains(s, unwanted) {
			t.Errorf("Patch(all) contains %q", unwanted)
		}
	}
	if n := strings.Count(s, "diff --git"); n != 10 {
		t.Errorf("Patch(all) has %d files, want 10", n)
	}

	uni, err := Patch(ctx, wt, base, []string{uniPath})
	if err != nil {
		t.Fatal(err)
	}
	if s := string(uni); strings.Count(s, "diff --git") != 1 || !strings.Contains(s, "new file mode") || !strings.Contains(s, "+hello\n") {
		t.Errorf("Patch(%q):\n%s", uniPath, s)
	}
	dir, err := Patch(ctx, wt, base, []string{"new dir"})
	if err != nil || !bytes.Equal(dir, uni) {
		t.Errorf("Patch(directory) = %q, %v; want the file under it", dir, err)
	}
	// Selecting one side of a rename shows that side alone.
	side, err := Patch(ctx, wt, base, []string{"old name.txt"})
	if err != nil || !strings.Contains(string(side), "deleted file mode") {
		t.Errorf("Patch(old side of rename) = %q, %v", side, err)
	}
	pair, err := Patch(ctx, wt, base, []string{"old name.txt", "moved dir/new name.txt"})
	if err != nil || !strings.Contains(string(pair), "similarity index 100%\nrename from") {
		t.Errorf("Patch(both sides of rename) = %q, %v", pair, err)
	}
	del, err := Patch(ctx, wt, base, []string{"del.txt"})
	if err != nil || !strings.Contains(string(del), "deleted file mode 100644") {
		t.Errorf("Patch(del.txt) = %q, %v", del, err)
	}
	none, err := Patch(ctx, wt, base, []string{"keep.txt", "debug.log"})
	if err != nil || len(none) != 0 {
		t.Errorf("Patch(unchanged and ignored) = %q, %v", none, err)
	}
}

// TestUserConfigIgnored runs against a repository whose configuration would
// change the output of porcelain git commands.
func TestUserConfigIgnored(t *testing.T) {
	_, c, base := attemptFixture(t)
	wt := c.Dir
	for _, kv := range [][2]string{
		{"diff.noprefix", "true"},
		{"diff.mnemonicPrefix", "true"},
		{"diff.renames", "false"},
		{"diff.external", "false"},
		{"diff.relative", "true"},
		{"diff.orderFile", "/dev/null"},
		{"color.ui", "always"},
		{"color.diff", "always"},
		{"core.quotePath", "true"},
		{"status.showUntrackedFiles", "no"},
		{"core.splitIndex", "true"},
	} {
		gitT(t, wt, "config", kv[0], kv[1])
	}
	gitT(t, wt, "update-index", "--split-index")
	indexDir := filepath.Dir(gitT(t, wt, "rev-parse", "--path-format=absolute", "--git-path", "index"))
	sharedBefore, _ := filepath.Glob(filepath.Join(indexDir, "sharedindex.*"))
	if len(sharedBefore) == 0 {
		t.Fatal("fixture: no split index")
	}
	writeFiles(t, wt, map[string]string{"glob[1].txt": "literal\n", "glob1.txt": "other\n"})
	ctx := t.Context()
	changes, _, err := Changes(ctx, c, base)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, c := range changes {
		paths = append(paths, c.Path)
	}
	if len(changes) != 12 || !strings.Contains(strings.Join(paths, ","), uniPath) {
		t.Errorf("Changes with hostile config: %q", paths)
	}
	if shared, _ := filepath.Glob(filepath.Join(indexDir, "sharedindex.*")); len(shared) != len(sharedBefore) {
		t.Errorf("shared index files %q became %q", sharedBefore, shared)
	}
	p, err := Patch(ctx, c, base, []string{"glob[1].txt"})
	if err != nil {
		t.Fatal(err)
	}
	if s := string(p); !strings.HasPrefix(s, "diff --git a/glob[1].txt b/glob[1].txt\n") || strings.Count(s, "diff --git") != 1 || strings.Contains(s, "\x1b") {
		t.Errorf("Patch with hostile config:\n%q", s)
	}
}

// TestChangesOddStates covers worktrees an agent can leave behind: a merge
// conflict, a nested repository, a symlink, a file replaced by a directory,
// and a host environment pointing git elsewhere.
func TestChangesOddStates(t *testing.T) {
	repo := newRepo(t, map[string]string{"f.txt": "base\n", "was-file": "x\n"})
	gitT(t, repo, "branch", "side")
	c, base := newClone(t, repo, "pb/odd", "main")
	wt := c.Dir
	writeFiles(t, wt, map[string]string{"f.txt": "ours\n"})
	gitT(t, wt, "commit", "-q", "-am", "ours")
	sideDir := filepath.Join(t.TempDir(), "side")
	gitT(t, repo, "worktree", "add", "-q", "--detach", sideDir, "side")
	writeFiles(t, sideDir, map[string]string{"f.txt": "theirs\n"})
	gitT(t, sideDir, "commit", "-q", "-am", "theirs")
	theirs := gitT(t, sideDir, "rev-parse", "HEAD")
	if err := exec.Command("git", "-C", wt, "merge", "-q", theirs).Run(); err == nil {
		t.Fatal("fixture: merge did not conflict")
	}
	nested := filepath.Join(wt, "nested")
	gitT(t, wt, "init", "-q", nested)
	writeFiles(t, nested, map[string]string{"inner.txt": "inner\n"})
	gitT(t, nested, "add", "-A")
	gitT(t, nested, "commit", "-q", "-m", "inner")
	if err := os.Symlink("f.txt", filepath.Join(wt, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(wt, "was-file")); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, wt, map[string]string{"was-file/now-dir.txt": "d\n"})

	// An inherited environment must not redirect the board's git commands.
	other := newRepo(t, map[string]string{"other.txt": "other\n"})
	garbage := filepath.Join(t.TempDir(), "index")
	writeFiles(t, filepath.Dir(garbage), map[string]string{"index": "not an index"})
	t.Setenv("GIT_DIR", filepath.Join(other, ".git"))
	t.Setenv("GIT_INDEX_FILE", garbage)
	t.Setenv("GIT_GLOB_PATHSPECS", "1")

	changes, _, err := Changes(t.Context(), c, base)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]FileChange{}
	for _, c := range changes {
		got[c.Path] = c
	}
	want := map[string]string{"f.txt": StatusModified, "nested": StatusAdded, "link": StatusAdded, "was-file": StatusDeleted, "was-file/now-dir.txt": StatusAdded}
	if len(got) != len(want) {
		t.Errorf("Changes = %+v", changes)
	}
	for p, st := range want {
		if got[p].Status != st {
			t.Errorf("%s: %+v, want status %s", p, got[p], st)
		}
	}
	if c := got["f.txt"]; c.Added != 5 || c.Deleted != 1 { // the conflict markers, as on disk
		t.Errorf("conflicted file: %+v", c)
	}
	if c := got["link"]; c.Bytes != int64(len("f.txt")) {
		t.Errorf("symlink: %+v", c)
	}
	if c := got["nested"]; c.Bytes != 0 {
		t.Errorf("nested repository: %+v", c)
	}
	if c := got["was-file"]; c.Bytes != 2 {
		t.Errorf("deleted file: %+v", c)
	}
	p, err := Patch(t.Context(), c, base, []string{"f.txt"})
	if err != nil || !strings.Contains(string(p), "+<<<<<<<") {
		t.Errorf("Patch of conflicted file = %q, %v", p, err)
	}
}
