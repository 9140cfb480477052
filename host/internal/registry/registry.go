// Package registry discovers plugins: it finds every .wasm file under the
// configured directories, reads each one's manifest (from the embedded custom
// section, or by running describe — or a hyper-mcp v2 plugin's list
// exports — once and caching the answer by sha256; hyper.go),
// resolves tool, resource, resource-template and prompt names, and compiles a
// plugin on first use. It owns which of them belongs to which plugin and
// which plugins were refused and why, and reloads the set when plugin files
// are added, removed or changed (Reload, Watch). Each plugin is bound to the
// operator's settings of its name (what it is compiled with, its call
// timeout, the names its tools are served under), and plugins added from a
// source are loaded from the modules the host checked (settings.go;
// SetSettings). It does not validate arguments, enforce policy or speak MCP.
package registry

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/plugboard/plugboard/host/internal/shape"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/atomicfile"
	"github.com/plugboard/plugboard/host/internal/grants"
	"github.com/plugboard/plugboard/host/internal/hostkey"
	"github.com/plugboard/plugboard/host/internal/metrics"
	"github.com/plugboard/plugboard/host/internal/runtime"
	"github.com/plugboard/plugboard/host/internal/wasmfile"
)

// Plugin is one loaded plugin file.
type Plugin struct {
	Path     string
	Manifest abi.Manifest
	// FromSection is true when the manifest came from the embedded section.
	FromSection bool
	// Origin is the source a plugin not found in the folders came from
	// (plugins.settings.NAME.source); "" for a folder's plugin.
	Origin string

	engine  *runtime.Engine
	granted []string
	// settings are the operator's (Settings), fingerprint identifies them
	// and redactor masks their secrets.
	settings    Settings
	fingerprint string
	redactor    *runtime.Redactor
	once        sync.Once
	rt          *runtime.Plugin
	err         error
	// gate lets calls' compilations go ahead of the background warm-up;
	// compiled is set once once has run (rt and err are final).
	gate     *compileGate
	compiled atomic.Bool
	// interp and tier serve calls while the plugin first compiles
	// (tier.go).
	interp *runtime.Engine
	tier   tier
	// called is set once a call has asked for the plugin: the warm-up then
	// leaves its compiled module loaded.
	called atomic.Bool
	// plain is set for a plain Extism module, whose tools its settings
	// describe (plain.go).
	plain *plainModule
	// stamp is the file's as it was loaded, module what is known of that
	// version's bytes and keep what keeps a copy of them (lastgood.go);
	// module is nil for a source's plugin.
	stamp  fileStamp
	module *module
	keep   *keeper
}

// Name is the plugin's declared name.
func (p *Plugin) Name() string { return p.Manifest.Plugin.Name }

// Runtime compiles the plugin on first use (or loads its machine code from
// the disk cache) and returns it. A failure is remembered: the plugin stays
// listed but its calls answer "unavailable" until the host restarts.
func (p *Plugin) Runtime(ctx context.Context) (*runtime.Plugin, error) {
	if !p.called.Load() {
		p.called.Store(true)
	}
	if p.compiled.Load() {
		return p.rt, p.err
	}
	if rt := p.interpreted(ctx); rt != nil {
		return rt, nil
	}
	if p.gate != nil {
		p.gate.begin()
		defer p.gate.end()
	}
	return p.compile(ctx)
}

// cachedBefore reports whether the plugin's machine code is already in the
// engine's disk cache, so warming it up would only load and release it.
func (p *Plugin) cachedBefore() bool {
	if p.compiled.Load() {
		return true
	}
	wasm, err := p.wasm()
	return err == nil && p.cached(wasm)
}

// compile is Runtime without telling the warm-up that a call waits.
func (p *Plugin) compile(ctx context.Context) (*runtime.Plugin, error) {
	p.once.Do(func() {
		wasm, err := p.wasm()
		if err != nil {
			p.err = err
			return
		}
		p.rt, p.err = p.engine.CompileWith(context.WithoutCancel(ctx), p.Name(), wasm, p.options())
	})
	p.compiled.Store(true)
	return p.rt, p.err
}

// Tool is a served tool and the plugin that serves it.
type Tool struct {
	// Def is the tool as served: under the name the plugin's settings give
	// it (prefix, rename), else the manifest's definition itself.
	Def    *abi.Tool
	Plugin *Plugin
	// PluginName is the tool's name in the plugin's manifest: what a call
	// names to the plugin.
	PluginName string
}

// Resource is a served resource and the plugin that serves it.
type Resource struct {
	Def    *abi.Resource
	Plugin *Plugin
}

// Template is a served resource template and the plugin that serves it.
type Template struct {
	Def    *abi.ResourceTemplate
	Plugin *Plugin
}

