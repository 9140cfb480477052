package bench

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// BenchmarkElicitRound measures a tools/call whose plugin asks the user
// one question (the MCP fixture's test_elicitation), over stdio with the
// go-sdk client answering at once: before MCP 2026-07-28 the host asks
// the client during the call; from it on the call answers input-required,
// the client calls again with the answer and the plugin runs again. The
// difference is the cost of a round (a second request and plugin run).
func BenchmarkElicitRound(b *testing.B) {
	dir, _ := buildtest.Plugins(b, "conformance/mcpfixture")
	bin := buildtest.Binary(b)
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		b.Run(version, func(b *testing.B) {
			cmd := exec.Command(bin, "serve", "--plugins", dir, "--data", b.TempDir())
			client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": "ada", "email": "ada@example.com"}}, nil
				},
			})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			s, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = s.Close() })
			call := func() {
				res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "test_elicitation", Arguments: map[string]any{"message": "who?"}})
				if err != nil || res.IsError {
					b.Fatalf("test_elicitation: %v %+v", err, res)
				}
			}
			for range 10 {
				call()
			}
			b.ResetTimer()
			for b.Loop() {
				call()
			}
		})
	}
}
