package e2e

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// One corpus of plugins in every shape plugboard meets — its own SDK, a
// go-pdk servlet, a strict parser, a malformed schema, one that needs
// configuration, a hyper-mcp v2 plugin, a TinyGo-style command module, a
// Go command module and a plain Extism module — judged three ways through
// the real binary: `plugboard conformance` (JSON and text), `plugboard
// plugin inspect` (JSON), and `plugboard serve` (what tools/list serves,
// what its log and its calls say). Each file gets the verdict a person
// would give it, and the three agree: what the kit calls broken, inspect
// calls broken and serve does not serve whole; what needs configuration
// names the setting in all three; the tools serve lists are the tools the
// kit judged served. Then the same with a configuration file that gives
// every setting, through --config for the kit and inspect and serve.

// corpusWant is what a person would say of one corpus file.
type corpusWant struct {
	kit     string   // the kit's verdict kind
	inspect string   // inspect's verdict kind (loads, needs_configuration, broken)
	text    string   // in both verdicts' text, when they name a reason
	served  []string // the tools serve lists of the file
}

func TestCorpusVerdictsAgree(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	root := buildtest.Root(t)
	_, first := buildtest.Plugins(t, "plugins/echo")
	pluginDir, wasm := foreignCorpus(t, "testdata/plugins/counter", "testdata/plugins/strictparse", "testdata/plugins/badschema",
		"testdata/plugins/needsconfig")
	copyFile(t, first["echo"], filepath.Join(pluginDir, "echo.wasm"))
	wasm["echo"] = filepath.Join(pluginDir, "echo.wasm")
	for name, built := range map[string]string{
		"hyperv2":   plainGoWasm(t, "testdata/plugins/hyperv2", true),
		"cmdmodule": plainGoWasm(t, "testdata/plugins/cmdmodule", false),
		"plainfn":   filepath.Join(plainFnDir(t), "plainfn.wasm"),
	} {
		wasm[name] = filepath.Join(pluginDir, name+".wasm")
		copyFile(t, built, wasm[name])
	}
	wasm["tinystyle"] = filepath.Join(pluginDir, "tinystyle.wasm")
	gen := exec.Command("go", "run", "./testdata/plugins/cmdmodule/tinystyle/main.go", wasm["tinystyle"])
	gen.Dir = root
	if b, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("tinystyle: %v\n%s", err, b)
	}
	echoTools := servedByInspect(t, wasm["echo"])
	files := slices.Sorted(func(yield func(string) bool) {
		for name := range wasm {
			if !yield(name) {
				return
			}
		}
	})

	bare := map[string]corpusWant{
		"echo":        {kit: "works", inspect: "loads", served: echoTools},
		"counter":     {kit: "works_with_advice", inspect: "loads", served: []string{"count"}},
		"strictparse": {kit: "works_with_advice", inspect: "loads", served: []string{"strict_echo"}},
		"badschema": {kit: "broken", inspect: "broken", text: `tool "bad_required_string" is not served`,
			served: []string{"bad_required_inside", "bad_type"}},
		"needsconfig": {kit: "needs_configuration", inspect: "loads", text: "FOO_API_KEY",
			served: []string{"lookup", "summarize", "transcribe"}},
		"hyperv2": {kit: "needs_configuration", inspect: "loads", text: "api-key",
			served: []string{"v2_echo", "v2_fail", "v2_needs_key"}},
		"tinystyle": {kit: "works_with_advice", inspect: "loads", served: []string{"tiny_status"}},
		"cmdmodule": {kit: "broken", inspect: "broken", text: "Go's runtime is initialised only by _start"},
		"plainfn":   {kit: "needs_configuration", inspect: "needs_configuration", text: "plugins.settings.plainfn.tools"},
	}
	env := cleanEnv("CORPUS_FOO=foo-key")
	// Both runs of serve share a data directory, as one host's restarts
	// do: the second reads the manifests the first described from the
	// describe cache instead of compiling every module again.
	data := t.TempDir()
	t.Run("without settings", func(t *testing.T) {
		judgeCorpus(t, env, pluginDir, "", data, true, files, wasm, bare)
	})

	// Every setting the corpus asks for, in the file serve reads: the
	// configuration values (one from the environment, one from a secret
	// file) and the plain module's tools.
	dir := t.TempDir()
	writeJSON(t, filepath.Join(dir, "bar.secret"), "bar-token\n")
	conf := writeJSON(t, filepath.Join(dir, "plugboard.json"), `{"plugins": {"dirs": [`+jsonString(pluginDir)+`], "settings": {
		"needsconfig": {"config": {"FOO_API_KEY": "${CORPUS_FOO}", "BAR_TOKEN": {"secret_file": "bar.secret"}}},
		"hyperv2": {"config": {"api-key": "k-123"}},
		"plainfn": {"tools": [
			{"name": "count_vowels", "description": "Counts the vowels of a text.", "input_field": "text", "output": "json"},
			{"name": "reverse", "description": "Reverses a text.", "input_field": "text"}]}}}}`)
	configured := map[string]corpusWant{}
	for name, w := range bare {
		configured[name] = w
	}
	configured["needsconfig"] = corpusWant{kit: "works_with_advice", inspect: "loads", served: bare["needsconfig"].served}
	configured["hyperv2"] = corpusWant{kit: "works_with_advice", inspect: "loads", served: bare["hyperv2"].served}
	configured["plainfn"] = corpusWant{kit: "works_with_advice", inspect: "loads", served: []string{"count_vowels", "reverse"}}
	t.Run("with the settings serve is given", func(t *testing.T) {
		judgeCorpus(t, env, pluginDir, conf, data, false, files, wasm, configured)
	})
}

