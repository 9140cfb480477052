package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	"github.com/plugboard/plugboard/abi"
)

// CallOptions carries what one call gives the guest besides its input.
type CallOptions struct {
	// Progress receives the guest's progress reports, if set.
	Progress func(abi.ProgressRequest)
	// Log receives the guest's structured log lines (abi.FuncLog), if set;
	// they are written to the engine's logger either way.
	Log func(abi.LogRequest)
	// Config overlays the operator's values (PluginOptions.Config) for
	// this call: config_get reads a key here first. Nil in production;
	// for tests and embedders.
	Config map[string]string
	// Client is the MCP client behind the call, for the notify, sample and
	// elicit host functions; nil outside an MCP session.
	Client Client
	// HTTP, if set, receives a record of each Extism http_request the
	// guest makes during the call (allowed or refused, one per request,
	// redirects included in it), synchronously, before the guest goes on:
	// the decision log's account of the plugin's egress. Secrets are
	// already masked in the record.
	HTTP func(HTTPRecord)
}

// Plugin is one compiled module with its pool of instances. It is safe for
// concurrent use: each call runs on its own instance.
type Plugin struct {
	name   string
	engine *Engine
	// code is the compiled module, released while the plugin is not
	// being called (residency.go).
	code   code
	grants map[string]bool
	// opts are the operator's settings for this plugin (CompileWith).
	opts PluginOptions
	// redactor masks opts.Secrets in envelopes and log lines; egress is
	// the HTTP policy and client; fsConfig the WASI preopens of
	// opts.Mounts (nil: none), over mounts.
	redactor *Redactor
	egress   *egress
	fsConfig wazero.FSConfig
	mounts   []*mountFS
	// memPages caps each instance's linear memory (the engine's cap or a
	// lower opts.MemoryLimitPages), through memory.
	memPages uint32
	memory   experimental.MemoryAllocator
	// limits are opts.Limits over the engine's (limits.go).
	limits Limits

	// slots bounds live instances. idle holds instances ready for a call,
	// the most recently used last; mu guards it and closed. The janitor
	// (janitor.go) closes instances idle for longer than the engine's
	// IdleTimeout, above keepIdle; stopJanitor ends it.
	slots       chan struct{}
	mu          sync.Mutex
	idle        []*instance
	closed      bool
	keepIdle    int
	stopJanitor chan struct{}
	janitorDone chan struct{}

	closeOnce sync.Once
	// done is closed once Close has taken every slot: a call still
	// waiting for one gets an answer instead of waiting for its deadline.
	done chan struct{}
}

// Name is the name the plugin was compiled under.
func (p *Plugin) Name() string { return p.name }

// instance is one instantiated module and its kernel state. It serves one
// call at a time and is discarded after any failure that may have left it
// inconsistent (trap, exit, timeout, cap).
type instance struct {
	mod     api.Module
	exports map[string]api.Function
	k       kernel
	console consoleBuffer
	stack   [1]uint64
	// idleSince is when the instance last went back to the pool.
	idleSince time.Time
}

