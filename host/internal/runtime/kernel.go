package runtime

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/tetratelabs/wazero/api"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/tracing"
)

// kernel is the per-instance state behind the Extism kernel functions: the
// call's input, the guest's output and error, and the "host memory" blocks a
// guest allocates to pass data across the boundary. Blocks live in one Go
// byte arena that is reset at the start of every call, so a call costs no
// allocation once the arena has grown to its working size.
type kernel struct {
	input  []byte
	output []byte
	errMsg string
	hasErr bool

	arena  []byte
	blocks map[uint64]uint64 // offset -> length of live blocks
	// blocksPeak is the most blocks live at once during the call: a map
	// that grew large is dropped at the next reset rather than kept idle.
	blocksPeak int

	// vars are the guest's Extism vars, kept as long as the instance;
	// varBytes is what they are charged against Limits.MaxVarBytes.
	vars     map[string][]byte
	varBytes int
	// logBytes, notifyBytes and httpRequests count what the call has had
	// the host log, send its client and request, against the plugin's
	// Limits.
	logBytes     int
	notifyBytes  int
	httpRequests int

	opts   *CallOptions
	plugin *Plugin
	// ctx is the context of the call (or instantiation) under way, for the
	// guest's sleeps; nil between calls.
	ctx context.Context
	// limit records the first cap a guest ran into during the call; the call
	// then fails with resource_exhausted whatever the guest does next. It
	// also carries any other envelope a host function ends the call with
	// (fail): an HTTP refusal, say.
	limit *abi.Envelope
	// httpStatus and httpHeaders describe the response of the call's last
	// http_request, for http_status_code and http_headers; nil headers:
	// no response yet.
	httpStatus  int32
	httpHeaders map[string]string
	// missingConfig are the keys config_get found no value for during the
	// call, for blaming a failure on the operator's configuration
	// (configblame.go).
	missingConfig []string
}

// arenaBase keeps offset 0 free: it means "no block" in the Extism ABI.
const arenaBase = 8

// retainedArena is the arena capacity kept between calls; a call that needed
// more leaves the surplus to the garbage collector.
const retainedArena = 1 << 20

// retainedBlocks is the number of blocks whose bookkeeping (a map, which
// clearing does not shrink) is kept between calls; a call that had more
// leaves the map to the garbage collector.
const retainedBlocks = 4096

func (k *kernel) reset(input []byte, opts *CallOptions) {
	k.input = input
	k.output = nil
	k.errMsg, k.hasErr = "", false
	if cap(k.arena) > retainedArena {
		k.arena = nil
	}
	if k.arena == nil {
		k.arena = make([]byte, arenaBase, 4096)
	}
	k.arena = k.arena[:arenaBase]
	if k.blocksPeak > retainedBlocks {
		k.blocks = nil
	} else {
		clear(k.blocks)
	}
	k.blocksPeak = 0
	k.opts = opts
	k.limit = nil
	k.httpStatus, k.httpHeaders = 0, nil
	k.logBytes, k.notifyBytes, k.httpRequests = 0, 0, 0
	clear(k.missingConfig)
	k.missingConfig = k.missingConfig[:0]
}

// afterCall drops what the call handed the host, so that an idle instance
// holds only its vars, its arena and its block map.
func (k *kernel) afterCall() {
	k.ctx = nil
	k.input, k.output, k.opts = nil, nil, nil
	k.errMsg = ""
	k.httpHeaders = nil
}

// errLimit is panicked from a host function when a guest exceeds a cap; the
// call unwinds (wazero turns the panic into an error) and the instance is
// discarded.
type errLimit struct{ env *abi.Envelope }

func (e errLimit) Error() string { return e.env.Message }

func (k *kernel) exceed(what string, got, limit int) {
	env := abi.NewEnvelope(abi.CodeResourceExhausted,
		fmt.Sprintf("plugin exceeded the %s cap: %d bytes > %d", what, got, limit),
		"reduce the size of the request or of the answer (page or narrow it)")
	env.Details = map[string]any{"limit": what, "bytes": got, "max_bytes": limit}
	k.limit = env
	panic(errLimit{env})
}

func (k *kernel) alloc(n uint64, cfg *Config) uint64 {
	// A block carries either the output or a host-call payload, so the larger
	// of the two caps bounds it; go-pdk allocates the whole output at once,
	// so this is where an oversized answer is caught.
	if n > uint64(cfg.MaxHostCallBytes) && n > uint64(cfg.MaxOutputBytes) {
		k.exceed("output", int(min(n, 1<<62)), max(cfg.MaxHostCallBytes, cfg.MaxOutputBytes))
	}
	return k.grow(n, cfg)
}

