package clients

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/conformance/scenario"
)

// Client is a matrix client: the scenario pack's calls plus what the pack
// cannot express.
type Client interface {
	scenario.Client
	Features
}

// Features are the MCP features beyond tools/list and tools/call that every
// client of the matrix is checked on. A client that cannot express one
// returns an error wrapping ErrUnsupported.
type Features interface {
	// CallWithProgress calls a tool asking for progress notifications and
	// returns the result with the notifications received before it.
	CallWithProgress(ctx context.Context, tool string, args map[string]any) (*mcp.CallToolResult, []Progress, error)
	// CancelAtFirstProgress calls a tool asking for progress and cancels
	// the call the client's way when the first notification arrives. It
	// returns the notifications received and the client's error for the
	// cancelled call (nil when the call answered anyway).
	CancelAtFirstProgress(ctx context.Context, tool string, args map[string]any) ([]Progress, error)
	ListResources(ctx context.Context) ([]*mcp.Resource, error)
	ReadResource(ctx context.Context, uri string) (*mcp.ReadResourceResult, error)
	ListPrompts(ctx context.Context) ([]*mcp.Prompt, error)
	GetPrompt(ctx context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error)
}

// Progress is one progress notification as a client saw it.
type Progress struct {
	Progress float64 `json:"progress"`
	Total    float64 `json:"total,omitempty"`
	Message  string  `json:"message,omitempty"`
}

// ErrUnsupported marks a feature a client has no way to express.
var ErrUnsupported = errors.New("the client cannot express this")

// ClientError is a call the client itself failed: it threw or exited
// instead of handing its user a result (for an error result that is
// exactly the bug the matrix exists to catch).
type ClientError struct {
	Client  string
	Code    any
	Message string
}

func (e *ClientError) Error() string {
	if e.Code != nil {
		return fmt.Sprintf("%s client error %v: %s", e.Client, e.Code, e.Message)
	}
	return fmt.Sprintf("%s client error: %s", e.Client, e.Message)
}