// Call runs export with input on an idle instance and returns its output.
// Every failure is an *abi.Envelope: plugin_timeout when ctx's deadline
// passed, cancelled when ctx was cancelled, resource_exhausted at a cap,
// plugin_failed for traps, exits, panics and a non-zero status.
func (p *Plugin) Call(ctx context.Context, export string, input []byte, opts CallOptions) (_ []byte, err error) {
	if p.redactor.Active() {
		defer func() { err = p.redactError(err) }()
	}
	cfg := &p.engine.cfg
	if len(input) > cfg.MaxInputBytes {
		env := abi.NewEnvelope(abi.CodeResourceExhausted,
			fmt.Sprintf("request is %d bytes, over the plugin input cap of %d", len(input), cfg.MaxInputBytes),
			"send smaller arguments")
		env.Details = map[string]any{"limit": "input", "bytes": len(input), "max_bytes": cfg.MaxInputBytes}
		return nil, env
	}
	inst, err := p.acquire(ctx)
	if err != nil {
		return nil, err
	}
	fn := inst.export(export)
	if fn == nil {
		p.release(inst, true)
		return nil, abi.NewEnvelope(abi.CodePluginFailed,
			fmt.Sprintf("plugin %s does not export %q", p.name, export),
			"rebuild the plugin with the plugboard SDK or export the function")
	}
	inst.k.reset(input, &opts)
	inst.k.ctx = ctx
	inst.console.Reset()
	// The kernel goes in outermost so host functions find it in one step.
	callCtx := context.WithValue(ctx, kernelKey{}, &inst.k)
	if export == abi.ExportCall && inst.direct() {
		out, err := p.callDirect(callCtx, inst, input)
		if err != nil {
			env := p.failure(ctx, inst, err)
			p.release(inst, false)
			return nil, env
		}
		inst.k.input, inst.k.opts = nil, nil
		p.release(inst, true)
		return out, nil
	}
	inst.stack[0] = 0
	err = fn.CallWithStack(callCtx, inst.stack[:])
	if err != nil {
		env := p.failure(ctx, inst, err)
		p.release(inst, false)
		return nil, env
	}
	// Extism exports return an i32: -1, not 4294967295.
	if status := int32(uint32(inst.stack[0])); status != 0 {
		msg := inst.k.errMsg
		if !inst.k.hasErr {
			msg = fmt.Sprintf("export %s returned status %d without an error message", export, status)
		}
		env := abi.NewEnvelope(abi.CodePluginFailed, fmt.Sprintf("plugin %s failed: %s", p.name, msg),
			"the plugin rejected the call; check its arguments against tools/list, or report it to the plugin's authors")
		env.Details = map[string]any{"plugin": p.name, "status": status}
		if keys, hint := ConfigBlame(p.name, msg, inst.k.missingConfig); hint != "" {
			env.Hint = hint
			if len(keys) > 0 {
				env.Details["missing_config"] = keys
			}
		}
		p.release(inst, true)
		return nil, env
	}
	out := inst.k.output
	inst.k.output, inst.k.input, inst.k.opts = nil, nil, nil
	p.release(inst, true)
	return out, nil
}

// direct reports whether the instance exports the direct-call pair.
func (inst *instance) direct() bool {
	return inst.export(abi.ExportBuffer) != nil && inst.export(abi.ExportCallDirect) != nil
}

// callDirect runs call through the direct-call pair: the request is written
// into guest memory and the result read out of it, with no host calls.
func (p *Plugin) callDirect(ctx context.Context, inst *instance, input []byte) ([]byte, error) {
	mem := inst.mod.Memory()
	inst.stack[0] = uint64(len(input))
	if err := inst.export(abi.ExportBuffer).CallWithStack(ctx, inst.stack[:]); err != nil {
		return nil, err
	}
	ptr := uint32(inst.stack[0])
	if len(input) > 0 && !mem.Write(ptr, input) {
		return nil, fmt.Errorf("%s returned %d, outside guest memory", abi.ExportBuffer, ptr)
	}
	inst.stack[0] = uint64(len(input))
	if err := inst.export(abi.ExportCallDirect).CallWithStack(ctx, inst.stack[:]); err != nil {
		return nil, err
	}
	outPtr, outLen := uint32(inst.stack[0]>>32), uint32(inst.stack[0])
	if int(outLen) > p.engine.cfg.MaxOutputBytes {
		inst.k.limit = abi.NewEnvelope(abi.CodeResourceExhausted,
			fmt.Sprintf("plugin output is %d bytes, over the cap of %d", outLen, p.engine.cfg.MaxOutputBytes),
			"reduce the size of the answer (page or narrow the request)")
		inst.k.limit.Details = map[string]any{"limit": "output", "bytes": outLen, "max_bytes": p.engine.cfg.MaxOutputBytes}
		return nil, errLimit{inst.k.limit}
	}
	b, ok := mem.Read(outPtr, outLen)
	if !ok {
		return nil, fmt.Errorf("%s returned [%d, +%d), outside guest memory", abi.ExportCallDirect, outPtr, outLen)
	}
	return append(make([]byte, 0, len(b)), b...), nil
}

// Describe runs the describe export.
func (p *Plugin) Describe(ctx context.Context) ([]byte, error) {
	return p.Call(ctx, abi.ExportDescribe, nil, CallOptions{})
}

// Warm makes sure one instance is ready, so the first call does not pay for
// instantiation (the Go runtime's start-up inside the guest). The instance
// costs its guest heap in memory until the janitor closes it (beyond
// Config.KeepIdle), so the registry's warm-up only compiles.
func (p *Plugin) Warm(ctx context.Context) error {
	inst, err := p.acquire(ctx)
	if err != nil {
		return err
	}
	p.release(inst, true)
	return nil
}

// ErrBusy reports a Close that gave up waiting for calls in flight.
var ErrBusy = errors.New("plugin calls still running")

