package tracing

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

const (
	callerTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan   = "00f067aa0ba902b7"
	callerParent = "00-" + callerTrace + "-" + callerSpan + "-01"
)

// recorded returns a Tracer on a real SDK provider and the recorder of
// the spans it ends.
func recorded(t *testing.T) (*Tracer, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := NewProvider(rec, "test")
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return New(tp), rec
}

func attrs(s sdktrace.ReadOnlySpan) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes() {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

func TestOffTracesNothingAndAllocatesNothing(t *testing.T) {
	for name, tr := range map[string]*Tracer{"nil provider": New(nil), "noop provider": New(noop.NewTracerProvider()), "nil Tracer": nil} {
		if tr.On() {
			t.Errorf("%s: On", name)
		}
		ctx := context.Background()
		allocs := testing.AllocsPerRun(100, func() {
			c, span := tr.StartDispatch(ctx, "echo")
			pc, ps := StartPlugin(c, "echo", "echo", 1)
			hc, hs := StartHost(pc, "plugboard:host/v1", "board")
			BoardOp(hc, "list_projects")
			HTTP(hc, "GET", "example.com", 200)
			_, ss := StartStore(hc, "sqlite", "SELECT 1 FROM tasks")
			EndErr(ss, nil)
			End(hs, "")
			End(ps, "invalid_argument")
			End(span, "")
			if c != ctx || pc != ctx || hc != ctx {
				t.Fatal("a span went into the context")
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per call with tracing off, want 0", name, allocs)
		}
	}
}

func TestRequestIsChildOfMetaTraceparent(t *testing.T) {
	tr, rec := recorded(t)
	ctx, span := tr.StartRequest(context.Background(), Request{Method: "tools/call", Tool: "echo", Session: "s1",
		ProtocolVersion: "2025-11-25", Transport: "pipe",
		Meta: map[string]any{"traceparent": callerParent, "tracestate": "k=v", "progressToken": 3}})
	_, d := tr.StartDispatch(ctx, "echo")
	End(d, "")
	EndRequest(span, "", nil)
	ended := rec.Ended()
	if len(ended) != 2 {
		t.Fatalf("%d spans ended, want 2", len(ended))
	}
	req, disp := ended[1], ended[0]
	if req.Name() != "tools/call echo" || req.SpanKind() != trace.SpanKindServer {
		t.Errorf("request span %q kind %v", req.Name(), req.SpanKind())
	}
	if got := req.SpanContext().TraceID().String(); got != callerTrace {
		t.Errorf("trace id %s, want the caller's %s", got, callerTrace)
	}
	if got := req.Parent().SpanID().String(); got != callerSpan || !req.Parent().IsRemote() {
		t.Errorf("parent %s (remote %v), want the caller's span %s", got, req.Parent().IsRemote(), callerSpan)
	}
	if req.SpanContext().TraceState().Get("k") != "v" {
		t.Errorf("tracestate not kept: %v", req.SpanContext().TraceState())
	}
	want := map[string]string{AttrMCPMethod: "tools/call", AttrToolName: "echo", AttrOperationName: "execute_tool",
		AttrMCPSession: "s1", AttrMCPProtocolVersion: "2025-11-25", AttrNetworkTransport: "pipe"}
	for k, v := range want {
		if got := attrs(req)[k]; got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if disp.Parent().SpanID() != req.SpanContext().SpanID() || disp.Name() != "dispatch echo" {
		t.Errorf("dispatch span %q is not the request's child", disp.Name())
	}
}

func TestRequestHeaderParentAndPrecedence(t *testing.T) {
	tr, rec := recorded(t)
	header := http.Header{}
	header.Set("Traceparent", "00-11111111111111111111111111111111-2222222222222222-01")
	// No trace context in _meta: the header's.
	_, span := tr.StartRequest(context.Background(), Request{Method: "tools/list", Header: header, Meta: map[string]any{"traceparent": 7}})
	EndRequest(span, "", nil)
	// _meta's wins over the header's.
	_, span = tr.StartRequest(context.Background(), Request{Method: "prompts/get", Prompt: "p", Header: header,
		Meta: map[string]any{"traceparent": callerParent}})
	EndRequest(span, "", nil)
	// Neither: a root.
	_, span = tr.StartRequest(context.Background(), Request{Method: "ping", Meta: map[string]any{"traceparent": "garbage"}})
	EndRequest(span, "", errors.New("refused"))
	ended := rec.Ended()
	if got := ended[0].SpanContext().TraceID().String(); got != strings.Repeat("1", 32) || ended[0].Name() != "tools/list" {
		t.Errorf("header parent: trace %s name %q", got, ended[0].Name())
	}
	if got := ended[1].SpanContext().TraceID().String(); got != callerTrace || ended[1].Name() != "prompts/get p" ||
		attrs(ended[1])[AttrPromptName] != "p" {
		t.Errorf("_meta over header: trace %s name %q", got, ended[1].Name())
	}
	if ended[2].Parent().IsValid() {
		t.Errorf("a request without trace context has parent %v", ended[2].Parent())
	}
	if ended[2].Status().Code != codes.Error || attrs(ended[2])[AttrErrorType] != "_OTHER" {
		t.Errorf("a JSON-RPC error: status %v attrs %v", ended[2].Status(), attrs(ended[2]))
	}
}

func TestErrorsCarryTheCodeNotTheMessage(t *testing.T) {
	tr, rec := recorded(t)
	ctx, req := tr.StartRequest(context.Background(), Request{Method: "tools/call", Tool: "echo"})
	ctx, d := tr.StartDispatch(ctx, "echo")
	_, p := StartPlugin(ctx, "echo", "echo", 2)
	End(p, "plugin_timeout")
	End(d, "plugin_timeout")
	EndRequest(req, "plugin_timeout", nil)
	ended := rec.Ended()
	plugin, disp, request := ended[0], ended[1], ended[2]
	for _, s := range []sdktrace.ReadOnlySpan{plugin, disp} {
		if s.Status().Code != codes.Error || s.Status().Description != "plugin_timeout" ||
			attrs(s)[AttrErrorCode] != "plugin_timeout" || attrs(s)[AttrErrorType] != "plugin_timeout" {
			t.Errorf("%s: status %v attrs %v", s.Name(), s.Status(), attrs(s))
		}
	}
	if attrs(request)[AttrErrorType] != ToolError || attrs(request)[AttrErrorCode] != "plugin_timeout" || request.Status().Code != codes.Error {
		t.Errorf("request: status %v attrs %v", request.Status(), attrs(request))
	}
	if attrs(plugin)[AttrAttempt] != "2" {
		t.Errorf("plugin attempt = %q", attrs(plugin)[AttrAttempt])
	}
}

func TestChildrenFollowTheParentsProvider(t *testing.T) {
	tr, rec := recorded(t)
	ctx, d := tr.StartDispatch(context.Background(), "board_call")
	ctx, p := StartPlugin(ctx, "boardprobe", "board_call", 1)
	hctx, h := StartHost(ctx, "plugboard:host/v1", "board")
	BoardOp(hctx, "create_task")
	_, s := StartStore(hctx, "postgresql", `INSERT INTO "tasks" (id) VALUES (?)`)
	EndErr(s, errors.New("UNIQUE constraint failed: tasks.secret_value"))
	End(h, "")
	hctx, h = StartHost(ctx, "extism:host/env", "http_request")
	HTTP(hctx, "POST", "api.example.com", 503)
	End(h, "")
	End(p, "")
	End(d, "")
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		byName[s.Name()] = s
	}
	store, board, http := byName["store INSERT tasks"], byName["host board create_task"], byName["host http_request"]
	if store == nil || board == nil || http == nil {
		t.Fatalf("spans: %v", byName)
	}
	if store.Parent().SpanID() != board.SpanContext().SpanID() || board.Parent().SpanID() != byName["plugin boardprobe"].SpanContext().SpanID() {
		t.Error("store → host → plugin links broken")
	}
	if a := attrs(store); a[AttrDBSystem] != "postgresql" || a[AttrDBOperation] != "INSERT" || a[AttrDBCollection] != "tasks" {
		t.Errorf("store attrs %v", a)
	}
	if store.Status().Code != codes.Error || strings.Contains(store.Status().Description, "secret_value") {
		t.Errorf("store error status %v: want failed, without the error's text", store.Status())
	}
	if a := attrs(board); a[AttrBoardOp] != "create_task" || a[AttrHostFunction] != "board" {
		t.Errorf("board attrs %v", a)
	}
	if a := attrs(http); a[AttrHTTPMethod] != "POST" || a[AttrServerAddress] != "api.example.com" || a[AttrHTTPStatus] != "503" {
		t.Errorf("http attrs %v", a)
	}
}

func TestUnsampledCallerRecordsNothing(t *testing.T) {
	tr, rec := recorded(t)
	ctx, req := tr.StartRequest(context.Background(), Request{Method: "tools/call", Tool: "echo",
		Meta: map[string]any{"traceparent": "00-" + callerTrace + "-" + callerSpan + "-00"}})
	ctx, d := tr.StartDispatch(ctx, "echo")
	if Recording(ctx) {
		t.Error("a call the caller did not sample is recorded")
	}
	_, p := StartPlugin(ctx, "echo", "echo", 1)
	End(p, "")
	End(d, "")
	EndRequest(req, "", nil)
	if n := len(rec.Ended()); n != 0 {
		t.Errorf("%d spans recorded for an unsampled caller", n)
	}
}

func TestSummarize(t *testing.T) {
	for q, want := range map[string]summary{
		"SELECT id FROM tasks WHERE id = ?":                       {"SELECT", "tasks"},
		"\n\t\tinsert into mail (a) values (?)":                   {"INSERT", "mail"},
		"UPDATE attempts SET state = ?":                           {"UPDATE", "attempts"},
		"DELETE FROM idempotency WHERE k = ?":                     {"DELETE", "idempotency"},
		"SELECT count(*) FROM (SELECT 1 FROM events) x":           {"SELECT", "events"},
		"WITH x AS (SELECT 1) SELECT * FROM x":                    {"WITH", "x"},
		"SELECT 1":                                                {"SELECT", ""},
		`SELECT a FROM "weird-name" WHERE b IN (SELECT c FROM d)`: {"SELECT", "d"},
	} {
		if got := summarize(q); got != want {
			t.Errorf("summarize(%q) = %+v, want %+v", q, got, want)
		}
	}
}

func TestResolveEndpoint(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, c := range []struct {
		name, flag, file string
		getenv           func(string) string
		url, from        string
	}{
		{"off", "", "", env(), "", ""},
		{"flag", "http://127.0.0.1:4318", "http://file:4318", env(EnvEndpoint, "http://env:4318"), "http://127.0.0.1:4318/v1/traces", "--otlp-endpoint"},
		{"flag with a path", "https://collector.example/otlp/", "", env(), "https://collector.example/otlp/v1/traces", "--otlp-endpoint"},
		{"traces variable as it is", "", "http://file:4318", env(EnvTracesEndpoint, "http://env:4318/custom", EnvEndpoint, "http://other:4318"), "http://env:4318/custom", "$" + EnvTracesEndpoint},
		{"general variable as a base", "", "http://file:4318", env(EnvEndpoint, "http://env:4318"), "http://env:4318/v1/traces", "$" + EnvEndpoint},
		{"file", "", "http://file:4318", env(), "http://file:4318/v1/traces", "plugboard.json: telemetry.otlp_endpoint"},
	} {
		ep, err := ResolveEndpoint(c.flag, c.file, "plugboard.json: telemetry.otlp_endpoint", c.getenv)
		if err != nil || ep.URL != c.url || ep.From != c.from {
			t.Errorf("%s: %+v, %v; want %s from %s", c.name, ep, err, c.url, c.from)
		}
	}
	for _, bad := range []string{"127.0.0.1:4318", "grpc://x:4317", "http://", "http://user:pw@x:4318", "http://x:4318?k=v"} {
		if _, err := ResolveEndpoint(bad, "", "", func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "--otlp-endpoint") {
			t.Errorf("%q: %v, want an error naming the flag", bad, err)
		}
	}
}

func TestProviderResource(t *testing.T) {
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=staging")
	rec := tracetest.NewSpanRecorder()
	tp := NewProvider(rec, "1.2.3")
	defer func() { _ = tp.Shutdown(context.Background()) }()
	_, span := New(tp).StartDispatch(context.Background(), "echo")
	End(span, "")
	got := map[attribute.Key]string{}
	for _, kv := range rec.Ended()[0].Resource().Attributes() {
		got[kv.Key] = kv.Value.String()
	}
	if got["service.name"] != "plugboard" || got["service.version"] != "1.2.3" || got["deployment.environment.name"] != "staging" {
		t.Errorf("resource %v", got)
	}
}
