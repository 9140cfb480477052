package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	plughost "github.com/plugboard/plugboard/host"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// A project of two repositories through `plugboard serve`: the coding agent
// (a bash script run as the FAKE executor from --executors, a real child
// process reading its prompt on stdin) starts in the folder above the two
// clones, writes a file in app, nothing in lib and one file beside the
// clones. get_attempt_changes lists the top-level file as outside any
// repository, and approve_attempt says exactly what it merged: app's
// commit and file, nothing for lib, and a warning for the outside file.

// multiRepoAgentFile writes an executors file whose FAKE profile runs script
// with bash, the prompt on stdin.
func multiRepoAgentFile(t *testing.T, script string) string {
	t.Helper()
	dir := t.TempDir()
	agent := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(agent, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{"executors": []any{map[string]any{
		"executor": "FAKE", "binary": "bash", "output_format": "lines",
		"variants": map[string]any{"DEFAULT": map[string]any{"argv": []string{"bash", agent}, "stdin": "prompt"}},
	}}})
	file := filepath.Join(dir, "executors.json")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// multiRepoGitRepo makes a git repository named name with files committed on main.
func multiRepoGitRepo(t *testing.T, name string, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	for p, content := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, p), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitIn(t, dir, "init", "-q", "-b", "main")
	gitIn(t, dir, "add", "-A")
	gitIn(t, dir, "commit", "-q", "-m", "initial")
	return dir
}

// newMultiRepoScenario serves a board whose project "multi" has the repos
// app and lib, with the FAKE agent of agentScript.
func newMultiRepoScenario(t *testing.T, agentScript string) (sc *specScenario, app, lib string) {
	t.Helper()
	dir, _ := buildtest.Plugins(t, taskPlugins...)
	sc = &specScenario{t: t, data: t.TempDir()}
	shareCompiled(t, sc.data)
	app = multiRepoGitRepo(t, "app", map[string]string{"README.md": "# app\n"})
	lib = multiRepoGitRepo(t, "lib", map[string]string{"lib.go": "package lib\n"})
	b, err := plughost.OpenBoard(context.Background(), plughost.BoardConfig{DataDir: sc.data})
	if err != nil {
		t.Fatal(err)
	}
	p, err := b.CreateProject(context.Background(), "multi", []plughost.RepoSpec{{Path: app}, {Path: lib}})
	b.Close()
	if err != nil {
		t.Fatal(err)
	}
	sc.projectID, sc.repo = p.ID, app
	sc.s = startServer(t, dir, "--data", sc.data, "--executors", multiRepoAgentFile(t, agentScript))
	sc.listTools()
	return sc, app, lib
}

func multiRepoEntry(t *testing.T, repos []obj, name string) obj {
	t.Helper()
	for _, r := range repos {
		if r.str("repo_name") == name {
			return r
		}
	}
	t.Fatalf("no repo %s in %v", name, repos)
	return nil
}

func multiRepoStrings(o obj, key string) []string {
	items, _ := o[key].([]any)
	out := make([]string, len(items))
	for i, it := range items {
		out[i], _ = it.(string)
	}
	return out
}

func TestMultiRepoAttemptReportsOutsideFilesAndWhatItMerged(t *testing.T) {
	agent := `prompt=$(cat)
echo "cwd=$PWD"
printf '%s\n' "$prompt"
echo feature > app/feature.txt
echo "beside the clones" > notes.txt
`
	sc, app, lib := newMultiRepoScenario(t, agent)
	libTip := gitIn(t, lib, "rev-parse", "main")
	taskID := sc.createTask("Add the feature", "Write app/feature.txt.")
	attemptID := sc.ok("start_task_attempt", map[string]any{"task_id": taskID, "executor": "FAKE"}).str("attempt_id")
	if st := sc.waitSettled(attemptID); st.str("task_status") != "inreview" || st.str("state") != "completed" {
		t.Fatalf("attempt did not end in review: %v", st)
	}

	// The agent started above the clones and was told where it stands.
	root := filepath.Join(sc.data, "worktrees", attemptID)
	sc.waitLog(attemptID, "cwd="+root)
	sc.waitLog(attemptID, "Workspace: the current folder holds one git clone per repository of this task: "+
		"app/ (merged into main), lib/ (merged into main). Make every change inside those folders (e.g. app/path/to/file). "+
		"A file written in the current folder itself, beside them, is in no repository: it is not merged when your work is approved.")

	changes := sc.ok("get_attempt_changes", map[string]any{"attempt_id": attemptID})
	if files := changes.list("files"); len(files) != 1 || files[0].str("path") != "app/feature.txt" {
		t.Fatalf("changed files = %v", changes)
	}
	outside := changes.obj("outside")
	if of := outside.list("files"); outside.num("count") != 1 || outside.num("total_bytes") != 18 || len(of) != 1 ||
		of[0].str("path") != "notes.txt" || of[0].num("bytes") != 18 || outside.bool("truncated") || outside.bool("partial") {
		t.Fatalf("outside = %v", outside)
	}
	queue := sc.ok("review_queue", map[string]any{"project_id": sc.projectID})
	if items := queue.list("tasks"); len(items) != 1 || items[0].obj("changes").num("file_count") != 1 || items[0].obj("changes").num("outside_count") != 1 {
		t.Fatalf("review_queue = %v", queue)
	}

	res := sc.ok("approve_attempt", map[string]any{"attempt_id": attemptID})
	a := multiRepoEntry(t, res.list("repos"), "app")
	if !a.bool("merged") || a.str("merged_via") != "worktree" || a.num("commit_count") != 1 ||
		!slices.Equal(multiRepoStrings(a, "commits"), []string{a.str("changes_commit")}) || a.num("file_count") != 1 ||
		!slices.Equal(multiRepoStrings(a, "files"), []string{"app/feature.txt"}) {
		t.Fatalf("app = %v", a)
	}
	l := multiRepoEntry(t, res.list("repos"), "lib")
	if l.bool("merged") || l.str("merged_via") != "up_to_date" || l.str("merge_commit") != libTip || !l.null("changes_commit") ||
		l.num("commit_count") != 0 || len(multiRepoStrings(l, "commits")) != 0 || l.num("file_count") != 0 || len(multiRepoStrings(l, "files")) != 0 {
		t.Fatalf("lib = %v", l)
	}
	want := "app@main: merged 1 commit, 1 file (merge commit " + a.str("merge_commit")[:12] + "); lib@main: nothing to merge; " +
		"not merged: 1 file outside any repository"
	if !res.bool("merged") || res.str("summary") != want || res.obj("outside").num("count") != 1 || res.str("task_status") != "done" {
		t.Fatalf("approve_attempt = %v\nwant summary %q", res, want)
	}
	if w := multiRepoStrings(res, "warnings"); len(w) != 1 || !strings.Contains(w[0], "not merged: notes.txt") || !strings.Contains(w[0], "request_changes") {
		t.Fatalf("warnings = %q", w)
	}

	// The repositories: app's main has the file, lib's has not moved, and
	// neither has the top-level one.
	if gitIn(t, app, "rev-parse", "main") != a.str("merge_commit") || gitIn(t, app, "show", "main:feature.txt") != "feature" {
		t.Fatal("app's main lacks the merge")
	}
	if gitIn(t, lib, "rev-parse", "main") != libTip {
		t.Fatal("lib's main moved with nothing to merge")
	}
	for _, repo := range []string{app, lib} {
		if files := gitIn(t, repo, "ls-tree", "-r", "--name-only", "main"); strings.Contains(files, "notes.txt") {
			t.Fatalf("%s has the top-level file: %s", repo, files)
		}
	}
}
