package main

// What a plugin needs from the operator, in two views that `plugin inspect`
// and `config check` share: what its module imports that only the
// operator's settings make work (importedCapabilities: http_request is
// refused without allowed_hosts, config_get reads nothing without config,
// …), and what its manifest declares it needs (abi.Needs), each judged
// against a plugin's settings (needsAgainst). Neither grants anything.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/build/pluginbuild"
	"github.com/plugboard/plugboard/host/config"
	"github.com/plugboard/plugboard/host/plugin"
)

// importedCap is one thing a module's imports use that the operator's
// settings give or withhold.
type importedCap struct {
	// Name is what the imports use: egress, config, vars, or a host
	// capability (board, mcp.sampling, …).
	Name string `json:"name"`
	// Imports are the functions, as module.name.
	Imports []string `json:"imports"`
	// Setting is what gives it, for the plugin as it is served.
	Setting string `json:"setting"`
	// What says what the plugin gets, and without the setting what not.
	What string `json:"what"`
}

// importRule maps the functions of one module to what they use.
type importRule struct {
	module string
	names  []string
	cap    string
	// setting and what, with %s for the plugin's name.
	setting, what string
}

// importRules are the imports whose working is the operator's to give. The
// rest (input, output, log, progress, notify, WASI's clock and random, …)
// every plugin may use without a setting.
var importRules = []importRule{
	{abi.ExtismModule, []string{"http_request"}, "egress", "plugins.settings.%s.allowed_hosts",
		"HTTP requests through the host, to the hosts allowed_hosts lists; without it every request is refused"},
	{abi.ExtismModule, []string{"config_get"}, "config", "plugins.settings.%s.config",
		"configuration values; a key the settings do not give reads as not set"},
	{abi.ExtismModule, []string{"var_get", "var_set"}, "vars", "plugins.settings.%s.stateful",
		"Extism vars, kept per instance: from one call to the next only when the plugin is stateful (max_vars and max_var_bytes cap them)"},
	{abi.HostModule, []string{abi.FuncBoard}, "board", "the manifest's capabilities, narrowed by grants (--grants, the grants section)",
		"the task board, each operation under the capability abi.BoardOps names"},
}

// importedCapabilities lists what imports use that needs the operator's
// settings, one entry per thing used, in the order of importRules and then
// of the capability-gated host functions; name is the plugin's.
func importedCapabilities(imports []plugin.Import, name string) []importedCap {
	var out []importedCap
	add := func(c importedCap, imp plugin.Import) {
		full := imp.Module + "." + imp.Name
		for i := range out {
			if out[i].Name == c.Name {
				if !slices.Contains(out[i].Imports, full) {
					out[i].Imports = append(out[i].Imports, full)
				}
				return
			}
		}
		c.Imports = []string{full}
		out = append(out, c)
	}
	gated := func(imp plugin.Import) string {
		switch imp.Module {
		case abi.HostModule:
			for _, f := range abi.HostFunctions() {
				if f.Name == imp.Name {
					return f.Capability
				}
			}
		case plugin.UserModule:
			return plugin.UserCapability(imp.Name)
		}
		return ""
	}
	for _, r := range importRules {
		for _, imp := range imports {
			if imp.Kind == plugin.KindFunc && imp.Module == r.module && slices.Contains(r.names, imp.Name) {
				setting := r.setting
				if strings.Contains(setting, "%s") {
					setting = fmt.Sprintf(setting, name)
				}
				add(importedCap{Name: r.cap, Setting: setting, What: r.what}, imp)
			}
		}
	}
	for _, imp := range imports {
		if c := gated(imp); c != "" && imp.Kind == plugin.KindFunc {
			add(importedCap{Name: c, Setting: "the manifest's capabilities, narrowed by grants (--grants, the grants section)",
				What: "asks the MCP client (" + imp.Name + "); refused without the capability"}, imp)
		}
	}
	return out
}

// capNames are the names of caps, for one line.
func capNames(caps []importedCap) []string {
	var out []string
	for _, c := range caps {
		funcs := make([]string, len(c.Imports))
		for i, f := range c.Imports {
			funcs[i] = f[strings.LastIndexByte(f, '.')+1:]
		}
		out = append(out, c.Name+" ("+strings.Join(funcs, ", ")+")")
	}
	return out
}

