package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/abi"
	plughost "github.com/plugboard/plugboard/host"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// Plain Extism functions as tools, end to end: testdata/plugins/plainfn is
// a module of the kind most Extism plugins are — functions taking input
// bytes and writing output, count_vowels among them, no describe or call —
// which plugboard refuses, saying which setting serves it, until the
// operator describes its functions in plugins.settings.plainfn.tools; then
// they are tools like any other: listed with the configured schemas, their
// arguments checked before the function runs, their failures envelopes,
// their calls in the decision log, under the plugin's deadline.

var plainFnBuild struct {
	once sync.Once
	path string
	err  error
}

// plainFnDir builds testdata/plugins/plainfn (once per source state, cached
// beside buildtest's artifacts) and returns a fresh plugin folder holding
// it as plainfn.wasm. plugboard plugin build needs a describe export, so it
// is built as a reader builds any go-pdk plugin.
func plainFnDir(t *testing.T) string {
	t.Helper()
	root := buildtest.Root(t)
	plainFnBuild.once.Do(func() {
		h := sha256.New()
		for _, f := range []string{"testdata/plugins/plainfn/main.go", "go.mod", "go.sum"} {
			b, err := os.ReadFile(filepath.Join(root, f))
			if err != nil {
				plainFnBuild.err = err
				return
			}
			h.Write(b)
		}
		cache := filepath.Join(os.TempDir(), "plugboard-test-artifacts")
		out := filepath.Join(cache, "plainfn-"+hex.EncodeToString(h.Sum(nil))[:16]+".wasm")
		plainFnBuild.path = out
		if _, err := os.Stat(out); err == nil {
			return
		}
		if err := os.MkdirAll(cache, 0o755); err != nil {
			plainFnBuild.err = err
			return
		}
		cmd := exec.Command("go", "build", "-buildmode=c-shared", "-trimpath", "-o", out+".tmp", "./testdata/plugins/plainfn")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			plainFnBuild.err = fmt.Errorf("go build: %v\n%s", err, b)
			return
		}
		plainFnBuild.err = os.Rename(out+".tmp", out)
	})
	if plainFnBuild.err != nil {
		t.Fatalf("building testdata/plugins/plainfn: %v", plainFnBuild.err)
	}
	b, err := os.ReadFile(plainFnBuild.path)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "plainfn.wasm"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// plainFnSettings describes plainfn's functions. reverse is served as
// mirror (rename applies to these tools as to any), echo as echo_args
// (another export than the tool's name, taking the arguments as JSON).
const plainFnSettings = `{"plugins": {"dirs": ["plugins"], "settings": {"plainfn": {
  "call_timeout": "1s",
  "rename": {"reverse": "mirror"},
  "tools": [
    {"name": "count_vowels", "description": "Counts the vowels of a text.", "input_field": "text", "output": "json",
     "output_schema": {"type": "object", "properties": {"count": {"type": "integer"}, "vowels": {"type": "string"}}, "required": ["count", "vowels"]},
     "annotations": {"read_only": true, "idempotent": true}},
    {"name": "reverse", "description": "Reverses a text.", "input_field": "text"},
    {"name": "echo_args", "export": "echo", "description": "Answers its arguments.", "output": "json",
     "input_schema": {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}, "required": ["n"], "additionalProperties": false}},
    {"name": "fail", "description": "Rejects every text.", "input_field": "text"},
    {"name": "binary", "description": "Answers bytes that are not text.", "input_schema": {"type": "object"}},
    {"name": "spin", "description": "Never returns.", "input_schema": {"type": "object"}}
  ]}}}}`

// writePlainFnConfig writes a configuration file whose plugins folder
// holds plainfn, and returns the file.
func writePlainFnConfig(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Rename(plainFnDir(t), filepath.Join(dir, "plugins")); err != nil {
		t.Fatal(err)
	}
	return writeJSON(t, filepath.Join(dir, "plugboard.json"), body)
}

