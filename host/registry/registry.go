// Package registry discovers plugins: it finds every .wasm file under the
// configured directories, reads each one's manifest (from the embedded custom
// section, or by running describe once and caching the answer by sha256),
// resolves tool names, and compiles a plugin on first use. It owns which tool
// belongs to which plugin and which plugins were refused and why; it does not
// validate arguments, enforce policy or speak MCP.
package registry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/grants"
	"github.com/plugboard/plugboard/host/runtime"
	"github.com/plugboard/plugboard/host/wasmfile"
)

// Plugin is one loaded plugin file.
type Plugin struct {
	Path     string
	Manifest abi.Manifest
	// FromSection is true when the manifest came from the embedded section.
	FromSection bool

	engine  *runtime.Engine
	granted []string
	once    sync.Once
	rt      *runtime.Plugin
	err     error
}

// Name is the plugin's declared name.
func (p *Plugin) Name() string { return p.Manifest.Plugin.Name }

// Runtime compiles the plugin on first use (or loads its machine code from
// the disk cache) and returns it. A failure is remembered: the plugin stays
// listed but its calls answer "unavailable" until the host restarts.
func (p *Plugin) Runtime(ctx context.Context) (*runtime.Plugin, error) {
	p.once.Do(func() {
		wasm, err := os.ReadFile(p.Path)
		if err != nil {
			p.err = err
			return
		}
		p.rt, p.err = p.engine.Compile(context.WithoutCancel(ctx), p.Name(), wasm, p.granted)
	})
	return p.rt, p.err
}

// Tool is a served tool and the plugin that serves it.
type Tool struct {
	Def    *abi.Tool
	Plugin *Plugin
}

// Problem is a plugin file that could not be served, or a tool that was
// refused.
type Problem struct {
	Path string
	Err  error
}

// Registry is the set of loaded plugins and their tools. It is immutable
// after Load.
type Registry struct {
	plugins  []*Plugin
	tools    map[string]Tool
	order    []string
	problems []Problem
}

// Options configures Load.
type Options struct {
	// Dirs are searched recursively for *.wasm files, in order.
	Dirs []string
	// DataDir holds the describe cache (manifests of modules without an
	// embedded section); "" disables it.
	DataDir string
	// DescribeTimeout bounds describe for modules without a section.
	DescribeTimeout time.Duration
	Engine          *runtime.Engine
	Logger          *slog.Logger
	// Grants decides which declared capabilities each plugin receives;
	// nil grants every plugin what it declares.
	Grants *grants.Policy
	// Conditions are the abi.Conditions this host meets; a tool whose When
	// names another is not served (not listed, and calls get tool_not_found).
	Conditions []string
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
	r := &Registry{tools: map[string]Tool{}}
	var files []string
	for _, dir := range opts.Dirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.HasSuffix(d.Name(), ".wasm") {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("plugin directory %s: %w", dir, err)
		}
	}
	// Loading is I/O and parsing only for plugins with a section, so it runs
	// in parallel; results keep directory order so name clashes resolve the
	// same way on every start.
	loaded := make([]*Plugin, len(files))
	errs := make([]error, len(files))
	var wg sync.WaitGroup
	for i, path := range files {
		wg.Go(func() { loaded[i], errs[i] = loadOne(ctx, path, opts) })
	}
	wg.Wait()
	for i, p := range loaded {
		if errs[i] != nil {
			opts.Logger.Error("plugin skipped", "path", files[i], "err", errs[i])
			r.problems = append(r.problems, Problem{Path: files[i], Err: errs[i]})
			continue
		}
		var withheld []string
		p.granted, withheld = opts.Grants.For(p.Name(), p.Manifest.Capabilities)
		if len(withheld) > 0 {
			opts.Logger.Warn("plugin capabilities withheld by the grants policy; calls needing them get permission_denied",
				"plugin", p.Name(), "withheld", withheld, "granted", p.granted)
		}
		r.add(p, opts)
	}
	return r, nil
}

