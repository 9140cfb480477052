package gitops

import (
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestBoundedList: items split across writes are joined, every item is
// counted, only the first max are kept.
func TestBoundedList(t *testing.T) {
	l := &boundedList{max: 2}
	for _, chunk := range []string{"a/o", "ne\x00b", "\x00", "c\x00d\x00e"} {
		if n, err := l.Write([]byte(chunk)); n != len(chunk) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", chunk, n, err)
		}
	}
	l.Write([]byte("\x00"))
	if l.count != 5 || !slices.Equal(l.items, []string{"a/one", "b"}) {
		t.Fatalf("count %d, items %q", l.count, l.items)
	}
}

// TestMergeReportsWhatTheTargetGains: a plan counts every commit and file
// the target branch gains, lists them to their bounds (newest commits
// first, files sorted), and Apply reports the same; an attempt the target
// already has gains nothing.
func TestMergeReportsWhatTheTargetGains(t *testing.T) {
	ctx := t.Context()
	repo := newRepo(t, map[string]string{"README.md": "base\n"})
	gitT(t, repo, "checkout", "-q", "--detach") // main checked out nowhere
	c, base := newClone(t, repo, "attempt", "main")
	const commits, files = MaxGainedCommits + 5, MaxGainedFiles + 7
	// The agent's commits, made in one git process (fast-import), then
	// checked out.
	var stream strings.Builder
	for i := range commits {
		fmt.Fprintf(&stream, "commit refs/heads/attempt\ncommitter t <t@example.invalid> %d +0000\ndata <<EOF\ncommit %d\nEOF\n", 1700000000+i, i)
		if i == 0 {
			fmt.Fprintf(&stream, "from %s\n", base)
		}
		for j := i; j < files; j += commits {
			fmt.Fprintf(&stream, "M 100644 inline f/%03d.txt\ndata 2\nx\n", j)
		}
	}
	gitWithInput(t, c.Dir, stream.String(), "fast-import", "--quiet")
	gitT(t, c.Dir, "reset", "-q", "--hard", "attempt")
	made := strings.Fields(gitT(t, c.Dir, "rev-list", base+"..attempt"))
	if len(made) != commits {
		t.Fatalf("made %d commits", len(made))
	}
	p, err := PrepareMerge(ctx, MergeSpec{Repo: c, TargetBranch: "main", Branch: "attempt", Base: base})
	if err != nil {
		t.Fatal(err)
	}
	g := p.Merged
	if g.CommitCount != commits || !slices.Equal(g.Commits, made[:MaxGainedCommits]) {
		t.Fatalf("commits: %d %v, want %d, the newest %d", g.CommitCount, g.Commits, commits, MaxGainedCommits)
	}
	if g.FileCount != files || len(g.Files) != MaxGainedFiles || g.Files[0] != "f/000.txt" || !slices.IsSorted(g.Files) {
		t.Fatalf("files: %d, listed %d: %v", g.FileCount, len(g.Files), g.Files)
	}
	res, err := p.Apply(ctx, "merge")
	if err != nil {
		t.Fatal(err)
	}
	if res.Via != MergedViaRef || res.Merged.CommitCount != commits || res.Merged.FileCount != files {
		t.Fatalf("apply: %+v", res)
	}
	if got := gitT(t, repo, "diff-tree", "-r", "--name-only", "main^1", "main"); len(strings.Fields(got)) != files {
		t.Fatalf("main gained %d files, want %d", len(strings.Fields(got)), files)
	}

	// Approved again with nothing new: the target has it all.
	again, err := PrepareMerge(ctx, MergeSpec{Repo: c, TargetBranch: "main", Branch: "attempt", Base: base})
	if err != nil {
		t.Fatal(err)
	}
	res, err = again.Apply(ctx, "merge")
	if err != nil || res.Via != MergedViaUpToDate || res.Merged.CommitCount != 0 || res.Merged.FileCount != 0 || res.Merged.Commits != nil {
		t.Fatalf("second apply: %+v, %v", res, err)
	}
}

// gitWithInput runs git in dir with stdin and fails the test on error.
func gitWithInput(t testing.TB, dir, stdin string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Stdin = dir, strings.NewReader(stdin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s in %s: %v: %s", strings.Join(args, " "), dir, err, out)
	}
}
