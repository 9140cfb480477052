package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/build/pluginbuild"
	"github.com/plugboard/plugboard/conformance"
	plughost "github.com/plugboard/plugboard/host"
	"github.com/plugboard/plugboard/host/config"
	"github.com/plugboard/plugboard/host/plugin"
)

func pluginBuildCommand(fs *flag.FlagSet) runFunc {
	out := fs.String("o", "", "output .wasm file (default: NAME.wasm in the current directory)")
	return func(ctx context.Context, in *invocation) error {
		if err := in.nargs(1, 1); err != nil {
			return err
		}
		return pluginBuild(ctx, in.args[0], *out, in.stdout)
	}
}

func pluginBuild(ctx context.Context, dir, out string, stdout io.Writer) error {
	if out == "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return err
		}
		out = filepath.Base(abs) + ".wasm"
	}
	start := time.Now()
	codecs := ""
	m, err := pluginbuild.Plugin(ctx, dir, out, pluginbuild.Options{Codecs: func(typed bool, why string) {
		codecs = "JSON: encoding/json, because " + why
		if typed {
			codecs = "JSON: the SDK's own codecs for every tool (the SDK links no encoding/json)"
		}
	}})
	if err != nil {
		return err
	}
	names := make([]string, 0, len(m.Tools))
	for _, t := range m.Tools {
		names = append(names, t.Name)
	}
	fmt.Fprintf(stdout, "built %s: plugin %s %s, tools: %s (%s)\n", out, m.Plugin.Name, m.Plugin.Version,
		strings.Join(names, ", "), time.Since(start).Round(time.Millisecond))
	if codecs != "" {
		fmt.Fprintln(stdout, "  "+codecs)
	}
	return nil
}

// inspection is what plugin inspect reports.
type inspection struct {
	File           string `json:"file"`
	SizeBytes      int    `json:"size_bytes"`
	SHA256         string `json:"sha256"`
	ManifestSource string `json:"manifest_source"` // section | describe | list_tools (a hyper-mcp v2 plugin's lists)
	// Shape is the kind of plugin the module is, as the conformance kit
	// and the registry tell them apart.
	Shape          conformance.Shape `json:"shape"`
	Manifest       *abi.Manifest     `json:"manifest"`
	Imports        []string          `json:"imports"`
	Exports        []string          `json:"exports"`
	Capabilities   []string          `json:"capabilities"`
	CustomSections map[string]int    `json:"custom_sections"`
	// ImportedCapabilities are what the module's imports use that the
	// operator's settings give or withhold (egress, config, vars, host
	// capabilities), declared or not (plugin_needs.go).
	ImportedCapabilities []importedCap `json:"imported_capabilities"`
	// NeedsStatus is each need the manifest declares, with --config its
	// status: set, missing, allowed, not_allowed.
	NeedsStatus []needReport `json:"needs_status,omitempty"`
	// Limits are the caps the plugin runs under by default, by the name
	// of the plugins.settings field that sets its own.
	Limits   map[string]int64 `json:"limits"`
	Problems []string         `json:"problems,omitempty"`
	// Warnings are what serve reports of the plugin without refusing it: a
	// tool whose input schema the host cannot compile, served with its
	// arguments left to the plugin.
	Warnings []string `json:"warnings,omitempty"`
	// Verdict is what serve would make of the file, in the conformance
	// kit's terms as far as reading it without calling a tool tells.
	Verdict inspectVerdict `json:"verdict"`
	imports []plugin.Import
	// needs are settings the operator must set before serve serves the
	// plugin at all (a plain module's plugins.settings.NAME.tools).
	needs []string
	// missingRequired are the settings of declared required values the
	// configuration lacks (--config): served, but its calls need them.
	missingRequired []string
	// name is what the host serves the plugin under, and limits the caps
	// in the order they are shown.
	name   string
	limits []limitLine
	// limitsFrom is the configuration file the limits come from ("": the
	// defaults).
	limitsFrom string
}

