package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"time"

	"github.com/tetratelabs/wazero/api"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/tracing"
)

// UserModule is Extism's namespace for host functions a host defines itself.
// hyper-mcp offers its plugins the MCP client there; plugboard provides the
// same functions, with the same signatures and JSON, on its own client
// bridge (the Client of the call), so those plugins load unchanged:
//
//	create_message(i64) i64            sampling/createMessage: MCP's CreateMessageRequestParams → CreateMessageResult; needs abi.CapSampling
//	create_elicitation(i64) i64        elicitation/create: {message, requestedSchema, timeout (s)} → {action, content}; needs abi.CapElicitation
//	list_roots() i64                   roots/list → {roots: [{uri, name}]}; none without a client that has roots
//	notify_logging_message(i64)        notifications/message: {level, logger, data}
//	notify_progress(i64)               notifications/progress of the call: {progressToken, progress, total, message}
//	notify_resource_updated(i64)       notifications/resources/updated: {uri}
//	notify_tool_list_changed()         the plugin's tools changed: the host lists them again, clients get list_changed
//	notify_prompt_list_changed()       the same for prompts
//	notify_resource_list_changed()     the same for resources and resource templates
//
// i64 arguments and results are kernel offsets of JSON, as in every Extism
// host function. A request that cannot be served (a capability not granted,
// sampling without a client) ends the call with an envelope, the only way
// to report it in this ABI; elicitation a client cannot do is declined, and
// roots a client does not have are an empty list, as hyper-mcp answers.
const UserModule = "extism:host/user"

// List kinds passed to the function of WithListChanged.
const (
	ListTools     = "tools"
	ListPrompts   = "prompts"
	ListResources = "resources"
)

// RootsLister is implemented by a Client that can ask the MCP client for
// its roots (roots/list). It returns MCP's ListRootsResult as JSON, or an
// envelope (unsupported when the client has no roots capability).
type RootsLister interface {
	ListRoots(ctx context.Context) (json.RawMessage, *abi.Envelope)
}

// ResourceUpdater is implemented by a Client that can tell subscribed
// clients a resource changed (notifications/resources/updated).
type ResourceUpdater interface {
	ResourceUpdated(ctx context.Context, uri string)
}

type listChangedKey struct{}

// WithListChanged returns a context whose plugin calls report, through fn,
// that the plugin said its list of tools, prompts or resources changed
// (ListTools, ListPrompts, ListResources). fn runs while the guest waits:
// it must not call the plugin (whose instance is busy) but only note the
// change.
func WithListChanged(ctx context.Context, fn func(kind string)) context.Context {
	return context.WithValue(ctx, listChangedKey{}, fn)
}

type userFunc struct {
	params, results []api.ValueType
	fn              func(e *Engine, k *kernel, ctx context.Context, s []uint64)
}

var hostUserFuncs = map[string]userFunc{
	"create_message": {[]api.ValueType{i64}, []api.ValueType{i64}, func(e *Engine, k *kernel, ctx context.Context, s []uint64) {
		req := userPayload(e, k, s[0])
		k.needCapability("create_message", abi.CapSampling)
		c := k.client()
		if c == nil {
			k.fail(noClient("sampling"))
		}
		res, env := c.Sample(ctx, req)
		if env != nil {
			k.fail(env)
		}
		s[0] = k.newBlock(res, &e.cfg)
	}},
	"create_elicitation": {[]api.ValueType{i64}, []api.ValueType{i64}, func(e *Engine, k *kernel, ctx context.Context, s []uint64) {
		var req struct {
			Message         string          `json:"message"`
			RequestedSchema json.RawMessage `json:"requestedSchema"`
			Timeout         *float64        `json:"timeout,omitempty"`
		}
		k.decode("create_elicitation", userPayload(e, k, s[0]), &req)
		k.needCapability("create_elicitation", abi.CapElicitation)
		declined := []byte(`{"action":"decline"}`)
		c := k.client()
		if c == nil {
			s[0] = k.newBlock(declined, &e.cfg)
			return
		}
		if req.Timeout != nil && *req.Timeout > 0 && *req.Timeout < math.MaxInt64/float64(time.Second) {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, time.Duration(*req.Timeout*float64(time.Second)))
			defer cancel()
		}
		body, err := json.Marshal(abi.ElicitRequest{Message: req.Message, RequestedSchema: req.RequestedSchema})
		if err != nil {
			k.fail(abi.NewEnvelope(abi.CodeInvalidArgument, "create_elicitation: "+err.Error(), ""))
		}
		res, env := c.Elicit(ctx, body)
		switch {
		case env != nil && env.Code == abi.CodeUnsupported:
			res = declined
		case env != nil:
			k.fail(env)
		}
		s[0] = k.newBlock(res, &e.cfg)
	}},
	"list_roots": {nil, []api.ValueType{i64}, func(e *Engine, k *kernel, ctx context.Context, s []uint64) {
		res := json.RawMessage(`{"roots":[]}`)
		if rl, ok := k.client().(RootsLister); ok {
			got, env := rl.ListRoots(ctx)
			switch {
			case env != nil && env.Code != abi.CodeUnsupported:
				k.fail(env)
			case env == nil:
				res = got
			}
		}
		s[0] = k.newBlock(res, &e.cfg)
	}},
	"notify_logging_message": {[]api.ValueType{i64}, nil, func(e *Engine, k *kernel, ctx context.Context, s []uint64) {
		var n abi.NotifyRequest
		k.decode("notify_logging_message", userPayload(e, k, s[0]), &n)
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
			return
		}
		k.chargeNotificationOrFail(len(n.Data))
		// The operator's secrets stay out of the host's log and the
		// client's notifications alike.
		if k.plugin.redactor.Active() {
			n.Data = json.RawMessage(k.plugin.redactor.String(string(n.Data)))
		}
		if debug {
			e.cfg.Logger.Debug("plugin notification", "plugin", k.plugin.name, "level", n.Level, "data", string(n.Data))
		}
		if c != nil {
			c.Notify(ctx, n)
		}
	}},
	"notify_progress": {[]api.ValueType{i64}, nil, func(e *Engine, k *kernel, _ context.Context, s []uint64) {
		// The token is the client's own; the call already knows it.
		var p abi.ProgressRequest
		payload := userPayload(e, k, s[0])
		k.decode("notify_progress", payload, &p)
		if k.opts != nil && k.opts.Progress != nil {
			k.chargeNotificationOrFail(len(payload))
			k.opts.Progress(p)
		}
	}},
	"notify_resource_updated": {[]api.ValueType{i64}, nil, func(e *Engine, k *kernel, ctx context.Context, s []uint64) {
		var u struct {
			URI string `json:"uri"`
		}
		k.decode("notify_resource_updated", userPayload(e, k, s[0]), &u)
		if ru, ok := k.client().(ResourceUpdater); ok && u.URI != "" {
			k.chargeNotificationOrFail(len(u.URI))
			ru.ResourceUpdated(ctx, u.URI)
		}
	}},
	"notify_tool_list_changed":     listChanged(ListTools),
	"notify_prompt_list_changed":   listChanged(ListPrompts),
	"notify_resource_list_changed": listChanged(ListResources),
}

