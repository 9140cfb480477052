// Package runtime executes plugin modules on wazero. It owns the sandbox
// (WASI preview 1 without sockets or environment, and without files but the
// directories the operator mounts: fs.go), the native implementation of the
// Extism kernel functions (HTTP through the operator's egress policy:
// egress.go) and of plugboard's own host module, instance pools (or one
// instance, for a stateful plugin), per-call deadlines, the memory cap,
// payload caps, the masking of the operator's secrets (redact.go) and the
// on-disk cache of compiled code. It knows nothing of MCP, tool schemas or
// callers: it moves bytes into a guest export and bytes out, and turns every
// way a guest can fail into an envelope.
package runtime

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	goruntime "runtime"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/metrics"
	"github.com/plugboard/plugboard/host/internal/wasmfile"
)

// Config bounds what one plugin instance and one call may use. Zero fields
// take the defaults of DefaultConfig.
type Config struct {
	// CacheDir holds compiled machine code between runs; "" keeps it in
	// memory. It is used only with a CacheKey.
	CacheDir string
	// CacheKey (hostkey.Size bytes) authenticates everything the engine
	// reads back from CacheDir (the instrumented modules, wazero's machine
	// code, the compile marks): the host's key (hostkey.Load), to be kept
	// where no plugin or agent reaches. An entry it does not authenticate
	// is compiled again, never run. Without one CacheDir is not used: a
	// cache nobody can authenticate is one anybody who can write the
	// directory can fill.
	CacheKey []byte
	// MemoryLimitPages caps each instance's linear memory (64 KiB pages).
	MemoryLimitPages uint32
	// MaxInputBytes caps the input handed to an export.
	MaxInputBytes int
	// MaxOutputBytes caps what an export may output.
	MaxOutputBytes int
	// MaxHostCallBytes caps one host-function payload and one kernel block.
	MaxHostCallBytes int
	// MaxKernelBytes caps all kernel blocks a guest allocates during one call.
	MaxKernelBytes int
	// MaxInstances caps concurrently running instances per plugin; further
	// calls wait for a free one.
	MaxInstances int
	// Limits are the caps on what a plugin makes the host keep, write or
	// hold outside its linear memory, for plugins whose options set none
	// (PluginOptions.Limits); zero fields take DefaultLimits'.
	Limits Limits
	// MaxHostHTTPConnections caps the outbound HTTP connections of all the
	// engine's plugins together, above each plugin's own
	// Limits.MaxHTTPConnections: a backstop for the host's sockets when
	// many plugins have network access.
	MaxHostHTTPConnections int
	// HTTPStandIns are for tests (the conformance kit's --http-stand-in):
	// a plugin's HTTP request to a key's host, once the plugin's own
	// allowed hosts have let it through, is sent to the value instead,
	// path and query kept, with the Host header of the host meant. A key
	// is an exact host name or address, optionally with ":port" (without
	// one it matches any port; one naming the port wins); a value is an
	// http or https URL of a host and port only (ParseHTTPStandIn reads
	// "HOST=URL"). The stand-ins never widen what a plugin may reach:
	// only their own addresses pass the private-address gate, and only for
	// the requests sent to them (egress.go). New refuses entries it cannot
	// honour exactly. serve sets none.
	HTTPStandIns map[string]*url.URL
	// IdleTimeout is how long an idle instance (and its guest heap) stays
	// resident before it is closed, above KeepIdle; < 0 never closes one.
	IdleTimeout time.Duration
	// KeepIdle is how many idle instances per plugin outlive IdleTimeout,
	// so a plugin called now and then does not start its guest each time;
	// < 0 keeps none. A stateful plugin always keeps its one instance.
	KeepIdle int
	// CodeIdleTimeout is how long a plugin without a call keeps its
	// compiled module and its last idle instances; then both are released
	// and its next call loads the module again from CacheDir
	// (residency.go). < 0 keeps them for as long as the plugin is served.
	CodeIdleTimeout time.Duration
	// Interpreter runs modules in wazero's interpreter instead of compiling
	// them to machine code.
	Interpreter bool
	// Logger receives guest log lines and runtime events.
	Logger *slog.Logger
	// Board serves abi.FuncBoard: req is the guest's BoardRequest, granted
	// reports the plugin's grants. nil answers every board call with
	// CodeUnavailable.
	Board BoardHandler
	// Metrics records compilations (whether the machine code came from
	// the disk cache) and the plugins' HTTP requests; nil records nothing.
	Metrics *metrics.Metrics
}

// BoardHandler serves one board API call from a plugin.
type BoardHandler func(ctx context.Context, granted func(capability string) bool, req []byte) (json.RawMessage, *abi.Envelope)

