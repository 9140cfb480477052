package conformance_test

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/conformance"
	"github.com/plugboard/plugboard/host"
	"github.com/plugboard/plugboard/host/config"
	"github.com/plugboard/plugboard/host/plugin"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// TestConformanceHyperV2 runs the kit on a hyper-mcp v2 plugin
// (testdata/plugins/hyperv2: list_tools, call_tool and the other v2
// exports, no describe) as hyper-mcp's own build leaves it — no
// plugboard.manifest section — and as `plugboard plugin build` leaves it
// (the section embedded). The kit must check it through its v2 exports:
// every ABI check passes but the two that do not apply to a v2 plugin
// without a section (abi.manifest_section, abi.version), every tool is
// called, and what fails is what would fail any plugin. A foreign plugin,
// it is held to the base profile: plugboard's house rules (an
// outputSchema, closed input schemas) are advice, and v2_needs_key, which
// stops without the api-key the run does not give it, makes the verdict
// needs configuration: api-key — until the settings serve would give it
// (TestConformanceHyperV2Configured).
func TestConformanceHyperV2(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins")
	}
	_, wasm := buildtest.Plugins(t, "testdata/plugins/hyperv2")
	bin, err := os.ReadFile(wasm["hyperv2"])
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := plugin.CustomSection(bin, abi.ManifestSection); !ok || err != nil {
		t.Fatalf("the built plugin has no manifest section (%v)", err)
	}
	bare, err := plugin.RemoveCustomSection(bin, abi.ManifestSection)
	if err != nil {
		t.Fatal(err)
	}
	barePath := filepath.Join(t.TempDir(), "hyperv2.wasm")
	if err := os.WriteFile(barePath, bare, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := conformance.Run(context.Background(), []string{barePath, wasm["hyperv2"]}, conformance.Options{Fuzz: 10})
	if err != nil {
		t.Fatal(err)
	}

	tools := []string{"v2_echo", "v2_fail", "v2_needs_key"}
	// What fails is not about the interface: no tool declares an
	// outputSchema or refuses unknown fields (house rules: advice), and
	// v2_needs_key stops without the api-key the run was not given.
	wantFailed := []string{
		"advice surface.output_schema/v2_echo",
		"advice surface.output_schema/v2_fail",
		"advice surface.output_schema/v2_needs_key",
		"advice surface.unknown_fields/v2_echo",
		"advice surface.unknown_fields/v2_fail",
		"advice surface.unknown_fields/v2_needs_key",
		"error behaviour.config/v2_needs_key",
	}
	// No outputSchema: nothing to validate against; v2_needs_key's valid
	// call and fuzzing wait for its configuration.
	wantSkipped := []string{conformance.CheckFuzz + "/v2_needs_key", conformance.CheckValid + "/v2_needs_key"}
	for _, tool := range tools {
		wantSkipped = append(wantSkipped, conformance.CheckOutput+"/"+tool, conformance.CheckOutputDescribed+"/"+tool)
	}
	slices.Sort(wantSkipped)
	pluginChecks := []string{conformance.CheckWasm, conformance.CheckExports, conformance.CheckImports, conformance.CheckInstantiate,
		conformance.CheckDescribe, conformance.CheckManifest, conformance.CheckVersion, conformance.CheckManifestSection,
		conformance.CheckCapabilityUse, conformance.CheckCapabilities, conformance.CheckSandboxProbe, conformance.CheckSandboxReach}

	// With a section, abi.version applies when `plugin build` recorded an
	// ABI in it; a foreign plugin's section may name none (the build keeps
	// the ABI the plugin declares), and then the version does not apply
	// as without a section.
	var sectioned abi.Manifest
	section, _, _ := plugin.CustomSection(bin, abi.ManifestSection)
	if err := json.Unmarshal(section, &sectioned); err != nil {
		t.Fatal(err)
	}
	var withSection map[string]string
	if sectioned.ABI == 0 {
		withSection = map[string]string{conformance.CheckVersion: "carry no ABI version"}
	}
	for i, c := range []struct {
		name string
		// na: the checks the kit reports as not applicable, with what
		// their message must say.
		na map[string]string
	}{
		{"without a section", map[string]string{
			conformance.CheckManifestSection: "its build embeds no plugboard.manifest section",
			conformance.CheckVersion:         "carry no ABI version",
		}},
		{"with a section", withSection},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := &rep.Plugins[i]
			var text strings.Builder
			_ = (&conformance.Report{Plugins: []conformance.PluginReport{*p}}).WriteText(&text)
			defer func() {
				if t.Failed() {
					t.Logf("report:\n%s", text.String())
				}
			}()
			if !p.HyperV2 || p.Plugin != "hyperv2" || !slices.Equal(p.Tools, tools) {
				t.Errorf("hyper_v2 %v, plugin %q, tools %q", p.HyperV2, p.Plugin, p.Tools)
			}
			if p.Shape == nil || p.Shape.Interface != conformance.InterfaceHyperV2 || p.Shape.CommandModule || p.Profile != conformance.ProfileBase {
				t.Errorf("shape %+v, profile %q", p.Shape, p.Profile)
			}
			if v := p.Verdict; v.Kind != conformance.VerdictNeedsConfig || !slices.Equal(v.Keys, []string{"api-key"}) ||
				v.Text != "needs configuration: api-key" || !slices.Equal(v.Settings, []string{"plugins.settings.hyperv2.config.api-key"}) {
				t.Errorf("verdict %+v, want needs configuration: api-key", v)
			}
			if g := failed(p); !slices.Equal(g, wantFailed) {
				t.Errorf("failed checks\n got  %q\n want %q", g, wantFailed)
			}
			status := map[string]conformance.Status{}
			var skipped, na []string
			for _, r := range p.Results {
				key := r.ID
				if r.Tool != "" {
					key += "/" + r.Tool
				}
				status[key] = r.Status
				switch r.Status {
				case conformance.StatusSkip:
					skipped = append(skipped, key)
				case conformance.StatusNotApplicable:
					na = append(na, key)
					if want, ok := c.na[key]; !ok || !strings.Contains(r.Message, "hyper-mcp v2") || !strings.Contains(r.Message, want) {
						t.Errorf("%s not applicable: %q, want it to say %q", key, r.Message, want)
					}
				}
			}
			slices.Sort(skipped)
			slices.Sort(na)
			if !slices.Equal(skipped, wantSkipped) {
				t.Errorf("skipped checks\n got  %q\n want %q", skipped, wantSkipped)
			}
			if want := slices.Sorted(maps.Keys(c.na)); !slices.Equal(na, want) {
				t.Errorf("not applicable: %q, want %q", na, want)
			}
			// Every plugin-level check ran, and every one that applies passed:
			// exports and describe through the v2 interface.
			for _, id := range pluginChecks {
				want := conformance.StatusPass
				if _, ok := c.na[id]; ok {
					want = conformance.StatusNotApplicable
				}
				if status[id] != want {
					t.Errorf("%s: %q, want %q", id, status[id], want)
				}
			}
			// Every tool was called through the pipeline, v2's call_tool.
			for _, tool := range tools {
				for _, id := range []string{conformance.CheckInvalid, conformance.CheckValid, conformance.CheckFuzz, conformance.CheckCodes} {
					if slices.Contains(wantSkipped, id+"/"+tool) {
						continue
					}
					if s := status[id+"/"+tool]; s != conformance.StatusPass && s != conformance.StatusFail {
						t.Errorf("%s/%s: %q, want it run", id, tool, s)
					}
				}
			}
			if p.Calls == 0 || p.NotApplicable != len(c.na) || p.Skipped != len(wantSkipped) {
				t.Errorf("%d calls, %d not applicable, %d skipped", p.Calls, p.NotApplicable, p.Skipped)
			}
			// The text report says which interface it checked and why each
			// check does not apply.
			if !strings.Contains(text.String(), "hyper-mcp v2") {
				t.Error("the text report does not name the interface")
			}
			for id, why := range c.na {
				if !strings.Contains(text.String(), id) || !strings.Contains(text.String(), why) {
					t.Errorf("the text report does not say why %s does not apply", id)
				}
			}
		})
	}

	// JSON carries the status; JUnit reports it as skipped with why.
	var js strings.Builder
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var decoded struct {
		Plugins []struct {
			HyperV2       bool `json:"hyper_v2"`
			NotApplicable int  `json:"not_applicable"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal([]byte(js.String()), &decoded); err != nil || len(decoded.Plugins) != 2 ||
		!decoded.Plugins[0].HyperV2 || decoded.Plugins[0].NotApplicable != 2 || !strings.Contains(js.String(), `"status": "not_applicable"`) {
		t.Errorf("JSON report: %v %+v", err, decoded)
	}
	if rep.Verdict != conformance.VerdictNeedsConfig || rep.ExitCode != conformance.ExitNeedsConfig || rep.OK {
		t.Errorf("report verdict %q, exit code %d, ok %v; want needs configuration, %d", rep.Verdict, rep.ExitCode, rep.OK, conformance.ExitNeedsConfig)
	}
	var junit strings.Builder
	if err := rep.WriteJUnit(&junit); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(junit.String(), `<skipped message="not applicable to a hyper-mcp v2 plugin`) {
		t.Error("JUnit report does not mark the checks that do not apply as skipped")
	}
}

