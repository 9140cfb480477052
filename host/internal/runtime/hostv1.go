package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"

	"github.com/tetratelabs/wazero/api"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/tracing"
	"github.com/plugboard/plugboard/host/internal/wasmfile"
)

// hostV1Handlers implements abi.HostModule. Each handler receives the
// request payload and returns the response payload (nil for none) or an
// envelope, which reaches the guest as a HostResponse error — never a trap.
// Progress and notifications the host sends, and log lines it writes, are
// charged against the plugin's Limits (limits.go); one past its cap is
// answered resource_exhausted and not sent or written, and the guest may go
// on.
var hostV1Handlers = map[string]func(e *Engine, k *kernel, ctx context.Context, req []byte) (json.RawMessage, *abi.Envelope){
	abi.FuncProgress: func(_ *Engine, k *kernel, _ context.Context, req []byte) (json.RawMessage, *abi.Envelope) {
		var p abi.ProgressRequest
		if err := json.Unmarshal(req, &p); err != nil {
			return nil, abi.NewEnvelope(abi.CodeInvalidArgument, "progress payload is not a ProgressRequest: "+err.Error(), "")
		}
		if k.opts != nil && k.opts.Progress != nil {
			if total, ok := k.chargeNotification(len(req)); !ok {
				return nil, k.notificationOverCap(total)
			}
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
		toLogger := e.cfg.Logger.Enabled(ctx, level)
		if !toLogger && (k.opts == nil || k.opts.Log == nil) {
			return nil, nil
		}
		if total, ok := k.chargeLog(len(req)); !ok {
			return nil, k.logOverCap(total)
		}
		red := k.plugin.redactor
		if red.Active() {
			l.Message = red.String(l.Message)
			if l.Attrs != nil {
				l.Attrs = red.value(l.Attrs).(map[string]any)
			}
		}
		attrs := make([]any, 0, 2+2*len(l.Attrs))
		attrs = append(attrs, "plugin", k.plugin.name)
		for key, v := range l.Attrs {
			attrs = append(attrs, key, v)
		}
		if toLogger {
			e.cfg.Logger.Log(ctx, level, l.Message, attrs...)
		}
		if k.opts != nil && k.opts.Log != nil {
			k.opts.Log(l)
		}
		return nil, nil
	},
	abi.FuncNotify: func(e *Engine, k *kernel, ctx context.Context, req []byte) (json.RawMessage, *abi.Envelope) {
		var n abi.NotifyRequest
		if err := json.Unmarshal(req, &n); err != nil {
			return nil, abi.NewEnvelope(abi.CodeInvalidArgument, "notify payload is not a NotifyRequest: "+err.Error(), "")
		}
		if !slices.Contains(abi.LogLevels(), n.Level) {
			n.Level = "info"
		}
		if n.Logger == "" {
			n.Logger = k.plugin.name
		}
		if len(n.Data) == 0 {
			n.Data = json.RawMessage(`""`)
		}
		c := k.client()
		debug := e.cfg.Logger.Enabled(ctx, slog.LevelDebug)
		if c == nil && !debug {
			return nil, nil
		}
		if total, ok := k.chargeNotification(len(req)); !ok {
			return nil, k.notificationOverCap(total)
		}
		if debug {
			e.cfg.Logger.Debug("plugin notification", "plugin", k.plugin.name, "level", n.Level, "data", k.plugin.redactor.String(string(n.Data)))
		}
		if c != nil {
			c.Notify(ctx, n)
		}
		return nil, nil
	},
	abi.FuncSample: func(e *Engine, k *kernel, ctx context.Context, req []byte) (json.RawMessage, *abi.Envelope) {
		var s abi.SampleRequest
		if err := json.Unmarshal(req, &s); err != nil {
			return nil, abi.NewEnvelope(abi.CodeInvalidArgument, "sample payload is not a SampleRequest: "+err.Error(), "")
		}
		if len(s.Messages) == 0 || s.MaxTokens <= 0 {
			return nil, abi.NewEnvelope(abi.CodeInvalidArgument, "sample needs at least one message and a positive maxTokens", "")
		}
		c := k.client()
		if c == nil {
			return nil, noClient("sampling")
		}
		return c.Sample(ctx, req)
	},
	abi.FuncElicit: func(e *Engine, k *kernel, ctx context.Context, req []byte) (json.RawMessage, *abi.Envelope) {
		var el abi.ElicitRequest
		if err := json.Unmarshal(req, &el); err != nil {
			return nil, abi.NewEnvelope(abi.CodeInvalidArgument, "elicit payload is not an ElicitRequest: "+err.Error(), "")
		}
		if el.Message == "" || len(el.RequestedSchema) == 0 {
			return nil, abi.NewEnvelope(abi.CodeInvalidArgument, "elicit needs a message and a requestedSchema", "")
		}
		c := k.client()
		if c == nil {
			return nil, noClient("elicitation")
		}
		return c.Elicit(ctx, req)
	},
	abi.FuncAsk: func(e *Engine, k *kernel, ctx context.Context, req []byte) (json.RawMessage, *abi.Envelope) {
		var a abi.AskRequest
		if err := json.Unmarshal(req, &a); err != nil {
			return nil, abi.NewEnvelope(abi.CodeInvalidArgument, "ask payload is not an AskRequest: "+err.Error(), "")
		}
		if env := checkQuestions(a.Questions, k.plugin.grants); env != nil {
			return nil, env
		}
		answers, env := ask(ctx, k.client(), a.Questions)
		if env != nil {
			return nil, env
		}
		out, err := json.Marshal(abi.AskResult{Answers: answers})
		if err != nil {
			return nil, abi.NewEnvelope(abi.CodeInternal, "encoding the answers: "+err.Error(), "")
		}
		return out, nil
	},
	abi.FuncBoard: func(e *Engine, k *kernel, ctx context.Context, req []byte) (json.RawMessage, *abi.Envelope) {
		if e.cfg.Board == nil {
			return nil, abi.NewEnvelope(abi.CodeUnavailable, "this host serves no task board", "start plugboard serve with a data directory")
		}
		return e.cfg.Board(ctx, func(c string) bool { return k.plugin.grants[c] }, req)
	},
}

// Client is the MCP client behind the current call, which the notify,
// sample and elicit host functions reach. The transport implements it;
// requests and results are the abi payloads as JSON.
type Client interface {
	// Notify sends a log message (notifications/message); the client's
	// logging level filters it.
	Notify(ctx context.Context, n abi.NotifyRequest)
	// Sample sends sampling/createMessage (an abi.SampleRequest) and
	// returns the abi.SampleResult, or an envelope (unsupported when the
	// client lacks the capability; cancelled or plugin_timeout when ctx
	// ends first).
	Sample(ctx context.Context, req json.RawMessage) (json.RawMessage, *abi.Envelope)
	// Elicit sends elicitation/create (an abi.ElicitRequest) and returns the
	// abi.ElicitResult, or an envelope.
	Elicit(ctx context.Context, req json.RawMessage) (json.RawMessage, *abi.Envelope)
}

func (k *kernel) client() Client {
	if k.opts == nil {
		return nil
	}
	return k.opts.Client
}

func noClient(what string) *abi.Envelope {
	return abi.NewEnvelope(abi.CodeUnsupported, "this call has no MCP client to ask for "+what+" (plugboard call, or a method without a session)",
		"call the tool through an MCP client that supports "+what)
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
	for _, f := range abi.HostFunctions() {
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
				} else if tracing.Recording(ctx) {
					traceHost(ctx, k, abi.HostModule, name, func(ctx context.Context) string {
						result, env = h(e, k, ctx, req)
						return envCode(env)
					})
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
