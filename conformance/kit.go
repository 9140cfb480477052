package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/plugin"
)

// Defaults of Options.
const (
	DefaultFuzz        = 50
	DefaultCallTimeout = 10 * time.Second
	// describeTimeout bounds describe and the first instantiation, which
	// include compiling the module.
	describeTimeout = 60 * time.Second
)

// Options configures a kit run.
type Options struct {
	// Seed makes the fuzzed arguments reproducible (0 means 1).
	Seed int64
	// Fuzz is the number of random argument objects per tool, made after
	// the deterministic edge values; 0 means DefaultFuzz, negative none.
	Fuzz int
	// CallTimeout caps every call's deadline (a tool's own timeout_ms
	// applies when shorter); 0 means DefaultCallTimeout.
	CallTimeout time.Duration
	// Parallel is how many plugins are checked at once; 0 means GOMAXPROCS.
	Parallel int
	// Strict makes warnings fail the run (advice never does).
	Strict bool
	// Profile is the rules each plugin is held to: ProfileAuto ("" too)
	// holds a plugin written for plugboard to the house rules and any
	// other to the base only, with the house rules as advice.
	Profile Profile
	// Settings are the operator's settings of each plugin by the name the
	// host serves it under (plugins.settings, as host.LoadSettings makes
	// them), which the plugin's calls run with as under serve; Config
	// names the file they came from, for the report.
	Settings map[string]plugin.Settings
	Config   string
	// MemoryLimitMiB and MaxInstances are the limits of every plugin
	// (plugins.memory_limit_mib and plugins.max_instances, as serve
	// takes them); 0 means the host's defaults.
	MemoryLimitMiB uint
	MaxInstances   int
	// HTTPStandIns send the plugins' requests to a host (a key, with or
	// without :port) to a test server (the URL) instead: the plugin's
	// allowed_hosts still decide what it may reach (plugin.Config's
	// HTTPStandIns, which only the kit sets; serve never does).
	HTTPStandIns map[string]*url.URL
	// Progress, if set, is called once per plugin as its checks finish
	// (never concurrently).
	Progress func(*PluginReport)
}

func (o Options) withDefaults() Options {
	if o.Seed == 0 {
		o.Seed = 1
	}
	switch {
	case o.Fuzz == 0:
		o.Fuzz = DefaultFuzz
	case o.Fuzz < 0:
		o.Fuzz = 0
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.Parallel <= 0 {
		o.Parallel = goruntime.GOMAXPROCS(0)
	}
	if o.Profile == "" {
		o.Profile = ProfileAuto
	}
	return o
}

// Kit checks plugins. It owns one host engine, configured as `serve`
// configures its own (memory and instance limits of Options, which the
// configuration file's plugins section gives as it gives serve's, else
// the defaults; payload limits; no board), and a throwaway data
// directory.
type Kit struct {
	opts Options
	eng  *plugin.Engine
	tmp  string

	probeOnce sync.Once
	probe     []probeResult
	probeErr  error

	linkMu sync.Mutex
	links  map[string]error

	// busy is set when a call was abandoned or a plugin could not be closed:
	// a guest may still run in the engine's memory, so the engine is left
	// open (the process is usually about to exit).
	busy atomic.Bool
}

// closeTimeout bounds waiting for a plugin's calls when closing it.
const closeTimeout = 5 * time.Second

// New starts a kit. Close releases it.
func New(ctx context.Context, opts Options) (*Kit, error) {
	tmp, err := os.MkdirTemp("", "plugboard-conformance-")
	if err != nil {
		return nil, err
	}
	eng, err := plugin.NewEngine(ctx, plugin.Config{Logger: slog.New(slog.DiscardHandler),
		MemoryLimitPages: uint32(opts.MemoryLimitMiB * 16), MaxInstances: opts.MaxInstances, HTTPStandIns: opts.HTTPStandIns})
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	return &Kit{opts: opts.withDefaults(), eng: eng, tmp: tmp, links: map[string]error{}}, nil
}

// Close releases the engine and removes the data directory.
func (k *Kit) Close(ctx context.Context) error {
	var err error
	if !k.busy.Load() {
		err = k.eng.Close(ctx)
	}
	if rerr := os.RemoveAll(k.tmp); err == nil {
		err = rerr
	}
	return err
}

// closing returns a context for closing plugins, bounded by closeTimeout.
func closing(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
}

// closePlugin closes a compiled plugin, marking the kit busy if calls
// still run in it.
func (k *Kit) closePlugin(ctx context.Context, close func(context.Context) error) {
	cctx, cancel := closing(ctx)
	defer cancel()
	if err := close(cctx); errors.Is(err, plugin.ErrBusy) {
		k.busy.Store(true)
	}
}

// Run checks every plugin file and returns the report; the error is only
// for a kit that cannot start. Problems with a plugin are in its report.
func Run(ctx context.Context, paths []string, opts Options) (*Report, error) {
	k, err := New(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer k.Close(context.WithoutCancel(ctx))
	o := k.opts
	rep := &Report{ABI: abi.Version, Seed: o.Seed, Fuzz: o.Fuzz, Profile: o.Profile, Config: o.Config, Plugins: make([]PluginReport, len(paths))}
	sem := make(chan struct{}, o.Parallel)
	var wg sync.WaitGroup
	var progressMu sync.Mutex
	for i, path := range paths {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			pr := k.CheckFile(ctx, path)
			pr.finish(o.Strict)
			rep.Plugins[i] = *pr
			if o.Progress != nil {
				progressMu.Lock()
				o.Progress(pr)
				progressMu.Unlock()
			}
		})
	}
	wg.Wait()
	rep.Finish(o.Strict)
	return rep, ctx.Err()
}

