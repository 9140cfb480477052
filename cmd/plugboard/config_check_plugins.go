package main

// config check's report of each plugin the configuration serves: what its
// settings give it against what its manifest declares it needs (abi.Needs)
// and what its imports use (plugin_needs.go), and what it would be
// refused. Values never show: a setting is set or missing, and says where
// a value comes from.

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/config"
	"github.com/plugboard/plugboard/host/plugin"
)

// unsetEnvValue is a "${VAR}" configuration value whose variable this
// environment lacks.
type unsetEnvValue struct{ setting, from string }

// unsetEnvValues lists the configuration values of conf's plugins that
// name an environment variable not set here (LoadLenient left them).
func unsetEnvValues(conf *config.Config) []unsetEnvValue {
	var out []unsetEnvValue
	for _, name := range slices.Sorted(maps.Keys(conf.Plugins.Settings)) {
		cfg := conf.Plugins.Settings[name].Config
		for _, key := range slices.Sorted(maps.Keys(cfg)) {
			if v := cfg[key]; v.EnvUnset() {
				out = append(out, unsetEnvValue{"plugins.settings." + name + ".config." + key, v.From()})
			}
		}
	}
	return out
}

// checkedPluginDirs are the plugin folders serve would read with conf and
// no --plugins: plugins.dirs, else DATA/plugins (DATA: $PLUGBOARD_DATA, the
// file's data, the default).
func checkedPluginDirs(conf *config.Config) ([]string, error) {
	if len(conf.Plugins.Dirs) > 0 {
		return conf.Plugins.Dirs, nil
	}
	data := os.Getenv("PLUGBOARD_DATA")
	if data == "" {
		data = conf.Data
	}
	if data == "" {
		var err error
		if data, err = defaultDataDir(); err != nil {
			return nil, err
		}
	}
	return []string{filepath.Join(data, "plugins")}, nil
}

// checkPlugins writes the report of every plugin conf serves from its
// plugin folders and file sources, and returns the required settings that
// are missing, each with the plugin that needs it.
func checkPlugins(ctx context.Context, w io.Writer, conf *config.Config) (missing []string) {
	dirs, err := checkedPluginDirs(conf)
	if err != nil {
		fmt.Fprintf(w, "plugins: not checked: %v\n", err)
		return nil
	}
	var files []pluginFile
	var notes []string
	for _, d := range dirs {
		if _, err := os.Stat(d); err != nil {
			notes = append(notes, fmt.Sprintf("%s: %v", d, err))
		}
	}
	paths, err := pluginFiles(dirs)
	if err != nil {
		notes = append(notes, err.Error())
	}
	sources := conf.Plugins.Sources()
	for _, p := range paths {
		f := readPluginFile(ctx, p)
		if _, replaced := sources[f.name]; replaced && f.err == nil {
			notes = append(notes, fmt.Sprintf("%s: not served: plugins.settings.%s.source replaces it", p, f.name))
			continue
		}
		files = append(files, f)
	}
	for _, name := range slices.Sorted(maps.Keys(sources)) {
		// A file source is read here; a fetched one is checked against the
		// lockfile when serve loads it (plugboard plugin inspect reads it).
		if src, err := plugin.ParseSource(sources[name], ""); err == nil && src.Path != "" {
			f := readPluginFile(ctx, src.Path)
			f.name = name
			files = append(files, f)
		} else {
			notes = append(notes, fmt.Sprintf("%s: from %s, not read here (plugboard plugin lock fetches it)", name, sources[name]))
		}
	}
	fmt.Fprintf(w, "plugins: %d in %s\n", len(files), strings.Join(dirs, ", "))
	for _, n := range notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	found := map[string]bool{}
	for _, f := range files {
		found[f.name] = true
		missing = append(missing, reportPlugin(w, conf, f)...)
	}
	for _, name := range slices.Sorted(maps.Keys(conf.Plugins.Settings)) {
		if !found[name] {
			fmt.Fprintf(w, "  %s: plugins.settings.%s names no plugin found here\n", name, name)
		}
	}
	return missing
}

