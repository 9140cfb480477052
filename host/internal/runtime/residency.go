package runtime

import (
	"context"
	"crypto/sha256"
	"fmt"
	goruntime "runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/plugboard/plugboard/abi"
)

// Code residency. A compiled plugin costs memory while it is loaded:
// wazero keeps the decoded module (function bodies, data segments: ≈ 8 MB
// for a Go guest) on the heap and its machine code mapped (≈ 12 MB), and
// each instance its guest heap. A plugin that is not being called gives all
// of it back: once it has had no call for Config.CodeIdleTimeout, its
// instances are closed and its compiled module released, and the next call
// loads it again from the disk cache (≈ 50 ms for a 4 MB Go guest: wazero
// decodes and validates the module before it reads its cache). The
// background warm-up only fills that cache (ReleaseUnused).
//
// Releasing needs somewhere to load from: a CacheDir with its CacheKey
// (without them, a load is a full compilation) and PluginOptions.Reload; a
// plugin without either, and a stateful plugin (its state lives in its
// instance), stays loaded.

// code is what a Plugin knows of its module whether or not it is loaded.
type code struct {
	mu sync.Mutex
	// compiled is nil while released.
	compiled wazero.CompiledModule
	// live counts the instances that exist (idle or running): the module
	// is released only when there are none.
	live int
	// lastUsed is when an instance was last closed after a call (or
	// failed to start), or when the module was loaded; an instance in the
	// pool counts as use until the janitor closes it (its idleSince).
	lastUsed time.Time
	// reload returns the original module's bytes again; sum is their
	// sha256 at the first compilation, checked on every reload so a file
	// replaced on disk is never run under the old plugin's name.
	reload func() ([]byte, error)
	sum    [sha256.Size]byte
	// exports and userImports are read from the module once, so
	// HasExport and UserImports need no loaded module.
	exports     map[string]bool
	userImports []string
}

// releasable reports whether the module may be released at all.
func (p *Plugin) releasable() bool {
	return p.code.reload != nil && p.engine.cfg.CacheDir != "" &&
		p.engine.cfg.CodeIdleTimeout >= 0 && !p.opts.Stateful
}

// setCompiled records a freshly compiled module and what is read from it
// once.
func (p *Plugin) setCompiled(cm wazero.CompiledModule, sum [sha256.Size]byte) {
	c := &p.code
	c.compiled = cm
	c.lastUsed = time.Now()
	c.sum = sum
	c.exports = map[string]bool{}
	for name := range cm.ExportedFunctions() {
		c.exports[name] = true
	}
	for _, f := range cm.ImportedFunctions() {
		if mod, name, _ := f.Import(); mod == UserModule {
			c.userImports = append(c.userImports, name)
		}
	}
}

// holdCode returns the compiled module for a new instance, loading it
// first if it was released, and counts the instance as live. The caller
// must call dropInstance when that instance is closed (or failed to start).
func (p *Plugin) holdCode(ctx context.Context) (wazero.CompiledModule, error) {
	c := &p.code
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.compiled == nil {
		cm, err := p.loadCode(ctx)
		if err != nil {
			return nil, err
		}
		c.compiled = cm
	}
	c.live++
	return c.compiled, nil
}

// loadCode compiles the module again from its original bytes (the
// instrumented module and the machine code come from the disk cache).
func (p *Plugin) loadCode(ctx context.Context) (wazero.CompiledModule, error) {
	fail := func(err error) error {
		env := abi.NewEnvelope(abi.CodeUnavailable,
			fmt.Sprintf("plugin %s could not be loaded again: %v", p.name, err),
			"the plugin's file changed or is unreadable; the host serves the new file after its next scan, or restart it")
		env.Retryable = true
		return env
	}
	wasm, err := p.code.reload()
	if err != nil {
		return nil, fail(err)
	}
	if sha256.Sum256(wasm) != p.code.sum {
		return nil, fail(fmt.Errorf("the file no longer holds the module that was loaded"))
	}
	done := p.engine.timeCompile(p.name, wasm)
	instrumented, err := p.engine.instrument(wasm, p.code.sum)
	if err != nil {
		done(err)
		return nil, fail(err)
	}
	cm, err := p.engine.compileModule(context.WithoutCancel(ctx), instrumented)
	done(err)
	if err != nil {
		return nil, fail(err)
	}
	p.code.lastUsed = time.Now()
	return cm, nil
}

// dropInstance records that an instance was closed after a call, or never
// started.
func (p *Plugin) dropInstance() {
	c := &p.code
	c.mu.Lock()
	c.live--
	c.lastUsed = time.Now()
	c.mu.Unlock()
}

// dropIdle records that the janitor closed n idle instances (not a use).
func (p *Plugin) dropIdle(n int) {
	c := &p.code
	c.mu.Lock()
	c.live -= n
	c.mu.Unlock()
}

// releaseCode releases the compiled module if no instance exists and it
// was last used before cutoff. It reports whether it released it.
func (p *Plugin) releaseCode(cutoff time.Time) bool {
	if !p.releasable() {
		return false
	}
	c := &p.code
	c.mu.Lock()
	if c.compiled == nil || c.live > 0 || c.lastUsed.After(cutoff) {
		c.mu.Unlock()
		return false
	}
	cm := c.compiled
	c.compiled = nil
	c.mu.Unlock()
	_ = cm.Close(context.Background())
	p.engine.returnMemory()
	return true
}

// ReleaseUnused releases the compiled module now if the plugin has no
// instance, so that compiling it only filled the disk cache: the background
// warm-up calls it, since a plugin that is never called should not hold
// its code. It reports whether it released it.
func (p *Plugin) ReleaseUnused() bool { return p.releaseCode(time.Now()) }

// Loaded reports whether the compiled module is in memory.
func (p *Plugin) Loaded() bool {
	p.code.mu.Lock()
	defer p.code.mu.Unlock()
	return p.code.compiled != nil
}

// HasExport reports whether the module exports a function of that name.
func (p *Plugin) HasExport(name string) bool { return p.code.exports[name] }

// UserImports returns the functions of UserModule the module imports.
func (p *Plugin) UserImports() []string { return append([]string(nil), p.code.userImports...) }

// returnMemory gives the memory of released modules back to the system
// soon, instead of when the heap next grows: wazero unmaps machine code
// when the collector finds it unreachable, and the runtime returns freed
// heap pages only gradually. Releases close together share one collection.
func (e *Engine) returnMemory() {
	e.freeMu.Lock()
	defer e.freeMu.Unlock()
	if e.freePending {
		return
	}
	e.freePending = true
	time.AfterFunc(time.Second, func() {
		e.freeMu.Lock()
		e.freePending = false
		e.freeMu.Unlock()
		goruntime.GC() // finalizers unmap the machine code
		debug.FreeOSMemory()
	})
}