// servedByInspect is the tools inspect lists of a file.
func servedByInspect(t *testing.T, file string) []string {
	t.Helper()
	out, stderr, code := runPB(t, t.TempDir(), cleanEnv(), "plugin", "inspect", "--json", file)
	var got struct {
		Manifest abi.Manifest `json:"manifest"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != 0 {
		t.Fatalf("inspect %s: exit %d, %v\n%s", file, code, err, stderr)
	}
	var names []string
	for _, tool := range got.Manifest.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// judgeCorpus runs the kit, inspect and serve on the corpus (with the
// configuration file conf, if any; serve with the data directory data)
// and checks each file against want; withText also runs the kit for its
// text report, whose verdicts must be the JSON's.
func judgeCorpus(t *testing.T, env []string, pluginDir, conf, data string, withText bool, files []string, wasm map[string]string,
	want map[string]corpusWant) {
	withConf := func(args ...string) []string {
		if conf == "" {
			return args
		}
		return append([]string{"--config", conf}, args...)
	}
	paths := make([]string, 0, len(files))
	for _, name := range files {
		paths = append(paths, wasm[name])
	}

	// The kit: JSON, then text, whose verdict lines must say the same.
	rep, code, stderr := kitRun(t, env, withConf(paths...)...)
	if code != 1 || rep.Verdict != "broken" {
		t.Errorf("conformance: exit %d, verdict %q; want 1, broken (the corpus holds broken plugins)\n%s", code, rep.Verdict, stderr)
	}
	kit := map[string]string{}
	for _, p := range rep.Plugins {
		name := strings.TrimSuffix(filepath.Base(p.File), ".wasm")
		kit[name] = p.Verdict.Text
		w := want[name]
		if p.Verdict.Kind != w.kit || !strings.Contains(p.Verdict.Text, w.text) {
			t.Errorf("conformance %s: verdict %s (%q), want %s naming %q", name, p.Verdict.Kind, p.Verdict.Text, w.kit, w.text)
		}
		if w.kit == "needs_configuration" && !slices.ContainsFunc(p.Verdict.Settings, func(s string) bool {
			return strings.HasPrefix(s, "plugins.settings."+name+".")
		}) {
			t.Errorf("conformance %s: needs configuration names no setting of the plugin: %q", name, p.Verdict.Settings)
		}
	}
	if withText {
		textOut, _, _ := runPB(t, t.TempDir(), env, append([]string{"conformance", "--fuzz", "5", "--call-timeout", "3s"}, withConf(paths...)...)...)
		verdicts := textVerdicts(textOut)
		if len(verdicts) != len(files) {
			t.Errorf("the text report gives %d verdicts for %d plugins:\n%s", len(verdicts), len(files), textOut)
		}
		for name, verdict := range verdicts {
			if kit[name] != verdict {
				t.Errorf("conformance %s: the text report says %q, the JSON %q", name, verdict, kit[name])
			}
		}
	}

	// inspect, one file at a time, its exit status the kit's.
	for _, name := range files {
		out, errOut, code := runPB(t, t.TempDir(), env, append([]string{"plugin", "inspect", "--json"}, withConf(wasm[name])...)...)
		var got struct {
			Verdict struct {
				Kind     string   `json:"kind"`
				Text     string   `json:"text"`
				Settings []string `json:"settings"`
			} `json:"verdict"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("inspect %s: exit %d, %v\n%s%s", name, code, err, out, errOut)
		}
		w := want[name]
		wantCode := map[string]int{"loads": 0, "broken": 1, "needs_configuration": 3}[w.inspect]
		if got.Verdict.Kind != w.inspect || code != wantCode || (w.inspect != "loads" && !strings.Contains(got.Verdict.Text, w.text)) {
			t.Errorf("inspect %s: exit %d, verdict %s (%q); want %d, %s naming %q", name, code, got.Verdict.Kind, got.Verdict.Text,
				wantCode, w.inspect, w.text)
		}
		// Where inspect judges, the kit agrees: it never passes what
		// inspect calls broken, nor calls broken what inspect loads.
		if (got.Verdict.Kind == "broken") != (w.kit == "broken") {
			t.Errorf("%s: inspect says %s, the kit %s", name, got.Verdict.Kind, w.kit)
		}
	}

	// serve: the tools it lists are the ones judged served; what it
	// refuses, its log says why in the words inspect and the kit used.
	args := []string{"--data", data}
	if conf != "" {
		args = append(args, "--config", conf)
	} else {
		args = append(args, "--plugins", pluginDir)
	}
	srv := dialServe(t, env, nil, args...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lt, err := srv.session.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var listed, wanted []string
	for _, tool := range lt.Tools {
		listed = append(listed, tool.Name)
	}
	for _, name := range files {
		wanted = append(wanted, want[name].served...)
	}
	slices.Sort(listed)
	slices.Sort(wanted)
	if !slices.Equal(listed, wanted) {
		t.Errorf("serve lists %v, want %v", listed, wanted)
	}
	// The log's values are quoted: read them unquoted.
	log := strings.ReplaceAll(srv.stderr.String(), `\"`, `"`)
	for _, name := range files {
		w := want[name]
		if w.inspect == "loads" {
			continue
		}
		if !strings.Contains(log, w.text) {
			t.Errorf("serve's log does not say %q of %s:\n%s", w.text, name, log)
		}
	}
	// A tool the kit found waiting for configuration answers an agent with
	// the setting to make, whatever the plugin said.
	for _, c := range []struct{ plugin, tool, setting string }{
		{"needsconfig", "transcribe", "plugins.settings.needsconfig.config.FOO_API_KEY"},
		{"hyperv2", "v2_needs_key", "plugins.settings.hyperv2.config.api-key"},
	} {
		res := srv.call(t, ctx, c.tool, map[string]any{})
		if want[c.plugin].kit == "needs_configuration" {
			env := clitest.EnvelopeOf(t, res)
			if env.Code != abi.CodeUnavailable || !strings.Contains(env.Hint, c.setting) {
				t.Errorf("%s without its setting: %s, hint %q; want unavailable naming %s", c.tool, env.Code, env.Hint, c.setting)
			}
		} else if res.IsError {
			t.Errorf("%s with its setting: %s", c.tool, clitest.Text(res))
		}
	}
}

// textVerdicts reads each plugin's verdict line off the kit's text report.
func textVerdicts(out string) map[string]string {
	verdicts := map[string]string{}
	current := ""
	for line := range strings.SplitSeq(out, "\n") {
		for _, mark := range []string{"ok    ", "FAIL  ", "CONF  "} {
			if rest, ok := strings.CutPrefix(line, mark); ok {
				file, _, _ := strings.Cut(rest, " ")
				current = strings.TrimSuffix(strings.TrimSuffix(file, ":"), ".wasm")
			}
		}
		if v, ok := strings.CutPrefix(line, "  verdict: "); ok && current != "" {
			verdicts[current] = v
			current = ""
		}
	}
	return verdicts
}