// Prompt is a served prompt and the plugin that serves it.
type Prompt struct {
	Def    *abi.Prompt
	Plugin *Plugin
}

// Problem is a plugin file that could not be served, or a tool that was
// refused or is served with a fault of its own (a *SchemaProblem).
type Problem struct {
	Path string
	Err  error
}

// Registry is the set of loaded plugins and what they serve. What it serves
// is an immutable snapshot, replaced whole by Reload, so readers never see a
// half-loaded set; a Tool or Plugin obtained before a reload stays usable
// until its plugin is closed.
type Registry struct {
	opts Options
	cur  atomic.Pointer[snapshot]

	mu    sync.Mutex            // serialises Reload and guards files, onChange, opts' settings
	files map[string]*fileEntry // by path: every .wasm seen in the last scan, and the sources' modules
	// settingsChanged is set by SetSettings until the next reload.
	settingsChanged bool
	// relisted is set by Refresh: the next reload builds a new snapshot
	// even if no file changed.
	relisted bool
	// onChange are called after a Reload that changed the snapshot.
	onChange []func()
}

// snapshot is one consistent view of what is served.
type snapshot struct {
	plugins []*Plugin
	tools   map[string]Tool
	order   []string
	// aliases maps each served alias to its tool's name.
	aliases       map[string]string
	resources     map[string]Resource
	resourceOrder []string
	templates     []Template
	prompts       map[string]Prompt
	promptOrder   []string
	problems      []Problem
}

// fileEntry is one plugin file as loaded: its stamp decides whether a
// reload reads it again.
type fileEntry struct {
	stamp fileStamp
	// origin is the name of the source whose module this is, and module
	// that module's path; both "" for a folder's file.
	origin, module string
	plugin         *Plugin
	err            error
}

// kept reports whether the entry's file failed to load while the plugin of
// the version before it is still served (lastgood.go).
func (e *fileEntry) kept() bool { return e.err != nil && e.plugin != nil }

// fileStamp is what a poll compares: size and modification time.
type fileStamp struct {
	size    int64
	modTime time.Time
}

// Options configures Load.
type Options struct {
	// Dirs are searched recursively for *.wasm files, in order.
	Dirs []string
	// DataDir holds the describe cache (manifests of modules without an
	// embedded section); "" disables it.
	DataDir string
	// CacheKey authenticates the describe cache (the host's key,
	// hostkey.Load); without one there is no describe cache.
	CacheKey []byte
	// DescribeTimeout bounds describe for modules without a section.
	DescribeTimeout time.Duration
	Engine          *runtime.Engine
	// Interpreter, when set, serves a call to a plugin that has never been
	// compiled while Engine compiles it (tier.go); it runs modules in
	// wazero's interpreter, with the same host modules and limits.
	Interpreter *runtime.Engine
	Logger      *slog.Logger
	// Grants decides which declared capabilities each plugin receives;
	// nil grants every plugin what it declares.
	Grants *grants.Policy
	// Conditions are the abi.Conditions this host meets; a tool whose When
	// names another is not served (not listed, and calls get tool_not_found).
	Conditions []string
	// Settings are the operator's settings of each plugin, by plugin name
	// (SetSettings replaces them).
	Settings map[string]Settings
	// Sources are plugins not in Dirs, loaded from the modules given (a
	// source with Err is a problem, and a folder's plugin of its name is
	// not loaded).
	Sources []Source
	// Metrics counts plugin loads and unloads and reads the compiled
	// plugins' pools at each scrape; nil records nothing.
	Metrics *metrics.Metrics

	// gate is the registry's: calls' compilations against the warm-up.
	gate *compileGate
	// keeper keeps the last good version of each plugin file while Watch
	// runs (lastgood.go).
	keeper *keeper
}

// Load finds and loads every plugin. A broken plugin is logged and recorded
// as a Problem; it never fails the load or hides other plugins.
func Load(ctx context.Context, opts Options) (*Registry, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Grants == nil {
		opts.Grants = grants.Declared()
	}
	if opts.DescribeTimeout == 0 {
		opts.DescribeTimeout = 10 * time.Second
	}
	opts.gate = &compileGate{}
	opts.keeper = &keeper{dir: opts.DataDir, log: opts.Logger}
	r := &Registry{opts: opts, files: map[string]*fileEntry{}}
	if _, err := r.reload(ctx); err != nil {
		return nil, err
	}
	opts.Metrics.SetPools(r.pools)
	return r, nil
}

// pools is what plugboard_plugin_instances reads: the instances of each
// served plugin compiled so far (a plugin never called has none).
func (r *Registry) pools() []metrics.Pool {
	var out []metrics.Pool
	for _, p := range r.snap().plugins {
		if !p.compiled.Load() || p.rt == nil {
			continue
		}
		idle, busy := p.rt.Instances()
		out = append(out, metrics.Pool{Plugin: p.Name(), Idle: idle, Busy: busy})
	}
	return out
}