// TestConformanceHyperV2Configured: given the plugins.settings serve would
// give it (the api-key, converted by serve's own code), v2_needs_key
// answers and the plugin works, with the house rules as advice.
func TestConformanceHyperV2Configured(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins")
	}
	_, wasm := buildtest.Plugins(t, "testdata/plugins/hyperv2")
	settings := map[string]plugin.Settings{"hyperv2": host.LoadSettings(config.PluginSetting{
		Config: map[string]config.ConfigValue{"api-key": config.Literal("k-123")}})}
	rep, err := conformance.Run(context.Background(), []string{wasm["hyperv2"]}, conformance.Options{Fuzz: 10, Settings: settings})
	if err != nil {
		t.Fatal(err)
	}
	p := &rep.Plugins[0]
	if p.Verdict.Kind != conformance.VerdictAdvice || rep.ExitCode != conformance.ExitWorks || !rep.OK {
		var text strings.Builder
		_ = rep.WriteText(&text)
		t.Fatalf("verdict %+v, exit code %d, want works with advice:\n%s", p.Verdict, rep.ExitCode, text.String())
	}
	for _, r := range p.Results {
		if r.Tool == "v2_needs_key" && (r.ID == conformance.CheckValid || r.ID == conformance.CheckFuzz) && r.Status != conformance.StatusPass {
			t.Errorf("%s/v2_needs_key: %q %s, want it run and passed", r.ID, r.Status, r.Message)
		}
		if r.Status == conformance.StatusFail && r.Severity != conformance.SeverityAdvice {
			t.Errorf("%s/%s failed: %s", r.ID, r.Tool, r.Message)
		}
	}
}
