package mcpserver

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/dispatch"
	"github.com/plugboard/plugboard/host/internal/registry"
	"github.com/plugboard/plugboard/host/internal/tracing"
)

// TestRequestSpans: with a tracer, each MCP request is a span, a child of
// the trace context in its params._meta, over a pipe-like transport; a
// failed tool call's span carries the envelope's code, a refused request
// the JSON-RPC error; the dispatcher's span is the call's child.
func TestRequestSpans(t *testing.T) {
	ctx := context.Background()
	reg, err := registry.Load(ctx, registry.Options{Dirs: []string{t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	rec := tracetest.NewSpanRecorder()
	tp := tracing.NewProvider(rec, "test")
	defer func() { _ = tp.Shutdown(ctx) }()
	tr := tracing.New(tp)
	srv := New(reg, dispatch.New(reg, dispatch.Options{Tracer: tr}), Options{Name: "t", Version: "1", Tracer: tr})
	ct, st := mcp.NewInMemoryTransports()
	go func() { _ = srv.Run(ctx, st) }()
	session, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()

	const trace, parent = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "withdrawn_tool", Arguments: map[string]any{"secret": "s3cr3t"},
		Meta: mcp.Meta{"traceparent": "00-" + trace + "-" + parent + "-01"}})
	if err != nil || !res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	if _, err := session.GetPrompt(ctx, &mcp.GetPromptParams{Name: "nope"}); err == nil {
		t.Fatal("an unknown prompt answered without an error")
	}
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		byName[s.Name()] = s
	}
	call, disp, prompt := byName["tools/call withdrawn_tool"], byName["dispatch withdrawn_tool"], byName["prompts/get nope"]
	if call == nil || disp == nil || prompt == nil {
		t.Fatalf("spans %v", byName)
	}
	if call.SpanContext().TraceID().String() != trace || call.Parent().SpanID().String() != parent {
		t.Errorf("tools/call span is not the caller's child: %v", call.Parent())
	}
	if disp.Parent().SpanID() != call.SpanContext().SpanID() {
		t.Error("the dispatch span is not the request's child")
	}
	attrs := map[string]string{}
	for _, kv := range call.Attributes() {
		attrs[string(kv.Key)] = kv.Value.String()
	}
	if attrs[tracing.AttrNetworkTransport] != "pipe" || attrs[tracing.AttrErrorType] != tracing.ToolError ||
		attrs[tracing.AttrErrorCode] != abi.CodeToolNotFound || call.Status().Code != codes.Error {
		t.Errorf("tools/call span: status %v attributes %v", call.Status(), attrs)
	}
	if disp.Status().Description != abi.CodeToolNotFound {
		t.Errorf("dispatch span status %v", disp.Status())
	}
	if prompt.Status().Code != codes.Error {
		t.Errorf("a refused prompts/get: status %v", prompt.Status())
	}
	for _, s := range rec.Ended() {
		for _, kv := range s.Attributes() {
			if kv.Value.String() == "s3cr3t" {
				t.Errorf("span %q carries an argument", s.Name())
			}
		}
	}
}
