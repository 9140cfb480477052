package board

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/abi/tasks"
	"github.com/plugboard/plugboard/host/internal/board/gitops"
	"github.com/plugboard/plugboard/host/internal/store"
)

// multiFixture is a board with project "multi" over two real repositories,
// app and lib, each with main checked out and clean.
func multiFixture(t *testing.T, cfg Config) (f fixture, lib string) {
	t.Helper()
	b := openBoard(t, cfg)
	app := gitRepo(t, "app", map[string]string{"README.md": "app\n"})
	lib = gitRepo(t, "lib", map[string]string{"lib.go": "package lib\n"})
	p, err := b.CreateProject(context.Background(), "multi", []RepoSpec{{Path: app}, {Path: lib}})
	if err != nil {
		t.Fatal(err)
	}
	return fixture{b: b, project: p, repo: app}, lib
}

func mergedOf(t *testing.T, out ApproveResult, repo string) MergedRepo {
	t.Helper()
	for _, m := range out.Repos {
		if m.RepoName == repo {
			return m
		}
	}
	t.Fatalf("approve answer has no repo %s: %+v", repo, out)
	return MergedRepo{}
}

// TestMultiRepoOutsideFilesAndExactApproval: a coding agent (a real child
// process, the FAKE executor) of a two-repo attempt starts in the folder
// above the clones, is told so in its prompt, and writes a file in app,
// nothing in lib and one file beside the clones. The changes list app's
// file and the top-level one as outside any repository; approve merges
// app (its commit, its file), says lib had nothing to merge, and warns
// that the top-level file was not merged; app's main has the change, lib's
// main is where it was, and neither has the top-level file.
func TestMultiRepoOutsideFilesAndExactApproval(t *testing.T) {
	ctx := context.Background()
	agent := `prompt=$(cat)
echo "cwd=$PWD"
printf '%s\n' "$prompt"
echo feature > app/feature.txt
echo "top-level notes" > notes.txt
`
	f, lib := multiFixture(t, Config{ExecutorsFile: fakeAgent(t, agent, nil, nil)})
	libTip := revParse(t, lib, "main")
	res := f.startFake(t, "Add the feature")
	if st := settle(t, f.b, res.AttemptID); st.State != StateCompleted || st.TaskStatus != store.StatusInReview {
		t.Fatalf("attempt did not end in review: %+v", st)
	}

	// Where the agent started, and what it was told.
	page, err := f.b.TailAttemptLogs(ctx, LogsArgs{AttemptID: res.AttemptID, Channel: "raw", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	log := strings.Join(entryContents(t, page.Entries), "\n")
	for _, want := range []string{"cwd=" + f.b.attemptRoot(res.AttemptID),
		"Workspace: the current folder holds one git clone per repository of this task: app/ (merged into main), lib/ (merged into main).",
		"is in no repository: it is not merged"} {
		if !strings.Contains(log, want) {
			t.Errorf("the agent's log lacks %q:\n%s", want, log)
		}
	}

	ch, err := f.b.GetAttemptChanges(ctx, ChangesArgs{AttemptID: res.AttemptID})
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.Files) != 1 || ch.Files[0].Path != "app/feature.txt" || ch.Summary.FileCount != 1 {
		t.Fatalf("changes files = %+v", ch.Files)
	}
	wantOutside := OutsideFiles{Count: 1, TotalBytes: 16, Files: []OutsideFile{{Path: "notes.txt", Bytes: 16}}}
	if !outsideEqual(ch.Outside, wantOutside) {
		t.Fatalf("changes outside = %+v, want %+v", ch.Outside, wantOutside)
	}
	q, err := f.b.ReviewQueue(ctx, ReviewQueueArgs{})
	if err != nil || q.Count != 1 || q.Tasks[0].Changes == nil || q.Tasks[0].Changes.FileCount != 1 || q.Tasks[0].Changes.OutsideCount != 1 {
		t.Fatalf("review_queue = %+v (changes %+v), %v", q, q.Tasks[0].Changes, err)
	}

	out, err := f.b.ApproveAttempt(ctx, ApproveArgs{AttemptID: res.AttemptID})
	if err != nil {
		t.Fatal(err)
	}
	app := mergedOf(t, out, "app")
	if !app.Merged || app.MergedVia != gitops.MergedViaWorktree || app.ChangesCommit == nil ||
		app.CommitCount != 1 || !slices.Equal(app.Commits, []string{*app.ChangesCommit}) ||
		app.FileCount != 1 || !slices.Equal(app.Files, []string{"app/feature.txt"}) {
		t.Fatalf("app merged = %+v", app)
	}
	if got := revParse(t, f.repo, "main"); got != app.MergeCommit {
		t.Fatalf("app main at %s, want the merge commit %s", got, app.MergeCommit)
	}
	if got := git(t, f.repo, "show", "main:feature.txt"); got != "feature\n" {
		t.Fatalf("app main:feature.txt = %q", got)
	}
	l := mergedOf(t, out, "lib")
	if l.Merged || l.MergedVia != tasks.MergedViaUpToDate || l.MergeCommit != libTip || l.CommitCount != 0 || len(l.Commits) != 0 ||
		l.FileCount != 0 || len(l.Files) != 0 || l.ChangesCommit != nil {
		t.Fatalf("lib = %+v, want nothing merged", l)
	}
	if got := revParse(t, lib, "main"); got != libTip {
		t.Fatalf("lib main moved: %s, was %s", got, libTip)
	}
	for _, repo := range []string{f.repo, lib} {
		if files := git(t, repo, "ls-tree", "-r", "--name-only", "main"); strings.Contains(files, "notes.txt") {
			t.Fatalf("%s main has the top-level file: %s", repo, files)
		}
	}
	if !out.Merged || !outsideEqual(out.Outside, wantOutside) || out.TaskStatus != store.StatusDone {
		t.Fatalf("approve = %+v", out)
	}
	wantSummary := fmt.Sprintf("app@main: merged 1 commit, 1 file (merge commit %.12s); lib@main: nothing to merge; "+
		"not merged: 1 file outside any repository", app.MergeCommit)
	if out.Summary != wantSummary {
		t.Fatalf("summary = %q\nwant      %q", out.Summary, wantSummary)
	}
	if len(out.Warnings) != 1 || !strings.Contains(out.Warnings[0], "1 file outside any repository (16 bytes) not merged: notes.txt") ||
		!strings.Contains(out.Warnings[0], "request_changes") {
		t.Fatalf("warnings = %q", out.Warnings)
	}
	// The file is still where the agent left it.
	if b, err := os.ReadFile(filepath.Join(f.b.attemptRoot(res.AttemptID), "notes.txt")); err != nil || string(b) != "top-level notes\n" {
		t.Fatalf("notes.txt after the approval: %q, %v", b, err)
	}
}

// TestApproveNothingMergedSaysSo is the multi-repo example of
// docs/operators.md ("Set up and watch a board from the command line"): a
// SHELL attempt over two repos whose script writes only beside the clones.
// Nothing is merged, and the answer says so instead of "merged".
func TestApproveNothingMergedSaysSo(t *testing.T) {
	ctx := context.Background()
	f, lib := multiFixture(t, Config{})
	appTip, libTip := revParse(t, f.repo, "main"), revParse(t, lib, "main")
	res := reviewed(t, f, "Say hello", "echo hello; echo hi > hello.txt")
	ch, err := f.b.GetAttemptChanges(ctx, ChangesArgs{AttemptID: res.AttemptID})
	if err != nil || len(ch.Files) != 0 || !outsideEqual(ch.Outside, OutsideFiles{Count: 1, TotalBytes: 3, Files: []OutsideFile{{Path: "hello.txt", Bytes: 3}}}) {
		t.Fatalf("changes = %+v, %v", ch, err)
	}
	out, err := f.b.ApproveAttempt(ctx, ApproveArgs{AttemptID: res.AttemptID})
	if err != nil {
		t.Fatal(err)
	}
	if out.Merged || mergedOf(t, out, "app").Merged || mergedOf(t, out, "lib").Merged {
		t.Fatalf("approve says something merged: %+v", out)
	}
	if want := "app@main: nothing to merge; lib@main: nothing to merge; not merged: 1 file outside any repository"; out.Summary != want {
		t.Fatalf("summary = %q, want %q", out.Summary, want)
	}
	if len(out.Warnings) != 2 || !strings.Contains(out.Warnings[0], "hello.txt") || !strings.HasPrefix(out.Warnings[1], "nothing was merged") {
		t.Fatalf("warnings = %q", out.Warnings)
	}
	if revParse(t, f.repo, "main") != appTip || revParse(t, lib, "main") != libTip {
		t.Fatal("a target branch moved with nothing to merge")
	}
}

// TestSingleRepoWorkspaceUnchanged: a one-repo agent still starts in its
// repository and is told nothing more than the task; with nothing beside
// the clone, outside is empty.
func TestSingleRepoWorkspaceUnchanged(t *testing.T) {
	ctx := context.Background()
	agent := "prompt=$(cat); echo \"cwd=$PWD\"; printf 'PROMPT<%s>\\n' \"$prompt\"; echo x > x.txt\n"
	f := fakeFixture(t, Config{ExecutorsFile: fakeAgent(t, agent, nil, nil)})
	res := f.startFake(t, "do it")
	settle(t, f.b, res.AttemptID)
	page, err := f.b.TailAttemptLogs(ctx, LogsArgs{AttemptID: res.AttemptID, Channel: "raw", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	log := strings.Join(entryContents(t, page.Entries), "\n")
	if !strings.Contains(log, "cwd="+filepath.Join(f.b.attemptRoot(res.AttemptID), "app")) || !strings.Contains(log, "PROMPT<fake\n\ndo it>") {
		t.Fatalf("one-repo agent's log:\n%s", log)
	}
	ch, err := f.b.GetAttemptChanges(ctx, ChangesArgs{AttemptID: res.AttemptID})
	if err != nil || len(ch.Files) != 1 || ch.Files[0].Path != "app/x.txt" || !outsideEqual(ch.Outside, OutsideFiles{Files: []OutsideFile{}}) {
		t.Fatalf("changes = %+v, %v", ch, err)
	}
}

// TestFindOutsideBounds: the search skips the repo folders, counts every
// other file (nested ones, links), lists a prefix within the count and
// path-bytes bounds, and stops at the entry bound saying partial.
func TestFindOutsideBounds(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	write := func(rel, content string) {
		full := filepath.Join(root, rel)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("app/inside.txt", "in the repo")
	write("lib/deep/inside.txt", "in the repo")
	write("a.txt", "12345")
	write("build/out/b.bin", "123")
	write("c.txt", "1")
	// A link to a folder: counted, not entered.
	if err := os.Symlink("/etc", filepath.Join(root, "d-link")); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(root, "empty-dir"), 0o755)
	repos := []string{"app", "lib"}

	all, err := findOutside(ctx, root, repos, outsideLimits{walked: 100, listed: 10, pathBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	want := OutsideFiles{Count: 4, TotalBytes: 5 + 3 + 1 + int64(len("/etc")), Files: []OutsideFile{
		{Path: "a.txt", Bytes: 5}, {Path: "build/out/b.bin", Bytes: 3}, {Path: "c.txt", Bytes: 1}, {Path: "d-link", Bytes: int64(len("/etc"))}}}
	if !outsideEqual(all, want) {
		t.Fatalf("outside = %+v, want %+v", all, want)
	}
	// Two listed at most.
	two, _ := findOutside(ctx, root, repos, outsideLimits{walked: 100, listed: 2, pathBytes: 1000})
	if two.Count != 4 || !two.Truncated || two.Partial || len(two.Files) != 2 || two.Files[1].Path != "build/out/b.bin" {
		t.Fatalf("listed 2: %+v", two)
	}
	// 20 bytes of paths: a.txt (5) and build/out/b.bin (15); c.txt would fit
	// after it but the list is a prefix.
	short, _ := findOutside(ctx, root, repos, outsideLimits{walked: 100, listed: 10, pathBytes: 20})
	if short.Count != 4 || !short.Truncated || len(short.Files) != 2 {
		t.Fatalf("20 path bytes: %+v", short)
	}
	// The walk reads 9 entries (7 at the top, build/out, out/b.bin; not
	// the repos'): 10 is enough, 3 is not, and the top folder is read only
	// 3 entries deep.
	enough, _ := findOutside(ctx, root, repos, outsideLimits{walked: 10, listed: 10, pathBytes: 1000})
	if !outsideEqual(enough, want) {
		t.Fatalf("walk bound 10: %+v", enough)
	}
	partial, _ := findOutside(ctx, root, repos, outsideLimits{walked: 3, listed: 10, pathBytes: 1000})
	if !partial.Partial || partial.Count > 3 || partial.Truncated {
		t.Fatalf("walk bound 3: %+v", partial)
	}
	// A folder that is gone has nothing outside.
	gone, err := findOutside(ctx, filepath.Join(root, "nope"), repos, outsideBounds)
	if err != nil || !outsideEqual(gone, OutsideFiles{Files: []OutsideFile{}}) {
		t.Fatalf("gone = %+v, %v", gone, err)
	}
}

func outsideEqual(a, b OutsideFiles) bool {
	return a.Count == b.Count && a.TotalBytes == b.TotalBytes && a.Truncated == b.Truncated && a.Partial == b.Partial &&
		a.Files != nil && slices.Equal(a.Files, b.Files)
}