// grow adds a block of n bytes to the arena, within MaxKernelBytes only.
// Each live block is charged entryOverhead on top of its bytes: the host's
// bookkeeping of a block (a map entry) would otherwise let a flood of
// one-byte blocks cost the host several times the cap.
func (k *kernel) grow(n uint64, cfg *Config) uint64 {
	off := uint64(len(k.arena)+7) &^ 7
	end := off + n
	if charged := end + uint64(len(k.blocks)+1)*entryOverhead; charged > uint64(cfg.MaxKernelBytes) {
		k.exceed("kernel memory", int(min(charged, 1<<62)), cfg.MaxKernelBytes)
	}
	if end > uint64(cap(k.arena)) {
		grown := make([]byte, end, max(end, uint64(cap(k.arena))*2))
		copy(grown, k.arena)
		k.arena = grown
	} else {
		k.arena = k.arena[:end]
	}
	if k.blocks == nil {
		k.blocks = map[uint64]uint64{}
	}
	k.blocks[off] = n
	k.blocksPeak = max(k.blocksPeak, len(k.blocks))
	return off
}

// block returns the bytes of the live block starting at off.
func (k *kernel) block(off uint64) ([]byte, bool) {
	n, ok := k.blocks[off]
	if !ok {
		return nil, false
	}
	return k.arena[off : off+n], true
}

// bytesAt returns a block's bytes, trapping on an offset that is not a live
// block: a guest passing garbage pointers has a bug the host must not paper
// over.
func (k *kernel) bytesAt(off uint64) []byte {
	b, ok := k.block(off)
	if !ok {
		panic(fmt.Errorf("plugin passed offset %d, which is not an allocated block", off))
	}
	return b
}

func (k *kernel) newBlock(data []byte, cfg *Config) uint64 {
	off := k.alloc(uint64(len(data)), cfg)
	copy(k.arena[off:], data)
	return off
}

func (k *kernel) check(off, size uint64) {
	if off < arenaBase || off+size > uint64(len(k.arena)) || off+size < off {
		panic(fmt.Errorf("plugin accessed host memory out of bounds: offset %d, size %d, arena %d", off, size, len(k.arena)))
	}
}

type kernelFunc struct {
	params, results []api.ValueType
	fn              func(e *Engine, k *kernel, ctx context.Context, mod api.Module, stack []uint64)
}

var (
	i32 = api.ValueTypeI32
	i64 = api.ValueTypeI64
)