// TestPlainFunctionRefused: without settings a plain Extism module is not
// served, and serve, call and inspect say why and which setting serves it.
func TestPlainFunctionRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and a plugin")
	}
	dir := plainFnDir(t)
	out, errOut, code := runPB(t, dir, cleanEnv(), "call", "--plugins", dir, "--data", t.TempDir(), "count_vowels", `{"text": "hello"}`)
	if code != 1 || !strings.Contains(out, abi.CodeToolNotFound) {
		t.Errorf("call count_vowels: exit %d\n%s", code, out)
	}
	for _, want := range []string{`msg="plugin skipped"`, "plugin plainfn is a plain Extism module",
		"Serve its functions (binary, count_vowels, echo, fail, reverse, spin) as tools", "plugins.settings.plainfn.tools"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("the log lacks %q:\n%s", want, errOut)
		}
	}

	// It needs configuration, not a rebuild: inspect exits 3, as the
	// conformance kit does for it.
	out, _, code = runPB(t, dir, cleanEnv(), "plugin", "inspect", filepath.Join(dir, "plainfn.wasm"))
	if code != 3 || !strings.Contains(out, "verdict:      needs configuration: plugins.settings.plainfn.tools") || !strings.Contains(out, "PROBLEM:      plugin plainfn is a plain Extism module") ||
		!strings.Contains(out, "plugins.settings.plainfn.tools") || strings.Contains(out, "does not export function") {
		t.Errorf("inspect: exit %d\n%s", code, out)
	}
}

