package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/abi/tasks"

	"github.com/plugboard/plugboard/build/pluginbuild"
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
	if _, err := pluginbuild.Plugin(context.Background(), filepath.Join(root, "plugins", "echo"), filepath.Join(dir, "echo.wasm"), pluginbuild.Options{}); err != nil {
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
	work, repo := exampleRepo()
	defer os.RemoveAll(work)

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

// The host's tools over MCP: Server is the MCP server of a host, run on any
// go-sdk transport — ServeStdio runs it on stdin and stdout; here an
// in-memory pair connects a client to it.
func ExampleHost_Server() {
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

	serverSide, clientSide := mcp.NewInMemoryTransports()
	if _, err := h.Server("example", "1.0.0").Connect(ctx, serverSide, nil); err != nil {
		log.Fatal(err)
	}
	session, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1.0.0"}, nil).Connect(ctx, clientSide, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()
	fmt.Println(echoOver(ctx, session, "hello over MCP"))
	// Output: hello over MCP
}

// ServeHTTP serves the same tools over streamable HTTP at MCPPath (and the
// web dashboard at "/", left out here) until its context ends.
func ExampleHost_ServeHTTP() {
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

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	serveCtx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() {
		served <- h.ServeHTTP(serveCtx, ln, host.HTTPOptions{Name: "example", Version: "1.0.0", NoDashboard: true})
	}()

	transport := &mcp.StreamableClientTransport{Endpoint: "http://" + ln.Addr().String() + host.MCPPath}
	session, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1.0.0"}, nil).Connect(ctx, transport, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(echoOver(ctx, session, "hello over HTTP"))
	session.Close()
	stop()
	if err := <-served; err != nil {
		log.Fatal(err)
	}
	// Output: hello over HTTP
}

// echoOver calls the echo tool through an MCP session and returns the text
// it sent back.
func echoOver(ctx context.Context, session *mcp.ClientSession, text string) string {
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
	if err != nil {
		log.Fatal(err)
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		log.Fatal(err)
	}
	var out struct{ Text string }
	if err := json.Unmarshal(raw, &out); err != nil {
		log.Fatal(err)
	}
	return out.Text
}

// A project and its repositories read back by name (or id), in this
// package's types: the board's records as the operator sees them.
func ExampleBoard_FindProject() {
	ctx := context.Background()
	work, repo := exampleRepo()
	defer os.RemoveAll(work)

	b, err := host.OpenBoard(ctx, host.BoardConfig{DataDir: filepath.Join(work, "data")})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	if _, err := b.CreateProject(ctx, "app", []host.RepoSpec{{Path: repo, Name: "web"}}); err != nil {
		log.Fatal(err)
	}
	project, err := b.FindProject(ctx, "app")
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range project.Repos {
		fmt.Println(project.Name, r.Name, r.TargetBranch)
	}
	_, err = b.FindProject(ctx, "no-such-project")
	fmt.Println(errors.Is(err, host.ErrNotFound))
	// Output:
	// app web main
	// true
}

// Every call a host makes goes into its decision log. DecisionLog reads it
// without opening the board — what `plugboard audit tail` does while a
// server writes.
func ExampleDecisionLog() {
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
	if res := h.Call(ctx, "echo", json.RawMessage(`{"text":"logged"}`), nil); res.IsError() {
		log.Fatal(res.Envelope)
	}
	if err := h.Close(ctx); err != nil {
		log.Fatal(err)
	}

	decisions, err := host.DecisionLog(ctx, data, "")
	if err != nil {
		log.Fatal(err)
	}
	defer decisions.Close()
	rows, err := decisions.Decisions(ctx, host.DecisionFilter{Tool: "echo"})
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range rows {
		fmt.Println(d.Kind, d.Tool, d.Status, d.AgentID == host.LocalID)
	}
	// Output: call echo ok true
}

// exampleRepo makes a temporary directory holding a git repository with
// one commit (work/app), as a project's repository: the caller removes
// work.
func exampleRepo() (work, repo string) {
	work, err := os.MkdirTemp("", "plugboard-board-example")
	if err != nil {
		log.Fatal(err)
	}
	repo = filepath.Join(work, "app")
	for _, args := range [][]string{{"init", "-q", "-b", "main", repo},
		{"-C", repo, "-c", "user.name=example", "-c", "user.email=example@plugboard.invalid", "commit", "-q", "--allow-empty", "-m", "start"}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			log.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	return work, repo
}