// Statuses of a declared need against the settings (needReport.Status).
const (
	needSet        = "set"
	needMissing    = "missing"
	needAllowed    = "allowed"
	needNotAllowed = "not_allowed"
)

// needReport is one declared need and, with a configuration, its status.
type needReport struct {
	Kind        string   `json:"kind"` // config or http
	Name        string   `json:"name"` // the key or the host
	Required    bool     `json:"required,omitempty"`
	Secret      bool     `json:"secret,omitempty"`
	Paths       []string `json:"paths,omitempty"`
	Description string   `json:"description,omitempty"`
	// Setting is where the operator gives it.
	Setting string `json:"setting"`
	// Status is set, missing, allowed or not_allowed; "" without a
	// configuration to judge by.
	Status string `json:"status,omitempty"`
	// Detail says where a value comes from, or what to do, never a value.
	Detail string `json:"detail,omitempty"`
}

// needsAgainst reports each need of n for the plugin name: with s (its
// settings; nil without a configuration file) whether it is set or allowed.
func needsAgainst(name string, n abi.Needs, s *config.PluginSetting) []needReport {
	var out []needReport
	for _, c := range n.Config {
		r := needReport{Kind: "config", Name: c.Key, Required: c.Required, Secret: c.Secret, Description: c.Description,
			Setting: "plugins.settings." + name + ".config." + c.Key}
		if s != nil {
			r.Status, r.Detail = configStatus(c, s.Config)
		}
		out = append(out, r)
	}
	for _, h := range n.HTTP {
		r := needReport{Kind: "http", Name: h.Host, Paths: h.Paths, Description: h.Why, Setting: "plugins.settings." + name + ".allowed_hosts"}
		if s != nil {
			r.Status, r.Detail = needAllowed, ""
			if !h.AllowedBy(s.AllowedHosts) {
				r.Status, r.Detail = needNotAllowed, "add "+h.Host+" to "+r.Setting+"; its requests are refused until then"
			}
		}
		out = append(out, r)
	}
	return out
}

// configStatus is a config need's status against the settings' values:
// where a value comes from, never the value. A "${VAR}" whose variable
// this environment lacks is set (serve, started where it is, has it).
func configStatus(c abi.ConfigNeed, values map[string]config.ConfigValue) (status, detail string) {
	v, ok := values[c.Key]
	switch {
	case !ok:
		return needMissing, "not in the settings"
	case v.EnvUnset():
		return needSet, "from " + v.From() + " (not in this environment)"
	case v.Value() == "":
		return needMissing, "set empty, which the plugin reads as not set"
	case c.Secret && !v.Secret():
		return needSet, "a literal; a secret belongs in \"${VAR}\" or {\"secret_file\": PATH}"
	case !v.Secret():
		return needSet, "a literal"
	}
	return needSet, "from " + v.From()
}

// missingRequired are the settings of required config needs that are
// missing.
func missingRequired(reports []needReport) []string {
	var out []string
	for _, r := range reports {
		if r.Kind == "config" && r.Required && r.Status == needMissing {
			out = append(out, r.Setting)
		}
	}
	return out
}

// needLine writes one need for a terminal: kind, name, flags, description
// and, when judged, its status.
func needLine(r needReport) string {
	var flags []string
	switch {
	case r.Kind == "http" && len(r.Paths) > 0:
		flags = append(flags, strings.Join(r.Paths, " "))
	case r.Kind == "config" && r.Required:
		flags = append(flags, "required")
	case r.Kind == "config":
		flags = append(flags, "optional")
	}
	if r.Secret {
		flags = append(flags, "secret")
	}
	line := fmt.Sprintf("%-6s %-22s %-18s %s", r.Kind, r.Name, strings.Join(flags, ", "), r.Description)
	if r.Status != "" {
		status := strings.ReplaceAll(r.Status, "_", " ")
		if r.Detail != "" {
			status += ": " + r.Detail
		}
		if r.Status == needMissing && r.Kind == "config" {
			status += "; set " + r.Setting
		}
		line = strings.TrimRight(line, " ") + "  [" + status + "]"
	}
	return strings.TrimRight(line, " ")
}

