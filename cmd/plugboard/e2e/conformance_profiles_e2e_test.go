package e2e

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/plugin"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// The conformance kit judges every plugin by profiles, through the real
// binary: `plugboard conformance --json` on one plugin of each shape gives
// the verdict a person would — works, works with advice, needs
// configuration: KEY, broken: why — with the shape it saw and the profile
// it held the plugin to, an exit status a plugin's CI can gate on (0 works,
// 1 broken, 3 needs configuration), the settings serve would give through
// --config, and `plugin inspect` and `call` agreeing on each file.

// kitReport is the part of the JSON report these tests read.
type kitReport struct {
	Verdict  string `json:"verdict"`
	ExitCode int    `json:"exit_code"`
	Config   string `json:"config"`
	Plugins  []struct {
		File  string `json:"file"`
		Shape *struct {
			Interface     string `json:"interface"`
			CommandModule bool   `json:"command_module"`
			Text          string `json:"text"`
		} `json:"shape"`
		Profile string `json:"profile"`
		Verdict struct {
			Kind     string   `json:"kind"`
			Text     string   `json:"text"`
			Keys     []string `json:"keys"`
			Settings []string `json:"settings"`
		} `json:"verdict"`
		Calls   int `json:"calls"`
		Results []struct {
			ID       string `json:"id"`
			Tool     string `json:"tool"`
			Severity string `json:"severity"`
			Status   string `json:"status"`
			Message  string `json:"message"`
			Fix      string `json:"fix"`
			Profile  string `json:"profile"`
		} `json:"results"`
	} `json:"plugins"`
}

// kitRun runs `plugboard conformance --json` with args and decodes the
// report; code is the exit status.
func kitRun(t *testing.T, env []string, args ...string) (rep kitReport, code int, stderr string) {
	t.Helper()
	out, stderr, code := runPB(t, t.TempDir(), env, append([]string{"conformance", "--json", "--fuzz", "5", "--call-timeout", "3s"}, args...)...)
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("conformance %q: exit %d, stdout is not the JSON report: %v\n%s\n%s", args, code, err, out, stderr)
	}
	return rep, code, stderr
}

// plainGoWasm builds a Go plugin for wasip1 as its author would with the
// Go toolchain alone: -buildmode=c-shared (a reactor) when cShared, else
// Go's default, a command module exporting _start.
func plainGoWasm(t *testing.T, src string, cShared bool) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), filepath.Base(src)+".wasm")
	args := []string{"build", "-trimpath", "-o", out}
	if cShared {
		args = append(args, "-buildmode=c-shared")
	}
	cmd := exec.Command("go", append(args, "./"+src)...)
	cmd.Dir = buildtest.Root(t)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", src, err, b)
	}
	return out
}

