// Package tracing owns the host's OpenTelemetry traces: the names and
// attributes of its spans, the W3C trace context read from a caller, and
// the OTLP/HTTP exporter the CLI builds.
//
// One tool call is a tree of spans:
//
//	tools/call TOOL          the MCP request (transport; kind server), a child of the caller's span
//	  dispatch TOOL          policy, validation, idempotency, retries (dispatch)
//	    plugin PLUGIN        one run of the plugin (attempt 1, 2, … when retried)
//	      host FUNCTION      a host function the guest called (board, http_request, sample, …)
//	        store OP TABLE   a statement of the board's store
//
// Spans carry names, codes and counts, never a call's arguments, results
// or messages: those may hold what the caller or a plugin must keep
// secret, and a trace leaves the host for whatever collector the operator
// named.
//
// The provider is explicit, never otel's global one: the host's embedder
// passes it (host.Config.Tracer), and the transport and the dispatcher
// start their spans from it (Tracer). Spans further down (plugin, host
// function, store) are started from the provider of the span their
// context carries, so no package below the dispatcher holds a provider;
// without a recording span in the context they start nothing. With no
// provider (or otel's noop one) nothing on the call path allocates for
// tracing: every Start returns the context it was given and a noop span.
package tracing

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Scope is the instrumentation scope of every span the host makes.
const Scope = "github.com/plugboard/plugboard/host"

// Attribute keys. Those of OpenTelemetry's semantic conventions (MCP,
// GenAI, database, HTTP, errors) are used where one fits; the others are
// plugboard's own.
const (
	AttrMCPMethod          = "mcp.method.name"
	AttrMCPSession         = "mcp.session.id"
	AttrMCPProtocolVersion = "mcp.protocol.version"
	AttrToolName           = "gen_ai.tool.name"
	AttrPromptName         = "gen_ai.prompt.name"
	AttrOperationName      = "gen_ai.operation.name"
	AttrNetworkTransport   = "network.transport"
	AttrErrorType          = "error.type"
	AttrErrorCode          = "plugboard.error.code"
	AttrPlugin             = "plugboard.plugin.name"
	AttrAttempt            = "plugboard.plugin.attempt"
	AttrHostModule         = "plugboard.host.module"
	AttrHostFunction       = "plugboard.host.function"
	AttrBoardOp            = "plugboard.board.operation"
	AttrHTTPMethod         = "http.request.method"
	AttrServerAddress      = "server.address"
	AttrHTTPStatus         = "http.response.status_code"
	AttrDBSystem           = "db.system.name"
	AttrDBOperation        = "db.operation.name"
	AttrDBCollection       = "db.collection.name"
)

// ToolError is error.type of a tools/call whose result is an error (MCP
// semantic conventions: CallToolResult.isError).
const ToolError = "tool_error"

// none is the span of what is not traced: ending it, or anything else, does
// nothing (a zero-size value, so returning it allocates nothing).
var none trace.Span = noop.Span{}

// Tracer starts the spans of the entry points: MCP requests and
// dispatched calls. The zero value, and a nil *Tracer, trace nothing.
type Tracer struct {
	t trace.Tracer
}

// New returns the Tracer of tp. A nil tp, or otel's noop provider, gives
// a Tracer that traces nothing without cost.
func New(tp trace.TracerProvider) *Tracer {
	if tp == nil {
		return &Tracer{}
	}
	if _, off := tp.(noop.TracerProvider); off {
		return &Tracer{}
	}
	return &Tracer{t: tp.Tracer(Scope)}
}

// On reports whether t makes spans.
func (t *Tracer) On() bool { return t != nil && t.t != nil }

// Request is an MCP request as its transport span records it.
type Request struct {
	// Method is the JSON-RPC method (tools/call, resources/read, …).
	Method string
	// Tool and Prompt name what tools/call and prompts/get ask for.
	Tool, Prompt string
	// Session is the MCP session's id ("" without one).
	Session string
	// ProtocolVersion is the negotiated MCP revision ("" unknown).
	ProtocolVersion string
	// Transport is network.transport: "pipe" for stdio, "tcp" for HTTP.
	Transport string
	// Meta is the request's params._meta, which may carry the caller's
	// trace context ("traceparent", "tracestate").
	Meta map[string]any
	// Header is the HTTP request's header (nil over stdio): its
	// traceparent is the parent when _meta has none.
	Header http.Header
}