// link reports whether the host's engine provides one imported function
// with that signature, by compiling and instantiating a module that imports
// only it: the engine's own import check, then wazero's linker (names and
// signatures), decide. Answers are memoised.
func (k *Kit) link(ctx context.Context, mod, name string, t funcType) error {
	key := mod + "\x00" + name + "\x00" + t.String()
	k.linkMu.Lock()
	defer k.linkMu.Unlock()
	if err, ok := k.links[key]; ok {
		return err
	}
	err := func() error {
		p, err := k.eng.Compile(ctx, "conformance-import-probe", importProbe(mod, name, t), nil)
		if err != nil {
			return unwrapPlugin(err)
		}
		defer p.Close(ctx)
		if err := p.Warm(ctx); err != nil {
			return unwrapPlugin(err)
		}
		return nil
	}()
	k.links[key] = err
	return err
}

// unwrapPlugin trims the engine's "plugin NAME: " and "instantiating the
// plugin failed: " prefixes off a link error.
func unwrapPlugin(err error) error {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "plugin conformance-import-probe: ")
	if i := strings.LastIndex(msg, "failed: "); i >= 0 {
		msg = msg[i+len("failed: "):]
	}
	return errors.New(msg)
}

func (k *Kit) sandbox(ctx context.Context) ([]probeResult, error) {
	k.probeOnce.Do(func() { k.probe, k.probeErr = runSandboxProbe(ctx, k.eng) })
	return k.probe, k.probeErr
}

// CheckFile runs every check on one plugin file. The report's totals are
// filled in by Report.Finish (Run does it).
func (k *Kit) CheckFile(ctx context.Context, path string) *PluginReport {
	start := time.Now()
	pr := &PluginReport{File: path, Tools: []string{}}
	if k.opts.Profile != ProfileAuto {
		pr.Profile = k.opts.Profile
	}
	rec := newRecorder()
	defer func() {
		applyProfile(rec.results, pr.Profile)
		pr.Results = rec.results
		pr.duration = time.Since(start)
	}()
	k.check(ctx, path, pr, rec)
	return pr
}

