// Package mcpserver exposes the dispatcher over MCP with the official go-sdk:
// it lists the registry's tools with their schemas and annotations, hands each
// tools/call to the dispatcher, and maps its result onto a CallToolResult
// (structuredContent plus compact JSON text; isError with the envelope for
// failures). It owns transport concerns only — progress tokens, cancellation
// — and never validates, retries or interprets a tool's answer.
package mcpserver

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/dispatch"
	"github.com/plugboard/plugboard/host/registry"
)

// Options configures New.
type Options struct {
	Name, Version string
	Logger        *slog.Logger
}

// New returns an MCP server serving every tool of reg through d.
func New(reg *registry.Registry, d *dispatch.Dispatcher, opts Options) *mcp.Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: opts.Name, Version: opts.Version}, &mcp.ServerOptions{
		Logger: opts.Logger,
	})
	for _, t := range reg.Tools() {
		srv.AddTool(toolOf(t.Def), handler(d, t.Def.Name))
	}
	return srv
}

func toolOf(def *abi.Tool) *mcp.Tool {
	t := &mcp.Tool{
		Name:        def.Name,
		Title:       def.Title,
		Description: def.Description,
		InputSchema: def.InputSchema,
	}
	if len(def.OutputSchema) > 0 {
		t.OutputSchema = def.OutputSchema
	}
	if a := def.Annotations; a != nil {
		t.Annotations = &mcp.ToolAnnotations{
			Title:           a.Title,
			ReadOnlyHint:    a.ReadOnlyHint,
			DestructiveHint: a.DestructiveHint,
			IdempotentHint:  a.IdempotentHint,
			OpenWorldHint:   a.OpenWorldHint,
		}
	}
	return t
}

func handler(d *dispatch.Dispatcher, name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		dreq := dispatch.Request{Tool: name, Arguments: req.Params.Arguments}
		if token := req.Params.GetProgressToken(); token != nil {
			session := req.Session
			dreq.Progress = func(p abi.ProgressRequest) {
				// Progress is advisory: a client gone away must not fail the call.
				_ = session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: token,
					Progress:      p.Progress,
					Total:         p.Total,
					Message:       p.Message,
				})
			}
		}
		return ToCallToolResult(d.Call(ctx, dreq)), nil
	}
}

// ToCallToolResult maps a dispatcher result onto MCP's result type.
func ToCallToolResult(r *dispatch.Result) *mcp.CallToolResult {
	out := &mcp.CallToolResult{IsError: r.IsError(), Content: make([]mcp.Content, 0, len(r.Content))}
	for _, c := range r.Content {
		out.Content = append(out.Content, &mcp.TextContent{Text: c.Text})
	}
	if len(r.Structured) > 0 {
		out.StructuredContent = json.RawMessage(r.Structured)
	}
	return out
}