func listChanged(kind string) userFunc {
	return userFunc{nil, nil, func(e *Engine, k *kernel, ctx context.Context, _ []uint64) {
		e.cfg.Logger.Debug("plugin says its list changed", "plugin", k.plugin.name, "list", kind)
		if fn, ok := ctx.Value(listChangedKey{}).(func(string)); ok {
			fn(kind)
		}
	}}
}

// chargeNotificationOrFail charges a notification of n bytes against the
// plugin's Limits.MaxNotificationBytes, ending the call past it: these
// functions cannot answer an error.
func (k *kernel) chargeNotificationOrFail(n int) {
	if total, ok := k.chargeNotification(n); !ok {
		k.fail(k.notificationOverCap(total))
	}
}

// userPayload returns the JSON a guest passed at off, within the host-call
// cap.
func userPayload(e *Engine, k *kernel, off uint64) []byte {
	b := k.bytesAt(off)
	if len(b) > e.cfg.MaxHostCallBytes {
		k.exceed("host call", len(b), e.cfg.MaxHostCallBytes)
	}
	return b
}

// decode reads a host function's JSON payload, ending the call when it is
// not what the function takes.
func (k *kernel) decode(fn string, b []byte, v any) {
	if err := json.Unmarshal(b, v); err != nil {
		k.fail(abi.NewEnvelope(abi.CodePluginFailed,
			fmt.Sprintf("plugin %s passed %s.%s a payload it cannot read: %v", k.plugin.name, UserModule, fn, err),
			"report it to the plugin's authors"))
	}
}

// needCapability ends the call unless the plugin was granted capability.
func (k *kernel) needCapability(fn, capability string) {
	if k.plugin.grants[capability] {
		return
	}
	k.fail(abi.NewEnvelope(abi.CodePermissionDenied,
		fmt.Sprintf("plugin %s called %s.%s, which needs capability %q, not granted to it", k.plugin.name, UserModule, fn, capability),
		fmt.Sprintf("the operator can grant %q to plugin %s in the grants file", capability, k.plugin.name)))
}

// fail ends the call with env: the functions of UserModule have no way to
// answer the guest an error.
func (k *kernel) fail(env *abi.Envelope) {
	k.limit = env
	panic(errLimit{env})
}

// hostUserKnown reports whether UserModule provides name with f's signature.
func hostUserKnown(f api.FunctionDefinition) bool {
	_, name, _ := f.Import()
	uf, ok := hostUserFuncs[name]
	return ok && slices.Equal(uf.params, f.ParamTypes()) && slices.Equal(uf.results, f.ResultTypes())
}

func (e *Engine) instantiateHostUser(ctx context.Context) error {
	b := e.rt.NewHostModuleBuilder(UserModule)
	for name, uf := range hostUserFuncs {
		fn := uf.fn
		b.NewFunctionBuilder().
			WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, _ api.Module, stack []uint64) {
				k := kernelFrom(ctx)
				if !tracing.Recording(ctx) {
					fn(e, k, ctx, stack)
					return
				}
				traceHost(ctx, k, UserModule, name, func(ctx context.Context) string {
					fn(e, k, ctx, stack)
					return ""
				})
			}), uf.params, uf.results).
			Export(name)
	}
	if _, err := b.Instantiate(ctx); err != nil {
		return fmt.Errorf("instantiate %s: %w", UserModule, err)
	}
	return nil
}