// TestPlainFunctionTools: described in its settings, a plain module's
// functions are served as tools through the whole pipeline.
func TestPlainFunctionTools(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and a plugin")
	}
	file := writePlainFnConfig(t, plainFnSettings)
	dir := filepath.Dir(file)

	out, errOut, code := runPB(t, dir, cleanEnv(), "config", "check", file)
	if want := "plugins.settings (plainfn: call_timeout, rename 1, 6 tools (count_vowels, reverse, echo_args, fail, binary, spin))"; code != 0 || !strings.Contains(out, want) {
		t.Errorf("config check: exit %d\n%s%s\nwant %s", code, out, errOut, want)
	}
	out, _, code = runPB(t, dir, cleanEnv(), "plugin", "inspect", "--config", file, filepath.Join(dir, "plugins", "plainfn.wasm"))
	if code != 0 || !strings.Contains(out, "plugin:       plainfn  (abi 0, manifest from settings)") ||
		!strings.Contains(out, "count_vowels         Counts the vowels of a text.") || strings.Contains(out, "PROBLEM") {
		t.Errorf("inspect --config: exit %d\n%s", code, out)
	}

	data := t.TempDir()
	srv := dialServe(t, cleanEnv(), nil, "--config", file, "--data", data)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	lt, err := srv.session.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]*mcp.Tool{}
	for _, tool := range lt.Tools {
		tools[tool.Name] = tool
	}
	if got := slices.Sorted(maps.Keys(tools)); !slices.Equal(got, []string{"binary", "count_vowels", "echo_args", "fail", "mirror", "spin"}) {
		t.Fatalf("tools/list: %v", got)
	}
	schema := func(v any) string {
		b, _ := json.Marshal(v)
		return string(b)
	}
	cv := tools["count_vowels"]
	if got := schema(cv.InputSchema); got != `{"additionalProperties":false,"properties":{"text":{"type":"string"}},"required":["text"],"type":"object"}` {
		t.Errorf("count_vowels inputSchema %s", got)
	}
	if got := schema(cv.OutputSchema); !strings.Contains(got, `"required":["count","vowels"]`) {
		t.Errorf("count_vowels outputSchema %s", got)
	}
	if cv.Annotations == nil || !cv.Annotations.ReadOnlyHint || !cv.Annotations.IdempotentHint || cv.Description != "Counts the vowels of a text." {
		t.Errorf("count_vowels %+v %+v", cv, cv.Annotations)
	}
	if got := schema(tools["echo_args"].InputSchema); got != `{"additionalProperties":false,"properties":{"n":{"minimum":1,"type":"integer"}},"required":["n"],"type":"object"}` {
		t.Errorf("echo_args inputSchema %s", got)
	}

	t.Run("calls answer", func(t *testing.T) {
		var counted struct {
			Count  int    `json:"count"`
			Vowels string `json:"vowels"`
		}
		structured(t, srv.call(t, ctx, "count_vowels", map[string]any{"text": "Hello, World!"}), &counted)
		if counted.Count != 3 || counted.Vowels != "aeiou" {
			t.Errorf("count_vowels: %+v", counted)
		}
		res := srv.call(t, ctx, "mirror", map[string]any{"text": "stressed ✓"})
		if res.IsError || clitest.Text(res) != "✓ desserts" || res.StructuredContent != nil {
			t.Errorf("mirror: %s %v", clitest.Text(res), res.StructuredContent)
		}
		var echoed map[string]any
		structured(t, srv.call(t, ctx, "echo_args", map[string]any{"n": 3}), &echoed)
		if len(echoed) != 1 || echoed["n"] != float64(3) {
			t.Errorf("echo_args got %v, want its arguments", echoed)
		}
	})

	t.Run("bad arguments are refused before the function runs", func(t *testing.T) {
		for _, c := range []struct {
			tool  string
			args  map[string]any
			code  string
			field string
		}{
			// fail would answer plugin_failed had it run.
			{"fail", map[string]any{}, abi.CodeMissingRequired, "text"},
			{"fail", map[string]any{"text": 5}, abi.CodeInvalidArgument, "text"},
			{"mirror", map[string]any{"text": "a", "more": true}, abi.CodeInvalidArgument, ""},
			{"echo_args", map[string]any{"n": 0}, abi.CodeInvalidArgument, "n"},
		} {
			env := clitest.EnvelopeOf(t, srv.call(t, ctx, c.tool, c.args))
			if env.Code != c.code || (c.field != "" && env.Details["field"] != c.field) {
				t.Errorf("%s %v: %+v, want %s at %q", c.tool, c.args, env, c.code, c.field)
			}
		}
	})

	t.Run("failures are envelopes", func(t *testing.T) {
		env := clitest.EnvelopeOf(t, srv.call(t, ctx, "fail", map[string]any{"text": "no thanks"}))
		if env.Code != abi.CodePluginFailed || !strings.Contains(env.Message, "input rejected: no thanks") || env.Details["tool"] != "fail" {
			t.Errorf("fail: %+v", env)
		}
		env = clitest.EnvelopeOf(t, srv.call(t, ctx, "binary", map[string]any{}))
		if env.Code != abi.CodePluginFailed || !strings.Contains(env.Message, "not UTF-8 text") ||
			!strings.Contains(env.Hint, "plugins.settings.plainfn.tools") {
			t.Errorf("binary: %+v", env)
		}
		start := time.Now()
		env = clitest.EnvelopeOf(t, srv.call(t, ctx, "spin", map[string]any{}))
		if env.Code != abi.CodePluginTimeout || env.Details["timeout_ms"] != float64(1000) || time.Since(start) > 20*time.Second {
			t.Errorf("spin: %+v after %s", env, time.Since(start))
		}
		// The instance that timed out was discarded; the next call runs.
		if res := srv.call(t, ctx, "mirror", map[string]any{"text": "ab"}); clitest.Text(res) != "ba" {
			t.Errorf("after a timeout: %s", clitest.Text(res))
		}
	})

	// The decision log has every call, refused ones too, once the server
	// has written them (it flushes them as it exits).
	srv.session.Close()
	out, errOut, code = runPB(t, dir, cleanEnv(), "audit", "tail", "--data", data, "--json", "--limit", "100")
	if code != 0 {
		t.Fatalf("audit tail: exit %d\n%s", code, errOut)
	}
	var rows []plughost.Decision
	for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		var d plughost.Decision
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatalf("audit tail line %q: %v", line, err)
		}
		rows = append(rows, d)
	}
	find := func(tool, status, code string) *plughost.Decision {
		for i := range rows {
			if rows[i].Tool == tool && rows[i].Status == status && rows[i].ErrorCode == code {
				return &rows[i]
			}
		}
		t.Errorf("no decision log row %s %s %s among %d", tool, status, code, len(rows))
		return nil
	}
	if d := find("count_vowels", "ok", ""); d != nil && (string(d.Result) != `{"count":3,"vowels":"aeiou"}` || !strings.Contains(string(d.Input), "Hello, World!")) {
		t.Errorf("count_vowels row: input %s result %s", d.Input, d.Result)
	}
	find("fail", "error", abi.CodeMissingRequired)
	find("fail", "error", abi.CodePluginFailed)
	find("spin", "error", abi.CodePluginTimeout)
}