func TestConformanceProfilesE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	root := buildtest.Root(t)
	_, wasm := buildtest.Plugins(t, "plugins/echo", "testdata/plugins/counter", "testdata/plugins/hyperv2", "testdata/plugins/needsconfig")
	// hyper-mcp's own build embeds no manifest section: judge the v2
	// plugin as its authors ship it.
	hyperv2 := plainGoWasm(t, "testdata/plugins/hyperv2", true)
	command := plainGoWasm(t, "testdata/plugins/cmdmodule", false)
	tiny := filepath.Join(t.TempDir(), "tinystyle.wasm")
	gen := exec.Command("go", "run", "./testdata/plugins/cmdmodule/tinystyle/main.go", tiny)
	gen.Dir = root
	if b, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("tinystyle: %v\n%s", err, b)
	}
	env := cleanEnv()

	type want struct {
		verdict, iface, profile string
		command                 bool
		// text is in the verdict's text.
		text string
	}
	check := func(t *testing.T, rep kitReport, file string, w want) {
		t.Helper()
		for _, p := range rep.Plugins {
			if filepath.Base(p.File) != file {
				continue
			}
			if p.Verdict.Kind != w.verdict || !strings.Contains(p.Verdict.Text, w.text) || p.Shape == nil ||
				p.Shape.Interface != w.iface || p.Shape.CommandModule != w.command || p.Profile != w.profile {
				t.Errorf("%s: verdict %+v, shape %+v, profile %q; want %s (%q), %s, command module %v, profile %s",
					file, p.Verdict, p.Shape, p.Profile, w.verdict, w.text, w.iface, w.command, w.profile)
			}
			for _, r := range p.Results {
				// A foreign plugin is never failed for plugboard's house style.
				if w.profile == "base" && r.Status == "fail" && r.Profile == "house" && r.Severity != "advice" {
					t.Errorf("%s: house rule %s/%s failed as %s", file, r.ID, r.Tool, r.Severity)
				}
			}
			return
		}
		t.Errorf("no report of %s", file)
	}

	t.Run("each shape gets its verdict", func(t *testing.T) {
		rep, code, stderr := kitRun(t, env, wasm["echo"], wasm["counter"], hyperv2, tiny, command)
		check(t, rep, "echo.wasm", want{"works", "plugboard-sdk", "house", false, "works"})
		check(t, rep, "counter.wasm", want{"works_with_advice", "extism-mcp-v1", "base", false, "works with advice"})
		check(t, rep, "hyperv2.wasm", want{"needs_configuration", "hyper-mcp-v2", "base", false, "needs configuration: api-key"})
		check(t, rep, "tinystyle.wasm", want{"works_with_advice", "extism-mcp-v1", "base", true, "works with advice"})
		check(t, rep, "cmdmodule.wasm", want{"broken", "extism-mcp-v1", "base", true,
			"Go's runtime is initialised only by _start, which runs main and then exits"})
		if code != 1 || rep.ExitCode != 1 || rep.Verdict != "broken" {
			t.Errorf("exit %d (report %d, %q), want 1: the command module is broken\n%s", code, rep.ExitCode, rep.Verdict, stderr)
		}
	})

	t.Run("a plugin's CI gates on the exit status", func(t *testing.T) {
		if _, code, stderr := kitRun(t, env, wasm["echo"], wasm["counter"], tiny); code != 0 {
			t.Errorf("working plugins: exit %d, want 0\n%s", code, stderr)
		}
		// Held to the house rules, the raw go-pdk servlet fails them.
		rep, code, _ := kitRun(t, env, "--profile", "house", wasm["counter"])
		check(t, rep, "counter.wasm", want{"broken", "extism-mcp-v1", "house", false, "surface."})
		if code != 1 {
			t.Errorf("counter under --profile house: exit %d, want 1", code)
		}
		if _, _, code := runPB(t, t.TempDir(), env, "conformance", "--profile", "lenient", wasm["echo"]); code != 2 {
			t.Errorf("an unknown profile: exit %d, want 2", code)
		}
	})

	t.Run("needs configuration until --config gives it", func(t *testing.T) {
		junit := filepath.Join(t.TempDir(), "report.xml")
		rep, code, _ := kitRun(t, env, "--junit", junit, wasm["needsconfig"])
		check(t, rep, "needsconfig.wasm", want{"needs_configuration", "extism-mcp-v1", "base", false, "needs configuration: FOO_API_KEY, BAR_TOKEN"})
		if code != 3 || rep.ExitCode != 3 || rep.Verdict != "needs_configuration" {
			t.Errorf("exit %d (report %d, %q), want 3", code, rep.ExitCode, rep.Verdict)
		}
		if p := rep.Plugins[0]; !slices.Equal(p.Verdict.Settings, []string{"plugins.settings.needsconfig.config.FOO_API_KEY",
			"plugins.settings.needsconfig.config.BAR_TOKEN"}) {
			t.Errorf("settings named: %q", p.Verdict.Settings)
		}
		// Neither the tool that refuses nor the one that panics without its
		// value is reported as crashing.
		for _, r := range rep.Plugins[0].Results {
			if r.Status == "fail" && r.Severity == "error" && r.ID != "behaviour.config" {
				t.Errorf("%s/%s failed: %s", r.ID, r.Tool, r.Message)
			}
		}
		b, err := os.ReadFile(junit)
		if err != nil {
			t.Fatal(err)
		}
		var suites struct {
			Suites []struct {
				Properties []struct {
					Name  string `xml:"name,attr"`
					Value string `xml:"value,attr"`
				} `xml:"properties>property"`
				Cases []struct {
					Name    string `xml:"name,attr"`
					Failure *struct {
						Type string `xml:"type,attr"`
					} `xml:"failure"`
				} `xml:"testcase"`
			} `xml:"testsuite"`
		}
		if err := xml.Unmarshal(b, &suites); err != nil || len(suites.Suites) != 1 {
			t.Fatalf("JUnit: %v\n%s", err, b)
		}
		props := map[string]string{}
		for _, p := range suites.Suites[0].Properties {
			props[p.Name] = p.Value
		}
		configFailures := 0
		for _, c := range suites.Suites[0].Cases {
			if c.Failure != nil && c.Failure.Type == "needs_configuration" {
				configFailures++
			}
		}
		if props["verdict"] != "needs_configuration" || props["shape"] != "extism-mcp-v1" || props["profile"] != "base" || configFailures != 2 {
			t.Errorf("JUnit properties %v, %d needs_configuration failures", props, configFailures)
		}

		// The settings serve would give: a value from the environment and
		// one from a secret file, in the configuration file serve reads.
		dir := t.TempDir()
		writeJSON(t, filepath.Join(dir, "bar.secret"), "bar-token\n")
		conf := writeJSON(t, filepath.Join(dir, "plugboard.json"), `{"plugins": {"settings": {
			"needsconfig": {"config": {"FOO_API_KEY": "${KIT_E2E_FOO}", "BAR_TOKEN": {"secret_file": "bar.secret"}}},
			"hyperv2": {"config": {"api-key": "k-123"}}}}}`)
		withKey := cleanEnv("KIT_E2E_FOO=foo-key")
		rep, code, stderr := kitRun(t, withKey, "--config", conf, wasm["needsconfig"], hyperv2)
		check(t, rep, "needsconfig.wasm", want{"works_with_advice", "extism-mcp-v1", "base", false, "works"})
		check(t, rep, "hyperv2.wasm", want{"works_with_advice", "hyper-mcp-v2", "base", false, "works"})
		if code != 0 || rep.Config != conf {
			t.Errorf("--config: exit %d, config %q, want 0 and %q\n%s", code, rep.Config, conf, stderr)
		}
		// $PLUGBOARD_CONFIG names the file when --config does not, as for serve.
		if rep, code, _ := kitRun(t, cleanEnv("KIT_E2E_FOO=foo-key", "PLUGBOARD_CONFIG="+conf), wasm["needsconfig"]); code != 0 || rep.Config != conf {
			t.Errorf("$PLUGBOARD_CONFIG: exit %d, config %q", code, rep.Config)
		}
		// A configuration file that does not load is misuse: nothing was judged.
		bad := writeJSON(t, filepath.Join(dir, "bad.json"), `{"plugins": {"settings": {"needsconfig": {"config": {"K": "${}"}}}}}`)
		if _, _, code := runPB(t, dir, env, "conformance", "--config", bad, wasm["needsconfig"]); code != 2 {
			t.Errorf("a bad configuration file: exit %d, want 2", code)
		}
	})

	t.Run("inspect and call agree with the kit", func(t *testing.T) {
		inspect := func(file string) (map[string]any, int) {
			out, stderr, code := runPB(t, t.TempDir(), env, "plugin", "inspect", "--json", file)
			var got map[string]any
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("inspect %s: exit %d, %v\n%s%s", file, code, err, out, stderr)
			}
			return got, code
		}
		shape := func(got map[string]any) string {
			s, _ := got["shape"].(map[string]any)
			iface, _ := s["interface"].(string)
			return iface
		}
		// A hyper-mcp v2 plugin without a section: its lists stand for
		// describe, as serve reads them; nothing is missing.
		got, code := inspect(hyperv2)
		if code != 0 || shape(got) != "hyper-mcp-v2" || got["manifest_source"] != "list_tools" || got["problems"] != nil {
			t.Errorf("inspect hyperv2: exit %d, shape %q, source %v, problems %v", code, shape(got), got["manifest_source"], got["problems"])
		}
		got, code = inspect(tiny)
		if code != 0 || shape(got) != "extism-mcp-v1" || got["problems"] != nil {
			t.Errorf("inspect tinystyle: exit %d, shape %q, problems %v", code, shape(got), got["problems"])
		}
		got, code = inspect(command)
		problems, _ := json.Marshal(got["problems"])
		if code != 1 || !strings.Contains(string(problems), "only by _start") {
			t.Errorf("inspect cmdmodule: exit %d, problems %s", code, problems)
		}
		// An embedded manifest does not make its exports callable: inspect
		// still asks describe of a command module.
		bin, err := os.ReadFile(command)
		if err != nil {
			t.Fatal(err)
		}
		sectioned, err := plugin.SetCustomSection(bin, abi.ManifestSection,
			[]byte(`{"plugin":{"name":"cmdmodule"},"tools":[{"name":"cmd_echo","description":"echo","inputSchema":{"type":"object"}}]}`))
		if err != nil {
			t.Fatal(err)
		}
		withSection := filepath.Join(t.TempDir(), "cmdmodule.wasm")
		if err := os.WriteFile(withSection, sectioned, 0o644); err != nil {
			t.Fatal(err)
		}
		got, code = inspect(withSection)
		problems, _ = json.Marshal(got["problems"])
		if code != 1 || got["manifest_source"] != "section" || !strings.Contains(string(problems), "only by _start") {
			t.Errorf("inspect cmdmodule with a section: exit %d, source %v, problems %s", code, got["manifest_source"], problems)
		}

		// call, through the pipeline serve runs: the command module whose
		// exports work answers; the Go one is not served, and the host's
		// log says why in the kit's and inspect's words, with the fix.
		calls := func(file, tool string) (string, string, int) {
			dir := t.TempDir()
			plugins := filepath.Join(dir, "plugins")
			if err := os.MkdirAll(plugins, 0o755); err != nil {
				t.Fatal(err)
			}
			copyFile(t, file, filepath.Join(plugins, filepath.Base(file)))
			return runPB(t, dir, env, "call", "--data", filepath.Join(dir, "data"), "--plugins", plugins, tool, "{}")
		}
		if out, stderr, code := calls(tiny, "tiny_status"); code != 0 || !strings.Contains(out, `"status": "ok"`) {
			t.Errorf("call tiny_status: exit %d\n%s%s", code, out, stderr)
		}
		if out, stderr, code := calls(command, "cmd_echo"); code != 1 || !strings.Contains(out, "tool_not_found") ||
			!strings.Contains(stderr, "wasmexport function called before runtime initialization") ||
			!strings.Contains(stderr, "Go's runtime is initialised only by _start") || !strings.Contains(stderr, "build a reactor") {
			t.Errorf("call cmd_echo: exit %d\n%s%s", code, out, stderr)
		}
	})
}