// DefaultConfig returns the limits used when a field is zero.
func DefaultConfig() Config {
	return Config{
		MemoryLimitPages: 2048, // 128 MiB
		MaxInputBytes:    4 << 20,
		MaxOutputBytes:   4 << 20,
		MaxHostCallBytes: 1 << 20,
		MaxKernelBytes:   16 << 20,
		MaxInstances:     max(4, 2*goruntime.GOMAXPROCS(0)),
		Limits:           DefaultLimits(),
		// Sixteen plugins at their default cap of 16.
		MaxHostHTTPConnections: 256,
		IdleTimeout:            30 * time.Second,
		KeepIdle:               1,
		CodeIdleTimeout:        2 * time.Minute,
	}
}

// WithDefaults returns c with every zero field set as New sets it: the
// limits an engine made with c enforces.
func (c Config) WithDefaults() Config {
	d := DefaultConfig()
	if c.MemoryLimitPages == 0 {
		c.MemoryLimitPages = d.MemoryLimitPages
	}
	if c.MaxInputBytes == 0 {
		c.MaxInputBytes = d.MaxInputBytes
	}
	if c.MaxOutputBytes == 0 {
		c.MaxOutputBytes = d.MaxOutputBytes
	}
	if c.MaxHostCallBytes == 0 {
		c.MaxHostCallBytes = d.MaxHostCallBytes
	}
	if c.MaxKernelBytes == 0 {
		c.MaxKernelBytes = d.MaxKernelBytes
	}
	c.MaxKernelBytes = max(c.MaxKernelBytes, c.MaxOutputBytes+c.MaxInputBytes)
	if c.MaxInstances == 0 {
		c.MaxInstances = d.MaxInstances
	}
	c.Limits = c.Limits.Or(d.Limits)
	if c.MaxHostHTTPConnections <= 0 {
		c.MaxHostHTTPConnections = d.MaxHostHTTPConnections
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = d.IdleTimeout
	}
	if c.CodeIdleTimeout == 0 {
		c.CodeIdleTimeout = d.CodeIdleTimeout
	}
	if c.KeepIdle == 0 {
		c.KeepIdle = d.KeepIdle
	}
	c.KeepIdle = max(c.KeepIdle, 0)
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return c
}

// Engine is one wazero runtime with the host modules instantiated. Plugins
// compiled by one Engine share its compilation cache and host modules.
type Engine struct {
	rt    wazero.Runtime
	cache wazero.CompilationCache
	// code authenticates wazero's machine-code cache files (codecache.go);
	// nil when nothing is cached on disk.
	code   *codeCache
	cfg    Config
	memory experimental.MemoryAllocator
	// httpConns counts the outbound connections of all the engine's
	// plugins (Config.MaxHostHTTPConnections).
	httpConns *connLimiter
	// standIns are Config.HTTPStandIns, parsed; nil without.
	standIns *standIns
	// freeMu guards freePending: a collection is scheduled to return the
	// memory of released modules (returnMemory).
	freeMu      sync.Mutex
	freePending bool
}

// New creates an Engine. Close releases it and every plugin it compiled.
func New(ctx context.Context, cfg Config) (*Engine, error) {
	cfg = cfg.WithDefaults()
	if err := checkCacheKey(&cfg); err != nil {
		return nil, err
	}
	standIns, err := parseStandIns(cfg.HTTPStandIns)
	if err != nil {
		return nil, err
	}
	cache, code, err := newCompilationCache(cfg)
	if err != nil {
		return nil, err
	}
	// NewRuntimeConfig picks the optimizing compiler where wazero supports
	// it and the interpreter elsewhere. Termination is ensured by our own
	// loop instrumentation (wasmfile.Instrument), not by wazero's
	// close-on-context-done, which exits to Go at every loop iteration.
	rc := wazero.NewRuntimeConfig()
	if cfg.Interpreter {
		rc = wazero.NewRuntimeConfigInterpreter()
	}
	rc = rc.WithCloseOnContextDone(false).
		WithMemoryLimitPages(cfg.MemoryLimitPages).
		WithCompilationCache(cache)
	rt := wazero.NewRuntimeWithConfig(ctx, rc)
	e := &Engine{rt: rt, cache: cache, code: code, cfg: cfg, memory: newMemoryAllocator(uint64(cfg.MemoryLimitPages) << 16),
		httpConns: newConnLimiter(cfg.MaxHostHTTPConnections), standIns: standIns}
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		_ = e.Close(ctx)
		return nil, fmt.Errorf("instantiate WASI: %w", err)
	}
	if err := e.instantiateKernel(ctx); err != nil {
		_ = e.Close(ctx)
		return nil, err
	}
	if err := e.instantiateHostV1(ctx); err != nil {
		_ = e.Close(ctx)
		return nil, err
	}
	if err := e.instantiateHostUser(ctx); err != nil {
		_ = e.Close(ctx)
		return nil, err
	}
	return e, nil
}