// TestPlainFunctionLoadProblems: settings naming an export the module
// lacks, or one without Extism's signature, refuse the plugin at load,
// naming the tool, the setting and the export; so does describing tools
// for a plugin that describes its own.
func TestPlainFunctionLoadProblems(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and a plugin")
	}
	file := writePlainFnConfig(t, `{"plugins": {"dirs": ["plugins"], "settings": {"plainfn": {"tools": [
  {"name": "count_vowels", "description": "Counts vowels.", "input_field": "text"},
  {"name": "count_words", "description": "Counts words.", "input_field": "text"},
  {"name": "add", "description": "Adds.", "input_schema": {"type": "object"}}
]}}}}`)
	dir := filepath.Dir(file)
	if out, errOut, code := runPB(t, dir, cleanEnv(), "config", "check", file); code != 0 {
		t.Errorf("config check (the exports are the module's to say): exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code := runPB(t, dir, cleanEnv(), "call", "--config", file, "--data", t.TempDir(), "count_vowels", `{"text": "hello"}`)
	if code != 1 || !strings.Contains(out, abi.CodeToolNotFound) {
		t.Errorf("call count_vowels: exit %d\n%s", code, out)
	}
	for _, want := range []string{`msg="plugin skipped"`, "plugin plainfn is not loaded",
		`plugins.settings.plainfn.tools[1] (count_words): the module exports no function \"count_words\" (its Extism functions: binary, count_vowels, echo, fail, reverse, spin)`,
		`plugins.settings.plainfn.tools[2] (add): export \"add\" is (i32, i32) -> i32; a tool calls an Extism function, () -> i32`} {
		if !strings.Contains(errOut, want) {
			t.Errorf("the log lacks %s:\n%s", want, errOut)
		}
	}
	out, _, code = runPB(t, dir, cleanEnv(), "plugin", "inspect", "--config", file, filepath.Join(dir, "plugins", "plainfn.wasm"))
	if code != 1 || !strings.Contains(out, `PROBLEM:      plugins.settings.plainfn.tools[2] (add): export "add" is (i32, i32) -> i32`) ||
		!strings.Contains(out, `(count_words): the module exports no function "count_words"`) {
		t.Errorf("inspect --config: exit %d\n%s", code, out)
	}

	// An MCP plugin describes its own tools: settings describing others
	// are refused rather than guessed at.
	pdir, _ := buildtest.Plugins(t, "testdata/plugins/rawpdk")
	file = writeJSON(t, filepath.Join(t.TempDir(), "plugboard.json"), `{"plugins": {"dirs": [`+jsonString(pdir)+`], "settings": {"rawpdk": {"tools": [
  {"name": "raw_upper", "description": "Upper-cases.", "input_field": "text"}]}}}}`)
	out, errOut, code = runPB(t, dir, cleanEnv(), "call", "--config", file, "--data", t.TempDir(), "raw_upper", `{"text": "hello"}`)
	if code != 1 || !strings.Contains(out, abi.CodeToolNotFound) ||
		!strings.Contains(errOut, "plugins.settings.rawpdk.tools describes tools for a plain Extism module: remove the setting") {
		t.Errorf("rawpdk with tools settings: exit %d\n%s\n%s", code, out, errOut)
	}
}
