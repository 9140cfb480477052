package mcpserver

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/dispatch"
	"github.com/plugboard/plugboard/host/internal/registry"
)

// TestUnknownToolIsAnEnvelope: a tools/call naming a tool not served is
// answered as every failed call is — a tool result with isError and the
// tool_not_found envelope, with its hint — not with the go-sdk's JSON-RPC
// invalid-params error; the other methods keep their protocol errors.
func TestUnknownToolIsAnEnvelope(t *testing.T) {
	ctx := context.Background()
	reg, err := registry.Load(ctx, registry.Options{Dirs: []string{t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	srv := New(reg, dispatch.New(reg, dispatch.Options{}), Options{Name: "t", Version: "1"})
	ct, st := mcp.NewInMemoryTransports()
	go func() { _ = srv.Run(ctx, st) }()
	session, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()

	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "withdrawn_tool", Arguments: map[string]any{"x": 1}})
	if err != nil {
		t.Fatalf("an unknown tool answered a protocol error: %v", err)
	}
	if !res.IsError || len(res.Content) == 0 || res.StructuredContent != nil {
		t.Fatalf("result %+v: want isError with the envelope as its text", res)
	}
	tc, _ := res.Content[0].(*mcp.TextContent)
	var env abi.Envelope
	if tc == nil || json.Unmarshal([]byte(tc.Text), &env) != nil {
		t.Fatalf("first content item %v is not an envelope", res.Content[0])
	}
	if env.Code != abi.CodeToolNotFound || env.Retryable || env.Hint == "" || env.Details["tool"] != "withdrawn_tool" {
		t.Errorf("envelope %+v: want tool_not_found naming the tool, not retryable, with a hint", env)
	}

	// Prompts keep the protocol's answer.
	if _, err := session.GetPrompt(ctx, &mcp.GetPromptParams{Name: "nope"}); err == nil {
		t.Error("an unknown prompt answered without an error")
	}
}
