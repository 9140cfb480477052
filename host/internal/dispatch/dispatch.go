// Package dispatch is the call pipeline: it resolves a tool (by name or
// alias), asks the caller policy whether the caller may call it, validates
// the arguments against its input schema, deduplicates calls by request_id
// for tools that declare it (host/internal/idempotency), runs the plugin under a
// deadline — again, with backoff, after a retryable failure of a read-only
// tool or of a call carrying its request_id — and turns whatever comes back
// into one normalised result, data or an envelope, which the auditor
// records (and the escalator hears of, when the plugin step failed for
// good). Each step runs once, in that order, and never reaches back into an
// earlier one. Transport (MCP, REST, CLI) sits in front of it; runtime and
// registry behind it.
package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/abi/jsonscan"
	"github.com/plugboard/plugboard/host/internal/caller"
	"github.com/plugboard/plugboard/host/internal/idempotency"
	"github.com/plugboard/plugboard/host/internal/metrics"
	"github.com/plugboard/plugboard/host/internal/policy"
	"github.com/plugboard/plugboard/host/internal/registry"
	"github.com/plugboard/plugboard/host/internal/runtime"
	"github.com/plugboard/plugboard/host/internal/schema"
	"github.com/plugboard/plugboard/host/internal/tracing"
)

// Options configures a Dispatcher.
type Options struct {
	// DefaultTimeout is a call's deadline when its tool declares none.
	DefaultTimeout time.Duration
	// MaxTimeout caps any tool's declared timeout.
	MaxTimeout time.Duration
	Logger     *slog.Logger
	// Idempotency deduplicates calls that carry the key field their tool
	// declares (abi.Tool.Idempotency); nil turns deduplication off (no
	// board to keep records in), and such calls simply run.
	Idempotency *idempotency.Guard
	// Policy decides which callers may call which tools; nil allows every
	// call.
	Policy Policy
	// Auditor records every call to a served tool; nil records nothing.
	Auditor Auditor
	// Escalator hears of calls whose plugin step failed for good; nil
	// tells no one.
	Escalator Escalator
	// Retry is when and how often a failed call runs again.
	Retry Retry
	// Tracer makes each call a span, and each run of its plugin one
	// below it (host/internal/tracing); nil makes none.
	Tracer *tracing.Tracer
	// Metrics counts and times the calls (plugboard_tool_calls_total,
	// plugboard_tool_call_duration_seconds); nil records nothing.
	Metrics *metrics.Metrics
}

// Retry configures the host's retries. A call that fails with a retryable
// envelope runs again — only when its tool is read-only (annotation
// readOnlyHint) or the call carries its tool's request_id, so a write never
// runs twice unasked — after Backoff, then twice that, and so on, up to Max
// times, while the call's context allows.
type Retry struct {
	// Max is the number of retries (default 3, so at most 4 runs); negative
	// turns retries off.
	Max int
	// Backoff is the wait before the first retry (default 100ms), doubled
	// before each next one.
	Backoff time.Duration
}

// Dispatcher runs calls against one registry. It is safe for concurrent use.
type Dispatcher struct {
	reg  *registry.Registry
	opts Options
	// tools holds one *toolState per tool definition (keyed by *abi.Tool,
	// so a reloaded plugin gets fresh ones).
	tools sync.Map
	// relists holds a *relisting per plugin that said its lists changed
	// (hyper.go); seq numbers the request ids of hyper-mcp v2 calls.
	relists sync.Map
	seq     atomic.Uint64
}

// toolState is what the dispatcher derives from a tool definition once.
type toolState struct {
	validator *schema.Validator
	// sensitive are the top-level input fields the schema marks sensitive.
	sensitive []string
	// metrics records the tool's calls, its labels resolved once (nil
	// without metrics).
	metrics *metrics.Tool
}

