package mcpserver

import (
	"context"
	"encoding/json"
	"reflect"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/host/internal/tracing"
)

// traced is a receiving middleware, outermost, that makes each MCP request
// the server handles a span (host/internal/tracing): a child of the trace
// context the client sent in params._meta or, over HTTP, in the
// traceparent header. The dispatcher's span and those below it are its
// children. It is installed only when tracing is on, so a server without
// it pays nothing.
func (s *server) traced(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		r := tracing.Request{Method: method, Transport: "pipe", ProtocolVersion: protocolVersion(req)}
		if p := req.GetParams(); !isNil(p) {
			r.Meta = p.GetMeta()
		}
		if extra := req.GetExtra(); extra != nil && extra.Header != nil {
			r.Header, r.Transport = extra.Header, "tcp"
		}
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
			r.Session = ss.ID()
		}
		switch q := req.(type) {
		case *mcp.CallToolRequest:
			if q.Params != nil {
				r.Tool = q.Params.Name
			}
		case *mcp.GetPromptRequest:
			if q.Params != nil {
				r.Prompt = q.Params.Name
			}
		}
		ctx, span := s.opts.Tracer.StartRequest(ctx, r)
		res, err := next(ctx, method, req)
		code := ""
		if out, ok := res.(*mcp.CallToolResult); ok && out != nil && out.IsError {
			code = envelopeCode(out)
		}
		tracing.EndRequest(span, code, err)
		return res, err
	}
}

// protocolVersion is the request's negotiated MCP revision, "" when the
// request does not say.
func protocolVersion(req mcp.Request) string {
	if v, ok := req.(interface{ ProtocolVersion() string }); ok && !isNil(req) {
		return v.ProtocolVersion()
	}
	return ""
}

// envelopeCode reads the code of the envelope a failed call's first text
// item holds (ToCallToolResult); a foreign plugin's error without one is
// "tool_error".
func envelopeCode(res *mcp.CallToolResult) string {
	if len(res.Content) > 0 {
		if t, ok := res.Content[0].(*mcp.TextContent); ok {
			var env struct {
				Code string `json:"code"`
			}
			if json.Unmarshal([]byte(t.Text), &env) == nil && env.Code != "" {
				return env.Code
			}
		}
	}
	return tracing.ToolError
}

// isNil reports a nil interface or one holding a nil pointer (the go-sdk's
// requests may carry nil params).
func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}
