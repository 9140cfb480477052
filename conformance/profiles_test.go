package conformance_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/conformance"
	"github.com/plugboard/plugboard/host"
	"github.com/plugboard/plugboard/host/config"
	"github.com/plugboard/plugboard/host/plugin"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// goWasm builds a Go plugin as its author's own build would — plain
// `go build` for wasip1, not `plugboard plugin build` — so no manifest
// section is embedded and the build mode is the author's: a reactor with
// cShared, else Go's default, a command module exporting _start.
func goWasm(t *testing.T, src string, cShared bool) string {
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

// tinyStyle writes testdata/plugins/cmdmodule/tinystyle's module: a command
// module whose exports work without _start, as TinyGo's do.
func tinyStyle(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "tinystyle.wasm")
	cmd := exec.Command("go", "run", "./testdata/plugins/cmdmodule/tinystyle/main.go", out)
	cmd.Dir = buildtest.Root(t)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go run tinystyle: %v\n%s", err, b)
	}
	return out
}

// TestConformanceProfilesAndShapes runs the kit on one plugin of each
// shape and asserts the verdict a person would give: a first-party plugin
// works under the house rules; a raw go-pdk servlet (counter) works, the
// house rules advice, and fails only when held to them; a Go command
// module is broken, for the precise reason; a command module whose exports
// work without _start works; a plugin needing configuration needs it,
// until the settings serve would give it.
func TestConformanceProfilesAndShapes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins")
	}
	_, wasm := buildtest.Plugins(t, "plugins/echo")
	counter := goWasm(t, "testdata/plugins/counter", true)
	needs := goWasm(t, "testdata/plugins/needsconfig", true)
	command := goWasm(t, "testdata/plugins/cmdmodule", false)
	tiny := tinyStyle(t)
	ctx := context.Background()

	rep, err := conformance.Run(ctx, []string{wasm["echo"], counter, needs, command, tiny}, conformance.Options{Fuzz: 5})
	if err != nil {
		t.Fatal(err)
	}
	got := byFile(rep)
	text := func(p *conformance.PluginReport) string {
		var b strings.Builder
		_ = (&conformance.Report{Plugins: []conformance.PluginReport{*p}}).WriteText(&b)
		return b.String()
	}
	for _, c := range []struct {
		name      string
		verdict   conformance.VerdictKind
		iface     string
		command   bool
		profile   conformance.Profile
		verdictIn string
	}{
		{"echo", conformance.VerdictWorks, conformance.InterfacePlugboard, false, conformance.ProfileHouse, "works"},
		{"counter", conformance.VerdictAdvice, conformance.InterfaceExtismMCP, false, conformance.ProfileBase, "works with advice"},
		{"needsconfig", conformance.VerdictNeedsConfig, conformance.InterfaceExtismMCP, false, conformance.ProfileBase,
			"needs configuration: FOO_API_KEY, BAR_TOKEN"},
		{"cmdmodule", conformance.VerdictBroken, conformance.InterfaceExtismMCP, true, conformance.ProfileBase,
			"Go's runtime is initialised only by _start"},
		{"tinystyle", conformance.VerdictAdvice, conformance.InterfaceExtismMCP, true, conformance.ProfileBase, "works with advice"},
	} {
		p := got[c.name]
		if p == nil {
			t.Errorf("%s: no report", c.name)
			continue
		}
		if p.Verdict.Kind != c.verdict || !strings.Contains(p.Verdict.Text, c.verdictIn) || p.Shape == nil ||
			p.Shape.Interface != c.iface || p.Shape.CommandModule != c.command || p.Profile != c.profile {
			t.Errorf("%s: verdict %+v, shape %+v, profile %q; want %s (%q), %s, command module %v, %s\n%s",
				c.name, p.Verdict, p.Shape, p.Profile, c.verdict, c.verdictIn, c.iface, c.command, c.profile, text(p))
		}
		// Every failure of a house rule is advice for a plugin held to the
		// base profile, and its fix names no SDK.
		for _, r := range p.Results {
			if r.Status != conformance.StatusFail {
				continue
			}
			if c.profile == conformance.ProfileBase && r.Profile == conformance.ProfileHouse && r.Severity != conformance.SeverityAdvice {
				t.Errorf("%s: house rule %s/%s is %s, want advice", c.name, r.ID, r.Tool, r.Severity)
			}
			if c.iface != conformance.InterfacePlugboard && (strings.Contains(r.Fix, "sdk.") || strings.Contains(r.Fix, "SDK")) {
				t.Errorf("%s: %s/%s: a fix for a foreign plugin names plugboard's SDK: %s", c.name, r.ID, r.Tool, r.Fix)
			}
		}
	}
	// The Go command module: describe traps, for the reason named, with
	// the fix that makes it work.
	for _, r := range got["cmdmodule"].Results {
		if r.ID == conformance.CheckDescribe && (r.Status != conformance.StatusFail || !strings.Contains(r.Message, "command module") ||
			!strings.Contains(r.Message, "wasmexport function called before runtime initialization") || !strings.Contains(r.Fix, "-buildmode=c-shared")) {
			t.Errorf("cmdmodule describe: %+v", r)
		}
		if r.ID == conformance.CheckExports && r.Status != conformance.StatusPass {
			t.Errorf("cmdmodule: abi.exports fails a command module for its shape: %+v", r)
		}
	}
	// The command module that works was called like any plugin.
	if p := got["tinystyle"]; p.Calls == 0 || !strings.Contains(p.Shape.Text, "command module") {
		t.Errorf("tinystyle: %d calls, shape %q", p.Calls, p.Shape.Text)
	}
	// needsconfig: the two tools stopping for configuration are reported
	// under behaviour.config, naming the settings; none is a crash, and
	// lookup, which probes an optional key and refuses an argument, is
	// not blamed on configuration.
	nc := got["needsconfig"]
	if want := []string{"plugins.settings.needsconfig.config.FOO_API_KEY", "plugins.settings.needsconfig.config.BAR_TOKEN"}; !slices.Equal(nc.Verdict.Settings, want) {
		t.Errorf("needsconfig settings %q, want %q", nc.Verdict.Settings, want)
	}
	if g, w := failedNotAdvice(nc), []string{"error behaviour.config/summarize", "error behaviour.config/transcribe"}; !slices.Equal(g, w) {
		t.Errorf("needsconfig failed %q, want %q\n%s", g, w, text(nc))
	}
	if rep.Verdict != conformance.VerdictBroken || rep.ExitCode != conformance.ExitBroken {
		t.Errorf("run verdict %q exit %d, want broken (cmdmodule)", rep.Verdict, rep.ExitCode)
	}

	// Held to the house rules, counter fails them as errors.
	house, err := conformance.Run(ctx, []string{counter}, conformance.Options{Fuzz: 5, Profile: conformance.ProfileHouse})
	if err != nil {
		t.Fatal(err)
	}
	hp := &house.Plugins[0]
	if hp.Verdict.Kind != conformance.VerdictBroken || hp.Profile != conformance.ProfileHouse ||
		!slices.Contains(failedNotAdvice(hp), "error surface.output_schema/count") {
		t.Errorf("counter under --profile house: verdict %+v, failed %q", hp.Verdict, failedNotAdvice(hp))
	}

	// With the configuration serve would give it — read by host/config
	// (an environment variable and a secret file) and converted by serve's
	// own code — needsconfig works, and the only exit status is 0.
	dir := t.TempDir()
	secret := filepath.Join(dir, "bar.secret")
	if err := os.WriteFile(secret, []byte("bar-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KIT_TEST_FOO", "foo-key")
	conf, err := config.Parse(filepath.Join(dir, "plugboard.json"), []byte(`{"plugins": {"settings": {"needsconfig": {"config": {
		"FOO_API_KEY": "${KIT_TEST_FOO}", "BAR_TOKEN": {"secret_file": "bar.secret"}}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]plugin.Settings{}
	for name, s := range conf.Plugins.Settings {
		settings[name] = host.LoadSettings(s)
	}
	configured, err := conformance.Run(ctx, []string{needs}, conformance.Options{Fuzz: 5, Settings: settings})
	if err != nil {
		t.Fatal(err)
	}
	if p := &configured.Plugins[0]; p.Verdict.Kind != conformance.VerdictAdvice || configured.ExitCode != conformance.ExitWorks {
		t.Errorf("needsconfig configured: verdict %+v, exit %d\n%s", p.Verdict, configured.ExitCode, text(p))
	}
}

// failedNotAdvice lists the failed checks but advice, as failed does.
func failedNotAdvice(p *conformance.PluginReport) []string {
	var out []string
	for _, f := range failed(p) {
		if !strings.HasPrefix(f, "advice ") {
			out = append(out, f)
		}
	}
	return out
}

func TestConformanceParseProfile(t *testing.T) {
	for in, want := range map[string]conformance.Profile{"": conformance.ProfileAuto, "auto": conformance.ProfileAuto,
		"base": conformance.ProfileBase, "house": conformance.ProfileHouse} {
		if got, err := conformance.ParseProfile(in); err != nil || got != want {
			t.Errorf("ParseProfile(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := conformance.ParseProfile("strict"); err == nil {
		t.Error("ParseProfile accepts an unknown profile")
	}
}
