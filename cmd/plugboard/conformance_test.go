package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/conformance"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// conformanceCLI runs `plugboard conformance ARGS` in-process and returns
// stdout, stderr and the exit status.
func conformanceCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), append([]string{"conformance"}, args...), &stdout, &stderr)
	code := 0
	if err != nil {
		code = 1
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
		}
		if ee == nil || ee.err != errSilent {
			stderr.WriteString(err.Error())
		}
	}
	return stdout.String(), stderr.String(), code
}

func TestConformanceCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins")
	}
	_, wasm := buildtest.Plugins(t, "plugins/echo", "testdata/plugins/badsurface", "testdata/plugins/snoop")

	t.Run("a conformant plugin passes with a progress line", func(t *testing.T) {
		out, stderr, code := conformanceCLI(t, "--fuzz", "5", wasm["echo"])
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
		}
		if !regexp.MustCompile(`(?m)^conformance: echo\.wasm: 1 tool, \d+ checks … ok \(\d+\.\ds\)$`).MatchString(stderr) {
			t.Errorf("no progress line on stderr:\n%s", stderr)
		}
		if !strings.Contains(out, "ok    echo.wasm (plugin echo 1.0.0, 1 tool)") || !strings.Contains(out, "0 errors, 0 warnings — ok") {
			t.Errorf("report:\n%s", out)
		}
	})

	t.Run("a broken plugin fails: failures first, JSON and JUnit", func(t *testing.T) {
		junit := filepath.Join(t.TempDir(), "report.xml")
		out, stderr, code := conformanceCLI(t, "--json", "--junit", junit, "--fuzz", "5", wasm["echo"], wasm["badsurface"])
		if code != 1 {
			t.Fatalf("exit %d, want 1\n%s", code, stderr)
		}
		var rep conformance.Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("stdout is not the JSON report: %v\n%s", err, out)
		}
		if rep.OK || rep.Errors != 5 || rep.Warnings != 1 || len(rep.Plugins) != 2 || rep.Seed != 1 || rep.ABI == 0 {
			t.Errorf("report totals: ok=%v errors=%d warnings=%d plugins=%d seed=%d", rep.OK, rep.Errors, rep.Warnings, len(rep.Plugins), rep.Seed)
		}
		// Stable field names.
		var raw map[string]any
		_ = json.Unmarshal([]byte(out), &raw)
		plugin := raw["plugins"].([]any)[1].(map[string]any)
		for _, k := range []string{"file", "plugin", "version", "tools", "duration_ms", "calls", "checks", "errors", "warnings", "ok", "results"} {
			if _, ok := plugin[k]; !ok {
				t.Errorf("plugin report lacks %q", k)
			}
		}
		res := plugin["results"].([]any)[0].(map[string]any)
		for _, k := range []string{"id", "severity", "status"} {
			if _, ok := res[k]; !ok {
				t.Errorf("result lacks %q: %v", k, res)
			}
		}

		b, err := os.ReadFile(junit)
		if err != nil {
			t.Fatal(err)
		}
		var suites struct {
			Tests    int `xml:"tests,attr"`
			Failures int `xml:"failures,attr"`
			Suites   []struct {
				Name     string `xml:"name,attr"`
				Failures int    `xml:"failures,attr"`
				Cases    []struct {
					Name    string `xml:"name,attr"`
					Failure *struct {
						Type string `xml:"type,attr"`
					} `xml:"failure"`
				} `xml:"testcase"`
			} `xml:"testsuite"`
		}
		if err := xml.Unmarshal(b, &suites); err != nil {
			t.Fatalf("JUnit: %v\n%s", err, b)
		}
		if len(suites.Suites) != 2 || suites.Suites[1].Name != "badsurface" || suites.Suites[1].Failures != 5 || suites.Failures != 5 {
			t.Fatalf("JUnit suites: %+v", suites)
		}
		found := false
		for _, c := range suites.Suites[1].Cases {
			if c.Name == "surface.description/no_headings" && c.Failure != nil && c.Failure.Type == "error" {
				found = true
			}
		}
		if !found {
			t.Error("JUnit lacks the failing testcase surface.description/no_headings")
		}

		text, _, _ := conformanceCLI(t, "--fuzz", "5", wasm["echo"], wasm["badsurface"])
		if !strings.HasPrefix(text, "FAIL  badsurface.wasm") {
			t.Errorf("failing plugin not first:\n%s", text)
		}
		if !strings.Contains(text, "error    surface.description") || !strings.Contains(text, "fix: write the description") {
			t.Errorf("text report lacks the failure and its fix:\n%s", text)
		}
	})

	t.Run("warnings pass unless --strict", func(t *testing.T) {
		if _, stderr, code := conformanceCLI(t, "--fuzz", "5", wasm["snoop"]); code != 0 {
			t.Errorf("exit %d with a warning only\n%s", code, stderr)
		}
		if _, _, code := conformanceCLI(t, "--strict", "--fuzz", "5", wasm["snoop"]); code != 1 {
			t.Errorf("--strict: exit %d, want 1", code)
		}
	})
}

func TestConformanceCommandUsage(t *testing.T) {
	if _, _, code := conformanceCLI(t); code != 2 {
		t.Errorf("no plugin: exit %d, want 2", code)
	}
	if _, _, code := conformanceCLI(t, t.TempDir()); code != 2 {
		t.Errorf("a directory: exit %d, want 2", code)
	}
	out, _, code := conformanceCLI(t, "--list")
	if code != 0 {
		t.Fatalf("--list: exit %d", code)
	}
	for _, c := range conformance.Checks {
		if !strings.Contains(out, c.ID) {
			t.Errorf("--list lacks %s", c.ID)
		}
	}
	// --scenarios hands over to the scenario packs (conformance/scenario):
	// a pack that does not load is its misuse exit.
	_, stderr, code := conformanceCLI(t, "--scenarios", filepath.Join(t.TempDir(), "missing.json"), t.TempDir())
	if code != 2 || !strings.Contains(stderr, "missing.json") {
		t.Errorf("--scenarios with a missing pack: exit %d, stderr %q", code, stderr)
	}
}
