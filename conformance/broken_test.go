package conformance_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/conformance"
	"github.com/plugboard/plugboard/host/plugin"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// failed lists a plugin's failed checks as "severity id/tool" (or
// "severity id" for plugin-level checks), sorted.
func failed(p *conformance.PluginReport) []string {
	var out []string
	for _, r := range p.Results {
		if r.Status != conformance.StatusFail {
			continue
		}
		s := string(r.Severity) + " " + r.ID
		if r.Tool != "" {
			s += "/" + r.Tool
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

func byFile(rep *conformance.Report) map[string]*conformance.PluginReport {
	m := map[string]*conformance.PluginReport{}
	for i := range rep.Plugins {
		m[strings.TrimSuffix(filepath.Base(rep.Plugins[i].File), ".wasm")] = &rep.Plugins[i]
	}
	return m
}

// TestConformanceBrokenPlugins runs the kit on plugins that break the rules
// on purpose and asserts exactly which checks fail on which tool.
func TestConformanceBrokenPlugins(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins")
	}
	dir, wasm := buildtest.Plugins(t, "testdata/plugins/badsurface", "testdata/plugins/fragile",
		"testdata/plugins/snoop", "testdata/plugins/rawpdk", "plugins/echo")

	// stale: echo whose embedded manifest no longer matches describe.
	bin, err := os.ReadFile(wasm["echo"])
	if err != nil {
		t.Fatal(err)
	}
	section, _, err := plugin.CustomSection(bin, abi.ManifestSection)
	if err != nil {
		t.Fatal(err)
	}
	var m abi.Manifest
	if err := json.Unmarshal(section, &m); err != nil {
		t.Fatal(err)
	}
	m.Plugin.Version = "9.9.9"
	edited, _ := json.Marshal(m)
	stale, err := plugin.SetCustomSection(bin, abi.ManifestSection, edited)
	if err != nil {
		t.Fatal(err)
	}
	stalePath := filepath.Join(dir, "stale.wasm")
	if err := os.WriteFile(stalePath, stale, 0o644); err != nil {
		t.Fatal(err)
	}
	notWasm := filepath.Join(dir, "notwasm.wasm")
	if err := os.WriteFile(notWasm, []byte("#!/bin/sh\necho not a module\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	paths := []string{wasm["badsurface"], wasm["fragile"], wasm["snoop"], wasm["rawpdk"], stalePath, notWasm}
	rep, err := conformance.Run(context.Background(), paths, conformance.Options{Fuzz: 10})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"badsurface": {
			"error behaviour.output/bad_output",
			"error surface.description/no_headings",
			"error surface.input_fields_described/undescribed",
			"error surface.output_fields_described/undescribed",
			"error surface.rules/rule_not_in_schema",
			"warning surface.root_combinator/root_oneof",
		},
		// The trap is past 64 KiB of text: only fuzzing's huge strings reach it.
		"fragile": {"error behaviour.fuzz/shout"},
		// snoop's tool tries everything, but inside the sandbox nothing
		// works: the kit only warns about the imports that cannot work.
		"snoop": {"warning sandbox.reach"},
		// A plain Extism MCP plugin, held to the base profile: no
		// outputSchema and unknown fields allowed are plugboard's house
		// rules, advice for it.
		"rawpdk":  {"advice surface.output_schema/raw_upper", "advice surface.unknown_fields/raw_upper"},
		"stale":   {"error abi.manifest_section"},
		"notwasm": {"error abi.wasm"},
	}
	got := byFile(rep)
	for name, w := range want {
		p := got[name]
		if p == nil {
			t.Errorf("%s: no report", name)
			continue
		}
		if g := failed(p); !slices.Equal(g, w) {
			var text strings.Builder
			_ = (&conformance.Report{Plugins: []conformance.PluginReport{*p}}).WriteText(&text)
			t.Errorf("%s: failed checks\n got  %q\n want %q\n%s", name, g, w, text.String())
		}
	}
	if rep.OK || rep.Verdict != conformance.VerdictBroken || rep.ExitCode != conformance.ExitBroken {
		t.Errorf("report ok %v, verdict %q, exit code %d despite errors", rep.OK, rep.Verdict, rep.ExitCode)
	}
	// The verdicts a person would give: the SDK plugins held to the house
	// rules, rawpdk working (its advice is not a failure), the rest broken
	// for what their first error says.
	for name, want := range map[string]conformance.VerdictKind{
		"badsurface": conformance.VerdictBroken, "fragile": conformance.VerdictBroken, "snoop": conformance.VerdictAdvice,
		"rawpdk": conformance.VerdictAdvice, "stale": conformance.VerdictBroken, "notwasm": conformance.VerdictBroken,
	} {
		p := got[name]
		if p == nil || p.Verdict.Kind != want {
			t.Errorf("%s: verdict %+v, want %s", name, p.Verdict, want)
			continue
		}
		if want == conformance.VerdictBroken && !strings.HasPrefix(p.Verdict.Text, "broken: ") {
			t.Errorf("%s: verdict text %q does not say why", name, p.Verdict.Text)
		}
	}
	for name, profile := range map[string]conformance.Profile{"badsurface": conformance.ProfileHouse, "fragile": conformance.ProfileHouse,
		"snoop": conformance.ProfileHouse, "rawpdk": conformance.ProfileBase} {
		if p := got[name]; p.Profile != profile {
			t.Errorf("%s: profile %q (%s), want %q", name, p.Profile, p.ProfileReason, profile)
		}
	}

	// Every failure says how to fix it.
	for _, p := range rep.Plugins {
		for _, r := range p.Results {
			if r.Status == conformance.StatusFail && (r.Message == "" || r.Fix == "") {
				t.Errorf("%s: %s/%s failed without a message and a fix: %+v", p.File, r.ID, r.Tool, r)
			}
		}
	}
	// A file that is not a module skips every later check.
	nw := got["notwasm"]
	if nw.Skipped == 0 || nw.Calls != 0 {
		t.Errorf("notwasm: %d skipped, %d calls", nw.Skipped, nw.Calls)
	}
	// The fuzz crash names where the plugin panicked.
	for _, r := range got["fragile"].Results {
		if r.ID == conformance.CheckFuzz && !strings.Contains(r.Message, "fragile/main.go:") {
			t.Errorf("fuzz failure does not name the panic site: %s", r.Message)
		}
	}
}

// TestConformanceFuzzIsReproducible: the same seed gives the same report.
func TestConformanceFuzzIsReproducible(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins")
	}
	_, wasm := buildtest.Plugins(t, "testdata/plugins/fragile")
	var firsts []string
	for range 2 {
		rep, err := conformance.Run(context.Background(), []string{wasm["fragile"]}, conformance.Options{Seed: 7, Fuzz: 30})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rep.Plugins[0].Results {
			if r.ID == conformance.CheckFuzz {
				firsts = append(firsts, r.Message+"|"+strings.Join(r.Details, "|"))
			}
		}
	}
	if len(firsts) != 2 || firsts[0] != firsts[1] {
		t.Errorf("two runs with seed 7 differ:\n%q", firsts)
	}
}