// Close releases the runtime; plugins compiled by it become unusable.
func (e *Engine) Close(ctx context.Context) error {
	err := e.rt.Close(ctx)
	if cerr := e.cache.Close(ctx); err == nil {
		err = cerr
	}
	return err
}

// Config returns the effective limits.
func (e *Engine) Config() Config { return e.cfg }

// Compile compiles a module (or loads its machine code from the cache) and
// returns a Plugin ready to call. grants are the capabilities the plugin may
// use in abi.HostModule.
func (e *Engine) Compile(ctx context.Context, name string, wasm []byte, grants []string) (*Plugin, error) {
	return e.compile(ctx, name, wasm, PluginOptions{Grants: grants})
}

// compile is Compile and CompileWith: the operator's options are checked
// and their resources (egress client, mounted directories) set up first,
// then the module is compiled.
func (e *Engine) compile(ctx context.Context, name string, wasm []byte, opts PluginOptions) (*Plugin, error) {
	p := &Plugin{
		name:   name,
		engine: e,
		grants: map[string]bool{},
		opts:   opts,
		done:   make(chan struct{}),
	}
	if err := p.applyOptions(); err != nil {
		p.releaseOptions()
		return nil, fmt.Errorf("plugin %s: %w", name, err)
	}
	// One hash of the module serves the instrumentation cache, the compile
	// mark and the reload check (each hashed it again: ≈ 2 ms a time for
	// a 3.5 MB guest).
	sum := sha256.Sum256(wasm)
	done := e.timeCompile(name, wasm)
	instrumented, err := e.instrument(wasm, sum)
	if err != nil {
		done(err)
		p.releaseOptions()
		return nil, fmt.Errorf("instrument %s: %w", name, err)
	}
	cm, err := e.compileModule(ctx, instrumented)
	done(err)
	if err != nil {
		p.releaseOptions()
		return nil, fmt.Errorf("compile %s: %w", name, err)
	}
	if err := checkImports(cm); err != nil {
		_ = cm.Close(ctx)
		p.releaseOptions()
		return nil, fmt.Errorf("plugin %s: %w", name, err)
	}
	e.markCompiled(sum)
	p.setCompiled(cm, sum)
	p.code.reload = opts.Reload
	for _, g := range opts.Grants {
		p.grants[g] = true
	}
	p.startIdleJanitor()
	return p, nil
}

// timeCompile starts timing a compilation of wasm for plugin name; the
// function it returns records it with its error. Without metrics it does
// nothing, and does not read the cache's mark (a hash of the module).
func (e *Engine) timeCompile(name string, wasm []byte) func(error) {
	m := e.cfg.Metrics
	if m == nil {
		return func(error) {}
	}
	cache := metrics.CacheOff
	if e.cfg.CacheDir != "" && e.code != nil {
		cache = metrics.CacheMiss
		if e.Cached(wasm) {
			cache = metrics.CacheHit
		}
	}
	start := time.Now()
	return func(err error) { m.Compiled(name, cache, err, time.Since(start)) }
}

// checkImports refuses modules importing anything the host does not provide,
// with a message naming the import, instead of wazero's generic link error.
func checkImports(cm wazero.CompiledModule) error {
	for _, f := range cm.ImportedFunctions() {
		mod, name, _ := f.Import()
		switch mod {
		case abi.WASIModule:
			continue
		case abi.ExtismModule:
			if _, ok := kernelFuncs[name]; ok {
				continue
			}
		case abi.HostModule:
			if hostV1Known(name) || name == wasmfile.YieldName {
				continue
			}
		case UserModule:
			if hostUserKnown(f) {
				continue
			}
		}
		return fmt.Errorf("imports %s.%s, which plugboard does not provide (allowed modules: %s, %s, %s, %s)",
			mod, name, abi.ExtismModule, abi.HostModule, UserModule, abi.WASIModule)
	}
	for _, m := range cm.ImportedMemories() {
		mod, name, _ := m.Import()
		return fmt.Errorf("imports memory %s.%s; plugins must define their own memory", mod, name)
	}
	return nil
}

// randSource is the guest's random source: real entropy, so map seeds and
// guest randomness cannot be predicted from outside.
var randSource io.Reader = rand.Reader