// StartRequest starts the span of one MCP request (kind server), a child
// of the trace context the caller sent: in params._meta as the MCP
// semantic conventions propagate it, else in the HTTP request's
// traceparent header. Its name is "METHOD TARGET" (the tool's or
// prompt's name) or the method alone.
func (t *Tracer) StartRequest(ctx context.Context, r Request) (context.Context, trace.Span) {
	if !t.On() {
		return ctx, none
	}
	ctx = Extract(ctx, r.Meta, r.Header)
	name, target := r.Method, r.Tool
	if target == "" {
		target = r.Prompt
	}
	if target != "" {
		name += " " + target
	}
	attrs := make([]attribute.KeyValue, 0, 6)
	attrs = append(attrs, attribute.String(AttrMCPMethod, r.Method))
	if r.Tool != "" {
		attrs = append(attrs, attribute.String(AttrToolName, r.Tool), attribute.String(AttrOperationName, "execute_tool"))
	}
	if r.Prompt != "" {
		attrs = append(attrs, attribute.String(AttrPromptName, r.Prompt))
	}
	if r.Session != "" {
		attrs = append(attrs, attribute.String(AttrMCPSession, r.Session))
	}
	if r.ProtocolVersion != "" {
		attrs = append(attrs, attribute.String(AttrMCPProtocolVersion, r.ProtocolVersion))
	}
	if r.Transport != "" {
		attrs = append(attrs, attribute.String(AttrNetworkTransport, r.Transport))
	}
	return t.t.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
}

// propagator reads W3C trace context (traceparent, tracestate).
var propagator = propagation.TraceContext{}

// Extract returns ctx carrying, as its remote parent, the trace context
// in meta (an MCP request's params._meta) or, when meta has none, in
// header (an HTTP request's). ctx is returned as it is when neither has a
// valid one.
func Extract(ctx context.Context, meta map[string]any, header http.Header) context.Context {
	if out := propagator.Extract(ctx, metaCarrier(meta)); trace.SpanContextFromContext(out).IsValid() {
		return out
	}
	if header != nil {
		return propagator.Extract(ctx, propagation.HeaderCarrier(header))
	}
	return ctx
}

// metaCarrier reads trace context from an MCP _meta object, whose values
// are JSON: only strings count.
type metaCarrier map[string]any

func (m metaCarrier) Get(key string) string {
	s, _ := m[key].(string)
	return s
}

// Set is never used: the host reads trace context, it does not send any.
func (m metaCarrier) Set(key, value string) { m[key] = value }

func (m metaCarrier) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// EndRequest ends an MCP request's span: code is the envelope code of a
// failed tool call ("" for success), rpcErr the JSON-RPC error of a
// request the server refused.
func EndRequest(span trace.Span, code string, rpcErr error) {
	if !span.IsRecording() {
		return
	}
	switch {
	case rpcErr != nil:
		span.SetAttributes(attribute.String(AttrErrorType, "_OTHER"))
		span.SetStatus(codes.Error, "JSON-RPC error")
	case code != "":
		span.SetAttributes(attribute.String(AttrErrorType, ToolError), attribute.String(AttrErrorCode, code))
		span.SetStatus(codes.Error, code)
	}
	span.End()
}

// StartDispatch starts the span of one call through the dispatcher's
// pipeline: resolving the tool (named as the caller named it: an alias
// stays one), the caller's policy, validation, idempotency and the
// plugin's runs. A call from no MCP request (the REST door, plugboard
// call, the dashboard) starts its trace here.
func (t *Tracer) StartDispatch(ctx context.Context, tool string) (context.Context, trace.Span) {
	if !t.On() {
		return ctx, none
	}
	return t.t.Start(ctx, "dispatch "+tool, trace.WithAttributes(attribute.String(AttrToolName, tool)))
}

// End ends span, failed with the envelope code code unless it is "".
// The status description is the code, never the envelope's message, which
// may quote the call's arguments.
func End(span trace.Span, code string) {
	if !span.IsRecording() {
		return
	}
	if code != "" {
		span.SetAttributes(attribute.String(AttrErrorType, code), attribute.String(AttrErrorCode, code))
		span.SetStatus(codes.Error, code)
	}
	span.End()
}

