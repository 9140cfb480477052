package clients

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/conformance/scenario"
)

// GoSDK connects the go-sdk client, with progress notifications routed to
// the call that asked for them.
func GoSDK(ctx context.Context, ep scenario.Endpoint) (scenario.Client, error) {
	return ConnectGoSDK(ctx, ep)
}

// ConnectGoSDK connects the go-sdk client to ep.
func ConnectGoSDK(ctx context.Context, ep scenario.Endpoint) (Client, error) {
	return ConnectGoSDKAt("")(ctx, ep)
}

// ConnectGoSDKAt is ConnectGoSDK asking for MCP revision version ("" for
// the newest); the connection fails when another is negotiated.
func ConnectGoSDKAt(version string) func(ctx context.Context, ep scenario.Endpoint) (Client, error) {
	return func(ctx context.Context, ep scenario.Endpoint) (Client, error) {
		ep.ProtocolVersion = version
		return connectGoSDK(ctx, ep)
	}
}

func connectGoSDK(ctx context.Context, ep scenario.Endpoint) (Client, error) {
	c := &goClient{progress: map[string]chan Progress{}}
	opts := &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			c.mu.Lock()
			ch := c.progress[fmt.Sprint(req.Params.ProgressToken)]
			c.mu.Unlock()
			if ch != nil {
				select {
				case ch <- Progress{Progress: req.Params.Progress, Total: req.Params.Total, Message: req.Params.Message}:
				default:
				}
			}
		},
	}
	s, err := scenario.DialGoSDK(ctx, ep, opts)
	if err != nil {
		return nil, err
	}
	c.SessionClient = scenario.SessionClient{Session: s}
	return c, nil
}

type goClient struct {
	scenario.SessionClient
	mu       sync.Mutex
	progress map[string]chan Progress // progress token → the call's notifications
	tokens   atomic.Int64
}

// callTracked calls a tool with a progress token; onProgress sees each
// notification as it arrives.
func (c *goClient) callTracked(ctx context.Context, tool string, args map[string]any, onProgress func(Progress)) (*mcp.CallToolResult, error) {
	token := fmt.Sprintf("matrix-%d", c.tokens.Add(1))
	ch := make(chan Progress, 1024)
	c.mu.Lock()
	c.progress[token] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.progress, token)
		c.mu.Unlock()
	}()
	params := &mcp.CallToolParams{Name: tool, Arguments: args}
	params.SetProgressToken(token)
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := c.Session.CallTool(ctx, params)
		done <- answer{res, err}
	}()
	for {
		select {
		case p := <-ch:
			onProgress(p)
		case a := <-done:
			for {
				select {
				case p := <-ch:
					onProgress(p)
				default:
					return a.res, a.err
				}
			}
		}
	}
}

func (c *goClient) CallWithProgress(ctx context.Context, tool string, args map[string]any) (*mcp.CallToolResult, []Progress, error) {
	var seen []Progress
	res, err := c.callTracked(ctx, tool, args, func(p Progress) { seen = append(seen, p) })
	return res, seen, err
}

func (c *goClient) CancelAtFirstProgress(ctx context.Context, tool string, args map[string]any) ([]Progress, error) {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var seen []Progress
	_, err := c.callTracked(cctx, tool, args, func(p Progress) {
		seen = append(seen, p)
		cancel() // the go-sdk sends notifications/cancelled
	})
	return seen, err
}

func (c *goClient) ListResources(ctx context.Context) ([]*mcp.Resource, error) {
	var out []*mcp.Resource
	for r, err := range c.Session.Resources(ctx, nil) {
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func (c *goClient) ReadResource(ctx context.Context, uri string) (*mcp.ReadResourceResult, error) {
	return c.Session.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
}

func (c *goClient) ListPrompts(ctx context.Context) ([]*mcp.Prompt, error) {
	var out []*mcp.Prompt
	for p, err := range c.Session.Prompts(ctx, nil) {
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func (c *goClient) GetPrompt(ctx context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	return c.Session.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: args})
}
