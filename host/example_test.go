package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/plugboard/plugboard/abi/tasks"

	"github.com/plugboard/plugboard/build"
	"github.com/plugboard/plugboard/host"
)

// pluginDir holds the echo plugin, built once for the examples and tests.
var pluginDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "plugboard-host-test")
	if err != nil {
		log.Fatal(err)
	}
	pluginDir = dir
	root, _ := filepath.Abs(filepath.Join(".."))
	if _, err := build.Plugin(context.Background(), filepath.Join(root, "plugins", "echo"), filepath.Join(dir, "echo.wasm"), build.Options{}); err != nil {
		log.Fatalf("build the echo plugin: %v", err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// A Go program runs plugboard inside itself: open a host over a data
// directory and a plugin folder, call a tool through the whole pipeline
// (policy, validation, the sandboxed plugin, the decision log), close it.
// h.ServeStdio or h.Server serve the same tools over MCP.
func Example() {
	ctx := context.Background()
	data, err := os.MkdirTemp("", "plugboard-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(data)

	h, err := host.Open(ctx, host.Config{DataDir: data, PluginDirs: []string{pluginDir}})
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close(ctx)

	res := h.Call(ctx, "echo", json.RawMessage(`{"text":"hello from Go"}`), nil)
	var out struct{ Text string }
	if err := json.Unmarshal(res.Structured, &out); err != nil {
		log.Fatal(err)
	}
	fmt.Println(out.Text)
	// Output: hello from Go
}

// A program that only drives the task board opens it alone: projects over
// git repositories, tasks, attempts — the operator's API, in the shapes
// agents see (abi/tasks).
func ExampleOpenBoard() {
	ctx := context.Background()
	work, err := os.MkdirTemp("", "plugboard-board-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(work)
	repo := filepath.Join(work, "app")
	for _, args := range [][]string{{"init", "-q", "-b", "main", repo},
		{"-C", repo, "-c", "user.name=example", "-c", "user.email=example@plugboard.invalid", "commit", "-q", "--allow-empty", "-m", "start"}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			log.Fatalf("git %v: %v %s", args, err, out)
		}
	}

	b, err := host.OpenBoard(ctx, host.BoardConfig{DataDir: filepath.Join(work, "data")})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	project, err := b.CreateProject(ctx, "app", []host.RepoSpec{{Path: repo}})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := b.CreateTask(ctx, tasks.CreateTaskArgs{ProjectID: project.ID, Title: "Add a README"}); err != nil {
		log.Fatal(err)
	}
	list, err := b.ListTasks(ctx, tasks.ListTasksIn{ProjectID: project.ID})
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range list.Tasks {
		fmt.Println(t.Title, t.Status)
	}
	// Output: Add a README todo
}
