package conformance

import (
	"bytes"
	"encoding/json"
	"errors"
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

// Interfaces a module may speak (Shape.Interface).
const (
	InterfacePlugboard = "plugboard-sdk"
	InterfaceExtismMCP = "extism-mcp-v1"
	InterfaceHyperV2   = "hyper-mcp-v2"
	InterfacePlain     = "plain-extism"
)

// Shape is what kind of plugin a module is, read off its exports, imports
// and custom sections as the host's registry tells them apart.
type Shape struct {
	// Interface is how the host talks to it: plugboard-sdk (describe and
	// call, with the plugboard_buffer/plugboard_call pair plugboard's SDK
	// exports), extism-mcp-v1 (an Extism MCP servlet: describe and call),
	// hyper-mcp-v2 (list_tools and call_tool, no describe) or
	// plain-extism (none of these: the module cannot list tools).
	Interface string `json:"interface"`
	// CommandModule: the module exports _start, a WASI command. The host
	// never runs _start (it runs _initialize if exported, then calls the
	// exports), so such a module works exactly when its exports work
	// without it — as TinyGo's //export functions can, and Go's
	// go:wasmexport functions cannot.
	CommandModule bool `json:"command_module"`
	// Reactor: the module exports _initialize, which the host runs once
	// per instance.
	Reactor bool `json:"reactor"`
	// Toolchain is what built it, from the producers section ("Go",
	// "TinyGo", "Rust", "C/C++", "Zig", "AssemblyScript"), else "".
	Toolchain string `json:"toolchain,omitempty"`
	// Text says all of it in words.
	Text string `json:"text"`
}

// ShapeOf reads a module's shape.
func ShapeOf(info *plugin.Info) Shape {
	fn := func(name string) bool {
		e, ok := info.Export(name)
		return ok && e.Kind == plugin.KindFunc
	}
	var s Shape
	var what string
	switch {
	// registry.IsHyperV2's rule: describe wins when both are exported.
	case !fn(abi.ExportDescribe) && fn(plugin.HyperListTools) && fn(plugin.HyperCallTool):
		s.Interface, what = InterfaceHyperV2, "hyper-mcp v2 plugin (list_tools and call_tool)"
	case fn(abi.ExportDescribe) && fn(abi.ExportCall) && fn(abi.ExportBuffer) && fn(abi.ExportCallDirect):
		s.Interface, what = InterfacePlugboard, "plugboard SDK plugin (describe and call, with the plugboard_buffer/plugboard_call pair)"
	case fn(abi.ExportDescribe) || fn(abi.ExportCall):
		s.Interface, what = InterfaceExtismMCP, "Extism MCP servlet (v1: describe and call)"
	default:
		s.Interface, what = InterfacePlain, "plain Extism module (neither describe and call nor list_tools and call_tool)"
	}
	s.CommandModule, s.Reactor = fn("_start"), fn(abi.ExportInitialize)
	s.Toolchain = toolchain(info.Custom)
	parts := []string{what}
	switch {
	case s.CommandModule && s.Reactor:
		parts = append(parts, "exports both _start and _initialize (the host runs _initialize only)")
	case s.CommandModule:
		parts = append(parts, "command module (_start exported, which the host never runs)")
	case s.Reactor:
		parts = append(parts, "reactor")
	}
	if s.Toolchain != "" {
		parts = append(parts, "built with "+s.Toolchain)
	}
	s.Text = strings.Join(parts, ", ")
	return s
}

// toolchain names the compiler from the producers custom section (the
// tool-conventions format: each field's values are length-prefixed names,
// so a substring search of the raw bytes finds them), or from Go's build
// id section, which every Go build writes.
func toolchain(custom map[string][]byte) string {
	p := custom["producers"]
	for _, c := range []struct{ marker, name string }{
		{"TinyGo", "TinyGo"},
		{"Go cmd/compile", "Go"},
		{"rustc", "Rust"},
		{"AssemblyScript", "AssemblyScript"},
		{"Zig", "Zig"},
		{"zig", "Zig"},
		{"clang", "C/C++"},
	} {
		if bytes.Contains(p, []byte(c.marker)) {
			return c.name
		}
	}
	if _, ok := custom["go:buildid"]; ok {
		return "Go"
	}
	return ""
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
	var keys []string
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
		if len(keys) == 0 {
			v.Text = "needs configuration (the host could not name the key)"
		} else {
			v.Text = "needs configuration: " + strings.Join(keys, ", ")
			name := p.Plugin
			if name == "" {
				name = strings.TrimSuffix(filepath.Base(p.File), ".wasm")
			}
			for _, k := range keys {
				v.Settings = append(v.Settings, "plugins.settings."+name+".config."+k)
			}
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

// ---- modules whose runtime is never initialised ----

// uninitialised is what Go's runtime (and TinyGo's, for
// //go:wasmexport) prints when an export runs before _start or
// _initialize set the runtime up.
const uninitialised = "function called before runtime initialization"

// Diagnose explains a failure of a module's exports that its shape
// accounts for — today a command module whose runtime needs _start, which
// no host calling exports runs — as a problem and a fix; "" when its shape
// explains nothing. plugboard plugin inspect gives the same words.
func (s Shape) Diagnose(err error) (problem, fix string) {
	if err == nil {
		return "", ""
	}
	text := err.Error()
	var env *abi.Envelope
	if errors.As(err, &env) {
		if tail, ok := env.Details["console_tail"].(string); ok {
			text += "\n" + tail
		}
	}
	i := strings.Index(text, uninitialised)
	if i < 0 {
		return "", ""
	}
	// Quote the runtime's own line: "runtime: wasmexport function called
	// before runtime initialization".
	start, end := strings.LastIndexByte(text[:i], '\n')+1, len(text)
	if j := strings.IndexByte(text[i:], '\n'); j >= 0 {
		end = i + j
	}
	said := strings.TrimSpace(text[start:end])
	lang, build := "its", "build it as a reactor (-buildmode=c-shared), which exports _initialize"
	switch s.Toolchain {
	case "Go":
		lang, build = "Go's", "build a reactor: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared (or `plugboard plugin build`), which exports _initialize"
	case "TinyGo":
		lang, build = "TinyGo's", "build a reactor: tinygo build -target wasip1 -buildmode=c-shared, which exports _initialize"
	}
	if !s.CommandModule {
		return fmt.Sprintf("its exports trap: %s runtime was never initialised (%q), and the module exports no _initialize "+
			"for the host to run", lang, said), build
	}
	return fmt.Sprintf("a command module whose exports cannot run: %s runtime is initialised only by _start, which runs main and then "+
		"exits, closing the instance; the host (like Extism's) runs _initialize, never _start, and calls the exports directly, so every "+
		"export traps (%q)", lang, said), build
}
