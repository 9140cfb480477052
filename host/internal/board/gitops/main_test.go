package gitops

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	// Hermetic git: no user or system configuration (hooks, diff settings,
	// signing), and an identity for the commits the tests make.
	for k, v := range map[string]string{
		"GIT_CONFIG_GLOBAL":   os.DevNull,
		"GIT_CONFIG_NOSYSTEM": "1",
		"GIT_AUTHOR_NAME":     "gitops test",
		"GIT_AUTHOR_EMAIL":    "gitops@example.invalid",
		"GIT_COMMITTER_NAME":  "gitops test",
		"GIT_COMMITTER_EMAIL": "gitops@example.invalid",
	} {
		os.Setenv(k, v)
	}
	code := m.Run()
	cleanupBench()
	os.Exit(code)
}

// gitT runs git in dir for test setup and fails the test on error.
func gitT(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s in %s: %v: %s", strings.Join(args, " "), dir, err, stderr.Bytes())
	}
	return strings.TrimSpace(string(out))
}

// newRepo creates a repository on branch main with files committed.
func newRepo(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	gitT(t, t.TempDir(), "init", "-q", "-b", "main", dir)
	writeFiles(t, dir, files)
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-q", "--allow-empty", "-m", "base")
	return dir
}

func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// newClone makes an attempt's clone of repo on a new branch started from
// branch from, with its directory and host git dir in fresh temporary
// directories, and returns it with the base commit.
func newClone(t testing.TB, repo, branch, from string) (Clone, string) {
	t.Helper()
	c := Clone{Source: repo, Dir: filepath.Join(t.TempDir(), "worktrees", "repo"), HostDir: filepath.Join(t.TempDir(), "gitdirs", "repo")}
	base, err := AddClone(t.Context(), c, branch, from)
	if err != nil {
		t.Fatal(err)
	}
	return c, base
}
