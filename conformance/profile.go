package conformance

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/plugin"
)

// The kit judges every plugin by what any MCP plugin must do (the base
// profile) and holds plugins written for plugboard to its agent-UX house
// rules as well (the house profile). A foreign plugin — an Extism MCP
// servlet, a hyper-mcp plugin, anything built with another PDK — was
// never written to those rules, so failing it for them would tell its
// author nothing about whether it works: it gets them as advice, with
// fixes that fit any PDK.

// Profile is the set of rules a plugin is held to.
type Profile string

// Profiles.
const (
	// ProfileAuto (an option, never a plugin's profile) picks house for a
	// plugin written for plugboard (see houseReason) and base otherwise.
	ProfileAuto Profile = "auto"
	// ProfileBase: what every MCP plugin must do. House rules are advice.
	ProfileBase Profile = "base"
	// ProfileHouse: the base, and plugboard's house rules as they are.
	ProfileHouse Profile = "house"
)

// ParseProfile reads a --profile value ("" is auto).
func ParseProfile(s string) (Profile, error) {
	switch p := Profile(s); p {
	case "":
		return ProfileAuto, nil
	case ProfileAuto, ProfileBase, ProfileHouse:
		return p, nil
	}
	return "", fmt.Errorf("unknown profile %q: want auto, base or house", s)
}

// Shape is what kind of plugin a module is (plugin.Shape), which the kit
// reports and judges some failures by (Shape.Diagnose).
type Shape = plugin.Shape

// Interfaces a module may speak (Shape.Interface).
const (
	InterfacePlugboard = plugin.InterfacePlugboard
	InterfaceExtismMCP = plugin.InterfaceExtismMCP
	InterfaceHyperV2   = plugin.InterfaceHyperV2
	InterfacePlain     = plugin.InterfacePlain
)

// ShapeOf reads a module's shape, in the words the host's log and
// `plugboard plugin inspect` use.
func ShapeOf(info *plugin.Info) Shape { return plugin.ShapeOf(info) }

// SeverityAdvice is a house rule reported to a plugin not held to the
// house profile: a suggestion, which never fails the run, --strict
// included.
const SeverityAdvice Severity = "advice"

// houseChecks are the checks that only plugboard's house rules ask for:
// the description template, output schemas, field descriptions, declared
// rules, closed input schemas. Two checks have a house part only — the
// missing manifest section and the missing ABI version, recorded with
// recorder.house — while their other failures are base.
var houseChecks = map[string]bool{
	CheckDescription:       true,
	CheckDescriptionFields: true,
	CheckOutputSchema:      true,
	CheckInputDescribed:    true,
	CheckOutputDescribed:   true,
	CheckRulesDeclared:     true,
	CheckUnknownFields:     true,
}

// houseReason says why ProfileAuto holds a plugin to the house rules, or
// "" when it does not: only a plugin written for plugboard is — one built
// with plugboard's SDK, one importing plugboard's own host functions, or
// one whose describe itself declares plugboard's ABI version. The
// embedded section's abi does not count: `plugboard plugin build` records
// it in any plugin it builds, foreign ones included.
func houseReason(s Shape, m *module, described []byte) string {
	if s.Interface == InterfacePlugboard {
		return "built with plugboard's SDK (it exports plugboard_buffer and plugboard_call)"
	}
	for _, imp := range m.imports {
		if imp.module == abi.HostModule && !(imp.name == plugin.YieldName && imp.module == plugin.YieldModule) {
			return "it imports plugboard's host functions (" + abi.HostModule + ")"
		}
	}
	var declared struct {
		ABI int `json:"abi"`
	}
	if len(described) > 0 && json.Unmarshal(described, &declared) == nil && declared.ABI > 0 {
		return fmt.Sprintf("its describe declares plugboard's abi %d", declared.ABI)
	}
	return ""
}

// applyProfile sets what the profile makes of house rules: under base,
// every failure of one is advice.
func applyProfile(results []Result, p Profile) {
	if p == ProfileHouse {
		return
	}
	for i := range results {
		if results[i].Profile == ProfileHouse && results[i].Status == StatusFail {
			results[i].Severity = SeverityAdvice
		}
	}
}

// ---- verdicts ----

// VerdictKind is what a person would say of a plugin after the run.
type VerdictKind string

// Verdicts, from best to worst.
const (
	// VerdictWorks: no failure at all.
	VerdictWorks VerdictKind = "works"
	// VerdictAdvice: it works; warnings or advice say what would be better.
	VerdictAdvice VerdictKind = "works_with_advice"
	// VerdictNeedsConfig: its tools stop for configuration the operator
	// has not set (behaviour.config), and nothing else is wrong.
	VerdictNeedsConfig VerdictKind = "needs_configuration"
	// VerdictBroken: an error (or, with --strict, a warning).
	VerdictBroken VerdictKind = "broken"
)

func (v VerdictKind) rank() int {
	switch v {
	case VerdictAdvice:
		return 1
	case VerdictNeedsConfig:
		return 2
	case VerdictBroken:
		return 3
	}
	return 0
}