// Reload scans the plugin directories again and, when a plugin file was
// added, removed or changed (size or modification time), replaces the
// snapshot: unchanged files keep their loaded plugin (and its compiled
// code), changed ones are loaded anew. Plugins no longer served are closed
// in the background once their calls in flight finish. It reports whether
// anything changed; OnChange callbacks run before it returns.
func (r *Registry) Reload(ctx context.Context) (bool, error) {
	changed, err := r.reload(ctx)
	if err != nil || !changed {
		return changed, err
	}
	r.mu.Lock()
	callbacks := slices.Clone(r.onChange)
	r.mu.Unlock()
	for _, fn := range callbacks {
		fn()
	}
	return true, nil
}

// OnChange registers fn to run after every Reload that changed what is
// served (the transport uses it to update its lists and notify clients).
func (r *Registry) OnChange(fn func()) {
	r.mu.Lock()
	r.onChange = append(r.onChange, fn)
	r.mu.Unlock()
}

// Watch polls the plugin directories every interval until ctx ends and
// reloads when a file changed; new plugins are warmed in the background.
// A poll is a directory walk and a stat per .wasm file. While it runs, a
// plugin file replaced by one that does not load keeps its last good
// version served (lastgood.go).
func (r *Registry) Watch(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		return
	}
	r.keepVersions()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		before := r.snap().plugins
		changed, err := r.Reload(ctx)
		if err != nil {
			r.opts.Logger.Warn("plugin directories could not be scanned", "err", err)
			continue
		}
		if !changed {
			continue
		}
		s := r.snap()
		var fresh []*Plugin
		for _, p := range s.plugins {
			if !slices.Contains(before, p) {
				fresh = append(fresh, p)
			}
		}
		r.opts.Logger.Info("plugins reloaded", "plugins", len(s.plugins), "tools", len(s.order),
			"resources", len(s.resourceOrder)+len(s.templates), "prompts", len(s.promptOrder), "problems", len(s.problems))
		r.warm(ctx, fresh, 1, r.opts.Logger)
	}
}

// scan lists the .wasm files under the plugin directories with their stamps,
// in directory order.
func (r *Registry) scan() ([]string, map[string]fileStamp, error) {
	var files []string
	stamps := map[string]fileStamp{}
	for _, dir := range r.opts.Dirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || !strings.HasSuffix(d.Name(), ".wasm") {
				return nil
			}
			info, err := d.Info()
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) { // removed while walking
					return nil
				}
				return err
			}
			if _, dup := stamps[path]; !dup {
				files = append(files, path)
			}
			stamps[path] = fileStamp{size: info.Size(), modTime: info.ModTime()}
			return nil
		})
		if err != nil {
			return nil, nil, fmt.Errorf("plugin directory %s: %w", dir, err)
		}
	}
	return files, stamps, nil
}