func (k *Kit) check(ctx context.Context, path string, pr *PluginReport, rec *recorder) {
	name := strings.TrimSuffix(filepath.Base(path), ".wasm")
	skipAll := func(why string, ids ...string) {
		for _, id := range ids {
			rec.skip(id, "", why)
		}
	}
	later := []string{CheckExports, CheckImports, CheckInstantiate, CheckDescribe, CheckManifest, CheckVersion, CheckManifestSection,
		CheckCapabilityUse, CheckCapabilities, CheckSandboxProbe, CheckSandboxReach}

	wasm, err := os.ReadFile(path)
	if err != nil {
		rec.fail(CheckWasm, "", "cannot read the file: "+err.Error(), "pass the path of a .wasm plugin")
		skipAll("skipped: no module", later...)
		return
	}
	mod, info, err := parseModule(wasm)
	if err != nil {
		rec.fail(CheckWasm, "", "not a WebAssembly module plugboard can read: "+err.Error(),
			"pass a .wasm built for wasip1 (GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared, or plugboard plugin build)")
		skipAll("skipped: no module", later...)
		return
	}
	rec.pass(CheckWasm, "")
	shape := ShapeOf(info)
	pr.Shape = &shape
	rec.sdk = shape.Interface == InterfacePlugboard
	// A hyper-mcp v2 plugin is checked through the interface the host
	// serves it by (see checkExports, the describe step, checkSection and
	// abi.version below); every other check is the same for it.
	hyper := isHyperV2(mod)
	pr.HyperV2 = hyper
	// A plain Extism module has no MCP exports: the operator describes its
	// tools in its settings (plugins.settings.NAME.tools), and the host
	// serves the exports they name (checked with the manifest below).
	plain := shape.Interface == InterfacePlain

	// ABI: exports, imports (each linked against the engine), reach.
	if plain {
		rec.notApplicable(CheckExports, "", "not applicable to a plain Extism module: it has no MCP exports; the host calls the "+
			"functions plugins.settings."+name+".tools names (abi.manifest checks them)")
	} else {
		checkExports(rec, mod, hyper)
	}
	checkImports(ctx, rec, mod, k.link)
	checkReach(rec, mod)

	// Compile and start one instance, as the host does on first use.
	var described []byte
	rt, err := k.eng.Compile(ctx, name, wasm, nil)
	if err == nil {
		defer k.closePlugin(ctx, rt.Close)
		wctx, cancel := context.WithTimeout(ctx, describeTimeout)
		err = rt.Warm(wctx)
		cancel()
	}
	instantiated := err == nil
	if err != nil {
		rec.fail(CheckInstantiate, "", "the host cannot start the module: "+err.Error(),
			"fix what the message names (an import, a trap in _initialize or in package init); the host would answer unavailable for every tool")
	} else {
		rec.pass(CheckInstantiate, "")
	}
	// The manifest as the host reads it from the module (plugin.Describe):
	// describe's answer, or for a v2 plugin the manifest made of its lists
	// (list_tools, and list_resources, list_resource_templates and
	// list_prompts where exported), which stand for describe.
	if _, ok := mod.export(abi.ExportDescribe); plain {
		rec.notApplicable(CheckDescribe, "", "not applicable to a plain Extism module: it cannot describe its tools; its settings do")
	} else if !(ok || hyper) || !instantiated {
		rec.skip(CheckDescribe, "", "skipped: no describe export or no instance")
	} else {
		dctx, cancel := context.WithTimeout(ctx, describeTimeout)
		out, err := plugin.Describe(dctx, rt)
		cancel()
		var m abi.Manifest
		if err == nil {
			err = json.Unmarshal(out, &m)
		}
		if err != nil {
			describeFailed(rec, err, shape, hyper)
		} else {
			described = out
			rec.pass(CheckDescribe, "")
		}
	}
	// The profile, now that describe has said whether it declares
	// plugboard's ABI: every check that follows may be a house rule.
	if pr.Profile == "" {
		if why := houseReason(shape, mod, described); why != "" {
			pr.Profile, pr.ProfileReason = ProfileHouse, why
		} else {
			pr.Profile, pr.ProfileReason = ProfileBase, "not written for plugboard (not built with its SDK, no import of its host "+
				"functions, no plugboard ABI in describe)"
		}
	}

	// The manifest the host serves: the section if there is one, else
	// describe's answer (a v2 plugin's lists).
	section, hasSection := info.Custom[abi.ManifestSection]
	if plain {
		rec.notApplicable(CheckManifestSection, "", "not applicable to a plain Extism module: its manifest is made of its settings")
	} else {
		checkSection(rec, section, hasSection, described, name, hyper)
	}
	served := described
	if hasSection {
		served = section
	}
	var man abi.Manifest
	manifestOK := false
	switch {
	case plain:
		manifestOK = k.plainManifest(rec, name, wasm, &man)
	case served == nil:
		lister := abi.ExportDescribe
		if hyper {
			lister = plugin.HyperListTools
		}
		rec.skip(CheckManifest, "", "skipped: no manifest (no section, and "+lister+" did not answer)")
	default:
		if err := json.Unmarshal(served, &man); err != nil {
			rec.fail(CheckManifest, "", "the manifest is not valid JSON: "+err.Error(), buildFix+"again")
			break
		}
		if man.Plugin.Name == "" {
			man.Plugin.Name = name
		}
		if err := man.Validate(); err != nil {
			rec.fail(CheckManifest, "", "the host refuses the manifest: "+strings.ReplaceAll(err.Error(), "\n", "; "),
				"fix each problem named; the host does not serve a plugin with an invalid manifest")
		} else {
			rec.pass(CheckManifest, "")
		}
		manifestOK = true
	}
	if !manifestOK {
		skipAll("skipped: no manifest", CheckVersion, CheckCapabilityUse, CheckCapabilities)
	} else {
		pr.Plugin, pr.Version = man.Plugin.Name, man.Plugin.Version
		switch {
		case man.ABI > abi.Version:
			rec.fail(CheckVersion, "", fmt.Sprintf("the manifest declares abi %d; this host supports up to %d", man.ABI, abi.Version),
				"build against the plugboard release this host runs, or upgrade the host")
		case plain:
			rec.notApplicable(CheckVersion, "", "not applicable to a plain Extism module: its manifest is made of its settings, "+
				"and the host calls its functions as Extism functions")
		case man.ABI <= 0 && hyper:
			// hyper-mcp's v2 interface has no ABI version, and needs none: the
			// host serves such a plugin through its exports, not by
			// plugboard's ABI. With a section (plugin build records abi) it is
			// checked as any plugin's.
			rec.notApplicable(CheckVersion, "", "not applicable to a hyper-mcp v2 plugin: its manifest is made of its lists, "+
				"which carry no ABI version; the host serves it through its v2 exports whatever plugboard's ABI")
		case man.ABI <= 0 && pr.Profile != ProfileHouse:
			// No ABI version is the Extism MCP interface itself, which the
			// host serves as ABI 1: nothing for a foreign plugin to fix.
			rec.notApplicable(CheckVersion, "", "not applicable to an Extism MCP plugin: its manifest names no plugboard ABI version, "+
				"and the host serves it as the Extism MCP interface (ABI 1)")
		case man.ABI <= 0:
			rec.house(CheckVersion, "", "the manifest declares no abi: the host treats it as an Extism MCP plugin of ABI 1",
				rec.fix(fmt.Sprintf(`declare "abi": %d in the manifest describe returns`, abi.Version), "`plugboard plugin build` records it"))
		default:
			rec.pass(CheckVersion, "")
		}
		checkCapabilityUse(rec, mod, &man)
		checkCapabilities(rec, &man)
	}

	// The sandbox the plugin runs in.
	if probes, err := k.sandbox(ctx); err != nil {
		rec.fail(CheckSandboxProbe, "", err.Error(), "report it to plugboard's maintainers: the kit's probe must run")
	} else {
		for _, p := range probes {
			if p.problem != "" {
				rec.fail(CheckSandboxProbe, "", fmt.Sprintf("the host's sandbox does not hold: expected %s, but %s", p.what, p.problem),
					"this is a host bug, not the plugin's: the runtime must instantiate plugins without preopens, environment, arguments or sockets")
			}
		}
		rec.pass(CheckSandboxProbe, "")
	}

	if !manifestOK {
		return
	}
	seen := map[string]int{}
	for _, t := range man.Tools {
		seen[t.Name]++
	}
	surfaces := make([]*toolSurface, 0, len(man.Tools))
	for i := range man.Tools {
		t := &man.Tools[i]
		pr.Tools = append(pr.Tools, t.Name)
		surfaces = append(surfaces, checkTool(rec, man.Plugin.Name, t, seen))
	}
	k.behaviour(ctx, path, pr, rec, surfaces, instantiated && man.Validate() == nil)
}

