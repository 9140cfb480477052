package gitops

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The 5,000-file fixture is shared by the benchmarks (the framework runs
// each more than once) and removed by TestMain.
var (
	benchOnce sync.Once
	benchRoot string
	benchWT   Clone
	benchBase string
	benchErr  error
)

const benchFiles = 5000

func cleanupBench() {
	if benchRoot != "" {
		os.RemoveAll(benchRoot)
	}
}

// benchFixture is a repository with 5,000 committed files (20 lines each,
// in 50 directories, packed) and an attempt worktree in which 4,500 of them are
// modified, 500 deleted, and 500 new untracked files added: 5,500 changes.
func benchFixture(b *testing.B) (attempt Clone, base string) {
	b.Helper()
	benchOnce.Do(func() { benchErr = buildBenchFixture(b) })
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchWT, benchBase
}

func buildBenchFixture(b *testing.B) error {
	var err error
	if benchRoot, err = os.MkdirTemp("", "gitops-bench-*"); err != nil {
		return err
	}
	repo := filepath.Join(benchRoot, "repo")
	name := func(i int) string { return fmt.Sprintf("dir%02d/file%04d.txt", i%50, i) }
	files := make(map[string]string, benchFiles)
	for i := range benchFiles {
		var s strings.Builder
		for j := range 20 {
			fmt.Fprintf(&s, "line %d of file %d with some text\n", j, i)
		}
		files[name(i)] = s.String()
	}
	gitT(b, benchRoot, "init", "-q", "-b", "main", repo)
	writeFiles(b, repo, files)
	gitT(b, repo, "add", "-A")
	gitT(b, repo, "commit", "-q", "-m", "5000 files")
	// Packed, as in a clone: 5,000 loose objects would make reading the
	// base side of the diff about twice as slow as it is in practice.
	gitT(b, repo, "repack", "-a", "-d", "-q")
	benchWT = Clone{Source: repo, Dir: filepath.Join(benchRoot, "wt"), HostDir: filepath.Join(benchRoot, "hostgit")}
	if benchBase, err = AddClone(b.Context(), benchWT, "pb/bench", "main"); err != nil {
		return err
	}
	for i := range benchFiles {
		p := filepath.Join(benchWT.Dir, filepath.FromSlash(name(i)))
		if i%10 == 0 {
			if err := os.Remove(p); err != nil {
				return err
			}
			continue
		}
		if err := os.WriteFile(p, []byte(files[name(i)]+"changed\n"), 0o644); err != nil {
			return err
		}
	}
	added := make(map[string]string, 500)
	for i := range 500 {
		added[fmt.Sprintf("new%d/n%03d.txt", i%10, i)] = fmt.Sprintf("brand new file %d\nsecond line\n", i)
	}
	writeFiles(b, benchWT.Dir, added)
	return nil
}

func BenchmarkChanges5000(b *testing.B) {
	wt, base := benchFixture(b)
	var n int
	for b.Loop() {
		changes, _, err := Changes(b.Context(), wt, base)
		if err != nil {
			b.Fatal(err)
		}
		n = len(changes)
	}
	if n != 5500 {
		b.Fatalf("%d changes, want 5500", n)
	}
	b.ReportMetric(float64(n), "files")
}

// BenchmarkGitStatus5000 is the baseline for BenchmarkChanges5000: what
// plain `git status` costs on the same worktree.
func BenchmarkGitStatus5000(b *testing.B) {
	wt, _ := benchFixture(b)
	for b.Loop() {
		cmd := exec.CommandContext(b.Context(), "git", "status", "--porcelain")
		cmd.Dir = wt.Dir
		if out, err := cmd.Output(); err != nil || len(out) == 0 {
			b.Fatalf("git status: %v", err)
		}
	}
}

// The rebuild of the host git dir before every git run through it (see
// rebuildHostDir), alone and within the cheapest such run, beside the same
// run without it.

func BenchmarkRebuildHostDir(b *testing.B) {
	repo := newRepo(b, map[string]string{"a.txt": "one\n"})
	c, _ := newClone(b, repo, "pb/x", "main")
	// Nothing to rewrite: every run but the one after a tampering.
	b.Run("intact", func(b *testing.B) {
		for b.Loop() {
			if err := c.rebuildHostDir(b.Context()); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The configuration rewritten each time.
	b.Run("config-changed", func(b *testing.B) {
		cfg := filepath.Join(c.HostDir, "config")
		for b.Loop() {
			b.StopTimer()
			if err := os.WriteFile(cfg, []byte("[core]\n\tbare = true\n"), 0o600); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if err := c.rebuildHostDir(b.Context()); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkHostGit(b *testing.B) {
	repo := newRepo(b, map[string]string{"a.txt": "one\n"})
	c, base := newClone(b, repo, "pb/x", "main")
	b.Run("rebuilt", func(b *testing.B) {
		for b.Loop() {
			if _, err := c.git(b.Context(), false, runOpts{}, "rev-parse", "--verify", base); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("as-is", func(b *testing.B) {
		args := append(append([]string{"--git-dir=" + c.HostDir}, hostConfig...), "rev-parse", "--verify", base)
		for b.Loop() {
			if _, err := run(b.Context(), c.HostDir, runOpts{env: hostEnv}, args...); err != nil {
				b.Fatal(err)
			}
		}
	})
}