func (r *Registry) reload(ctx context.Context) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	files, stamps, err := r.scan()
	if err != nil {
		return false, err
	}
	// The sources' modules load like files, under their settings' names,
	// each keyed "source NAME" (two sources may share a cached module; no
	// folder's path looks like that).
	origin := map[string]Source{}
	for _, src := range r.opts.Sources {
		if src.Path == "" {
			continue
		}
		key := sourceKey(src.Name)
		stamps[key] = fileStamp{}
		if info, err := os.Stat(src.Path); err == nil { // else reported when loaded
			stamps[key] = fileStamp{size: info.Size(), modTime: info.ModTime()}
		}
		files = append(files, key)
		origin[key] = src
	}
	touched := r.settingsChanged
	r.settingsChanged = false
	changed := r.cur.Load() == nil || len(stamps) != len(r.files) || touched || r.relisted
	r.relisted = false
	entries := make([]*fileEntry, len(files))
	var wg sync.WaitGroup
	for i, path := range files {
		if old := r.files[path]; old != nil && old.stamp == stamps[path] && old.module == origin[path].Path {
			entries[i] = old
			continue
		}
		changed = true
		// Loading is I/O and parsing only for plugins with a section, so it
		// runs in parallel; results keep directory order so name clashes
		// resolve the same way on every start.
		wg.Go(func() {
			e := &fileEntry{stamp: stamps[path], origin: origin[path].Name, module: origin[path].Path}
			file := path
			if e.module != "" {
				file = e.module
			}
			e.plugin, e.err = loadOne(ctx, file, r.opts)
			if m := r.opts.Metrics; m != nil {
				name := strings.TrimSuffix(filepath.Base(file), ".wasm")
				if e.err == nil {
					name = e.plugin.Name()
					if src, ok := origin[path]; ok {
						name = src.Name
					}
				}
				m.Loaded(name, e.err)
			}
			if e.err == nil && e.module == "" {
				e.plugin.stamp, e.plugin.module = e.stamp, &module{}
			}
			if src, ok := origin[path]; ok && e.err == nil {
				e.plugin.Origin = src.Origin
				if declared := e.plugin.Manifest.Plugin.Name; declared != src.Name {
					r.opts.Logger.Debug("plugin served under its settings' name", "plugin", src.Name, "declared", declared, "source", src.Origin)
					e.plugin.Manifest.Plugin.Name = src.Name
				}
			}
			if e.err == nil {
				var withheld []string
				e.plugin.granted, withheld = r.opts.Grants.For(e.plugin.Name(), e.plugin.Manifest.Capabilities)
				if len(withheld) > 0 {
					r.opts.Logger.Warn("plugin capabilities withheld by the grants policy; calls needing them get permission_denied",
						"plugin", e.plugin.Name(), "withheld", withheld, "granted", e.plugin.granted)
				}
			}
			entries[i] = e
		})
	}
	wg.Wait()
	if !changed {
		return false, nil
	}
	// A file that changed and no longer loads keeps the version before it
	// served, when a copy of that version was kept.
	for i, e := range entries {
		if old := r.files[files[i]]; e.err != nil && old != e {
			if k := keptEntry(old, e); k != nil {
				entries[i] = k
			}
		}
	}
	s := &snapshot{tools: map[string]Tool{}, aliases: map[string]string{}, resources: map[string]Resource{}, prompts: map[string]Prompt{}}
	next := make(map[string]*fileEntry, len(files))
	for _, src := range r.opts.Sources {
		if src.Err != nil {
			s.problems = append(s.problems, Problem{Path: src.Origin, Err: src.Err})
		}
	}
	var candidates []int // entries to serve, by index
	for i, e := range entries {
		fresh := r.files[files[i]] != e
		if e.plugin != nil {
			// Bound to the plugin's current settings: a plugin whose settings
			// changed is a new entry, and the old one is retired below.
			if b := e.plugin.bind(r.opts.settingsFor(e.plugin.Name())); b != e.plugin {
				if r.files[files[i]] == e {
					// Served already: the old entry's plugin is retired.
					e = &fileEntry{stamp: e.stamp, origin: e.origin, module: e.module, plugin: b, err: e.err}
				} else {
					e.plugin = b
				}
				entries[i] = e
				b.checkNames(r.opts.Logger)
			}
		}
		next[files[i]] = e
		err := e.err
		if e.kept() {
			// Once per new file: later polls find the same entry.
			if fresh {
				var kept *KeptError
				errors.As(e.err, &kept)
				r.opts.Logger.Error("plugin file refused; still serving its previous version", "path", files[i],
					"plugin", e.plugin.Name(), "sha256", kept.SHA256, "err", kept.Err)
			}
			s.problems = append(s.problems, Problem{Path: files[i], Err: e.err})
			err = nil
		}
		if err == nil {
			err = e.plugin.functionsErr() // a plain module's settings (plain.go)
		}
		if err != nil {
			where := files[i]
			if src, ok := origin[where]; ok {
				where = src.Origin
			}
			if r.files[files[i]] != e {
				r.opts.Logger.Error("plugin skipped", "path", where, "err", err)
			}
			s.problems = append(s.problems, Problem{Path: where, Err: err})
			continue
		}
		if src, claimed := r.opts.sourceNamed(e.plugin.Name()); claimed && e.origin == "" {
			err := shadowed(e.plugin, src)
			if r.files[files[i]] != e || touched {
				r.opts.Logger.Error("plugin skipped", "path", files[i], "err", err)
			}
			s.problems = append(s.problems, Problem{Path: files[i], Err: err})
			continue
		}
		candidates = append(candidates, i)
	}
	// What is served keeps its names: the files served before this reload
	// are added first, in the order they were served, then the newcomers
	// in directory order (clash.go).
	rank := r.servedRank()
	slices.SortStableFunc(candidates, func(a, b int) int {
		ra, okA := rank[files[a]]
		rb, okB := rank[files[b]]
		switch {
		case okA && okB:
			return ra - rb
		case okA:
			return -1
		case okB:
			return 1
		}
		return 0
	})
	for _, i := range candidates {
		s.add(entries[i].plugin, pinnedUnderName(files[i], entries[i]), r.opts)
	}
	if touched {
		for _, name := range slices.Sorted(maps.Keys(r.opts.Settings)) {
			if !slices.ContainsFunc(entries, func(e *fileEntry) bool { return e.plugin != nil && e.plugin.Name() == name }) {
				if _, isSource := r.opts.sourceNamed(name); !isSource {
					r.opts.Logger.Warn("plugin settings name no plugin in the plugin folders", "plugin", name,
						"setting", "plugins.settings."+name, "dirs", r.opts.Dirs)
				}
			}
		}
	}
	// Plugins whose file went away or changed: close them once their calls
	// finish, without holding up the reload.
	for path, old := range r.files {
		if n := next[path]; old.plugin != nil && (n == nil || n.plugin != old.plugin) {
			r.opts.Metrics.Unloaded(old.plugin.Name())
			go old.plugin.close(r.opts.Logger)
		}
	}
	r.files = next
	r.cur.Store(s)
	return true, nil
}

