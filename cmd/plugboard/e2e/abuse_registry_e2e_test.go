package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/plugin"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// rewriteManifest writes to dst the module src with its embedded manifest
// changed by edit.
func rewriteManifest(t *testing.T, src, dst string, edit func(m map[string]any)) {
	t.Helper()
	wasm, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	raw, ok, err := plugin.CustomSection(wasm, abi.ManifestSection)
	if err != nil || !ok {
		t.Fatalf("%s has no manifest section (%v)", src, err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	raw, err = json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if wasm, err = plugin.SetCustomSection(wasm, abi.ManifestSection, raw); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, wasm, 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitLogs waits until the server's log holds every one of want.
func waitLogs(t *testing.T, s *server, want ...string) {
	t.Helper()
	for _, w := range want {
		waitLog(t, s, w)
	}
}

// TestAbuseImpostorCannotTakeServedNames: a third-party plugin dropped into
// the served folder as 0-helper.wasm declares approve_attempt and
// get_attempt_patch beside its own tool. Sorted first, it used to take both
// from the first-party plugins and answer fake results, while the log
// blamed tasks-control as the duplicate. The board's names are reserved
// for the plugin the operator installed under that name; a newcomer that
// clashes is refused whole and named in the log; what is served keeps its
// names on a hot reload too.
func TestAbuseImpostorCannotTakeServedNames(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	_, wasm := buildtest.Plugins(t, "plugins/tasks-control", "plugins/tasks-workspace", "plugins/echo", "testdata/plugins/impostor")
	dir := t.TempDir()
	for _, name := range []string{"tasks-control", "tasks-workspace", "echo"} {
		copyFile(t, wasm[name], filepath.Join(dir, name+".wasm"))
	}
	copyFile(t, wasm["impostor"], filepath.Join(dir, "0-helper.wasm"))
	s := startServer(t, dir, "--watch", "100ms")
	ctx := context.Background()

	// Who answers: the board refuses an unknown attempt; the impostor
	// would answer anything.
	boardAnswers := func(when string) {
		t.Helper()
		for _, tool := range []string{"approve_attempt", "get_attempt_patch"} {
			res := s.call(t, ctx, tool, map[string]any{"attempt_id": "00000000-0000-4000-8000-000000000000"})
			if strings.Contains(clitest.Text(res), "IMPOSTOR") {
				t.Fatalf("%s: %s answered by the impostor: %s", when, tool, clitest.Text(res))
			}
			if env := clitest.EnvelopeOf(t, res); env.Code != abi.CodeNotFound {
				t.Errorf("%s: %s answered %s, want the board's not_found", when, tool, env.Code)
			}
		}
	}
	boardAnswers("at start")
	names := toolNames(t, s.session)
	if slices.Contains(names, "helper_ping") {
		t.Errorf("the impostor's own tool is served: a plugin that clashes is refused whole (%v)", names)
	}
	waitLogs(t, s, "plugin not served", filepath.Join(dir, "0-helper.wasm"), "approve_attempt (tasks-control's)")
	if strings.Contains(s.stderr.String(), "not served from plugin tasks-control") {
		t.Error("the log blames tasks-control for the impostor's clash")
	}

	// The impostor renamed tasks-control in its manifest, dropped while
	// serving: the operator installed tasks-control as tasks-control.wasm,
	// not as this file.
	rewriteManifest(t, wasm["impostor"], filepath.Join(dir, "00-tasks.wasm"), func(m map[string]any) {
		m["plugin"].(map[string]any)["name"] = "tasks-control"
	})
	waitLogs(t, s, filepath.Join(dir, "00-tasks.wasm"), "a plugin named tasks-control is already served from "+filepath.Join(dir, "tasks-control.wasm"))
	boardAnswers("after a hot drop")

	// A name nobody reserved: echo is served, so a newcomer sorting first
	// and declaring echo beside a tool of its own gets neither.
	rewriteManifest(t, wasm["impostor"], filepath.Join(dir, "0-echo-thief.wasm"), func(m map[string]any) {
		m["plugin"].(map[string]any)["name"] = "echo-thief"
		tools := m["tools"].([]any)
		tools[1].(map[string]any)["name"] = "echo"
		m["tools"] = tools[:2] // helper_ping, echo
	})
	waitLogs(t, s, filepath.Join(dir, "0-echo-thief.wasm"), "tool echo", "echo ("+filepath.Join(dir, "echo.wasm")+")")
	res := s.call(t, ctx, "echo", map[string]any{"text": "who is there"})
	if res.IsError || strings.Contains(clitest.Text(res), "IMPOSTOR") || !strings.Contains(clitest.Text(res), "who is there") {
		t.Errorf("echo after a newcomer declared it: %s", clitest.Text(res))
	}
	if slices.Contains(toolNames(t, s.session), "helper_ping") {
		t.Error("helper_ping served from a plugin refused for a clash")
	}
}

// TestAbuseManifestCaps: a manifest of 40 MB declaring 30,000 tools used to
// be accepted, and every client's tools/list was then 37 MiB. Size, tool
// count and name length are capped at load, with an error naming the cap,
// by plugin inspect and by serve alike.
func TestAbuseManifestCaps(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	_, wasm := buildtest.Plugins(t, "plugins/echo")
	dir := t.TempDir()
	copyFile(t, wasm["echo"], filepath.Join(dir, "echo.wasm"))
	tools := func(n int, desc string) func(m map[string]any) {
		return func(m map[string]any) {
			proto := m["tools"].([]any)[0].(map[string]any)
			var list []any
			for i := range n {
				tool := map[string]any{}
				for k, v := range proto {
					tool[k] = v
				}
				tool["name"] = fmt.Sprintf("t%05d", i)
				tool["description"] = desc
				list = append(list, tool)
			}
			m["tools"] = list
			m["plugin"].(map[string]any)["name"] = fmt.Sprintf("many-%d", n)
		}
	}
	huge := filepath.Join(dir, "huge.wasm") // 30,000 tools, about 40 MB
	rewriteManifest(t, wasm["echo"], huge, tools(30000, strings.Repeat("d", 1300)))
	many := filepath.Join(dir, "many.wasm") // 300 small tools: 60 KiB
	rewriteManifest(t, wasm["echo"], many, tools(300, "Use when: never."))
	long := filepath.Join(dir, "long.wasm")
	rewriteManifest(t, wasm["echo"], long, func(m map[string]any) {
		m["plugin"].(map[string]any)["name"] = "long"
		m["tools"].([]any)[0].(map[string]any)["name"] = strings.Repeat("n", 200)
	})
	if info, err := os.Stat(huge); err != nil || info.Size() < 38<<20 {
		t.Fatalf("the huge module is %v bytes (%v), want about 40 MB", info.Size(), err)
	}

	for file, want := range map[string]string{
		huge: "the cap is 1048576",
		many: "manifest declares 300 tools; the cap is 256 per plugin",
		long: "name must be 1-128",
	} {
		out, err := exec.Command(buildtest.Binary(t), "plugin", "inspect", file).CombinedOutput()
		if err == nil || !strings.Contains(string(out), want) {
			t.Errorf("plugin inspect %s: %v, want a refusal naming %q:\n%.2000s", filepath.Base(file), err, want, out)
		}
		if file == huge && bytes.Count(out, []byte("\n")) > 200 {
			t.Errorf("plugin inspect %s printed %d lines", filepath.Base(file), bytes.Count(out, []byte("\n")))
		}
	}

	s := startServer(t, dir)
	waitLogs(t, s, "huge.wasm", "the cap is 1048576", "many.wasm", "the cap is 256", "long.wasm", "name must be 1-128")
	lt, err := s.session.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(lt)
	if len(lt.Tools) != 1 || lt.Tools[0].Name != "echo" || len(b) > 64<<10 {
		t.Errorf("tools/list serves %d tools in %d bytes, want echo alone", len(lt.Tools), len(b))
	}
}

// TestAbuseListChangedStorm: a plugin saying its tools changed on every
// call made the host list it again and tell every client, once per call.
// Listings of one plugin are spaced a second apart, whatever the rate of
// calls, so clients hear at most one list_changed per second of storm
// (plus the first).
func TestAbuseListChangedStorm(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	dir, _ := buildtest.Plugins(t, "testdata/plugins/hyperuser")
	fc := newFullClient()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-storm", Version: "1"}, fc.options(false, false))
	cmd := exec.Command(buildtest.Binary(t), "serve", "--plugins", dir, "--data", t.TempDir())
	stderr := &clitest.SyncBuffer{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, stderr.String())
	}
	t.Cleanup(func() {
		s.Close()
		if t.Failed() {
			t.Logf("server stderr:\n%s", stderr.String())
		}
	})
	const calls = 300
	start := time.Now()
	for range calls {
		if res := callTool(t, s, "user_notify_tools", map[string]any{}); res.IsError {
			t.Fatalf("user_notify_tools: %+v", res.Content)
		}
		// Room for a listing to end between two calls, as on a loaded
		// machine: the spacing must hold then too, not only while a
		// listing is still running when the next call asks for one.
		time.Sleep(10 * time.Millisecond)
	}
	stormed := time.Since(start)
	// Let the last listing land, then count.
	time.Sleep(2500 * time.Millisecond)
	fc.mu.Lock()
	got := fc.changed["tools"]
	fc.mu.Unlock()
	// Bound by effect: one listing per second of the storm and the wait,
	// plus the first and one pending.
	bound := int((stormed+2500*time.Millisecond)/time.Second) + 2
	t.Logf("%d calls in %v: %d tools/list_changed (bound %d)", calls, stormed, got, bound)
	if got == 0 {
		t.Fatal("the plugin's change never reached the client")
	}
	if got > bound {
		t.Errorf("%d calls saying the tools changed gave the client %d tools/list_changed; at most %d (one a second) should reach it", calls, got, bound)
	}
	if _, err := s.ListTools(ctx, nil); err != nil {
		t.Errorf("tools/list after the storm: %v", err)
	}
}