// EndErr ends span, failed when err is not nil; the status description
// is the error's Go type, not its text (a store error may quote values).
func EndErr(span trace.Span, err error) {
	if !span.IsRecording() {
		return
	}
	if err != nil {
		typ := reflect.TypeOf(err).String()
		span.SetAttributes(attribute.String(AttrErrorType, typ))
		span.SetStatus(codes.Error, typ)
	}
	span.End()
}

// child starts a span under the recording span ctx carries, from that
// span's provider; without one it starts nothing.
func child(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, none
	}
	return parent.TracerProvider().Tracer(Scope).Start(ctx, name, trace.WithAttributes(attrs...))
}

// Recording reports whether ctx carries a recording span: callers that
// would compute something only for a span ask first.
func Recording(ctx context.Context) bool { return trace.SpanFromContext(ctx).IsRecording() }

// StartPlugin starts the span of one run of a plugin; attempt counts the
// runs of the call from 1 (the dispatcher retries retryable failures).
func StartPlugin(ctx context.Context, plugin, tool string, attempt int) (context.Context, trace.Span) {
	if !Recording(ctx) {
		return ctx, none
	}
	return child(ctx, "plugin "+plugin, attribute.String(AttrPlugin, plugin), attribute.String(AttrToolName, tool),
		attribute.Int(AttrAttempt, attempt))
}

// StartHost starts the span of a host function the guest called: module
// is its import module (plugboard:host/v1, extism:host/user,
// extism:host/env), function its name.
func StartHost(ctx context.Context, module, function string) (context.Context, trace.Span) {
	if !Recording(ctx) {
		return ctx, none
	}
	return child(ctx, "host "+function, attribute.String(AttrHostModule, module), attribute.String(AttrHostFunction, function))
}

// BoardOp names, on the span ctx carries (the board host function's), the
// board operation it runs.
func BoardOp(ctx context.Context, op string) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attribute.String(AttrBoardOp, op))
	span.SetName("host board " + op)
}

// HTTP records, on the span ctx carries (an http_request host
// function's), the request's method and host — not its path or query,
// which may carry secrets — and the response's status (0: none).
func HTTP(ctx context.Context, method, host string, status int) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attribute.String(AttrHTTPMethod, method), attribute.String(AttrServerAddress, host))
	if status != 0 {
		span.SetAttributes(attribute.Int(AttrHTTPStatus, status))
	}
}

// StartStore starts the span of one statement of the board's store:
// system is db.system.name ("sqlite", "postgresql"), query the
// statement, of which only its operation and first table are recorded
// (the text of a statement is fixed in the code, but its name is enough).
func StartStore(ctx context.Context, system, query string) (context.Context, trace.Span) {
	if !Recording(ctx) {
		return ctx, none
	}
	s := summarize(query)
	attrs := []attribute.KeyValue{attribute.String(AttrDBSystem, system), attribute.String(AttrDBOperation, s.op)}
	name := "store " + s.op
	if s.table != "" {
		attrs = append(attrs, attribute.String(AttrDBCollection, s.table))
		name += " " + s.table
	}
	return child(ctx, name, attrs...)
}

// summary is a statement's operation and first table.
type summary struct{ op, table string }

// summaries caches summarize: the store's statements are few and fixed.
var summaries sync.Map // string -> summary

// summarize finds a statement's operation (its first keyword: SELECT,
// INSERT, …; WITH for a common table expression) and the table it reads
// or writes first (after FROM, INTO or UPDATE).
func summarize(query string) summary {
	if v, ok := summaries.Load(query); ok {
		return v.(summary)
	}
	words := strings.Fields(query)
	var s summary
	if len(words) > 0 {
		s.op = strings.ToUpper(words[0])
	}
	for i, w := range words {
		switch strings.ToUpper(w) {
		case "FROM", "INTO", "UPDATE":
			// A subquery's table is found by reading on.
			if i+1 < len(words) {
				if t := strings.Trim(words[i+1], `"(),;`); plainName(t) && !strings.EqualFold(t, "SELECT") {
					s.table = t
				}
			}
		}
		if s.table != "" {
			break
		}
	}
	summaries.Store(query, s)
	return s
}

// plainName reports a table name of letters, digits and underscores.
func plainName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r != '_' && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}