// add serves plugin p in s — all of its names, or none of them (see
// clashes). pinned says the operator installed p under its own name
// (pinnedUnderName), which a reserved name requires.
// servedRank maps each file whose plugin the current snapshot serves to
// its place among the served plugins. Called with r.mu held.
func (r *Registry) servedRank() map[string]int {
	cur := r.cur.Load()
	if cur == nil {
		return nil
	}
	rank := map[string]int{}
	for file, e := range r.files {
		if e.plugin == nil {
			continue
		}
		if i := slices.Index(cur.plugins, e.plugin); i >= 0 {
			rank[file] = i
		}
	}
	return rank
}

func (s *snapshot) add(p *Plugin, pinned bool, opts Options) {
	log := opts.Logger
	var clash clashes
	defer func() { clash.report(s, p, log) }()
	if i := slices.IndexFunc(s.plugins, func(q *Plugin) bool { return q.Name() == p.Name() }); i >= 0 {
		clash.sameName = s.plugins[i]
	}
	// What p would serve, checked whole before any of it is served.
	type servedTool struct {
		def        *abi.Tool
		pluginName string
	}
	var tools []servedTool
	names := map[string]bool{} // tool names and aliases p serves
	claim := func(kind, name string) {
		if prev, dup := s.tools[name]; dup {
			clash.add(kind, name, prev.Plugin)
		} else if owner, dup := s.aliases[name]; dup {
			clash.add(kind, name, s.tools[owner].Plugin)
		}
		if owner, reserved := ReservedOwner(name); reserved && (owner != p.Name() || !pinned) {
			clash.addReserved(kind, name, owner)
		}
		names[name] = true
	}
	for i := range p.Manifest.Tools {
		def := &p.Manifest.Tools[i]
		if def.When != "" && !slices.Contains(opts.Conditions, def.When) {
			log.Debug("tool not served: its condition is not met", "tool", def.Name, "plugin", p.Name(), "when", def.When)
			continue
		}
		pluginName := def.Name
		if def = p.servedTool(def); def == nil {
			log.Debug("tool not served: the plugin's settings skip it", "tool", pluginName, "plugin", p.Name())
			continue
		}
		if !s.servable(p, pluginName, def, log) { // schemacheck.go
			continue
		}
		if names[def.Name] { // two tools renamed or prefixed onto one name
			clash.add("tool", def.Name, p)
			continue
		}
		claim("tool", def.Name)
		for _, a := range def.Aliases {
			claim("tool alias", a)
		}
		tools = append(tools, servedTool{def, pluginName})
	}
	for i := range p.Manifest.Resources {
		if prev, dup := s.resources[p.Manifest.Resources[i].URI]; dup {
			clash.add("resource", p.Manifest.Resources[i].URI, prev.Plugin)
		}
	}
	for i := range p.Manifest.ResourceTemplates {
		uri := p.Manifest.ResourceTemplates[i].URITemplate
		if j := slices.IndexFunc(s.templates, func(t Template) bool { return t.Def.URITemplate == uri }); j >= 0 {
			clash.add("resource template", uri, s.templates[j].Plugin)
		}
	}
	for i := range p.Manifest.Prompts {
		if prev, dup := s.prompts[p.Manifest.Prompts[i].Name]; dup {
			clash.add("prompt", p.Manifest.Prompts[i].Name, prev.Plugin)
		}
	}
	if clash.any() {
		return
	}
	for _, t := range tools {
		s.tools[t.def.Name] = Tool{Def: t.def, Plugin: p, PluginName: t.pluginName}
		s.order = append(s.order, t.def.Name)
		for _, a := range t.def.Aliases {
			s.aliases[a] = t.def.Name
		}
	}
	for i := range p.Manifest.Resources {
		def := &p.Manifest.Resources[i]
		s.resources[def.URI] = Resource{Def: def, Plugin: p}
		s.resourceOrder = append(s.resourceOrder, def.URI)
	}
	for i := range p.Manifest.ResourceTemplates {
		s.templates = append(s.templates, Template{Def: &p.Manifest.ResourceTemplates[i], Plugin: p})
	}
	for i := range p.Manifest.Prompts {
		def := &p.Manifest.Prompts[i]
		s.prompts[def.Name] = Prompt{Def: def, Plugin: p}
		s.promptOrder = append(s.promptOrder, def.Name)
	}
	served := len(tools) + len(p.Manifest.Resources) + len(p.Manifest.ResourceTemplates) + len(p.Manifest.Prompts)
	if served > 0 {
		s.plugins = append(s.plugins, p)
	}
	log.Debug("plugin loaded", "plugin", p.Name(), "path", p.Path, "served", served, "manifest_from_section", p.FromSection)
}

