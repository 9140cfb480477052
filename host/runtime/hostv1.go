package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/tetratelabs/wazero/api"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/wasmfile"
)

// hostV1Handlers implements abi.HostModule. Each handler receives the
// request payload and returns the response payload (nil for none) or an
// envelope, which reaches the guest as a HostResponse error — never a trap.
var hostV1Handlers = map[string]func(e *Engine, k *kernel, ctx context.Context, req []byte) (json.RawMessage, *abi.Envelope){
	abi.FuncProgress: func(_ *Engine, k *kernel, _ context.Context, req []byte) (json.RawMessage, *abi.Envelope) {
		var p abi.ProgressRequest
		if err := json.Unmarshal(req, &p); err != nil {
			return nil, abi.NewEnvelope(abi.CodeInvalidArgument, "progress payload is not a ProgressRequest: "+err.Error(), "")
		}
		if k.opts != nil && k.opts.Progress != nil {
			k.opts.Progress(p)
		}
		return nil, nil
	},
	abi.FuncLog: func(e *Engine, k *kernel, ctx context.Context, req []byte) (json.RawMessage, *abi.Envelope) {
		var l abi.LogRequest
		if err := json.Unmarshal(req, &l); err != nil {
			return nil, abi.NewEnvelope(abi.CodeInvalidArgument, "log payload is not a LogRequest: "+err.Error(), "")
		}
		var level slog.Level
		if err := level.UnmarshalText([]byte(l.Level)); err != nil {
			level = slog.LevelInfo
		}
		attrs := make([]any, 0, 2+2*len(l.Attrs))
		attrs = append(attrs, "plugin", k.plugin.name)
		for key, v := range l.Attrs {
			attrs = append(attrs, key, v)
		}
		e.cfg.Logger.Log(ctx, level, l.Message, attrs...)
		if k.opts != nil && k.opts.Log != nil {
			k.opts.Log(l)
		}
		return nil, nil
	},
	abi.FuncBoard: func(e *Engine, k *kernel, ctx context.Context, req []byte) (json.RawMessage, *abi.Envelope) {
		if e.cfg.Board == nil {
			return nil, abi.NewEnvelope(abi.CodeUnavailable, "this host serves no task board", "start plugboard serve with a data directory")
		}
		return e.cfg.Board(ctx, func(c string) bool { return k.plugin.grants[c] }, req)
	},
}

func hostV1Known(name string) bool {
	_, ok := hostV1Handlers[name]
	return ok
}

// errInterrupted unwinds a guest whose call context ended.
type errInterrupted struct{ cause error }

func (e errInterrupted) Error() string { return "interrupted: " + e.cause.Error() }

func (e *Engine) instantiateHostV1(ctx context.Context) error {
	caps := map[string]string{}
	for _, f := range abi.HostFunctions {
		caps[f.Name] = f.Capability
	}
	b := e.rt.NewHostModuleBuilder(abi.HostModule)
	for name, h := range hostV1Handlers {
		capability, ok := caps[name]
		if !ok {
			return fmt.Errorf("host function %s has no entry in abi.HostFunctions", name)
		}
		b.NewFunctionBuilder().
			WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, _ api.Module, stack []uint64) {
				k := kernelFrom(ctx)
				req := k.bytesAt(stack[0])
				if len(req) > e.cfg.MaxHostCallBytes {
					k.exceed("host call", len(req), e.cfg.MaxHostCallBytes)
				}
				var (
					result json.RawMessage
					env    *abi.Envelope
				)
				if capability != "" && !k.plugin.grants[capability] {
					env = abi.NewEnvelope(abi.CodePermissionDenied,
						fmt.Sprintf("host function %s needs capability %q, which this plugin was not granted", name, capability),
						"declare the capability in the plugin manifest and ask the operator to grant it")
				} else {
					result, env = h(e, k, ctx, req)
				}
				if result == nil && env == nil {
					stack[0] = 0
					return
				}
				resp, err := json.Marshal(abi.HostResponse{Result: result, Error: env})
				if err != nil {
					panic(fmt.Errorf("encode host response: %w", err))
				}
				stack[0] = k.newBlock(resp, &e.cfg)
			}), []api.ValueType{i64}, []api.ValueType{i64}).
			Export(name)
	}
	// yield is called by instrumented loops every wasmfile.YieldBudget
	// iterations: it interrupts a call whose context ended, and, being Go
	// code, lets the scheduler stop this goroutine for the garbage collector.
	b.NewFunctionBuilder().
		WithGoFunction(api.GoFunc(func(ctx context.Context, stack []uint64) {
			if err := ctx.Err(); err != nil {
				panic(errInterrupted{err})
			}
			stack[0] = wasmfile.YieldBudget
		}), nil, []api.ValueType{i32}).
		Export(wasmfile.YieldName)
	if _, err := b.Instantiate(ctx); err != nil {
		return fmt.Errorf("instantiate %s: %w", abi.HostModule, err)
	}
	return nil
}