// reportPlugin writes one plugin's report and returns its missing required
// settings, each with the plugin's name.
func reportPlugin(w io.Writer, conf *config.Config, f pluginFile) (missing []string) {
	fmt.Fprintf(w, "  %s (%s)\n", f.name, f.path)
	if f.err != nil {
		fmt.Fprintf(w, "    not readable as serve reads it: %v (plugboard plugin inspect %s says more)\n", f.err, f.path)
		return nil
	}
	s := conf.Plugins.Settings[f.name]
	var declaredCaps []string
	if f.manifest == nil {
		fmt.Fprintf(w, "    declares nothing: a plain Extism module, whose tools plugins.settings.%s.tools describes\n", f.name)
	} else {
		declaredCaps = f.manifest.Capabilities
		reports := needsAgainst(f.name, f.manifest.Needs, &s)
		if len(reports) == 0 {
			fmt.Fprintln(w, "    needs: none declared")
		}
		for _, r := range reports {
			fmt.Fprintf(w, "    needs %s\n", needLine(r))
		}
		for _, m := range missingRequired(reports) {
			missing = append(missing, m+" (required by "+f.name+")")
		}
	}
	fmt.Fprintf(w, "    settings: %s\n", settingsInForce(f, s))
	caps := importedCapabilities(f.imports, f.name)
	fmt.Fprintf(w, "    imports: %s\n", orNone(capNames(caps)))
	for _, r := range refusals(conf, f, s, caps, declaredCaps) {
		fmt.Fprintf(w, "    refused: %s\n", r)
	}
	return missing
}

// settingsInForce says what the settings give the plugin, by name: the
// configuration keys (a declared key's status is on its needs line) and
// the hosts, never a value.
func settingsInForce(f pluginFile, s config.PluginSetting) string {
	var what []string
	if len(s.Config) > 0 {
		var keys []string
		for _, k := range slices.Sorted(maps.Keys(s.Config)) {
			declared := f.manifest != nil && slices.ContainsFunc(f.manifest.Needs.Config, func(c abi.ConfigNeed) bool { return c.Key == k })
			if f.manifest != nil && len(f.manifest.Needs.Config) > 0 && !declared {
				k += " (not declared)"
			}
			keys = append(keys, k)
		}
		what = append(what, "config "+strings.Join(keys, ", "))
	}
	if len(s.AllowedHosts) > 0 {
		what = append(what, "allowed_hosts "+strings.Join(s.AllowedHosts, ", "))
	}
	if s.AllowPrivate {
		what = append(what, "allow_private")
	}
	for _, p := range s.AllowedPaths {
		mode := "read-only"
		if p.Writable {
			mode = "writable"
		}
		what = append(what, "allowed_paths "+p.Mount+" ("+mode+")")
	}
	if s.Stateful {
		what = append(what, "stateful")
	}
	if len(what) == 0 {
		return "none (the default sandbox: no configuration values, no network, no files)"
	}
	return strings.Join(what, "; ")
}

// refusals are what the plugin, as its imports and manifest say, would be
// refused with these settings and grants.
func refusals(conf *config.Config, f pluginFile, s config.PluginSetting, caps []importedCap, declared []string) []string {
	var out []string
	for _, c := range caps {
		if c.Name == "egress" && len(s.AllowedHosts) == 0 {
			out = append(out, fmt.Sprintf("every HTTP request (it imports http_request; plugins.settings.%s.allowed_hosts is not set)", f.name))
		}
	}
	if f.manifest != nil && len(s.AllowedHosts) > 0 {
		for _, h := range f.manifest.Needs.HTTP {
			if !h.AllowedBy(s.AllowedHosts) {
				out = append(out, fmt.Sprintf("HTTP to %s (declared; not in plugins.settings.%s.allowed_hosts)", h.Host, f.name))
			}
		}
	}
	if conf.Grants != nil && len(declared) > 0 {
		_, withheld := conf.Grants.For(f.name, declared)
		for _, c := range withheld {
			out = append(out, fmt.Sprintf("capability %s (declared; the grants section withholds it: calls needing it answer permission_denied)", c))
		}
	}
	return out
}