// Close waits for calls in flight to finish (until ctx is done), then
// discards the idle instances and the compiled code; later calls, and calls
// still waiting for an instance, get a retryable unavailable envelope. It
// returns ErrBusy if calls were
// still running when ctx ended: their instances' memory is still in use, so
// the caller must not close the Engine.
func (p *Plugin) Close(ctx context.Context) error {
	var err error
	p.closeOnce.Do(func() {
		p.stopIdleJanitor()
		for range cap(p.slots) {
			select {
			case p.slots <- struct{}{}:
			case <-ctx.Done():
				err = ErrBusy
				return
			}
		}
		p.mu.Lock()
		idle := p.idle
		p.idle, p.closed = nil, true
		p.mu.Unlock()
		close(p.done)
		for _, inst := range idle {
			_ = inst.mod.Close(ctx)
		}
		p.code.mu.Lock()
		if cm := p.code.compiled; cm != nil {
			err = cm.Close(ctx)
			// An interpreted copy holds tens of MB of the
			// interpreter's code; a compiled one its machine code.
			p.engine.returnMemory()
		}
		p.code.compiled, p.code.live = nil, 0
		p.code.mu.Unlock()
		p.releaseOptions()
	})
	return err
}

func (p *Plugin) acquire(ctx context.Context) (*instance, error) {
	select {
	case p.slots <- struct{}{}:
	default:
		select {
		case p.slots <- struct{}{}:
		case <-ctx.Done():
			return nil, p.contextEnvelope(ctx, "waiting for a free instance")
		case <-p.done:
			env := abi.NewEnvelope(abi.CodeUnavailable, fmt.Sprintf("plugin %s was closed (removed, replaced or shutting down)", p.name),
				"call again: the tool is served by the plugin that replaced it, if any (tools/list)")
			env.Retryable = true
			return nil, env
		}
	}
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		inst := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return inst, nil
	}
	p.mu.Unlock()
	cm, err := p.holdCode(ctx)
	if err != nil {
		<-p.slots
		return nil, err
	}
	inst, err := p.instantiate(ctx, cm)
	if err != nil {
		p.dropInstance()
		<-p.slots
		return nil, err
	}
	return inst, nil
}

// release returns an instance to the pool (before its slot, so a Close
// holding every slot finds it among the idle), or closes it.
func (p *Plugin) release(inst *instance, healthy bool) {
	inst.k.afterCall() // before another call can take the instance
	if healthy && !inst.mod.IsClosed() {
		p.mu.Lock()
		if !p.closed && len(p.idle) < cap(p.slots) {
			inst.idleSince = time.Now()
			p.idle = append(p.idle, inst)
			inst = nil
		}
		p.mu.Unlock()
	}
	if inst != nil {
		_ = inst.mod.Close(context.Background())
		p.dropInstance()
	}
	<-p.slots
}

func (p *Plugin) instantiate(ctx context.Context, cm wazero.CompiledModule) (*instance, error) {
	inst := &instance{}
	inst.k.plugin = p
	inst.k.reset(nil, nil)
	mc := wazero.NewModuleConfig().
		WithName(""). // anonymous: many instances of one module may coexist
		WithStartFunctions(abi.ExportInitialize).
		WithRandSource(randSource).
		WithSysWalltime().
		WithSysNanotime().
		WithNanosleep(inst.k.sleep).
		WithStdout(&inst.console).
		WithStderr(&inst.console)
	if p.fsConfig != nil {
		mc = mc.WithFSConfig(p.fsConfig)
	}
	kctx := context.WithValue(ctx, kernelKey{}, &inst.k)
	inst.k.ctx = ctx
	mod, err := p.engine.rt.InstantiateModule(experimental.WithMemoryAllocator(kctx, p.memory), cm, mc)
	inst.k.ctx = nil
	if err != nil {
		env := p.failure(ctx, inst, err)
		env.Message = "instantiating the plugin failed: " + env.Message
		return nil, env
	}
	inst.mod = mod
	inst.exports = map[string]api.Function{}
	return inst, nil
}

// export finds an exported function, remembering the answer.
func (inst *instance) export(name string) api.Function {
	fn, ok := inst.exports[name]
	if !ok {
		fn = inst.mod.ExportedFunction(name)
		inst.exports[name] = fn
	}
	return fn
}