// New builds a dispatcher. Schemas are resolved on each tool's first call.
func New(reg *registry.Registry, opts Options) *Dispatcher {
	if opts.DefaultTimeout <= 0 {
		opts.DefaultTimeout = 30 * time.Second
	}
	if opts.MaxTimeout <= 0 {
		opts.MaxTimeout = 5 * time.Minute
	}
	opts.MaxTimeout = max(opts.MaxTimeout, opts.DefaultTimeout)
	switch {
	case opts.Retry.Max == 0:
		opts.Retry.Max = 3
	case opts.Retry.Max < 0:
		opts.Retry.Max = 0
	}
	if opts.Retry.Backoff <= 0 {
		opts.Retry.Backoff = 100 * time.Millisecond
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	d := &Dispatcher{reg: reg, opts: opts}
	reg.OnChange(d.prune)
	return d
}

// prune drops the state of tool definitions a reload retired.
func (d *Dispatcher) prune() {
	served := map[*abi.Tool]bool{}
	for _, t := range d.reg.Tools() {
		served[t.Def] = true
	}
	d.tools.Range(func(k, _ any) bool {
		if !served[k.(*abi.Tool)] {
			d.tools.Delete(k)
		}
		return true
	})
}

// state returns the state of a tool's definition, creating it on first use.
func (d *Dispatcher) state(tool registry.Tool) *toolState {
	def := tool.Def
	if v, ok := d.tools.Load(def); ok {
		return v.(*toolState)
	}
	st := &toolState{validator: schema.New(def.Name, def.InputSchema, def.Rules...), sensitive: SensitiveFields(def.InputSchema),
		metrics: d.opts.Metrics.Tool(def.Name, tool.Plugin.Name())}
	v, _ := d.tools.LoadOrStore(def, st)
	return v.(*toolState)
}

// SensitiveFields returns, sorted, the top-level properties of an input
// schema marked "x-sensitive": true or "writeOnly": true.
//
// Each property is read on its own: a tool whose schema the host cannot
// compile (a "required" array inside "properties", say) is still served,
// and the properties it marks must still be masked in the decision log.
func SensitiveFields(inputSchema json.RawMessage) []string {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(inputSchema, &s) != nil {
		return nil
	}
	var out []string
	for name, raw := range s.Properties {
		var p struct {
			Sensitive bool `json:"x-sensitive"`
			WriteOnly bool `json:"writeOnly"`
		}
		// A field of the wrong type leaves the others decoded: mask on
		// whatever marks one.
		_ = json.Unmarshal(raw, &p)
		if p.Sensitive || p.WriteOnly {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// Permits reports whether caller may call tool under the policy (always
// true without one): the transports list only such tools.
func (d *Dispatcher) Permits(c *abi.Caller, tool registry.Tool) bool {
	return d.opts.Policy == nil || d.opts.Policy.Allow(context.Background(), c, policyTool(tool)) == nil
}

// may is caller.May's answer for c: whether c may call the tool served
// under name (or alias).
func (d *Dispatcher) may(c *abi.Caller) func(string) bool {
	return func(name string) bool {
		t, ok := d.reg.Resolve(name)
		return ok && d.Permits(c, t)
	}
}

// policyTool is what the policy is told of a served tool: its definition,
// its plugin's name and the roles that plugin declares.
func policyTool(t registry.Tool) policy.Tool {
	pt := policy.Tool{Def: t.Def}
	if t.Plugin != nil {
		pt.Plugin, pt.Roles = t.Plugin.Name(), t.Plugin.Manifest.Roles
	}
	return pt
}

// Resolve returns the tool served under name or alias.
func (d *Dispatcher) Resolve(name string) (registry.Tool, bool) { return d.reg.Resolve(name) }

// Request is one tool call.
type Request struct {
	// Tool is the tool's name or one of its aliases.
	Tool      string
	Arguments json.RawMessage
	// Progress receives the plugin's progress reports; nil when the client
	// did not ask for progress.
	Progress func(abi.ProgressRequest)
	// Caller is who calls; nil takes the caller the context carries
	// (host/internal/caller). The dispatcher passes it on in the context and in
	// the plugin's CallContext.
	Caller *abi.Caller
	// Client is the MCP client behind the call (log notifications,
	// sampling, elicitation); nil outside an MCP session.
	Client Client
	// ReplayKey names a call that may run several times — once per round
	// of questions to an MCP 2026-07-28 client — when it carries no
	// request_id: its board operations are journaled under it, so a later
	// run gets their answers instead of making them again.
	ReplayKey string
}

// ErrInputRequired is the cause a transport ends a call's context with
// when the plugin asked the client a question that must be answered
// between runs (MCP 2026-07-28): the call's result is then input_required.
var ErrInputRequired = errors.New("the call needs the client's answer")

// Client is the MCP client a plugin may reach during a call.
type Client = runtime.Client

// Result is a normalised tool result. On success Structured holds the
// plugin's structured answer (possibly nil) and Content at least one item;
// on failure Envelope is set, Structured holds its JSON and Content its
// compact text.
type Result struct {
	Content    []abi.Content
	Structured json.RawMessage
	Envelope   *abi.Envelope
}

// IsError reports whether the result is an envelope.
func (r *Result) IsError() bool { return r.Envelope != nil }

// Call runs one request through the pipeline. It never returns a Go error:
// every failure, the host's own included, is an envelope in the result.
func (d *Dispatcher) Call(ctx context.Context, req Request) *Result {
	start := time.Now()
	ctx, span := d.opts.Tracer.StartDispatch(ctx, req.Tool)
	res := d.call(ctx, req)
	tracing.End(span, codeOf(res.Envelope))
	if env := res.Envelope; env != nil {
		// Failures the host produced (timeouts, crashes, caps, cancellations)
		// matter to operators; a tool's own answers about bad input do not.
		level := slog.LevelDebug
		if info, ok := abi.Lookup(env.Code); ok && info.Origin == "host" {
			level = slog.LevelInfo
		}
		d.opts.Logger.Log(ctx, level, "call failed", "tool", req.Tool, "code", env.Code, "duration", time.Since(start))
	} else {
		d.opts.Logger.Debug("call ok", "tool", req.Tool, "duration", time.Since(start))
	}
	return res
}

func (d *Dispatcher) call(ctx context.Context, req Request) *Result {
	tool, ok := d.reg.Resolve(req.Tool)
	if !ok {
		d.opts.Metrics.UnknownTool()
		env := abi.NewEnvelope(abi.CodeToolNotFound, fmt.Sprintf("no tool named %q is served", req.Tool),
			"call tools/list and use one of the names it returns")
		env.Details = map[string]any{"tool": req.Tool}
		return failed(env)
	}
	req.Tool = tool.Def.Name
	if req.Caller == nil {
		req.Caller = caller.From(ctx)
	} else {
		ctx = caller.With(ctx, req.Caller)
	}
	// Hints, the policy's and those of the host functions the plugin
	// calls, name only tools this caller may call.
	if d.opts.Policy != nil {
		ctx = caller.WithMay(ctx, d.may(req.Caller))
	}
	st := d.state(tool)
	audit := AuditCall{Caller: req.Caller, Tool: req.Tool, Input: req.Arguments, Sensitive: st.sensitive}
	// The plugin's secrets (its settings' values from the environment and
	// secret files) are masked wherever the call is recorded.
	redactor := tool.Plugin.Redactor()
	if redactor.Active() {
		audit.Redact = redactor.String
	}
	if k := tool.Def.Idempotency; k != nil {
		audit.RequestID, _, _ = idempotency.Key(req.Arguments, k.KeyField)
	}
	if d.opts.Policy != nil {
		audit.Critical = d.opts.Policy.Critical(policyTool(tool))
	}
	var auditID string
	if d.opts.Auditor != nil {
		auditID = d.opts.Auditor.Invoked(ctx, audit)
	}
	start := time.Now()
	ex := execution{recordHTTP: d.opts.Auditor != nil}
	res := d.steps(ctx, tool, req, st, &ex)
	// A run the transport ended for a question to the client ends the
	// same way whatever the plugin made of it (returned the envelope, or
	// was interrupted first): the log and the decision log say so.
	if errors.Is(context.Cause(ctx), ErrInputRequired) {
		res = failed(abi.NewEnvelope(abi.CodeInputRequired, "the call asked the client a question it has not answered yet; it runs again with the answer", ""))
	}
	took := time.Since(start)
	if st.metrics != nil {
		code := ""
		if res.Envelope != nil {
			code = res.Envelope.Code
		}
		st.metrics.Done(code, took)
	}
	// The call's own context may have ended: the outcome is recorded
	// (and escalated) all the same.
	after := context.WithoutCancel(ctx)
	if d.opts.Auditor != nil {
		out := AuditOutcome{Envelope: res.Envelope, Duration: took, Attempts: ex.attempts, HTTP: ex.http, Redact: audit.Redact}
		if !res.IsError() {
			out.Result = res.Structured
		}
		d.opts.Auditor.Finished(after, auditID, out)
	}
	if res.IsError() && ex.pluginFailed && res.Envelope.Code != abi.CodeCancelled && res.Envelope.Code != abi.CodeInputRequired && d.opts.Escalator != nil {
		d.opts.Escalator.Failed(after, audit, redactor.Envelope(res.Envelope))
	}
	return res
}

// execution is what the steps of one call tell the call about it.
type execution struct {
	// attempts counts runs of the plugin.
	attempts int
	// pluginFailed is set when the plugin step's final run failed.
	pluginFailed bool
	// http are the plugin's HTTP requests in every run, kept when
	// recordHTTP is set (for the decision log).
	recordHTTP bool
	httpMu     sync.Mutex
	http       []HTTPRecord
}

// recordRequest keeps one of the plugin's HTTP requests.
func (ex *execution) recordRequest(r HTTPRecord) {
	ex.httpMu.Lock()
	ex.http = append(ex.http, r)
	ex.httpMu.Unlock()
}

// steps runs the caller policy, validation, idempotency and plugin steps.
func (d *Dispatcher) steps(ctx context.Context, tool registry.Tool, req Request, st *toolState, ex *execution) *Result {
	if d.opts.Policy != nil {
		if env := d.opts.Policy.Allow(ctx, req.Caller, policyTool(tool)); env != nil {
			return failed(env)
		}
	}
	if env := st.validator.Validate(req.Arguments); env != nil {
		return failed(env)
	}
	return d.deduplicate(ctx, tool, req, ex)
}

// deduplicate is the idempotency step. For a tool that declares a key field
// and a call that carries it, the guard runs the call at most once per
// (tool, key, payload): a retry gets the stored answer, key reuse with other
// arguments idempotency_conflict, a duplicate of a running call
// request_in_progress. Only successes are stored. Other calls go straight
// on to the plugin.
//
// A key is its caller's: the answer stored for it is what the plugin
// answered that caller after the board checked each of its operations
// against that caller's scope, so it is replayed to that caller alone.
// Another caller naming the key gets idempotency_conflict — never the
// answer, never request_in_progress — and calls again with a key of its
// own, through the checks a fresh call meets.
func (d *Dispatcher) deduplicate(ctx context.Context, tool registry.Tool, req Request, ex *execution) *Result {
	k := tool.Def.Idempotency
	if k == nil {
		return d.retry(d.replayScope(ctx, req), tool, req, "", ex)
	}
	key, present, env := idempotency.Key(req.Arguments, k.KeyField)
	if env != nil {
		return failed(env.WithDetail("tool", req.Tool))
	}
	if !present || d.opts.Idempotency == nil {
		return d.retry(d.replayScope(ctx, req), tool, req, key, ex)
	}
	var fresh *Result
	// ctx carries the call's idempotency scope into the plugin's board
	// operations, which journal their effects under it.
	stored, ran, env := d.opts.Idempotency.Run(ctx, req.Caller, req.Tool, k.KeyField, key, req.Arguments, func(ctx context.Context) ([]byte, bool) {
		fresh = d.retry(ctx, tool, req, key, ex)
		// A run whose context ended (cancelled, or ended for a question
		// to the client) is no answer, whatever the plugin returned.
		if fresh.IsError() || ctx.Err() != nil {
			return nil, false
		}
		return encodeStored(fresh), true
	})
	switch {
	case env != nil:
		return failed(env)
	case ran:
		return fresh
	}
	return decodeStored(req.Tool, stored)
}

// replayScope returns ctx carrying the journal scope of req's ReplayKey,
// for a call without a request_id that may run again (ctx unchanged
// without one). The payload hash binds the journal to the caller and the
// arguments, as a request_id's does.
func (d *Dispatcher) replayScope(ctx context.Context, req Request) context.Context {
	if req.ReplayKey == "" {
		return ctx
	}
	hash := idempotency.ArgsHash(req.Arguments)
	return idempotency.WithScope(ctx, req.Tool, "replay:"+req.ReplayKey, idempotency.JournalHash(idempotency.Identity(req.Caller, ""), hash))
}

// storedResult is what a keyed call leaves for its replays: the normalised
// CallToolResult of a success (isError is never stored).
type storedResult struct {
	Content           []abi.Content   `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
}

// encodeStored encodes a successful result for replay. Structured is already
// compact, and HTML characters are left as they are, so a replay returns
// the very bytes of the first answer.
func encodeStored(r *Result) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(storedResult{Content: r.Content, StructuredContent: r.Structured}) // text and valid JSON only
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func decodeStored(tool string, b []byte) *Result {
	var s storedResult
	if err := json.Unmarshal(b, &s); err != nil {
		env := abi.NewEnvelope(abi.CodeInternal, "the stored result of this request_id is unreadable: "+err.Error(),
			"call again with a new request_id")
		return failed(env.WithDetail("tool", tool))
	}
	return &Result{Content: s.Content, Structured: s.StructuredContent}
}

// retry is the plugin step with the host's retries (see Retry): it runs
// the plugin once, and again after a retryable failure when the tool is
// read-only or the call carries its request_id, waiting longer each time.
// A retried failure's envelope gets details.attempts.
//
// The runs share one deadline, the tool's: a retry gets what is left of
// it, not a fresh one, so a call declared at 60 s answers within 60 s
// however often it is retried (four fresh deadlines once made it 240 s).
// The plugin is compiled before the deadline starts: a first call waits
// for its plugin's compilation, which is no part of the call's budget.
func (d *Dispatcher) retry(ctx context.Context, tool registry.Tool, req Request, requestID string, ex *execution) *Result {
	rt, err := tool.Plugin.Runtime(ctx)
	if err != nil {
		ex.attempts, ex.pluginFailed = 1, true
		return failed(loadFailed(tool.Plugin, err).WithDetail("tool", req.Tool))
	}
	// The plugin's own call_timeout (its settings) replaces the host's
	// default and caps what its tools declare.
	timeout, maxTimeout := d.opts.DefaultTimeout, d.opts.MaxTimeout
	if t := tool.Plugin.CallTimeout(); t > 0 {
		timeout, maxTimeout = t, t
	}
	if tool.Def.TimeoutMS > 0 {
		timeout = min(time.Duration(tool.Def.TimeoutMS)*time.Millisecond, maxTimeout)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	again := requestID != "" || (tool.Def.Annotations != nil && tool.Def.Annotations.ReadOnlyHint)
	wait := d.opts.Retry.Backoff
	for {
		runCtx, span := tracing.StartPlugin(ctx, tool.Plugin.Name(), req.Tool, ex.attempts+1)
		res := d.run(runCtx, rt, timeout, tool, req, requestID, ex)
		tracing.End(span, codeOf(res.Envelope))
		ex.attempts++
		if !res.IsError() {
			ex.pluginFailed = false
			return res
		}
		ex.pluginFailed = true
		if !again || !res.Envelope.Retryable || ex.attempts > d.opts.Retry.Max || !sleep(ctx, wait) {
			if ex.attempts > 1 {
				res = failed(res.Envelope.WithDetail("attempts", ex.attempts))
			}
			return res
		}
		d.opts.Logger.Debug("retrying a failed call", "tool", req.Tool, "code", res.Envelope.Code, "attempt", ex.attempts+1, "after", wait)
		wait *= 2
	}
}

// sleep waits for d unless ctx ends first or its deadline falls within d;
// it reports whether the wait completed.
func sleep(ctx context.Context, d time.Duration) bool {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= d {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// loadFailed is the envelope of a plugin that could not be loaded. It is
// not retryable: the registry remembers the failure (a compile error, an
// unreadable file) until the plugin file changes, so a retry — the
// dispatcher's or the agent's — fails the same way and only delays the
// answer and escalates it several times over.
func loadFailed(p *registry.Plugin, err error) *abi.Envelope {
	env := abi.NewEnvelope(abi.CodeUnavailable, fmt.Sprintf("plugin %s could not be loaded: %v", p.Name(), err),
		"do not retry: other tools keep working; the operator must fix or rebuild this plugin (see the host log), and it is loaded again when its file changes")
	env.Retryable = false
	env.Details = map[string]any{"plugin": p.Name()}
	return env
}

// run is the plugin step: one run of the loaded plugin rt under ctx, which
// carries the call's deadline (timeout long, for the envelope). requestID
// is the call's idempotency key, passed on to the plugin in the call
// context.
func (d *Dispatcher) run(ctx context.Context, rt *runtime.Plugin, timeout time.Duration, tool registry.Tool, req Request, requestID string, ex *execution) *Result {
	// Each run starts its board operations from the first again, so a
	// rerun finds the effects the previous run journaled.
	ctx = idempotency.NewRun(ctx)
	if fn, ok := tool.Plugin.Function(tool.PluginName); ok { // a plain Extism function (plain.go)
		return d.runFunction(ctx, rt, timeout, tool, req, fn, ex)
	}
	// The plugin knows its tool by its manifest's name, whatever name the
	// settings serve it under.
	named := req
	if tool.PluginName != "" {
		named.Tool = tool.PluginName
	}
	export := abi.ExportCall
	var (
		input []byte
		err   error
	)
	if registry.IsHyperV2(rt) {
		export = registry.HyperCallTool
		input, err = d.encodeHyperCall(named, requestID)
	} else {
		input, err = encodeRequest(ctx, named, requestID, tool.Plugin.Manifest.ABI == 0)
	}
	if err != nil {
		return failed(abi.NewEnvelope(abi.CodeInternal, "encoding the call: "+err.Error(), ""))
	}
	opts := runtime.CallOptions{Progress: req.Progress, Client: req.Client}
	if ex != nil && ex.recordHTTP {
		opts.HTTP = ex.recordRequest
	}
	ctx, missing := runtime.RecordMissingConfig(ctx)
	ctx, relist := d.watchLists(ctx, tool.Plugin)
	out, err := rt.Call(ctx, export, input, opts)
	relist()
	if err != nil {
		env, ok := err.(*abi.Envelope)
		if !ok {
			env = abi.NewEnvelope(abi.CodeInternal, err.Error(), "")
		}
		if env.Code == abi.CodePluginTimeout {
			env = env.WithDetail("timeout_ms", timeout.Milliseconds())
		}
		env = env.WithDetail("tool", req.Tool)
		if env.Code == abi.CodePluginFailed {
			// A trap, panic or exit has no words of the plugin's; a failing
			// status has the error it set, unless it set none.
			_, status := env.Details["status"]
			crashed := !status || strings.HasSuffix(env.Message, "without an error message")
			env = blameConfig(tool, env, env.Message, crashed, missing())
		}
		return failed(env)
	}
	return decodeResult(tool, out, missing())
}

// encodeRequest writes the CallRequest by hand: arguments are already JSON
// and are copied, not re-encoded.
//
// A foreign plugin — its manifest declares no plugboard ABI version: an
// Extism MCP servlet (mcp.run) or a hyper-mcp v1 plugin — gets exactly the
// Extism MCP input, {"params":{"name","arguments"}}, as hyper-mcp sends it
// (mcp.run adds "method":"tools/call", which the servlet schema makes
// optional), and no "context": a strict parser, such as the one
// xtp-zig-bindgen generates, refuses a field its schema does not declare,
// and failed every call with error.UnknownField. The call context is
// plugboard's addition, read only by plugins built for its ABI.
func encodeRequest(ctx context.Context, req Request, requestID string, foreign bool) ([]byte, error) {
	name, err := json.Marshal(req.Tool)
	if err != nil {
		return nil, err
	}
	args := req.Arguments
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	var cctx []byte
	if !foreign {
		cc := abi.CallContext{RequestID: requestID, Caller: req.Caller, Progress: req.Progress != nil}
		if dl, ok := ctx.Deadline(); ok {
			cc.DeadlineUnixMS = dl.UnixMilli()
		}
		if cctx, err = json.Marshal(cc); err != nil {
			return nil, err
		}
	}
	b := make([]byte, 0, len(args)+len(name)+len(cctx)+48)
	b = append(b, `{"params":{"name":`...)
	b = append(b, name...)
	b = append(b, `,"arguments":`...)
	b = append(b, args...)
	b = append(b, '}')
	if !foreign {
		b = append(b, `,"context":`...)
		b = append(b, cctx...)
	}
	return append(b, '}'), nil
}

// decodeResult normalises a plugin's CallToolResult. missing are the
// configuration keys the plugin found unset during the call, for blaming
// an error on the operator's configuration.
func decodeResult(tool registry.Tool, out []byte, missing []string) *Result {
	cr, compact, err := scanResult(out)
	if err != nil {
		env := abi.NewEnvelope(abi.CodePluginFailed,
			fmt.Sprintf("plugin %s returned output that is not a CallToolResult: %v", tool.Plugin.Name(), err),
			"report it to the plugin's authors")
		env.Details = map[string]any{"plugin": tool.Plugin.Name(), "tool": tool.Def.Name, "output_prefix": prefix(out, 200)}
		return failed(env)
	}
	for i := range cr.Content {
		if err := cr.Content[i].Check(); err != nil {
			env := abi.NewEnvelope(abi.CodePluginFailed,
				fmt.Sprintf("plugin %s returned content the host cannot carry (ABI version %d): %v", tool.Plugin.Name(), abi.Version, err),
				"report it to the plugin's authors")
			env.Details = map[string]any{"plugin": tool.Plugin.Name(), "tool": tool.Def.Name}
			return failed(env)
		}
	}
	if cr.IsError {
		env, foreign := pluginEnvelope(tool, &cr, missing)
		res := failed(env)
		if foreign {
			// The plugin's own items stay as they are, after the envelope:
			// the first item is the envelope for every error result.
			res.Content = append(res.Content, cr.Content...)
		}
		return res
	}
	res := &Result{Content: cr.Content}
	if len(cr.StructuredContent) > 0 {
		res.Structured = cr.StructuredContent
		if !compact {
			var buf bytes.Buffer
			buf.Grow(len(cr.StructuredContent))
			if err := json.Compact(&buf, cr.StructuredContent); err != nil {
				return failed(abi.NewEnvelope(abi.CodePluginFailed, "structuredContent is not valid JSON: "+err.Error(), "report it to the plugin's authors"))
			}
			res.Structured = buf.Bytes()
		}
		if len(res.Content) == 0 {
			res.Content = []abi.Content{{Type: "text", Text: string(res.Structured)}}
		}
	}
	if len(res.Content) == 0 {
		res.Content = []abi.Content{{Type: "text", Text: ""}}
	}
	return res
}

// scanResult reads a CallToolResult in one validating pass, taking
// structuredContent as a raw span of out (compact reports that it holds no
// insignificant whitespace) and decoding only the content array, which the
// SDK leaves empty. Keys with escapes fall back to encoding/json.
func scanResult(out []byte) (cr abi.CallResult, compact bool, err error) {
	p := jsonscan.Parser{B: out}
	p.WS()
	if p.I >= len(out) || out[p.I] != '{' {
		err = json.Unmarshal(out, &cr)
		if err == nil {
			err = errors.New("not a JSON object")
		}
		return cr, false, err
	}
	var content []byte
	compact = true
	ok, err := p.Object(func(key []byte) (bool, error) {
		start := p.I
		switch string(key) {
		case "structuredContent":
			p.Spaced = false
			err := p.Skip()
			if span := out[start:p.I]; string(span) != "null" {
				cr.StructuredContent, compact = span, !p.Spaced
			}
			return true, err
		case "content":
			err := p.Skip()
			content = out[start:p.I]
			return true, err
		case "isError":
			switch {
			case p.Literal("true"):
				cr.IsError = true
				return true, nil
			case p.Literal("false"), p.Literal("null"):
				return true, nil
			}
			return false, p.Skip() // not a boolean: let encoding/json explain
		}
		// _meta and later additions are ignored; a case variant of a known
		// key is matched by encoding/json, so it takes the fallback.
		for _, known := range []string{"structuredContent", "content", "isError"} {
			if strings.EqualFold(string(key), known) {
				return false, p.Skip()
			}
		}
		return true, p.Skip()
	})
	if err == nil {
		p.WS()
		if p.I != len(out) {
			err = p.Fail()
		}
	}
	if err != nil {
		return cr, false, err
	}
	if !ok {
		cr = abi.CallResult{}
		err = json.Unmarshal(out, &cr)
		if string(cr.StructuredContent) == "null" {
			cr.StructuredContent = nil
		}
		return cr, false, err
	}
	if len(content) > 0 && string(content) != "null" {
		err = json.Unmarshal(content, &cr.Content)
	}
	return cr, compact, err
}

// pluginEnvelope reads the envelope of an isError result. A plugin that
// answers isError without one (an Extism MCP or hyper-mcp plugin, say) gets
// its texts, one per line, wrapped as tool_error so agents always see one
// shape; foreign reports that case, whose content items the result keeps.
// An error that says configuration is missing gets a hint for the operator
// naming the setting (runtime.ConfigBlame).
func pluginEnvelope(tool registry.Tool, cr *abi.CallResult, missing []string) (env *abi.Envelope, foreign bool) {
	var own abi.Envelope
	if len(cr.StructuredContent) > 0 && json.Unmarshal(cr.StructuredContent, &own) == nil && own.Code != "" {
		if _, known := abi.Lookup(own.Code); !known {
			own.Details = withDetail(own.Details, "unregistered_code", true)
		}
		return &own, false
	}
	var texts []string
	for _, c := range cr.Content {
		if c.Type == abi.ContentText && c.Text != "" {
			texts = append(texts, c.Text)
		}
	}
	text := strings.Join(texts, "\n")
	if text == "" {
		text = "the tool reported an error without a message"
		if len(cr.Content) > 0 {
			text += " (see its content items)"
		}
	}
	env = abi.NewEnvelope(abi.CodeToolError, text, "read the message; fix the arguments it names and call "+tool.Def.Name+" again")
	env.Details = map[string]any{"tool": tool.Def.Name, "plugin": tool.Plugin.Name()}
	if len(cr.StructuredContent) > 0 {
		env.Details["structured_content"] = cr.StructuredContent
	}
	if len(missing) > 0 {
		return blameConfig(tool, env, strings.Join(texts, "\n"), false, missing), true
	}
	if keys, hint := runtime.ConfigBlame(tool.Plugin.Name(), text, missing); hint != "" {
		env.Hint = hint
		if len(keys) > 0 {
			env.Details["missing_config"] = keys
		}
	}
	return env, true
}

// blameConfig judges the failure env of a call during which the plugin
// asked config_get for keys the operator has not set (missing), by what
// the host knows rather than by the plugin's wording (words; crashed when
// it has none): the hint names every setting to set
// (runtime.BlameMissingConfig). When the failure is certainly the missing
// value's, the envelope becomes unavailable, not retryable — only the
// operator can fix it, so neither the agent nor the host's retries should
// try again — with the plugin's own code kept in details.plugin_code and its
// message after the host's. env without missing keys is returned as it is.
func blameConfig(tool registry.Tool, env *abi.Envelope, words string, crashed bool, missing []string) *abi.Envelope {
	v, ok := runtime.BlameMissingConfig(tool.Plugin.Name(), tool.Def.Name, words, missing, crashed)
	if !ok {
		return env
	}
	details := env.Details
	if details == nil {
		details = map[string]any{}
	}
	details["missing_config"] = v.Keys
	if !v.Certain {
		env.Hint, env.Details = v.Hint, details
		return env
	}
	details["plugin_code"] = env.Code
	out := abi.NewEnvelope(abi.CodeUnavailable,
		fmt.Sprintf("plugin %s needs configuration the operator has not set (%s): %s", tool.Plugin.Name(), strings.Join(v.Keys, ", "), env.Message),
		v.Hint)
	out.Retryable = false
	out.Details = details
	return out
}

func withDetail(m map[string]any, k string, v any) map[string]any {
	if m == nil {
		m = map[string]any{}
	}
	m[k] = v
	return m
}

// Failed is the result of a call that failed with env.
func Failed(env *abi.Envelope) *Result { return failed(env) }

func failed(env *abi.Envelope) *Result {
	b, err := json.Marshal(env)
	if err != nil { // details held something unencodable: keep the rest
		env.Details = nil
		b, _ = json.Marshal(env)
	}
	return &Result{Envelope: env, Structured: b, Content: []abi.Content{{Type: "text", Text: string(b)}}}
}

func prefix(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