// Verdicts of inspect (inspectVerdict.Kind). Inspect does not call tools,
// so it cannot say "works": that is the conformance kit's, which makes
// the calls; where both judge, they agree (broken, needs configuration).
const (
	inspectLoads       = "loads"
	inspectNeedsConfig = "needs_configuration"
	inspectBroken      = "broken"
)

// inspectVerdict is inspect's verdict on a file.
type inspectVerdict struct {
	Kind string `json:"kind"`
	Text string `json:"text"`
	// Settings are what the operator must set (needs_configuration).
	Settings []string `json:"settings,omitempty"`
}

// verdict decides inspect's verdict and exit status: 1 broken (a problem
// serve refuses the plugin or a tool for), 3 needs configuration (nothing
// else is wrong, but serve waits for a setting), 0 loads — the conformance
// kit's statuses.
func (in *inspection) verdict() (inspectVerdict, int) {
	switch {
	case len(in.needs) > 0 && len(in.Problems) == 1:
		return inspectVerdict{Kind: inspectNeedsConfig, Text: "needs configuration: " + strings.Join(in.needs, ", "), Settings: in.needs},
			conformance.ExitNeedsConfig
	case len(in.Problems) > 0:
		return inspectVerdict{Kind: inspectBroken, Text: "broken: " + in.Problems[0]}, conformance.ExitBroken
	case len(in.missingRequired) > 0:
		return inspectVerdict{Kind: inspectNeedsConfig, Text: "needs configuration: " + strings.Join(in.missingRequired, ", ") +
			" (declared required; serve serves the plugin, its calls need them)", Settings: in.missingRequired}, conformance.ExitNeedsConfig
	}
	n := 0
	if in.Manifest != nil {
		n = len(in.Manifest.Tools)
	}
	text := fmt.Sprintf("loads: serve serves %d %s", n, plural(n, "tool", "tools"))
	if len(in.Warnings) > 0 {
		text += fmt.Sprintf(", with %d %s", len(in.Warnings), plural(len(in.Warnings), "warning", "warnings"))
	}
	return inspectVerdict{Kind: inspectLoads, Text: text + "; inspect calls none (plugboard conformance does, and says whether they work)"},
		conformance.ExitWorks
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// limitLine is one cap as inspect shows it.
type limitLine struct {
	setting string
	value   int64
	unit    string
	what    string
}

// defaultLimits are the caps of a plugin without settings, as the host
// runs it without flags: each named by its plugins.settings field.
func defaultLimits() []limitLine {
	cfg := plugin.Config{}.WithDefaults()
	lines := []limitLine{
		{"memory_limit_mib", int64(cfg.MemoryLimitPages / 16), "MiB", "linear memory of one instance (all plugins: plugins.memory_limit_mib, --memory-limit)"},
		{"max_instances", int64(cfg.MaxInstances), "", "instances running at once (all plugins: plugins.max_instances, --max-instances)"},
	}
	for _, l := range cfg.Limits.Settings() {
		what := l.What
		if l.Setting == "max_http_connections" {
			what += fmt.Sprintf(" (the host's plugins together: %d)", cfg.MaxHostHTTPConnections)
		}
		lines = append(lines, limitLine{l.Setting, l.Value, l.Unit, what})
	}
	return lines
}

func pluginInspectCommand(fs *flag.FlagSet) runFunc {
	asJSON := fs.Bool("json", false, "print JSON")
	configFile := fs.String("config", "", "configuration file whose plugins settings give the limits shown and judge the needs the plugin declares (default: $"+config.EnvConfig+"; none: the defaults)")
	return func(ctx context.Context, in *invocation) error {
		if err := in.nargs(1, 1); err != nil {
			return err
		}
		path := *configFile
		if !config.Given(fs)["config"] {
			path = os.Getenv(config.EnvConfig)
		}
		var conf *config.Config
		if path != "" {
			var err error
			// Lenient: a "${VAR}" whose variable is not set here is still
			// a value the configuration gives (its needs show it so).
			if conf, err = config.LoadLenient(path); err != nil {
				return &exitError{code: 2, err: err}
			}
		}
		return pluginInspect(ctx, in.args[0], *asJSON, conf, path, in.stdout)
	}
}

// configuredLimits are the caps a plugin named name runs under with the
// configuration conf: its own settings over the plugins section's over the
// defaults.
func configuredLimits(conf *config.Config, name string) []limitLine {
	lines := defaultLimits()
	s := conf.Plugins.Settings[name]
	memory, instances := conf.Plugins.MemoryLimitMiB, conf.Plugins.MaxInstances
	if s.MemoryLimitMiB != nil {
		memory = s.MemoryLimitMiB
	}
	if s.MaxInstances != nil {
		instances = s.MaxInstances
	}
	set := map[string]int64{}
	if memory != nil {
		set["memory_limit_mib"] = int64(*memory)
	}
	if instances != nil {
		set["max_instances"] = int64(*instances)
	}
	for _, l := range plughost.PluginLimitSettings(s) {
		set[l.Setting] = l.Value
	}
	for i := range lines {
		if v, ok := set[lines[i].setting]; ok {
			lines[i].value = v
		}
	}
	return lines
}

func pluginInspect(ctx context.Context, path string, asJSON bool, conf *config.Config, confPath string, stdout io.Writer) error {
	wasm, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	info, err := plugin.Parse(wasm)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	sum := sha256.Sum256(wasm)
	in := inspection{File: path, SizeBytes: len(wasm), SHA256: hex.EncodeToString(sum[:]), CustomSections: map[string]int{},
		Limits: map[string]int64{}, name: strings.TrimSuffix(filepath.Base(path), ".wasm"), limits: defaultLimits()}
	for _, l := range in.limits {
		in.Limits[l.setting] = l.value
	}
	in.imports = info.Imports
	for _, imp := range info.Imports {
		in.Imports = append(in.Imports, fmt.Sprintf("%s.%s (%s)", imp.Module, imp.Name, imp.Kind))
		// plugin.UserModule: hyper-mcp's MCP-client functions, which the
		// host provides too.
		if imp.Module != abi.ExtismModule && imp.Module != abi.HostModule && imp.Module != abi.WASIModule && imp.Module != plugin.UserModule {
			in.Problems = append(in.Problems, fmt.Sprintf("imports %s.%s from a module plugboard does not provide", imp.Module, imp.Name))
		}
	}
	exported := map[string]bool{}
	for _, e := range info.Exports {
		in.Exports = append(in.Exports, fmt.Sprintf("%s (%s)", e.Name, e.Kind))
		exported[e.Name] = e.Kind == plugin.KindFunc
	}
	// The exports the host calls, by the interface the module speaks
	// (conformance.ShapeOf, the registry's rule): a hyper-mcp v2 plugin
	// is served through list_tools and call_tool, any other through
	// describe and call. A command module (_start) is no problem in
	// itself: the host calls the exports without running _start, so it
	// works when they do, which describe below finds out.
	in.Shape = conformance.ShapeOf(info)
	needs := []string{abi.ExportDescribe, abi.ExportCall}
	if in.Shape.Interface == conformance.InterfaceHyperV2 {
		needs = []string{plugin.HyperListTools, plugin.HyperCallTool}
	}
	for _, need := range needs {
		if !exported[need] {
			in.Problems = append(in.Problems, fmt.Sprintf("does not export function %q", need))
		}
	}
	for name, content := range info.Custom {
		in.CustomSections[name] = len(content)
	}
	if raw, ok := info.Custom[abi.ManifestSection]; ok {
		in.ManifestSource = "section"
		var m abi.Manifest
		if err := abi.CheckManifestSize(raw); err != nil {
			in.Problems = append(in.Problems, "embedded "+err.Error())
		} else if err := json.Unmarshal(raw, &m); err != nil {
			in.Problems = append(in.Problems, "embedded manifest is not valid JSON: "+err.Error())
		} else {
			in.Manifest = &m
		}
		// A command module's exports may trap whatever its section says
		// (Go's runtime waits for _start, which the host never runs): ask
		// describe, as the kit does, so inspect does not pass what serve
		// cannot call.
		if in.Shape.CommandModule {
			_, _, err := pluginbuild.Describe(ctx, in.name, wasm, 0)
			if why, fix := in.Shape.Diagnose(err); why != "" {
				in.Problems = append(in.Problems, "describe failed: "+why+"; fix: "+fix)
			}
		}
	} else if hyper := in.Shape.Interface == conformance.InterfaceHyperV2; exported[abi.ExportDescribe] || hyper {
		// pluginbuild.Describe reads a v2 plugin's lists as the registry does.
		in.ManifestSource = "describe"
		if hyper {
			in.ManifestSource = plugin.HyperListTools
		}
		m, _, err := pluginbuild.Describe(ctx, strings.TrimSuffix(filepath.Base(path), ".wasm"), wasm, 0)
		if why, fix := in.Shape.Diagnose(err); why != "" {
			in.Problems = append(in.Problems, in.ManifestSource+" failed: "+why+"; fix: "+fix)
		} else if err != nil {
			in.Problems = append(in.Problems, err.Error())
		} else {
			in.Manifest = m
		}
	}
	if in.Manifest == nil && in.ManifestSource == "" {
		inspectPlain(&in, wasm, conf) // a plain Extism module's tools are its settings'
	}
	if in.Manifest != nil {
		if in.Manifest.Plugin.Name != "" {
			in.name = in.Manifest.Plugin.Name
		}
		if conf != nil {
			in.limits, in.limitsFrom = configuredLimits(conf, in.name), confPath
			for _, l := range in.limits {
				in.Limits[l.setting] = l.value
			}
		}
		in.Capabilities = in.Manifest.Capabilities
		if err := in.Manifest.Validate(); err != nil {
			in.Problems = append(in.Problems, err.Error())
		}
		// The schemas as serve compiles them, in serve's words: a refused
		// tool is a problem, one served unchecked a warning.
		for _, t := range in.Manifest.Tools {
			if msg, refused := plugin.InputSchemaProblem(in.name, t.Name, t.InputSchema); refused {
				in.Problems = append(in.Problems, msg)
			} else if msg != "" {
				in.Warnings = append(in.Warnings, msg)
			}
		}
	}
	inspectNeeds(&in, conf)
	var code int
	in.Verdict, code = in.verdict()
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(in); err != nil {
			return err
		}
	} else {
		printInspection(stdout, &in)
	}
	if code != 0 {
		return &exitError{code: code, err: errSilent}
	}
	return nil
}

