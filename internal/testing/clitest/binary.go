package clitest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// HTTPURLLine matches the line `plugboard serve --http` prints on stderr
// once it serves; its group is the MCP endpoint's URL.
var HTTPURLLine = regexp.MustCompile(`plugboard: serving MCP over HTTP at (http://\S+)`)

// HTTPServer is a plugboard process serving MCP over HTTP.
type HTTPServer struct {
	URL    string // http://127.0.0.1:PORT/mcp
	Addr   string // 127.0.0.1:PORT
	Cmd    *exec.Cmd
	Stderr *SyncBuffer
	Exited chan struct{} // closed when the process has exited
}

// LaunchHTTP runs the plugboard binary (buildtest.Binary) with args and
// env, stops it with SIGINT at the end of the test (killing it after 15 s),
// and waits up to a minute for the URL it prints. Its stderr is logged when
// the test fails.
func LaunchHTTP(t testing.TB, env, args []string) *HTTPServer {
	t.Helper()
	cmd := exec.Command(buildtest.Binary(t), args...)
	cmd.Env = env
	s := &HTTPServer{Cmd: cmd, Stderr: &SyncBuffer{}, Exited: make(chan struct{})}
	cmd.Stderr = s.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(s.Exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-s.Exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-s.Exited
		}
		if t.Failed() {
			t.Logf("server stderr:\n%s", s.Stderr.String())
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		if m := HTTPURLLine.FindStringSubmatch(s.Stderr.String()); m != nil {
			s.URL = m[1]
			s.Addr = strings.TrimSuffix(strings.TrimPrefix(s.URL, "http://"), "/mcp")
			return s
		}
		select {
		case <-s.Exited:
			t.Fatalf("serve exited before serving: %v\nstderr:\n%s", cmd.ProcessState, s.Stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no URL line on stderr after 60s:\n%s", s.Stderr.String())
		}
	}
}

// demoTaskPlugins are the plugins serving the task tools the demo calls.
var demoTaskPlugins = []string{"tasks-read", "tasks-write", "tasks-control", "tasks-workspace"}

// FirstPartyPlugins lists every plugin folder of plugins/ (internal holds
// shared packages, not a plugin), as buildtest.Plugins takes them, and
// skips the test when a task plugin the demo needs is missing.
func FirstPartyPlugins(t testing.TB) []string {
	t.Helper()
	root := buildtest.Root(t)
	entries, err := os.ReadDir(filepath.Join(root, "plugins"))
	if err != nil {
		t.Fatal(err)
	}
	var srcs []string
	have := map[string]bool{}
	for _, e := range entries {
		if e.IsDir() && e.Name() != "internal" {
			srcs = append(srcs, "plugins/"+e.Name())
			have[e.Name()] = true
		}
	}
	for _, p := range demoTaskPlugins {
		if !have[p] {
			t.Skipf("plugins/%s does not exist yet: the demo needs the task plugins (%s)", p, strings.Join(demoTaskPlugins, ", "))
		}
	}
	return srcs
}