func (r *Registry) add(p *Plugin, opts Options) {
	log := opts.Logger
	served := 0
	for i := range p.Manifest.Tools {
		def := &p.Manifest.Tools[i]
		if def.When != "" && !slices.Contains(opts.Conditions, def.When) {
			log.Debug("tool not served: its condition is not met", "tool", def.Name, "plugin", p.Name(), "when", def.When)
			continue
		}
		if prev, dup := r.tools[def.Name]; dup {
			err := fmt.Errorf("tool %q is already served by plugin %s (%s); refused for plugin %s (%s)",
				def.Name, prev.Plugin.Name(), prev.Plugin.Path, p.Name(), p.Path)
			log.Error("duplicate tool name", "tool", def.Name,
				"kept_plugin", prev.Plugin.Name(), "kept_path", prev.Plugin.Path,
				"refused_plugin", p.Name(), "refused_path", p.Path)
			r.problems = append(r.problems, Problem{Path: p.Path, Err: err})
			continue
		}
		r.tools[def.Name] = Tool{Def: def, Plugin: p}
		r.order = append(r.order, def.Name)
		served++
	}
	if served > 0 {
		r.plugins = append(r.plugins, p)
	}
	log.Debug("plugin loaded", "plugin", p.Name(), "path", p.Path, "tools", served, "manifest_from_section", p.FromSection)
}

func loadOne(ctx context.Context, path string, opts Options) (*Plugin, error) {
	p := &Plugin{Path: path, engine: opts.Engine}
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
		if raw, err = describeCached(ctx, path, wasm, opts); err != nil {
			return nil, err
		}
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
// (by sha256) is seen.
func describeCached(ctx context.Context, path string, wasm []byte, opts Options) ([]byte, error) {
	sum := sha256.Sum256(wasm)
	var cacheFile string
	if opts.DataDir != "" {
		cacheFile = filepath.Join(opts.DataDir, "manifests", hex.EncodeToString(sum[:])+".json")
		if b, err := os.ReadFile(cacheFile); err == nil {
			return b, nil
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
	out, err := rt.Describe(dctx)
	if err != nil {
		return nil, fmt.Errorf("describe: %w", err)
	}
	if cacheFile != "" {
		if err := writeFileAtomic(cacheFile, out); err != nil {
			opts.Logger.Warn("describe cache not written", "path", cacheFile, "err", err)
		}
	}
	return out, nil
}

func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Tool returns the tool of that name.
func (r *Registry) Tool(name string) (Tool, bool) {
	t, ok := r.tools[name]
	return t, ok
}

// Tools returns every served tool in load order.
func (r *Registry) Tools() []Tool {
	out := make([]Tool, 0, len(r.order))
	for _, n := range r.order {
		out = append(out, r.tools[n])
	}
	return out
}

// Plugins returns the plugins that serve at least one tool.
func (r *Registry) Plugins() []*Plugin { return slices.Clone(r.plugins) }

// Problems returns the plugins and tools that were refused.
func (r *Registry) Problems() []Problem { return slices.Clone(r.problems) }

// Warm compiles every plugin and readies one instance of each in the
// background, at most parallel at a time, so first calls do not pay for
// compilation. Errors are logged; the call path reports them again.
func (r *Registry) Warm(ctx context.Context, parallel int, log *slog.Logger) {
	sem := make(chan struct{}, max(1, parallel))
	for _, p := range r.plugins {
		go func() {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-sem }()
			rt, err := p.Runtime(ctx)
			if err == nil {
				err = rt.Warm(ctx)
			}
			if err != nil && ctx.Err() == nil {
				log.Warn("plugin warm-up failed", "plugin", p.Name(), "err", err)
			}
		}()
	}
}

// Close releases every compiled plugin, waiting until ctx ends for calls in
// flight. It returns runtime.ErrBusy if some were still running, in which
// case the engine must be left open (the process is usually exiting).
func (r *Registry) Close(ctx context.Context) error {
	var busy error
	for _, p := range r.plugins {
		// Do waits for a compilation in flight, so rt is safe to read after.
		p.once.Do(func() { p.err = errors.New("plugin registry closed") })
		if p.rt != nil {
			if err := p.rt.Close(ctx); errors.Is(err, runtime.ErrBusy) {
				busy = err
			}
		}
	}
	return busy
}