// pluginFile is what config check reads of one plugin file: its name, its
// manifest (nil for a plain Extism module, whose tools are its settings')
// and its imports.
type pluginFile struct {
	path     string
	name     string
	manifest *abi.Manifest
	imports  []plugin.Import
	err      error
}

// readPluginFile reads path as serve would find its manifest: the embedded
// section, else describe (or a hyper-mcp v2 plugin's lists) run in the
// sandbox, else none (a plain module).
func readPluginFile(ctx context.Context, path string) pluginFile {
	f := pluginFile{path: path, name: strings.TrimSuffix(filepath.Base(path), ".wasm")}
	wasm, err := os.ReadFile(path)
	if err != nil {
		f.err = err
		return f
	}
	info, err := plugin.Parse(wasm)
	if err != nil {
		f.err = err
		return f
	}
	f.imports = info.Imports
	if raw, ok := info.Custom[abi.ManifestSection]; ok {
		var m abi.Manifest
		if f.err = abi.CheckManifestSize(raw); f.err == nil {
			f.err = json.Unmarshal(raw, &m)
		}
		if f.err == nil {
			f.manifest = &m
		}
	} else if s := plugin.ShapeOf(info); s.Interface != plugin.InterfacePlain {
		f.manifest, _, f.err = pluginbuild.Describe(ctx, f.name, wasm, 0)
	}
	if f.err == nil && f.manifest != nil && f.manifest.Plugin.Name != "" {
		f.name = f.manifest.Plugin.Name
	}
	return f
}

// pluginFiles lists the .wasm files under dirs, recursively, as serve
// finds them.
func pluginFiles(dirs []string) ([]string, error) {
	var files []string
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.HasSuffix(d.Name(), ".wasm") && !slices.Contains(files, path) {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			return files, fmt.Errorf("plugin directory %s: %w", dir, err)
		}
	}
	return files, nil
}

// inspectNeeds fills in what inspect says of a plugin's needs: what its
// imports use, and each declared need, judged against conf's settings of
// the plugin when a configuration file is given.
func inspectNeeds(in *inspection, conf *config.Config) {
	in.ImportedCapabilities = importedCapabilities(in.imports, in.name)
	if in.ImportedCapabilities == nil {
		in.ImportedCapabilities = []importedCap{}
	}
	if in.Manifest == nil {
		return
	}
	var s *config.PluginSetting
	if conf != nil {
		settings := conf.Plugins.Settings[in.name]
		s = &settings
	}
	in.NeedsStatus = needsAgainst(in.name, in.Manifest.Needs, s)
	in.missingRequired = missingRequired(in.NeedsStatus)
}

// printCapabilities writes the capabilities the manifest declares and,
// beside them, what the imports use that needs the operator's settings: a
// module importing http_request is never shown as needing nothing.
func printCapabilities(w io.Writer, in *inspection) {
	var declared []string
	if in.Manifest != nil {
		declared = in.Manifest.Capabilities
	}
	line := orNone(declared)
	if len(in.ImportedCapabilities) > 0 {
		if len(declared) == 0 {
			line = "none declared"
		}
		line += "; its imports use " + strings.Join(capNames(in.ImportedCapabilities), ", ")
	}
	fmt.Fprintf(w, "capabilities: %s\n", line)
	for _, c := range in.ImportedCapabilities {
		fmt.Fprintf(w, "  %-22s %s: %s\n", c.Name, c.Setting, c.What)
	}
}

// printNeeds writes the needs the manifest declares, each with its status
// when a configuration file judged them.
func printNeeds(w io.Writer, in *inspection) {
	if len(in.NeedsStatus) == 0 {
		fmt.Fprintln(w, "needs:        none declared")
		return
	}
	config, hosts := 0, 0
	judged := false
	for _, r := range in.NeedsStatus {
		if r.Kind == "config" {
			config++
		} else {
			hosts++
		}
		judged = judged || r.Status != ""
	}
	how := "--config FILE says which the settings give"
	if judged {
		how = "as the configuration file gives them"
	}
	fmt.Fprintf(w, "needs:        %d %s, %d %s, declared (they grant nothing: plugins.settings.%s gives them); %s\n",
		config, plural(config, "config value", "config values"), hosts, plural(hosts, "host", "hosts"), in.name, how)
	for _, r := range in.NeedsStatus {
		fmt.Fprintf(w, "  %s\n", needLine(r))
	}
}
