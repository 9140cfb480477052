package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/registry"
	"github.com/plugboard/plugboard/host/internal/runtime"
)

// The methods of ABI version 2 besides tools/call: a resource read, a
// prompt rendering, a completion. The transport has already resolved which
// plugin serves the request (from the registry); the dispatcher checks what
// it can before the plugin runs, runs it under the default deadline and
// checks the answer, so every failure is one envelope.

// MethodOptions is what a method call carries besides its params.
type MethodOptions struct {
	Caller   *abi.Caller
	Client   Client
	Progress func(abi.ProgressRequest)
}

// ReadResource reads uri from the plugin that serves it (as a resource or
// through a resource template).
func (d *Dispatcher) ReadResource(ctx context.Context, p *registry.Plugin, uri string, o MethodOptions) (*abi.ReadResourceResult, *abi.Envelope) {
	var res abi.ReadResourceResult
	if env := d.method(ctx, p, abi.MethodResourcesRead, abi.CallParams{URI: uri}, o, &res); env != nil {
		return nil, env.WithDetail("uri", uri)
	}
	for i := range res.Contents {
		if err := res.Contents[i].Check(); err != nil {
			return nil, badAnswer(p, abi.MethodResourcesRead, err)
		}
	}
	return &res, nil
}

// GetPrompt renders a prompt. A required argument that is absent is
// missing_required before the plugin runs; an argument the prompt does not
// declare is invalid_argument.
func (d *Dispatcher) GetPrompt(ctx context.Context, pr registry.Prompt, args map[string]string, o MethodOptions) (*abi.GetPromptResult, *abi.Envelope) {
	declared := map[string]bool{}
	for _, a := range pr.Def.Arguments {
		declared[a.Name] = true
		if _, ok := args[a.Name]; a.Required && !ok {
			env := abi.NewEnvelope(abi.CodeMissingRequired, fmt.Sprintf("prompt %s needs argument %q", pr.Def.Name, a.Name),
				fmt.Sprintf("call prompts/get for %s again with %q in arguments", pr.Def.Name, a.Name))
			return nil, env.WithDetail("field", a.Name)
		}
	}
	for name := range args {
		if !declared[name] {
			env := abi.NewEnvelope(abi.CodeInvalidArgument, fmt.Sprintf("prompt %s has no argument %q", pr.Def.Name, name),
				"call prompts/list to see the prompt's arguments")
			return nil, env.WithDetail("field", name)
		}
	}
	rawArgs, err := json.Marshal(args)
	if err != nil {
		return nil, abi.NewEnvelope(abi.CodeInternal, "encoding prompt arguments: "+err.Error(), "")
	}
	var res abi.GetPromptResult
	if env := d.method(ctx, pr.Plugin, abi.MethodPromptsGet, abi.CallParams{Name: pr.Def.Name, Arguments: rawArgs}, o, &res); env != nil {
		return nil, env.WithDetail("prompt", pr.Def.Name)
	}
	for i, m := range res.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return nil, badAnswer(pr.Plugin, abi.MethodPromptsGet, fmt.Errorf("message %d has role %q, not user or assistant", i, m.Role))
		}
		if err := res.Messages[i].Content.Check(); err != nil {
			return nil, badAnswer(pr.Plugin, abi.MethodPromptsGet, fmt.Errorf("message %d: %w", i, err))
		}
	}
	return &res, nil
}

// Complete asks the plugin for completions of an argument of one of its
// prompts or resource templates.
func (d *Dispatcher) Complete(ctx context.Context, p *registry.Plugin, params abi.CallParams, o MethodOptions) (*abi.CompleteResult, *abi.Envelope) {
	var res abi.CompleteResult
	if env := d.method(ctx, p, abi.MethodCompletionComplete, params, o, &res); env != nil {
		return nil, env
	}
	if res.Completion.Values == nil {
		res.Completion.Values = []string{}
	}
	if len(res.Completion.Values) > 100 { // MCP's limit per answer
		res.Completion.Values, res.Completion.HasMore = res.Completion.Values[:100], true
	}
	return &res, nil
}

// method runs one method on a plugin and decodes the result into out.
func (d *Dispatcher) method(ctx context.Context, p *registry.Plugin, method string, params abi.CallParams, o MethodOptions, out any) *abi.Envelope {
	start := time.Now()
	env := d.runMethod(ctx, p, method, params, o, out)
	if env != nil {
		d.opts.Logger.Log(ctx, levelOf(env), "method failed", "method", method, "plugin", p.Name(), "code", env.Code, "duration", time.Since(start))
	} else {
		d.opts.Logger.Debug("method ok", "method", method, "plugin", p.Name(), "duration", time.Since(start))
	}
	return env
}

func (d *Dispatcher) runMethod(ctx context.Context, p *registry.Plugin, method string, params abi.CallParams, o MethodOptions, out any) *abi.Envelope {
	rt, err := p.Runtime(ctx)
	if err != nil {
		return loadFailed(p, err)
	}
	timeout := d.opts.DefaultTimeout
	if t := p.CallTimeout(); t > 0 { // the plugin's own call_timeout
		timeout = t
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if registry.IsHyperV2(rt) {
		return d.hyperMethod(ctx, rt, p, method, params, o, out)
	}
	cc := &abi.CallContext{Caller: o.Caller, Progress: o.Progress != nil}
	if dl, ok := ctx.Deadline(); ok {
		cc.DeadlineUnixMS = dl.UnixMilli()
	}
	input, err := json.Marshal(abi.CallRequest{Method: method, Params: params, Context: cc})
	if err != nil {
		return abi.NewEnvelope(abi.CodeInternal, "encoding the request: "+err.Error(), "")
	}
	ctx, relist := d.watchLists(ctx, p)
	b, err := rt.Call(ctx, abi.ExportCall, input, runtime.CallOptions{Progress: o.Progress, Client: o.Client})
	relist()
	if err != nil {
		env, ok := err.(*abi.Envelope)
		if !ok {
			env = abi.NewEnvelope(abi.CodeInternal, err.Error(), "")
		}
		return env.WithDetail("plugin", p.Name())
	}
	var mr abi.MethodResult
	if err := json.Unmarshal(b, &mr); err != nil {
		return badAnswer(p, method, fmt.Errorf("not a method result: %v (%s)", err, prefix(b, 200)))
	}
	if mr.Error != nil {
		if mr.Error.Code == "" {
			mr.Error.Code = abi.CodeToolError
		}
		if _, known := abi.Lookup(mr.Error.Code); !known {
			mr.Error.Details = withDetail(mr.Error.Details, "unregistered_code", true)
		}
		return mr.Error
	}
	if err := json.Unmarshal(mr.Result, out); err != nil {
		return badAnswer(p, method, fmt.Errorf("result does not decode: %v", err))
	}
	return nil
}

func badAnswer(p *registry.Plugin, method string, err error) *abi.Envelope {
	env := abi.NewEnvelope(abi.CodePluginFailed, fmt.Sprintf("plugin %s answered %s with something the host cannot use: %v", p.Name(), method, err),
		"report it to the plugin's authors")
	return env.WithDetail("plugin", p.Name())
}

// levelOf is the log level of a failure: host-origin failures matter to
// operators, a plugin's own answers do not.
func levelOf(env *abi.Envelope) slog.Level {
	if info, ok := abi.Lookup(env.Code); ok && info.Origin == "host" {
		return slog.LevelInfo
	}
	return slog.LevelDebug
}
