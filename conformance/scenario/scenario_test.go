package scenario

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// firstPartyPlugins are what `make build` puts in dist/plugins.
var firstPartyPlugins = []string{"plugins/tasks-read", "plugins/tasks-write", "plugins/tasks-control",
	"plugins/tasks-workspace", "plugins/echo", "plugins/textdiff"}

// sharedCache is the compiled-code cache of every run of these tests, so a
// rerun does not compile the plugins again.
var sharedCache = sync.OnceValue(func() string {
	return filepath.Join(os.TempDir(), "plugboard-scenarios-test-compiled")
})

func liveOptions(t *testing.T) Options {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary and the plugins and runs servers")
	}
	dir, _ := buildtest.Plugins(t, firstPartyPlugins...)
	return Options{Binary: buildtest.Binary(t), PluginDirs: []string{dir}, CacheDir: sharedCache()}
}

// The first-party pack itself runs through every client of the matrix
// (go-sdk, TypeScript SDK, MCP Inspector; stdio and HTTP) in
// conformance/clients.

// wrongPack expects what the first-party plugins do not do.
const wrongPack = `{
  "name": "wrong", "version": "0.0.1",
  "scenarios": [
    {"id": "idle-is-running", "requirement": "Attempt status tool", "name": "Idle attempt said to be running",
     "when": "w", "then": "t",
     "setup": {"attempt": {}},
     "steps": [
       {"call": "get_attempt_status", "args": {"attempt_id": "${attempt_id}"},
        "expect": {"fields": [{"path": "state", "equals": "idle"}]}},
       {"name": "wrong state", "call": "get_attempt_status", "args": {"attempt_id": "${attempt_id}"},
        "expect": {"fields": [{"path": "state", "equals": "running"}, {"path": "latest_session_id", "format": "uuid"}]}}
     ]},
    {"id": "wrong-code", "requirement": "Actionable MCP error envelope", "name": "Wrong error code",
     "steps": [
       {"call": "follow_up", "args": {"action": "send", "attempt_id": "0b6f3ad4-2f58-4e8d-9a51-3f6f0b1a2c3d"},
        "expect": {"error_code": "not_found"}}
     ]},
    {"id": "never-settles", "requirement": "Attempt status tool", "name": "Waits in vain",
     "setup": {"attempt": {}},
     "steps": [
       {"call": "get_attempt_status", "args": {"attempt_id": "${attempt_id}"},
        "wait": {"until": {"fields": [{"path": "state", "equals": "completed"}]}, "timeout_ms": 300}}
     ]},
    {"id": "echo-passes", "requirement": "echo", "name": "Echo echoes",
     "steps": [
       {"call": "echo", "args": {"text": "hi"}, "expect": {"fields": [{"path": "text", "equals": "hi"}]}},
       {"tools": {"select": ["echo"], "instances": [{"tool": "echo", "value": {}, "valid": false}]},
        "expect": {"fields": [{"path": "tools[0].description", "regex": "^Use when:"}]}}
     ]}
  ]
}`

// TestWrongPackFailsPrecisely: a pack that expects the wrong things fails
// each scenario with the step, the expectation and what came back; Main
// reports it as text, JSON and JUnit with exit status 1.
func TestWrongPackFailsPrecisely(t *testing.T) {
	opts := liveOptions(t)
	dir := t.TempDir()
	pack := filepath.Join(dir, "wrong.json")
	os.WriteFile(pack, []byte(wrongPack), 0o644)
	junit := filepath.Join(dir, "junit.xml")
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), []string{"--scenarios", pack, opts.PluginDirs[0], "--binary", opts.Binary,
		"--cache", opts.CacheDir, "--json", "--junit", junit}, &stdout, &stderr)
	if code != 1 {
		t.Fatalf("exit status %d, want 1\nstderr:\n%s", code, stderr.String())
	}
	var rep Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("--json output: %v\n%s", err, stdout.String())
	}
	if rep.Pack != "wrong" || rep.Passed != 1 || rep.Failed != 3 || len(rep.Results) != 4 {
		t.Fatalf("report = %+v", rep)
	}
	want := map[string][]string{
		"idle-is-running": {`step 2 (wrong state): get_attempt_status {"attempt_id":"`, `state: expected == "running", got "idle"`,
			`latest_session_id: expected format uuid, got null`, `result: {`, "spec: WHEN w THEN t"},
		"wrong-code":    {"step 1: follow_up", "expected error code not_found, got missing_required", `(hint: `},
		"never-settles": {"step 1: get_attempt_status", "waited 300ms", `state: expected == "completed", got "idle"`, "last result: {"},
	}
	for _, r := range rep.Results {
		if r.ID == "echo-passes" {
			if r.Status != StatusPass {
				t.Errorf("echo-passes: %s: %s", r.Status, r.Message)
			}
			continue
		}
		if r.Status != StatusFail {
			t.Errorf("%s: status %s, want fail: %s", r.ID, r.Status, r.Message)
		}
		for _, w := range want[r.ID] {
			if !strings.Contains(r.Message, w) {
				t.Errorf("%s: message lacks %q:\n%s", r.ID, w, r.Message)
			}
		}
	}
	if !strings.Contains(stderr.String(), "FAIL  wrong-code — Wrong error code") || !strings.Contains(stderr.String(), "PASS  echo-passes") {
		t.Errorf("progress lines:\n%s", stderr.String())
	}
	b, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var suites junitSuites
	if err := xml.Unmarshal(b, &suites); err != nil {
		t.Fatalf("junit: %v\n%s", err, b)
	}
	if suites.Tests != 4 || suites.Failures != 3 || len(suites.Suites[0].Cases) != 4 || suites.Suites[0].Cases[0].Failure == nil {
		t.Fatalf("junit = %s", b)
	}

	// The text report names the failures and how to rerun one.
	stdout.Reset()
	stderr.Reset()
	code = Main(context.Background(), []string{"--scenarios", pack, "--plugins", opts.PluginDirs[0], "--binary", opts.Binary,
		"--cache", opts.CacheDir, "--run", "^wrong-code$"}, &stdout, &stderr)
	text := stdout.String()
	if code != 1 || !strings.Contains(text, "--- FAIL wrong-code: Wrong error code") || !strings.Contains(text, "0 passed, 1 failed") ||
		!strings.Contains(text, "--run '^wrong-code$'") || strings.Contains(text, "idle-is-running") {
		t.Fatalf("exit %d, text report:\n%s", code, text)
	}
}

func TestMainUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := Main(context.Background(), nil, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "--scenarios PACK is required") {
		t.Fatalf("no args: exit %d, stderr %s", code, stderr.String())
	}
	stderr.Reset()
	dir := t.TempDir()
	pack := filepath.Join(dir, "p.json")
	os.WriteFile(pack, []byte(`{"name": "p", "scenarios": [{"id": "a", "name": "A", "steps": [{"call": "x", "tools": {}}]}]}`), 0o644)
	if code := Main(context.Background(), []string{"--scenarios", pack, dir}, &stdout, &stderr); code != 2 ||
		!strings.Contains(stderr.String(), "scenario 1 (a) step 1: a step needs exactly one of") {
		t.Fatalf("bad pack: exit %d, stderr %s", code, stderr.String())
	}
	stderr.Reset()
	os.WriteFile(pack, []byte(`{"name": "p", "scenarios": [{"id": "a", "name": "A", "steps": [{"sleep_ms": 1}]}]}`), 0o644)
	if code := Main(context.Background(), []string{"--scenarios", pack}, &stdout, &stderr); code != 2 ||
		!strings.Contains(stderr.String(), "no plugin folder") {
		t.Fatalf("no plugins: exit %d, stderr %s", code, stderr.String())
	}
	stderr.Reset()
	if code := Main(context.Background(), []string{"--scenarios", pack, "--run", "zzz", dir}, &stdout, &stderr); code != 2 ||
		!strings.Contains(stderr.String(), `no scenario of p matches "zzz"`) {
		t.Fatalf("filter: exit %d, stderr %s", code, stderr.String())
	}
}

// specScenarios lists the titles of the spec's WHEN/THEN scenarios, one a
// line, in the spec's order: the spec lives outside the repository
// (spec-mcp-task-tools.md in the shared planning folder), and a test that
// reads it there skipped itself on every clean clone, so CI never ran it.
// Regenerate it from the spec with
//
//	grep '^#### Scenario: ' spec-mcp-task-tools.md | sed 's/^#### Scenario: //' > testdata/spec-scenarios.txt
const specScenarios = "testdata/spec-scenarios.txt"

// specBeside is where the spec is when the shared folder sits beside the
// repository (as on the machines this repository is developed and built
// on), relative to this package's directory.
const specBeside = "../../../shared/spec/spec-mcp-task-tools.md"

// specTitles returns the "#### Scenario: " titles of a spec document.
func specTitles(spec string) []string {
	var titles []string
	for _, line := range strings.Split(spec, "\n") {
		if title, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), "#### Scenario: "); ok {
			titles = append(titles, title)
		}
	}
	return titles
}

// TestFirstPartyPackLoads checks the pack's shape without running it:
// every scenario of the spec is there, under its spec title. The titles
// come from specScenarios, which is part of the repository, so the check
// runs everywhere; where the spec itself is at hand, the list must match
// it.
func TestFirstPartyPackLoads(t *testing.T) {
	p, err := Load(filepath.Join("..", "scenarios", "first-party.json"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(specScenarios)
	if err != nil {
		t.Fatalf("the spec's scenario list: %v", err)
	}
	titles := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(titles) < 30 {
		t.Fatalf("%s lists %d scenarios; the spec has 35", specScenarios, len(titles))
	}
	names := map[string]int{}
	for _, sc := range p.Scenarios {
		names[sc.Name]++
	}
	for _, title := range titles {
		if names[title] == 0 {
			t.Errorf("the pack lacks spec scenario %q", title)
		}
		names[title]--
	}

	spec, err := os.ReadFile(specBeside)
	if errors.Is(err, fs.ErrNotExist) {
		t.Logf("the spec is not beside the repository (%s); checked against %s only", specBeside, specScenarios)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if want := specTitles(string(spec)); !slices.Equal(titles, want) {
		t.Errorf("%s is out of date: the spec's scenarios are now\n%s", specScenarios, strings.Join(want, "\n"))
	}
}