// failure turns an error from wazero into the envelope an agent sees.
func (p *Plugin) failure(ctx context.Context, inst *instance, err error) *abi.Envelope {
	if inst.k.limit != nil {
		return inst.k.limit
	}
	console := inst.console.String()
	var exit *sys.ExitError
	errors.As(err, &exit)
	if ctx.Err() != nil {
		return p.contextEnvelope(ctx, "running")
	}
	if strings.Contains(console, "out of memory") || memoryAtCap(inst, p.memPages) {
		hint := "send a smaller request, or ask the operator to raise --memory-limit"
		if p.opts.MemoryLimitPages > 0 {
			hint = "send a smaller request, or ask the operator to raise plugins.settings." + p.name + ".memory_limit_mib"
		}
		env := abi.NewEnvelope(abi.CodeResourceExhausted,
			fmt.Sprintf("plugin %s ran out of memory at its cap of %d MiB", p.name, p.memPages/16), hint)
		env.Details = map[string]any{"plugin": p.name, "limit": "memory", "max_bytes": int64(p.memPages) << 16}
		return env
	}
	reason := firstLine(err.Error())
	if exit != nil {
		reason = fmt.Sprintf("exited with code %d", exit.ExitCode())
	}
	if panicMsg := panicLine(console); panicMsg != "" {
		reason = panicMsg
	}
	env := abi.NewEnvelope(abi.CodePluginFailed, fmt.Sprintf("plugin %s failed: %s", p.name, reason),
		"the plugin crashed on this input; retrying unchanged will fail again — report it to the plugin's authors")
	env.Details = map[string]any{"plugin": p.name}
	if console != "" {
		env.Details["console_tail"] = console
	}
	p.engine.cfg.Logger.Warn("plugin failed", "plugin", p.name,
		"err", p.redactor.String(err.Error()), "console", p.redactor.String(console))
	return env
}

// redactError masks the plugin's secrets in an envelope Call returns.
func (p *Plugin) redactError(err error) error {
	var env *abi.Envelope
	if err == nil || !errors.As(err, &env) {
		return err
	}
	return p.redactor.Envelope(env)
}

func (p *Plugin) contextEnvelope(ctx context.Context, while string) *abi.Envelope {
	if errors.Is(ctx.Err(), context.Canceled) {
		env := abi.NewEnvelope(abi.CodeCancelled, fmt.Sprintf("call to plugin %s cancelled while %s", p.name, while), "")
		env.Details = map[string]any{"plugin": p.name}
		return env
	}
	env := abi.NewEnvelope(abi.CodePluginTimeout,
		fmt.Sprintf("plugin %s did not finish before its deadline (while %s) and was interrupted", p.name, while),
		"retry later, or narrow the request so it does less work")
	env.Details = map[string]any{"plugin": p.name}
	if dl, ok := ctx.Deadline(); ok {
		env.Details["deadline"] = dl.UTC().Format(time.RFC3339Nano)
	}
	return env
}

func memoryAtCap(inst *instance, capPages uint32) bool {
	if inst.mod == nil {
		return false
	}
	mem := inst.mod.Memory()
	if mem == nil {
		return false
	}
	// Within 1 MiB of the cap: a growth request larger than what is left has
	// failed, which the guest reports as a trap or an exit.
	return uint64(mem.Size())+(1<<20) >= uint64(capPages)<<16
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// panicLine extracts "panic: ..." from a Go guest's crash output.
func panicLine(console string) string {
	for line := range strings.Lines(console) {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "panic: ") || strings.HasPrefix(line, "fatal error: ") {
			return line
		}
	}
	return ""
}

// consoleBuffer keeps the first and the last bytes a guest wrote to stdout
// or stderr, for failure reports: a Go guest's "panic:" or "fatal error:"
// line comes first and its goroutine dump after, so both ends matter. The
// guest cannot make the host hold more than consoleKeep bytes.
type consoleBuffer struct {
	mu   sync.Mutex
	head []byte
	tail []byte
	cut  bool
}

const consoleKeep = 2048

func (c *consoleBuffer) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(b)
	if room := consoleKeep - len(c.head); room > 0 {
		take := min(room, len(b))
		c.head = append(c.head, b[:take]...)
		b = b[take:]
	}
	if len(b) == 0 {
		return n, nil
	}
	c.tail = append(c.tail, b...)
	if over := len(c.tail) - consoleKeep; over > 0 {
		c.tail = append(c.tail[:0], c.tail[over:]...)
		c.cut = true
	}
	return n, nil
}

func (c *consoleBuffer) Reset() {
	c.mu.Lock()
	c.head, c.tail, c.cut = c.head[:0], c.tail[:0], false
	c.mu.Unlock()
}

func (c *consoleBuffer) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cut {
		return string(c.head) + "\n…\n" + string(c.tail)
	}
	return string(c.head) + string(c.tail)
}
