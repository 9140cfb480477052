package registry

// The operator's per-plugin settings (plugins.settings in the configuration
// file): what a plugin is compiled with (runtime.PluginOptions), how long
// its calls may run, and the names its tools are served under; and the
// plugins added from a source rather than found in the folders.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/runtime"
)

// Settings are the operator's settings of one plugin. The zero value is
// the default: the engine's sandbox and limits, the tools' own names.
type Settings struct {
	// Options are what the plugin is compiled with; the registry sets
	// Grants from its grants policy.
	Options runtime.PluginOptions
	// CallTimeout, when > 0, is the deadline of the plugin's calls whose
	// tool declares none, and caps those that do.
	CallTimeout time.Duration
	// Prefix goes before each tool name (and the tool part of each alias);
	// Skip lists tools not served; Rename serves a tool under another name
	// (taken as it is, no prefix). All by the plugin's own tool names.
	Prefix string
	Skip   []string
	Rename map[string]string
	// Functions are the tools of a plain Extism module, which the module
	// cannot describe (plain.go).
	Functions []Function
}

// fingerprint identifies what settings a plugin was bound with: a reload
// rebinds (and recompiles) only the plugins whose settings changed.
func (s *Settings) fingerprint() string {
	if s == nil {
		return ""
	}
	b, err := json.Marshal(s) // maps are written sorted
	if err != nil {
		// Every settings value would get one fingerprint: no reload
		// would rebind anything. A field json cannot write needs `json:"-"`.
		panic("registry: settings fingerprint: " + err.Error())
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Source is a plugin that is not in the plugin folders: a module the
// caller fetched and checked against its lockfile, served under the
// settings' name.
type Source struct {
	// Name is the plugin's name: its key in the settings.
	Name string
	// Origin is the source as configured (a path, URL or OCI reference),
	// for messages.
	Origin string
	// Path is the checked module (DATA/sources/<sha256>.wasm); "" when Err
	// says why there is none.
	Path string
	Err  error
}

// sourceKey is a source's key among the registry's files.
func sourceKey(name string) string { return "source " + name }

// SetSettings replaces the settings and sources the next Reload applies:
// plugins whose settings changed are bound anew (recompiled on their next
// use), sources added or gone are loaded or retired.
func (r *Registry) SetSettings(settings map[string]Settings, sources []Source) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.opts.Settings, r.opts.Sources = settings, sources
	r.settingsChanged = true
}

// settingsFor returns the settings of the plugin name (nil: none).
func (o *Options) settingsFor(name string) *Settings {
	if s, ok := o.Settings[name]; ok {
		return &s
	}
	return nil
}

// sourceNamed returns the source of that name.
func (o *Options) sourceNamed(name string) (Source, bool) {
	for _, s := range o.Sources {
		if s.Name == name {
			return s, true
		}
	}
	return Source{}, false
}

// bind returns p bound to settings: p itself when they are those it has,
// else a copy sharing its file and manifest, not yet compiled.
func (p *Plugin) bind(s *Settings) *Plugin {
	fp := s.fingerprint()
	if fp == p.fingerprint {
		return p
	}
	q := &Plugin{Path: p.Path, Manifest: p.Manifest, FromSection: p.FromSection, Origin: p.Origin,
		engine: p.engine, interp: p.interp, granted: p.granted, fingerprint: fp, gate: p.gate,
		stamp: p.stamp, module: p.module, keep: p.keep}
	if s != nil {
		q.settings = *s
		q.redactor = runtime.NewRedactor(s.Options.Secrets)
	}
	q.bindFunctions(p.plain)
	return q
}

// options are the runtime options the plugin is compiled with: the
// settings', with the granted capabilities, stateful when the settings or
// the manifest ask for it.
func (p *Plugin) options() runtime.PluginOptions {
	opts := p.settings.Options
	opts.Grants = p.granted
	opts.Stateful = opts.Stateful || p.Manifest.Stateful
	// The engine releases the compiled module of a plugin not being
	// called and reads the file again for its next call; it refuses the
	// bytes unless they are those it compiled (a changed file is served
	// anew by the next Reload, or, when it does not load, this version
	// from the copy kept of it: lastgood.go).
	opts.Reload = p.wasm
	return opts
}

// Settings are the operator's settings the plugin is bound to, those its
// calls run with (zero: none), for showing what is in force. The maps and
// slices are the binding's own: read them, never change them.
func (p *Plugin) Settings() Settings {
	if p == nil {
		return Settings{}
	}
	return p.settings
}

// CallTimeout is the deadline the operator set for the plugin's calls (0:
// the host's).
func (p *Plugin) CallTimeout() time.Duration {
	if p == nil {
		return 0
	}
	return p.settings.CallTimeout
}

// Redactor masks the plugin's secrets (nil masks nothing).
func (p *Plugin) Redactor() *runtime.Redactor {
	if p == nil {
		return nil
	}
	return p.redactor
}

// servedTool is a tool definition as the settings serve it: renamed or
// prefixed (aliases too), or skipped (nil).
func (p *Plugin) servedTool(def *abi.Tool) *abi.Tool {
	s := &p.settings
	if slices.Contains(s.Skip, def.Name) {
		return nil
	}
	name := def.Name
	if nw, ok := s.Rename[def.Name]; ok {
		name = nw
	} else if s.Prefix != "" {
		name = s.Prefix + def.Name
	}
	if name == def.Name && s.Prefix == "" {
		return def
	}
	out := *def
	out.Name = name
	if s.Prefix != "" && len(def.Aliases) > 0 {
		out.Aliases = nil
		for _, a := range def.Aliases {
			i := strings.LastIndex(a, "__")
			if na := a[:i+2] + s.Prefix + a[i+2:]; i > 0 && abi.ValidAlias(na) {
				out.Aliases = append(out.Aliases, na)
			}
		}
	}
	return &out
}

// checkNames warns of skip and rename entries naming no tool of the
// plugin, and of served names that are not valid tool names.
func (p *Plugin) checkNames(log *slog.Logger) {
	s := &p.settings
	have := map[string]bool{}
	for _, t := range p.Manifest.Tools {
		have[t.Name] = true
	}
	var unknown []string
	for _, n := range s.Skip {
		if !have[n] {
			unknown = append(unknown, n)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(s.Rename)) {
		if !have[n] {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		log.Warn("plugin settings name tools the plugin does not have", "plugin", p.Name(), "tools", unknown,
			"setting", "plugins.settings."+p.Name()+" skip/rename")
	}
}

// shadowed is the error of a plugin file whose name a source claims.
func shadowed(p *Plugin, src Source) error {
	return fmt.Errorf("plugin %s (%s) is not loaded: plugins.settings.%s names its source (%s), and only that one is served under the name; "+
		"remove the file or rename one of them", p.Name(), p.Path, src.Name, src.Origin)
}