// kernelFuncs implements extism:host/env as github.com/extism/go-pdk v1.x
// imports it. Signatures are the PDK's; offsets are u64 kernel offsets.
var kernelFuncs = map[string]kernelFunc{
	"input_length": {nil, []api.ValueType{i64}, func(_ *Engine, k *kernel, _ context.Context, _ api.Module, s []uint64) {
		s[0] = uint64(len(k.input))
	}},
	"input_load_u8": {[]api.ValueType{i64}, []api.ValueType{i32}, func(_ *Engine, k *kernel, _ context.Context, _ api.Module, s []uint64) {
		off := s[0]
		if off >= uint64(len(k.input)) {
			panic(fmt.Errorf("plugin read input at %d past its length %d", off, len(k.input)))
		}
		s[0] = uint64(k.input[off])
	}},
	"input_load_u64": {[]api.ValueType{i64}, []api.ValueType{i64}, func(_ *Engine, k *kernel, _ context.Context, _ api.Module, s []uint64) {
		off := s[0]
		if off+8 > uint64(len(k.input)) || off+8 < off {
			panic(fmt.Errorf("plugin read input at %d past its length %d", off, len(k.input)))
		}
		s[0] = binary.LittleEndian.Uint64(k.input[off:])
	}},
	"output_set": {[]api.ValueType{i64, i64}, nil, func(e *Engine, k *kernel, _ context.Context, _ api.Module, s []uint64) {
		off, n := s[0], s[1]
		if n > uint64(e.cfg.MaxOutputBytes) {
			k.exceed("output", int(min(n, 1<<62)), e.cfg.MaxOutputBytes)
		}
		k.check(off, n)
		// Copy: the arena is reused by the next call while the caller still
		// holds the output.
		k.output = append(make([]byte, 0, n), k.arena[off:off+n]...)
	}},
	"error_set": {[]api.ValueType{i64}, nil, func(_ *Engine, k *kernel, _ context.Context, _ api.Module, s []uint64) {
		if s[0] == 0 {
			k.errMsg, k.hasErr = "", false
			return
		}
		k.errMsg, k.hasErr = string(k.bytesAt(s[0])), true
	}},
	"alloc": {[]api.ValueType{i64}, []api.ValueType{i64}, func(e *Engine, k *kernel, _ context.Context, _ api.Module, s []uint64) {
		s[0] = k.alloc(s[0], &e.cfg)
	}},
	"free": {[]api.ValueType{i64}, nil, func(_ *Engine, k *kernel, _ context.Context, _ api.Module, s []uint64) {
		// The arena is reclaimed wholesale at the next call; forgetting the
		// block is enough to make later use of it a detected bug.
		delete(k.blocks, s[0])
	}},
	"length": {[]api.ValueType{i64}, []api.ValueType{i64}, func(_ *Engine, k *kernel, _ context.Context, _ api.Module, s []uint64) {
		s[0] = k.blocks[s[0]]
	}},
	"length_unsafe": {[]api.ValueType{i64}, []api.ValueType{i64}, func(_ *Engine, k *kernel, _ context.Context, _ api.Module, s []uint64) {
		s[0] = k.blocks[s[0]]
	}},
	"load_u8": {[]api.ValueType{i64}, []api.ValueType{i32}, func(_ *Engine, k *kernel, _ context.Context, _ api.Module, s []uint64) {
		k.check(s[0], 1)
		s[0] = uint64(k.arena[s[0]])
	}},
	"load_u64": {[]api.ValueType{i64}, []api.ValueType{i64}, func(_ *Engine, k *kernel, _ context.Context, _ api.Module, s []uint64) {
		k.check(s[0], 8)
		s[0] = binary.LittleEndian.Uint64(k.arena[s[0]:])
	}},
	"store_u8": {[]api.ValueType{i64, i32}, nil, func(_ *Engine, k *kernel, _ context.Context, _ api.Module, s []uint64) {
		k.check(s[0], 1)
		k.arena[s[0]] = byte(s[1])
	}},
	"store_u64": {[]api.ValueType{i64, i64}, nil, func(_ *Engine, k *kernel, _ context.Context, _ api.Module, s []uint64) {
		k.check(s[0], 8)
		binary.LittleEndian.PutUint64(k.arena[s[0]:], s[1])
	}},
	"config_get": {[]api.ValueType{i64}, []api.ValueType{i64}, func(e *Engine, k *kernel, ctx context.Context, _ api.Module, s []uint64) {
		key := k.bytesAt(s[0])
		v, ok := k.config(string(key))
		if !ok {
			k.noteMissingConfig(ctx, key)
			s[0] = 0
			return
		}
		s[0] = k.newBlock([]byte(v), &e.cfg)
	}},
	"var_get": {[]api.ValueType{i64}, []api.ValueType{i64}, func(e *Engine, k *kernel, _ context.Context, _ api.Module, s []uint64) {
		v, ok := k.vars[string(k.bytesAt(s[0]))]
		if !ok {
			s[0] = 0
			return
		}
		s[0] = k.newBlock(v, &e.cfg)
	}},
	"var_set": {[]api.ValueType{i64, i64}, nil, func(_ *Engine, k *kernel, _ context.Context, _ api.Module, s []uint64) {
		k.setVar(k.bytesAt(s[0]), s[1])
	}},
	"log_trace": logFunc(slog.LevelDebug - 4),
	"log_debug": logFunc(slog.LevelDebug),
	"log_info":  logFunc(slog.LevelInfo),
	"log_warn":  logFunc(slog.LevelWarn),
	"log_error": logFunc(slog.LevelError),
	"get_log_level": {nil, []api.ValueType{i32}, func(e *Engine, _ *kernel, ctx context.Context, _ api.Module, s []uint64) {
		// Extism levels: 0 trace, 1 debug, 2 info, 3 warn, 4 error.
		lvl := uint64(4)
		for i, l := range []slog.Level{slog.LevelDebug - 4, slog.LevelDebug, slog.LevelInfo, slog.LevelWarn} {
			if e.cfg.Logger.Enabled(ctx, l) {
				lvl = uint64(i)
				break
			}
		}
		s[0] = lvl
	}},
	// HTTP goes through the plugin's egress policy (egress.go): without
	// PluginOptions.HTTP every request is refused, naming the setting that
	// would allow it.
	"http_request": {[]api.ValueType{i64, i64}, []api.ValueType{i64}, func(e *Engine, k *kernel, ctx context.Context, _ api.Module, s []uint64) {
		if !tracing.Recording(ctx) {
			s[0] = k.httpRequest(e, ctx, s[0], s[1])
			return
		}
		traceHost(ctx, k, abi.ExtismModule, "http_request", func(ctx context.Context) string {
			s[0] = k.httpRequest(e, ctx, s[0], s[1])
			return ""
		})
	}},
	// The status of the call's last response (0 before any), as Extism's.
	"http_status_code": {nil, []api.ValueType{i32}, func(_ *Engine, k *kernel, _ context.Context, _ api.Module, s []uint64) {
		s[0] = api.EncodeI32(k.httpStatus)
	}},
	// The last response's headers as a JSON object of lower-case names to
	// values (repeated headers joined by ","), as Extism's; 0 before any.
	"http_headers": {nil, []api.ValueType{i64}, func(e *Engine, k *kernel, _ context.Context, _ api.Module, s []uint64) {
		if k.httpHeaders == nil {
			s[0] = 0
			return
		}
		b, err := json.Marshal(k.httpHeaders)
		if err != nil {
			panic(fmt.Errorf("encode response headers: %w", err))
		}
		s[0] = k.newBlock(b, &e.cfg)
	}},
}

