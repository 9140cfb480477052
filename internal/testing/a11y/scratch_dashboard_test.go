package a11y

// SCRATCH (issue 30 helper): axe-core on the current dashboard's views. Not to keep.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plugboard/plugboard/abi/tasks"
	plughost "github.com/plugboard/plugboard/host"
	"github.com/plugboard/plugboard/internal/testing/browsertest"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

func TestScratchDashboardA11y(t *testing.T) {
	Source(t)
	browsertest.Installed(t)
	plugins, _ := buildtest.Plugins(t, "plugins/tasks-read", "plugins/tasks-write", "plugins/tasks-control", "plugins/tasks-workspace", "plugins/agents")
	repo := filepath.Join(t.TempDir(), "app")
	os.MkdirAll(repo, 0o755)
	os.WriteFile(filepath.Join(repo, "README.md"), []byte("# app\n"), 0o644)
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@e.com", "commit", "-q", "-m", "init"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatal(err, string(out))
		}
	}
	data := t.TempDir()
	ctx := context.Background()
	b, err := plughost.OpenBoard(ctx, plughost.BoardConfig{DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	proj, _ := b.CreateProject(ctx, "demo", []plughost.RepoSpec{{Path: repo}})
	task, _ := b.CreateTask(ctx, tasks.CreateTaskArgs{ProjectID: proj.ID, Title: "Write hello", Description: "echo hello > hello.txt; echo done"})
	b.CreateTask(ctx, tasks.CreateTaskArgs{ProjectID: proj.ID, Title: "Another task", Description: "Something to do"})
	b.Close()
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PLUGBOARD_HTTP_TOKEN=") {
			env = append(env, kv)
		}
	}
	srv := clitest.LaunchHTTP(t, env, []string{"serve", "--http", "127.0.0.1:0", "--plugins", plugins, "--data", data})
	base := "http://" + srv.Addr + "/"
	br := browsertest.Start(t)
	p := br.Page(t)
	p.SetTimeout(60 * time.Second)

	p.Go(base + "#/project/" + proj.ID)
	p.WaitVisible("#board a.task")
	RequireClean(t, p, "board")

	var aid string
	p.Eval(`call("start_task_attempt", {task_id: "`+task.TaskID+`", executor: "SHELL"}).then(r => r.attempt_id)`, &aid)
	t.Logf("attempt %s", aid)

	p.Go(base + "#/task/" + task.TaskID)
	p.WaitText("main", "Write hello")
	time.Sleep(time.Second)
	RequireClean(t, p, "task")

	p.Go(base + "#/attempt/" + aid)
	p.WaitText("#state", "completed")
	p.WaitText("#changes", "hello.txt")
	time.Sleep(time.Second)
	RequireClean(t, p, "attempt")

	p.Go(base + "#/review")
	p.WaitVisible("[data-approve]")
	time.Sleep(time.Second)
	RequireClean(t, p, "review")

	p.Go(base + "#/decisions")
	p.WaitText("#decisions", "start_task_attempt")
	RequireClean(t, p, "decisions")

	p.Go(base + "#/plugins")
	p.WaitText("main", "tasks-read")
	RequireClean(t, p, "plugins")

	p.Go(base + "#/inbox")
	p.WaitText("main", "Inbox")
	time.Sleep(time.Second)
	RequireClean(t, p, "inbox")

	p.Go(base + "#/hosts")
	p.WaitText("#hosts tbody", "(this host)")
	RequireClean(t, p, "hosts")

	phone := browsertest.Start(t, browsertest.Phone()).Page(t)
	phone.SetTimeout(60 * time.Second)
	phone.Go(base + "#/project/" + proj.ID)
	phone.WaitVisible("#board a.task")
	RequireClean(t, phone, "board (phone)")

	tokenFile := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tokenFile, []byte(strings.Repeat("d4sh", 10)), 0o600)
	srv2 := clitest.LaunchHTTP(t, env, []string{"serve", "--http", "0.0.0.0:0", "--http-token-file", tokenFile, "--plugins", plugins, "--data", t.TempDir()})
	port := srv2.Addr[strings.LastIndex(srv2.Addr, ":"):]
	q := br.Page(t)
	q.Go("http://127.0.0.1" + port + "/")
	q.WaitVisible("#login")
	RequireClean(t, q, "login")
	if errs := p.ConsoleErrors(); len(errs) > 0 {
		t.Logf("console errors: %v", errs)
	}
}