func loadOne(ctx context.Context, path string, opts Options) (*Plugin, error) {
	p := &Plugin{Path: path, engine: opts.Engine, interp: opts.Interpreter, gate: opts.gate, keep: opts.keeper}
	raw, found, err := manifestSection(path)
	if err != nil {
		return nil, fmt.Errorf("not a loadable WebAssembly module: %w", err)
	}
	if found {
		p.FromSection = true
	} else {
		wasm, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		if info, err := wasmfile.Parse(wasm); err == nil && isPlain(info) {
			return loadPlain(ctx, p, path, wasm, info, opts)
		}
		if raw, err = describeCached(ctx, path, wasm, opts); err != nil {
			return nil, err
		}
	}
	if err := abi.CheckManifestSize(raw); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, &p.Manifest); err != nil {
		return nil, fmt.Errorf("manifest is not valid JSON: %w", err)
	}
	if p.Manifest.Plugin.Name == "" {
		p.Manifest.Plugin.Name = strings.TrimSuffix(filepath.Base(path), ".wasm")
	}
	if err := p.Manifest.Validate(); err != nil {
		return nil, fmt.Errorf("invalid manifest: %w", err)
	}
	return p, nil
}

// manifestSection reads the embedded manifest, touching only section
// headers and the section itself, so start-up does not grow with module size.
func manifestSection(path string) ([]byte, bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	return wasmfile.ReadCustomSection(f, st.Size(), abi.ManifestSection)
}

// describeCached returns the describe output of a module without an
// embedded manifest, running describe only the first time a given module
// (by sha256) is seen, from the describe cache (below).
func describeCached(ctx context.Context, path string, wasm []byte, opts Options) ([]byte, error) {
	sum := sha256.Sum256(wasm)
	cacheFile := describeCacheFile(opts, sum)
	if cacheFile != "" {
		if out, ok := readDescribeCache(cacheFile, opts.CacheKey, sum, opts.Logger); ok {
			return out, nil
		}
	}
	if opts.Engine == nil {
		return nil, errors.New("module has no embedded manifest and no engine was given to describe it")
	}
	name := strings.TrimSuffix(filepath.Base(path), ".wasm")
	rt, err := opts.Engine.Compile(ctx, name, wasm, nil)
	if err != nil {
		return nil, err
	}
	defer rt.Close(ctx)
	dctx, cancel := context.WithTimeout(ctx, opts.DescribeTimeout)
	defer cancel()
	out, err := Describe(dctx, rt)
	if err != nil {
		return nil, describeFailed(wasm, err)
	}
	if cacheFile != "" {
		writeDescribeCache(cacheFile, opts.CacheKey, sum, out, opts.Logger)
	}
	return out, nil
}

// describeFailed is the error of a describe that failed, in the words of
// the module's shape where its shape explains the failure — a Go command
// module traps in every export, and the operator reading serve's log needs
// "build a reactor", not the runtime's trap alone (plugboard plugin inspect
// and the conformance kit say the same, from the same shape.Diagnose).
func describeFailed(wasm []byte, err error) error {
	if info, perr := wasmfile.Parse(wasm); perr == nil {
		if why, fix := shape.Of(info).Diagnose(err); why != "" {
			return &diagnosedError{why: why, fix: fix, err: err}
		}
	}
	return fmt.Errorf("describe: %w", err)
}

// diagnosedError is a describe failure its module's shape explains.
type diagnosedError struct {
	why, fix string
	err      error
}

func (e *diagnosedError) Error() string { return "describe failed: " + e.why + "; fix: " + e.fix }
func (e *diagnosedError) Unwrap() error { return e.err }

// The describe cache: DATA/manifests/<sha256 of the module>.describe, each
// entry describeMagic, an HMAC under the host's key (Options.CacheKey) of
// the module's sha256 and the output, then the output. The file's name is
// a hash anyone can compute, so only the MAC says the host wrote it: an
// entry whose MAC fails (planted, edited, the older unsigned format) is
// logged and the module described again.
//
// Capabilities never come from the cache: a describe output that declares
// any (the plugin's own, or those the host adds for its imports) is not
// cached, and an entry that declares any is not used, so such a module is
// described at every load and what it is granted is what it says now. A
// forged entry would need the key; this rule holds even for one that had
// it, and costs only the plugins asking for capabilities a describe per
// start.
var describeMagic = []byte("plugboard-describe-hmac\x00")

