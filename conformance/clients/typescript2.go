package clients

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/conformance/scenario"
)

//go:embed ts2-driver.mjs
var ts2Driver []byte

// TypeScriptV2Revision is the MCP revision the TypeScript SDK v2 cell
// speaks: the driver pins it, and a connection that negotiated anything
// else fails (the cell exists to run the pack at that revision).
const TypeScriptV2Revision = "2026-07-28"

// Answers of the v2 driver's handlers (ts2-driver.mjs), for checks that a
// result carries them.
const (
	TypeScriptV2SamplingText = "Paris"
	TypeScriptV2RootURI      = "file:///tmp/plugboard-roots"
)

// TypeScriptV2 connects the official TypeScript SDK v2's Client
// (@modelcontextprotocol/client) of the installation at dir, pinned to MCP
// 2026-07-28 and driven by ts2-driver.mjs in a Node.js child process.
func TypeScriptV2(dir string) scenario.Connector {
	return func(ctx context.Context, ep scenario.Endpoint) (scenario.Client, error) {
		return ConnectTypeScriptV2(ctx, dir, ep)
	}
}

// InputRequest is a request of an input-required result that the client's
// own handler answered (sampling/createMessage, elicitation/create,
// roots/list).
type InputRequest struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// Retry is a tools/call the client sent again to answer an input-required
// result: the keys of its inputResponses, and whether it echoed a
// requestState.
type Retry struct {
	InputResponses []string `json:"inputResponses"`
	RequestState   bool     `json:"requestState"`
}

// Answered is what the client did for one call's input-required results.
type Answered struct {
	Requests []InputRequest `json:"_answered"`
	Retries  []Retry        `json:"_retries"`
}

// TypeScriptV2Client is the v2 cell's Client, with what only it can say.
type TypeScriptV2Client struct{ *tsClient }

var _ Client = TypeScriptV2Client{}

// ConnectTypeScriptV2 starts the driver and connects it to ep; it fails
// unless the connection negotiated TypeScriptV2Revision.
func ConnectTypeScriptV2(ctx context.Context, dir string, ep scenario.Endpoint) (TypeScriptV2Client, error) {
	c, err := startDriver(ctx, dir, "ts2-driver.mjs", ts2Driver, map[string]any{"protocolVersion": TypeScriptV2Revision}, ep, "TypeScript v2")
	if err != nil {
		return TypeScriptV2Client{}, err
	}
	if c.version != TypeScriptV2Revision {
		c.Close()
		return TypeScriptV2Client{}, fmt.Errorf("TypeScript v2 negotiated MCP %q, want %s", c.version, TypeScriptV2Revision)
	}
	return TypeScriptV2Client{c}, nil
}

// ProtocolVersion is the MCP revision the connection negotiated.
func (c TypeScriptV2Client) ProtocolVersion() string { return c.version }

// callResult is what the driver adds to a callTool answer.
type callResult struct {
	Answered
	Progress []Progress `json:"_progress"`
}

func (c TypeScriptV2Client) CallTool(ctx context.Context, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	res, _, err := c.CallToolAnswered(ctx, tool, args)
	return res, err
}

// CallToolAnswered calls a tool and returns its final result with what the
// client did meanwhile: at 2026-07-28 a plugin's sampling, elicitation and
// roots come back as input-required results, which the SDK answers from its
// handlers and retries on its own. The requests are those answered while
// the call ran, so calls made at the same time share them.
func (c TypeScriptV2Client) CallToolAnswered(ctx context.Context, tool string, args map[string]any) (*mcp.CallToolResult, *Answered, error) {
	a, err := c.request(ctx, map[string]any{"op": "callTool", "name": tool, "arguments": args, "timeoutMs": timeoutMS(ctx)})
	if err != nil {
		return nil, nil, err
	}
	if a.Error != nil {
		return nil, nil, &ClientError{Client: c.name, Code: a.Error.Code, Message: a.Error.Message}
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(a.Result, &res); err != nil {
		return nil, nil, err
	}
	var extra callResult
	json.Unmarshal(a.Result, &extra)
	return &res, &extra.Answered, nil
}