// Verdict is a plugin's verdict.
type Verdict struct {
	Kind VerdictKind `json:"kind"`
	// Text is the verdict in words: "works", "works with advice",
	// "needs configuration: api-key", "broken: <the first error>".
	Text string `json:"text"`
	// Keys are the configuration keys a plugin needing configuration
	// asked for, and Settings where the operator sets each
	// (plugins.settings.PLUGIN.config.KEY).
	Keys     []string `json:"keys,omitempty"`
	Settings []string `json:"settings,omitempty"`
}

// Exit statuses of `plugboard conformance` (Report.ExitCode), so a
// plugin's CI can gate on them.
const (
	ExitWorks       = 0 // every plugin works (advice and warnings allowed)
	ExitBroken      = 1 // some plugin is broken (with --strict: or has a warning)
	ExitUsage       = 2 // the command was misused: flags, no plugin, a configuration file that does not load
	ExitNeedsConfig = 3 // none is broken, but some need configuration (--config gives it)
)

// verdict decides a plugin's verdict from its counted results.
func (p *PluginReport) verdict(strict bool) Verdict {
	var first *Result
	var keys, settings []string
	config := false
	for i := range p.Results {
		r := &p.Results[i]
		if !r.Failed(strict) {
			continue
		}
		if r.ID == CheckConfig {
			config = true
			for _, k := range r.keys {
				if !slices.Contains(keys, k) {
					keys = append(keys, k)
				}
			}
			for _, k := range r.settings {
				if !slices.Contains(settings, k) {
					settings = append(settings, k)
				}
			}
			continue
		}
		if first == nil || (r.Severity == SeverityError && first.Severity != SeverityError) {
			first = r
		}
	}
	switch {
	case first != nil:
		where := first.ID
		if first.Tool != "" {
			where += " (" + first.Tool + ")"
		}
		why := first.Message
		if first.Severity != SeverityError {
			why += " [a warning, failing under --strict]"
		}
		return Verdict{Kind: VerdictBroken, Text: "broken: " + where + ": " + why}
	case config:
		v := Verdict{Kind: VerdictNeedsConfig, Keys: keys}
		name := p.Plugin
		if name == "" {
			name = strings.TrimSuffix(filepath.Base(p.File), ".wasm")
		}
		for _, k := range keys {
			v.Settings = append(v.Settings, "plugins.settings."+name+".config."+k)
		}
		v.Settings = append(v.Settings, settings...)
		if named := append(slices.Clone(keys), settings...); len(named) == 0 {
			v.Text = "needs configuration (the host could not name the key)"
		} else {
			v.Text = "needs configuration: " + strings.Join(named, ", ")
		}
		return v
	case p.Warnings > 0 || p.Advice > 0:
		return Verdict{Kind: VerdictAdvice, Text: "works with advice"}
	}
	return Verdict{Kind: VerdictWorks, Text: "works"}
}

// ---- configuration the operator has not set ----

// settingRef finds a setting a hint names: plugins.settings.PLUGIN.config.KEY
// (the host's words for missing configuration).
var settingRef = regexp.MustCompile(`plugins\.settings\.[^\s]+?\.config\.([^\s,;]+)`)

// missingConfig reports whether an envelope says the plugin stopped for
// configuration only the operator can set, and the keys. The host knows,
// whatever the plugin's wording: the runtime records every key the plugin
// asked config_get for and did not find, the envelope names them
// (details.missing_config), and when the host judged the failure theirs
// it answers unavailable with the plugin's own code kept in
// details.plugin_code. A failure that merely follows a missing lookup (an
// optional key the plugin probes, then an argument it refuses) keeps the
// plugin's code and is the agent's: not counted, unless anyCode (describe,
// which takes no arguments, fails for nothing else).
func missingConfig(env *abi.Envelope, anyCode bool) (keys []string, ok bool) {
	if env == nil {
		return nil, false
	}
	switch v := env.Details["missing_config"].(type) {
	case []string:
		keys = slices.Clone(v)
	case []any:
		for _, k := range v {
			if s, isString := k.(string); isString && s != "" {
				keys = append(keys, s)
			}
		}
	}
	if len(keys) == 0 {
		return nil, false
	}
	_, judged := env.Details["plugin_code"]
	return keys, anyCode || judged || env.Code == abi.CodeUnavailable
}

// configFix says how to give a plugin the configuration an envelope says
// it lacks: the settings the host's hint names, in a configuration file
// the kit reads as serve does.
func configFix(env *abi.Envelope) string {
	var settings []string
	for _, m := range settingRef.FindAllString(env.Hint, -1) {
		m = strings.TrimRight(m, ".)'\"`")
		if !slices.Contains(settings, m) {
			settings = append(settings, m)
		}
	}
	what := "the plugin's configuration (plugins.settings.PLUGIN.config)"
	if len(settings) > 0 {
		what = strings.Join(settings, " and ")
	}
	return "set " + what + " in a configuration file and run the kit with --config FILE, which gives the plugin " +
		"the settings serve gives it from the same file"
}