func printInspection(w io.Writer, in *inspection) {
	fmt.Fprintf(w, "file:         %s\n", in.File)
	fmt.Fprintf(w, "size:         %d bytes\n", in.SizeBytes)
	fmt.Fprintf(w, "sha256:       %s\n", in.SHA256)
	fmt.Fprintf(w, "shape:        %s\n", in.Shape.Text)
	if m := in.Manifest; m != nil {
		fmt.Fprintf(w, "plugin:       %s %s (abi %d, manifest from %s)\n", m.Plugin.Name, m.Plugin.Version, m.ABI, in.ManifestSource)
		printRoles(w, m.Roles)
		printCapabilities(w, in)
		printNeeds(w, in)
		fmt.Fprintln(w, "tools:")
		for _, t := range m.Tools {
			first, _, _ := strings.Cut(t.Description, "\n")
			fmt.Fprintf(w, "  %-20s %s\n", t.Name, first)
		}
		if len(m.Resources)+len(m.ResourceTemplates) > 0 {
			fmt.Fprintln(w, "resources:")
			for _, r := range m.Resources {
				fmt.Fprintf(w, "  %-20s %s\n", r.URI, r.Name)
			}
			for _, r := range m.ResourceTemplates {
				fmt.Fprintf(w, "  %-20s %s (template)\n", r.URITemplate, r.Name)
			}
		}
		if len(m.Prompts) > 0 {
			fmt.Fprintln(w, "prompts:")
			for _, p := range m.Prompts {
				fmt.Fprintf(w, "  %-20s %s\n", p.Name, p.Description)
			}
		}
	}
	if in.Manifest == nil && len(in.ImportedCapabilities) > 0 {
		printCapabilities(w, in)
	}
	if in.limitsFrom != "" {
		fmt.Fprintf(w, "limits:       as %s sets them (plugins.settings.%s.<setting>, else plugins.*, else the defaults)\n", in.limitsFrom, in.name)
	} else {
		fmt.Fprintf(w, "limits:       the defaults; plugins.settings.%s.<setting> in the configuration file sets the plugin's own\n", in.name)
	}
	for _, l := range in.limits {
		value := strconv.FormatInt(l.value, 10)
		if l.unit != "" {
			value += " " + l.unit
		}
		fmt.Fprintf(w, "  %-24s %-16s %s\n", l.setting, value, l.what)
	}
	fmt.Fprintln(w, "imports:")
	for _, group := range groupImports(in.imports) {
		fmt.Fprintf(w, "  %-22s %s\n", group.module, strings.Join(group.names, ", "))
	}
	fmt.Fprintf(w, "exports:      %s\n", orNone(in.Exports))
	for _, p := range in.Warnings {
		fmt.Fprintf(w, "WARNING:      %s\n", p)
	}
	for _, p := range in.Problems {
		fmt.Fprintf(w, "PROBLEM:      %s\n", p)
	}
	fmt.Fprintf(w, "verdict:      %s\n", in.Verdict.Text)
}

