package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/registry"
	"github.com/plugboard/plugboard/host/internal/runtime"
)

// Calls to hyper-mcp v2 plugins (registry.IsHyperV2): each MCP method is an
// export of its own, taking {"request": <MCP params>, "context": {"id",
// "_meta"}} and answering the MCP result itself, not abi.MethodResult.

// hyperContext is the request context of a call: the request_id when the
// call carries one, else a number unique in this process; _meta holds a
// progress token when the client asked for progress.
func (d *Dispatcher) hyperContext(requestID string, progress bool) registry.HyperContext {
	hc := registry.HyperContext{ID: requestID, Meta: map[string]any{}}
	if hc.ID == "" {
		hc.ID = "plugboard-" + strconv.FormatUint(d.seq.Add(1), 10)
	}
	if progress {
		hc.Meta["progressToken"] = hc.ID
	}
	return hc
}

// encodeHyperCall is the input of call_tool.
func (d *Dispatcher) encodeHyperCall(req Request, requestID string) ([]byte, error) {
	args := req.Arguments
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	return json.Marshal(registry.HyperInput{
		Request: struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}{req.Tool, args},
		Context: d.hyperContext(requestID, req.Progress != nil),
	})
}

// hyperMethod runs resources/read, prompts/get or completion/complete on a
// v2 plugin, decoding its answer into out.
func (d *Dispatcher) hyperMethod(ctx context.Context, rt *runtime.Plugin, p *registry.Plugin, method string, params abi.CallParams, o MethodOptions, out any) *abi.Envelope {
	var (
		export  string
		request any
	)
	switch method {
	case abi.MethodResourcesRead:
		export, request = registry.HyperReadResource, map[string]string{"uri": params.URI}
	case abi.MethodPromptsGet:
		export, request = registry.HyperGetPrompt, map[string]any{"name": params.Name, "arguments": params.Arguments}
	case abi.MethodCompletionComplete:
		r := map[string]any{}
		if params.Ref != nil {
			// hyper-mcp's references are "prompt" and "resource".
			ref := map[string]string{"type": strings.TrimPrefix(params.Ref.Type, "ref/")}
			if params.Ref.Name != "" {
				ref["name"] = params.Ref.Name
			}
			if params.Ref.URI != "" {
				ref["uri"] = params.Ref.URI
			}
			r["ref"] = ref
		}
		if params.Argument != nil {
			r["argument"] = params.Argument
		}
		if params.CompletionContext != nil {
			r["context"] = params.CompletionContext
		}
		export, request = registry.HyperComplete, r
	default:
		return abi.NewEnvelope(abi.CodeInternal, "hyper-mcp v2 plugins are not sent "+method, "")
	}
	if !rt.HasExport(export) {
		return abi.NewEnvelope(abi.CodeUnsupported, fmt.Sprintf("plugin %s does not export %s, which %s needs", p.Name(), export, method), "").
			WithDetail("plugin", p.Name())
	}
	input, err := json.Marshal(registry.HyperInput{Request: request, Context: d.hyperContext("", o.Progress != nil)})
	if err != nil {
		return abi.NewEnvelope(abi.CodeInternal, "encoding the request: "+err.Error(), "")
	}
	ctx, relist := d.watchLists(ctx, p)
	b, err := rt.Call(ctx, export, input, runtime.CallOptions{Progress: o.Progress, Client: o.Client})
	relist()
	if err != nil {
		env, ok := err.(*abi.Envelope)
		if !ok {
			env = abi.NewEnvelope(abi.CodeInternal, err.Error(), "")
		}
		return env.WithDetail("plugin", p.Name())
	}
	if err := json.Unmarshal(b, out); err != nil {
		return badAnswer(p, method, fmt.Errorf("%s answered what is not the MCP result: %v (%s)", export, err, prefix(b, 200)))
	}
	return nil
}

// watchLists returns ctx carrying a runtime.WithListChanged hook for calls
// to plugin p, and a function to run once the call has returned: if the
// plugin said during the call that its lists changed, the registry lists
// them again (in the background: the lists are the plugin's to answer, on
// an instance the call no longer holds) and clients hear of it.
func (d *Dispatcher) watchLists(ctx context.Context, p *registry.Plugin) (context.Context, func()) {
	var (
		mu      sync.Mutex
		changed bool
	)
	ctx = runtime.WithListChanged(ctx, func(string) {
		mu.Lock()
		changed = true
		mu.Unlock()
	})
	return ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if changed {
			d.relist(p)
		}
	}
}

// relisting is the state of a plugin's background relisting: at most one
// runs at a time, and a request arriving meanwhile runs it once more, no
// sooner than relistSpacing after the last one ended — so a plugin saying
// its lists changed on every call costs at most one listing (and one
// list_changed to every client) per relistSpacing, however fast it is
// called.
type relisting struct {
	mu             sync.Mutex
	running, again bool
	// last is when the last listing ended: the next starts no sooner
	// than relistSpacing after it, whether it is asked for while that
	// one runs or after.
	last time.Time
}

func (d *Dispatcher) relist(p *registry.Plugin) {
	v, _ := d.relists.LoadOrStore(p, &relisting{})
	st := v.(*relisting)
	st.mu.Lock()
	if st.running {
		st.again = true
		st.mu.Unlock()
		return
	}
	st.running = true
	st.mu.Unlock()
	go func() {
		for {
			st.mu.Lock()
			wait := time.Until(st.last.Add(relistSpacing))
			st.mu.Unlock()
			if wait > 0 {
				time.Sleep(wait)
			}
			ctx, cancel := context.WithTimeout(context.Background(), d.opts.DefaultTimeout)
			changed, err := d.reg.Refresh(ctx, p)
			cancel()
			if err != nil {
				d.opts.Logger.Warn("the plugin said its lists changed, but listing them again failed; the old lists stay served",
					"plugin", p.Name(), "err", err)
			} else {
				d.opts.Logger.Debug("plugin listed again", "plugin", p.Name(), "served", changed)
			}
			st.mu.Lock()
			st.last = time.Now()
			if !st.again {
				st.running = false
				st.mu.Unlock()
				if !changed {
					d.relists.Delete(p) // retired: forget it
				}
				return
			}
			st.again = false
			st.mu.Unlock()
		}
	}()
}

// relistSpacing is the least time between two listings of one plugin.
const relistSpacing = time.Second