// describeLabel is the first part of a describe cache entry's MAC.
var describeLabel = []byte("plugboard describe cache")

// describeCacheFile is sum's entry, or "" when there is no describe cache.
func describeCacheFile(opts Options, sum [sha256.Size]byte) string {
	if opts.DataDir == "" || len(opts.CacheKey) == 0 {
		return ""
	}
	return filepath.Join(opts.DataDir, "manifests", hex.EncodeToString(sum[:])+".describe")
}

func describeMAC(key []byte, sum [sha256.Size]byte, out []byte) []byte {
	return hostkey.MAC(key, describeLabel, sum[:], out)
}

// readDescribeCache returns the cached output for sum if the entry is the
// host's and declares no capabilities.
func readDescribeCache(file string, key []byte, sum [sha256.Size]byte, log *slog.Logger) ([]byte, bool) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, false
	}
	head := len(describeMagic) + sha256.Size
	if len(b) < head || !bytes.HasPrefix(b, describeMagic) ||
		!hostkey.Equal(b[len(describeMagic):head], describeMAC(key, sum, b[head:])) {
		log.Warn("describe cache entry not signed by this host; describing the module again", "path", file)
		return nil, false
	}
	out := b[head:]
	if declaresCapabilities(out) {
		log.Warn("describe cache entry declares capabilities, which never come from the cache; describing the module again", "path", file)
		return nil, false
	}
	return out, true
}

// writeDescribeCache caches out for sum unless it declares capabilities.
func writeDescribeCache(file string, key []byte, sum [sha256.Size]byte, out []byte, log *slog.Logger) {
	if declaresCapabilities(out) {
		return
	}
	entry := make([]byte, 0, len(describeMagic)+sha256.Size+len(out))
	entry = append(append(append(entry, describeMagic...), describeMAC(key, sum, out)...), out...)
	if err := atomicfile.Write(file, entry, 0o600); err != nil {
		log.Warn("describe cache not written", "path", file, "err", err)
	}
}

// declaresCapabilities reads out as loadOne does (an abi.Manifest, so the
// same field matches however it is spelt) and reports whether it declares
// any capability. Output that is not a manifest counts as declaring them:
// it is not cached, and loadOne reports why it cannot be loaded.
func declaresCapabilities(out []byte) bool {
	var m abi.Manifest
	return json.Unmarshal(out, &m) != nil || len(m.Capabilities) > 0
}

func (r *Registry) snap() *snapshot { return r.cur.Load() }

// Tool returns the tool of that name.
func (r *Registry) Tool(name string) (Tool, bool) {
	t, ok := r.snap().tools[name]
	return t, ok
}

// Resolve returns the tool served under name: its own name, or one of the
// aliases it declares (abi.Tool.Aliases).
func (r *Registry) Resolve(name string) (Tool, bool) {
	s := r.snap()
	if t, ok := s.tools[name]; ok {
		return t, true
	}
	if canonical, ok := s.aliases[name]; ok {
		return s.tools[canonical], true
	}
	return Tool{}, false
}

// Tools returns every served tool in load order.
func (r *Registry) Tools() []Tool {
	s := r.snap()
	out := make([]Tool, 0, len(s.order))
	for _, n := range s.order {
		out = append(out, s.tools[n])
	}
	return out
}

// Resource returns the resource served at uri (not a template match).
func (r *Registry) Resource(uri string) (Resource, bool) {
	x, ok := r.snap().resources[uri]
	return x, ok
}

// Resources returns every served resource in load order.
func (r *Registry) Resources() []Resource {
	s := r.snap()
	out := make([]Resource, 0, len(s.resourceOrder))
	for _, u := range s.resourceOrder {
		out = append(out, s.resources[u])
	}
	return out
}

// Template returns the resource template with that uriTemplate.
func (r *Registry) Template(uriTemplate string) (Template, bool) {
	for _, t := range r.snap().templates {
		if t.Def.URITemplate == uriTemplate {
			return t, true
		}
	}
	return Template{}, false
}

// Templates returns every served resource template in load order.
func (r *Registry) Templates() []Template { return slices.Clone(r.snap().templates) }

// Prompt returns the prompt of that name.
func (r *Registry) Prompt(name string) (Prompt, bool) {
	x, ok := r.snap().prompts[name]
	return x, ok
}

// Prompts returns every served prompt in load order.
func (r *Registry) Prompts() []Prompt {
	s := r.snap()
	out := make([]Prompt, 0, len(s.promptOrder))
	for _, n := range s.promptOrder {
		out = append(out, s.prompts[n])
	}
	return out
}