type importGroup struct {
	module string
	names  []string
}

// groupImports lists function imports by module, in first-seen order.
func groupImports(imports []plugin.Import) []importGroup {
	var groups []importGroup
	index := map[string]int{}
	for _, imp := range imports {
		i, ok := index[imp.Module]
		if !ok {
			i = len(groups)
			index[imp.Module] = i
			groups = append(groups, importGroup{module: imp.Module})
		}
		name := imp.Name
		if imp.Kind != plugin.KindFunc {
			name += " (" + imp.Kind.String() + ")"
		}
		if !slices.Contains(groups[i].names, name) {
			groups[i].names = append(groups[i].names, name)
		}
	}
	return groups
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// inspectPlain reports a plain Extism module — one exporting neither
// describe nor call nor list_tools and call_tool — as serve would serve it
// as the plugin in.name with conf's settings: the tools of its
// plugins.settings.NAME.tools (manifest from "settings"), or the problem
// serve would refuse it with, which says what to set, in place of the
// exports an MCP plugin lacks.
func inspectPlain(in *inspection, wasm []byte, conf *config.Config) {
	var s config.PluginSetting
	if conf != nil {
		s = conf.Plugins.Settings[in.name]
	}
	m, plain, err := plughost.PlainManifest(in.name, wasm, s)
	if !plain {
		return
	}
	in.Problems = slices.DeleteFunc(in.Problems, func(p string) bool { return strings.HasPrefix(p, "does not export function ") })
	if err != nil {
		msg := err.Error()
		if len(s.Tools) == 0 {
			in.needs = append(in.needs, "plugins.settings."+in.name+".tools")
		}
		if conf == nil {
			msg += "; --config FILE shows the tools a configuration file describes"
		}
		// One line per tool at fault, as serve's log has them.
		in.Problems = append(in.Problems, strings.Split(msg, "\n")...)
		return
	}
	in.ManifestSource, in.Manifest = "settings", m
}