// setVar is var_set: a value offset of 0 removes the var. Vars live as
// long as the instance, so every key and value is charged, with
// entryOverhead per var, against the plugin's Limits (MaxVarBytes,
// MaxVars); a var past them ends the call (var_set cannot answer an error,
// and Extism's own runtime traps there too) and the instance, vars and all,
// is discarded.
func (k *kernel) setVar(key []byte, valueOff uint64) {
	old, had := k.vars[string(key)]
	oldCost := 0
	if had {
		oldCost = len(key) + len(old) + entryOverhead
	}
	if valueOff == 0 {
		if had {
			delete(k.vars, string(key))
			k.varBytes -= oldCost
		}
		return
	}
	v := k.bytesAt(valueOff)
	lim := &k.plugin.limits
	if !had && len(k.vars) >= lim.MaxVars {
		k.overCap("Extism vars", "max_vars", len(k.vars)+1, lim.MaxVars, "count")
	}
	total := k.varBytes - oldCost + len(key) + len(v) + entryOverhead
	if total > lim.MaxVarBytes {
		k.overCap("Extism vars (keys and values)", "max_var_bytes", total, lim.MaxVarBytes, "bytes")
	}
	if k.vars == nil {
		k.vars = map[string][]byte{}
	}
	k.vars[string(key)] = append([]byte(nil), v...)
	k.varBytes = total
}

// config is what config_get answers: the operator's values
// (PluginOptions.Config), overlaid by the call's own (CallOptions.Config).
func (k *kernel) config(key string) (string, bool) {
	if k.opts != nil {
		if v, ok := k.opts.Config[key]; ok {
			return v, true
		}
	}
	v, ok := k.plugin.opts.Config[key]
	return v, ok
}

// logFunc is Extism's log_* at level. A line the logger writes is charged
// against the plugin's Limits.MaxLogBytes; one past it ends the call, as
// log_* cannot answer an error.
func logFunc(level slog.Level) kernelFunc {
	return kernelFunc{[]api.ValueType{i64}, nil, func(e *Engine, k *kernel, ctx context.Context, _ api.Module, s []uint64) {
		msg := k.bytesAt(s[0])
		if len(msg) > e.cfg.MaxHostCallBytes {
			k.exceed("log message", len(msg), e.cfg.MaxHostCallBytes)
		}
		if !e.cfg.Logger.Enabled(ctx, level) {
			return
		}
		if total, ok := k.chargeLog(len(msg)); !ok {
			k.fail(k.logOverCap(total))
		}
		e.cfg.Logger.Log(ctx, level, k.plugin.redactor.String(string(msg)), "plugin", k.plugin.name)
	}}
}

func (e *Engine) instantiateKernel(ctx context.Context) error {
	b := e.rt.NewHostModuleBuilder(abi.ExtismModule)
	for name, kf := range kernelFuncs {
		fn := kf.fn
		b.NewFunctionBuilder().
			WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
				fn(e, kernelFrom(ctx), ctx, mod, stack)
			}), kf.params, kf.results).
			Export(name)
	}
	if _, err := b.Instantiate(ctx); err != nil {
		return fmt.Errorf("instantiate %s: %w", abi.ExtismModule, err)
	}
	return nil
}

type kernelKey struct{}

// kernelFrom finds the calling instance's kernel. Plugin.call puts it in the
// context outermost, so the lookup is a single comparison.
func kernelFrom(ctx context.Context) *kernel {
	k, _ := ctx.Value(kernelKey{}).(*kernel)
	if k == nil {
		panic(fmt.Errorf("%s called outside a plugin call", abi.ExtismModule))
	}
	return k
}

// sleep is the guest's nanosleep (WASI poll_oneoff with a clock, which is
// how a Go guest's time.Sleep and idle scheduler wait). wazero's own sleeps
// ignore the call's context, so a guest asleep past its deadline would hold
// its instance until it woke; this one unwinds the guest, like yield does,
// the moment the call ends.
func (k *kernel) sleep(ns int64) {
	ctx := k.ctx
	if ctx == nil {
		time.Sleep(time.Duration(ns))
		return
	}
	if err := ctx.Err(); err != nil {
		panic(errInterrupted{err})
	}
	if ns <= 0 {
		return
	}
	t := time.NewTimer(time.Duration(ns))
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		panic(errInterrupted{ctx.Err()})
	}
}
