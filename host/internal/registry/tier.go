package registry

import (
	"context"
	"sync"
	"time"

	"github.com/plugboard/plugboard/host/internal/runtime"
)

// A plugin's first compilation takes seconds (≈ 1.3 s for a 3.5 MB Go guest
// on this project's two-core reference machine); wazero's interpreter
// takes a tenth of that to load the same module and runs a small call in
// well under a millisecond. So the first call to a plugin that has never
// been compiled (nothing in the disk cache) is served by an interpreted
// copy while the real compilation runs in the background, ahead of the
// warm-up; once it is done, calls go to the compiled plugin and the
// interpreted copy is closed after its calls have ended. A plugin whose
// machine code is in the cache loads it in ≈ 50 ms and never uses the
// interpreter; neither does a stateful plugin, whose state must live in
// one instance.

// tier is the interpreted copy of a plugin.
type tier struct {
	once sync.Once
	rt   *runtime.Plugin // nil: no interpreted copy (not needed, or failed)
}

// tierRetire is how long the interpreted copy stays open after the
// compilation ended: calls that took it just before finish on it (Close
// also waits for calls in flight). Not longer: the copy holds 30–40 MB of
// the interpreter's code per Go guest, which every first-party plugin
// called during the first start kept for half a minute (175 MB of live
// heap 15 s after start with 30 s here).
const tierRetire = 3 * time.Second

// interpreted returns the interpreted copy to serve a call with while the
// plugin compiles, starting that compilation, or nil when the call should
// wait for the compiled plugin.
func (p *Plugin) interpreted(ctx context.Context) *runtime.Plugin {
	if p.interp == nil {
		return nil
	}
	opts := p.options()
	if opts.Stateful {
		return nil
	}
	p.tier.once.Do(func() {
		wasm, err := p.wasm()
		if err != nil || p.cached(wasm) || p.compiled.Load() {
			return
		}
		rt, err := p.interp.CompileWith(context.WithoutCancel(ctx), p.Name(), wasm, opts)
		if err != nil {
			// The compiled plugin reports the error to the call.
			return
		}
		p.tier.rt = rt
		go func() {
			if p.gate != nil {
				p.gate.begin()
				defer p.gate.end()
			}
			_, _ = p.compile(context.WithoutCancel(ctx))
			time.AfterFunc(tierRetire, func() { _ = rt.Close(context.Background()) })
		}()
	})
	if p.compiled.Load() {
		return nil
	}
	return p.tier.rt
}

// closeTier closes the interpreted copy, if there is one, waiting for its
// calls until ctx ends; no copy is made after it.
func (p *Plugin) closeTier(ctx context.Context) {
	p.tier.once.Do(func() {})
	if p.tier.rt != nil {
		_ = p.tier.rt.Close(ctx)
	}
}

// Granted returns the capabilities the plugin was granted.
func (p *Plugin) Granted() []string { return append([]string(nil), p.granted...) }

// State reports whether the plugin has been compiled, whether its compiled
// module is loaded now, and how many instances wait idle.
func (p *Plugin) State() (compiled, loaded bool, idle int) {
	if !p.compiled.Load() || p.rt == nil {
		return p.compiled.Load(), false, 0
	}
	return true, p.rt.Loaded(), p.rt.IdleInstances()
}