// Plugins returns the plugins that serve at least one tool, resource,
// resource template or prompt.
func (r *Registry) Plugins() []*Plugin { return slices.Clone(r.snap().plugins) }

// Problems returns the plugins and tools that were refused.
func (r *Registry) Problems() []Problem { return slices.Clone(r.snap().problems) }

// Warm compiles every plugin in the background, at most parallel at a
// time, so first calls do not pay for compilation (seconds with an empty
// cache). It keeps neither instances nor compiled modules of plugins no
// call has used: a compiled Go guest holds ≈ 20 MB, an instance its guest
// heap, and a first call loads the module from the disk cache in ≈ 50 ms. A call that has to compile its
// plugin goes first: the warm-up starts no compilation while one is under
// way. Errors are logged; the call path reports them again.
func (r *Registry) Warm(ctx context.Context, parallel int, log *slog.Logger) {
	r.warm(ctx, r.snap().plugins, parallel, log)
}

func (r *Registry) warm(ctx context.Context, plugins []*Plugin, parallel int, log *slog.Logger) {
	sem := make(chan struct{}, max(1, parallel))
	gate := r.opts.gate
	go func() {
		var wg sync.WaitGroup
		for _, p := range plugins {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			if err := gate.wait(ctx); err != nil {
				<-sem
				return
			}
			wg.Go(func() {
				defer func() { <-sem }()
				if p.cachedBefore() {
					return
				}
				rt, err := p.compile(ctx)
				if err != nil {
					if ctx.Err() == nil && !errors.Is(err, errRegistryClosed) {
						log.Warn("plugin warm-up failed", "plugin", p.Name(), "err", err)
					}
					return
				}
				// The compilation filled the disk cache; a plugin no
				// call has used yet gives its module back until one
				// does (loading it from the cache is ≈ 50 ms). One that
				// calls use — perhaps through its interpreted copy, so
				// with no instance yet — keeps it: its next call would
				// otherwise wait for the load.
				if !p.called.Load() {
					rt.ReleaseUnused()
				}
			})
		}
		wg.Wait()
	}()
}

// compileGate holds the background warm-up back while calls compile their
// plugins: on a machine with few cores, a warm-up compilation (seconds for
// a large module with an empty cache) would otherwise take the core a
// call's own compilation needs. A warm-up compilation already running is
// not interrupted (wazero cannot stop one), but no new one starts until
// every call's compilation has ended.
type compileGate struct {
	mu      sync.Mutex
	calls   int
	clearCh chan struct{} // closed when calls drops to 0; nil while 0
}

// begin marks a call that may compile; end undoes it.
func (g *compileGate) begin() {
	g.mu.Lock()
	if g.calls == 0 {
		g.clearCh = make(chan struct{})
	}
	g.calls++
	g.mu.Unlock()
}

func (g *compileGate) end() {
	g.mu.Lock()
	g.calls--
	if g.calls == 0 {
		close(g.clearCh)
		g.clearCh = nil
	}
	g.mu.Unlock()
}

// wait returns once no call is compiling, or ctx's error.
func (g *compileGate) wait(ctx context.Context) error {
	for {
		g.mu.Lock()
		ch := g.clearCh
		g.mu.Unlock()
		if ch == nil {
			return ctx.Err()
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Close releases every compiled plugin, waiting until ctx ends for calls in
// flight. It returns runtime.ErrBusy if some were still running, in which
// case the engine must be left open (the process is usually exiting).
func (r *Registry) Close(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var busy error
	for _, e := range r.files {
		if e.plugin == nil {
			continue
		}
		if err := e.plugin.closeRuntime(ctx); errors.Is(err, runtime.ErrBusy) {
			busy = err
		}
	}
	if busy == nil {
		for _, e := range r.files {
			if e.plugin != nil {
				e.plugin.module.close()
			}
		}
	}
	return busy
}

// errRegistryClosed is the compile error of a plugin closed before it
// compiled: no call can want it, so the warm-up does not report it.
var errRegistryClosed = errors.New("plugin registry closed")

// closeRuntime stops the plugin from compiling and closes its compiled
// code, waiting until ctx ends for calls in flight.
func (p *Plugin) closeRuntime(ctx context.Context) error {
	// Do waits for a compilation in flight, so rt is safe to read after.
	p.once.Do(func() { p.err = errRegistryClosed })
	p.closeTier(ctx)
	if p.rt != nil {
		return p.rt.Close(ctx)
	}
	return nil
}

// close is closeRuntime for a plugin a reload retired: it waits up to a
// minute for its calls in flight.
func (p *Plugin) close(log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.closeRuntime(ctx); err != nil {
		log.Warn("retired plugin not closed", "plugin", p.Name(), "path", p.Path, "err", err)
	}
}