// plainManifest makes the manifest serve makes of a plain Extism module
// from its settings (plugin.PlainManifest), and reports whether there is
// one. Without tools described, the module is not broken: it waits for
// the operator to describe them, as serve's log says.
func (k *Kit) plainManifest(rec *recorder, name string, wasm []byte, man *abi.Manifest) bool {
	s := k.opts.Settings[name]
	m, _, err := plugin.PlainManifest(name, wasm, s)
	switch {
	case err != nil && len(s.Functions) == 0:
		setting := "plugins.settings." + name + ".tools"
		rec.needsSetting("", setting, err.Error(), "describe the functions to serve in "+setting+" in a configuration file and run the "+
			"kit with --config FILE, which serves them as serve would")
		rec.skip(CheckManifest, "", "skipped: no tools described in "+setting)
		return false
	case err != nil:
		rec.fail(CheckManifest, "", err.Error(), "fix plugins.settings."+name+".tools as the message says: serve refuses the plugin until then")
		return false
	}
	*man = *m
	rec.pass(CheckManifest, "")
	return true
}

// describeFailed records why describe (a v2 plugin's lists) failed, in the
// terms that fit: configuration the host never gives describe, a module
// whose shape explains the trap, or the error itself.
func describeFailed(rec *recorder, err error, shape Shape, hyper bool) {
	what := "describe"
	if hyper {
		what = "listing the tools (a hyper-mcp v2 plugin's lists stand for describe)"
	}
	var env *abi.Envelope
	errors.As(err, &env)
	if keys, config := missingConfig(env, true); config {
		// The registry describes a module when it loads it, before any call
		// and without its settings (registry.describeCached), so no
		// configuration makes serve list such a plugin: it is broken, not
		// waiting for configuration.
		named := ""
		if len(keys) > 0 {
			named = " (" + strings.Join(keys, ", ") + ")"
		}
		rec.fail(CheckDescribe, "", what+" stopped for configuration"+named+": the host lists a plugin's tools when it loads it, "+
			"before any call and without its settings, so serve cannot list this plugin whatever its configuration",
			"answer describe or list_tools without reading configuration; read it in the tool calls, and fail those naming the key")
		return
	}
	if why, fix := shape.Diagnose(err); why != "" {
		rec.fail(CheckDescribe, "", what+" failed: "+why, fix)
		return
	}
	if hyper {
		rec.fail(CheckDescribe, "", what+" failed: "+err.Error(),
			"list_tools must output MCP's tools/list result ({\"tools\": [...]}) and return 0")
		return
	}
	rec.fail(CheckDescribe, "", "describe failed: "+err.Error(),
		rec.fix("describe must output the manifest JSON ({\"tools\": [...]}) and return 0", "the SDK's describe does"))
}

