package board

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/plugboard/plugboard/host/internal/sandbox"
)

// benchRepo is a repository of 200 small committed files, a plausible
// small project for worktree creation.
func benchRepo(b *testing.B) string {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "app")
	for i := range 200 {
		p := filepath.Join(dir, fmt.Sprintf("pkg%02d", i%20), fmt.Sprintf("f%03d.go", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(fmt.Sprintf("package pkg\n\nconst N%d = %d\n", i, i)), 0o644)
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"},
		{"-c", "user.name=b", "-c", "user.email=b@example.com", "commit", "-q", "-m", "initial"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	return dir
}

// BenchmarkStartAttempt times start_task_attempt: validation, one git
// worktree on a new branch, the database rows, and the SHELL process
// spawned — confined by the attempt sandbox (the launcher re-executes this
// binary, which restricts itself and executes bash), and with the sandbox
// off. The process's run is waited for outside the timer.
func BenchmarkStartAttempt(b *testing.B) {
	for _, mode := range []struct {
		name string
		sb   Sandbox
	}{{"sandbox", Sandbox{}}, {"no-sandbox", Sandbox{Off: true}}} {
		b.Run(mode.name, func(b *testing.B) {
			if !mode.sb.Off && !sandbox.Probe().Available {
				b.Skip(sandbox.Probe().Reason)
			}
			ctx := context.Background()
			repo := benchRepo(b)
			bd, err := Open(ctx, Config{DataDir: b.TempDir(), Sandbox: mode.sb})
			if err != nil {
				b.Fatal(err)
			}
			defer bd.Close()
			p, err := bd.CreateProject(ctx, "bench", []RepoSpec{{Path: repo}})
			if err != nil {
				b.Fatal(err)
			}
			task, err := bd.CreateTask(ctx, CreateTaskArgs{ProjectID: p.ID, Title: "bench", Description: "true"})
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				res, err := bd.StartTaskAttempt(ctx, StartArgs{TaskID: task.TaskID, Executor: "SHELL"})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				bd.chains.Wait()
				st, err := bd.GetAttemptStatus(ctx, AttemptArgs{AttemptID: res.AttemptID})
				if err != nil || st.State != "completed" {
					b.Fatalf("attempt ended %+v, %v", st, err)
				}
				b.StartTimer()
			}
		})
	}
}

// BenchmarkGitWorktreeAdd is the baseline for BenchmarkStartAttempt: the
// bare `git worktree add -b` it cannot avoid.
func BenchmarkGitWorktreeAdd(b *testing.B) {
	repo := benchRepo(b)
	root := b.TempDir()
	i := 0
	for b.Loop() {
		i++
		cmd := exec.Command("git", "worktree", "add", "-q", "-b", fmt.Sprintf("bench-%d", i), filepath.Join(root, fmt.Sprint(i)), "main")
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v %s", err, out)
		}
	}
}