// behaviour loads the plugin into a plugin.Set of its own (the registry and
// call pipeline of `serve`), as `serve` would (every condition met, so conditional tools are served too),
// and runs each tool's behaviour calls.
func (k *Kit) behaviour(ctx context.Context, path string, pr *PluginReport, rec *recorder, surfaces []*toolSurface, runnable bool) {
	ids := []string{CheckInvalid, CheckValid, CheckOutput, CheckSize, CheckDeadline, CheckFuzz, CheckCodes}
	skip := func(why string) {
		for _, ts := range surfaces {
			for _, id := range ids {
				rec.skip(id, ts.def.Name, why)
			}
		}
	}
	if !runnable {
		skip("skipped: the host would not serve the plugin (see abi.instantiate and abi.manifest)")
		return
	}
	dir, err := os.MkdirTemp(k.tmp, "plugin-")
	if err != nil {
		skip("skipped: " + err.Error())
		return
	}
	defer os.RemoveAll(dir)
	// LoadDir loads folders: give it one holding only this plugin.
	link := filepath.Join(dir, filepath.Base(path))
	abs, err := filepath.Abs(path)
	if err == nil && os.Symlink(abs, link) != nil {
		var b []byte
		if b, err = os.ReadFile(path); err == nil {
			err = os.WriteFile(link, b, 0o644)
		}
	}
	if err != nil {
		skip("skipped: " + err.Error())
		return
	}
	// No retries: the kit judges each answer the plugin gives, and without
	// a board every board call answers unavailable (retryable), which the
	// host would otherwise run four times with backoff.
	set, err := plugin.LoadDirWith(ctx, k.eng, dir, plugin.LoadOptions{DataDir: dir, DescribeTimeout: describeTimeout,
		CallTimeout: k.opts.CallTimeout, NoRetry: true, Conditions: abi.Conditions()}, k.settings())
	if err != nil {
		skip("skipped: " + err.Error())
		return
	}
	defer k.closePlugin(ctx, set.Close)
	served := map[string]bool{}
	for _, name := range set.Tools() {
		served[name] = true
	}
	for _, ts := range surfaces {
		if !served[ts.def.Name] {
			for _, id := range ids {
				rec.skip(id, ts.def.Name, "skipped: the host does not serve this tool (see surface.tool_name)")
			}
			continue
		}
		pr.Calls += runBehaviour(ctx, set, rec, ts, &k.opts, *pr.Shape, pr.Profile == ProfileHouse, k.callTimeout(pr.Plugin), func() { k.busy.Store(true) })
	}
}

// settings are the operator's settings the plugins run with: serve's,
// but for the names tools are served under (prefix, skip, rename), which
// are the deployment's choice, not the plugin's — the kit checks every
// tool under the name its manifest gives it.
func (k *Kit) settings() map[string]plugin.Settings {
	if len(k.opts.Settings) == 0 {
		return nil
	}
	out := make(map[string]plugin.Settings, len(k.opts.Settings))
	for name, s := range k.opts.Settings {
		s.Prefix, s.Skip, s.Rename = "", nil, nil
		out[name] = s
	}
	return out
}

// callTimeout is the deadline the host gives the plugin's calls whose
// tool declares none: its settings' call_timeout, which replaces the
// host's and caps the tools' own (dispatch), else the kit's.
func (k *Kit) callTimeout(name string) time.Duration {
	if s, ok := k.opts.Settings[name]; ok && s.CallTimeout > 0 {
		return s.CallTimeout
	}
	return k.opts.CallTimeout
}
