package mcpserver

//lint:file-ignore SA1019 sampling, roots and logging are deprecated from MCP 2026-07-28 on, and clients before it still use them: this file is how they reach those clients.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/dispatch"
	"github.com/plugboard/plugboard/host/internal/runtime"
)

// client is the MCP client of one session, as the notify, sample and elicit
// host functions reach it during a call. The calls go out on the request's
// context, so on streamable HTTP they travel on the stream of the request
// that runs the plugin, and end with it.
type client struct {
	session *mcp.ServerSession
	server  *mcp.Server
	log     *slog.Logger
}

func (s *server) newClient(session *mcp.ServerSession) dispatch.Client {
	if session == nil {
		return nil
	}
	return &client{session: session, server: s.srv, log: s.log}
}

func (c *client) caps() *mcp.ClientCapabilities {
	if p := c.session.InitializeParams(); p != nil && p.Capabilities != nil {
		return p.Capabilities
	}
	return &mcp.ClientCapabilities{}
}

// Notify sends notifications/message; the go-sdk drops levels below the
// one the client set with logging/setLevel (and everything before it set
// one).
func (c *client) Notify(ctx context.Context, n abi.NotifyRequest) {
	err := c.session.Log(ctx, &mcp.LoggingMessageParams{Level: mcp.LoggingLevel(n.Level), Logger: n.Logger, Data: n.Data})
	if err != nil && ctx.Err() == nil {
		c.log.Debug("log notification not sent", "err", err)
	}
}

// Sample sends sampling/createMessage.
func (c *client) Sample(ctx context.Context, req json.RawMessage) (json.RawMessage, *abi.Envelope) {
	if c.caps().Sampling == nil {
		return nil, unsupported("sampling")
	}
	var params mcp.CreateMessageParams
	if err := json.Unmarshal(req, &params); err != nil {
		return nil, abi.NewEnvelope(abi.CodeInvalidArgument, "sample request is not a sampling/createMessage request: "+err.Error(), "")
	}
	res, err := c.session.CreateMessage(ctx, &params)
	if err != nil {
		return nil, clientFailure(ctx, "sampling", err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, abi.NewEnvelope(abi.CodeInternal, "encoding the sampling result: "+err.Error(), "")
	}
	return b, nil
}

// Elicit sends elicitation/create in form mode; the go-sdk checks the
// schema before sending and the answer against it.
func (c *client) Elicit(ctx context.Context, req json.RawMessage) (json.RawMessage, *abi.Envelope) {
	if c.caps().Elicitation == nil {
		return nil, unsupported("elicitation")
	}
	var er abi.ElicitRequest
	if err := json.Unmarshal(req, &er); err != nil {
		return nil, abi.NewEnvelope(abi.CodeInvalidArgument, "elicit request is not an ElicitRequest: "+err.Error(), "")
	}
	res, err := c.session.Elicit(ctx, &mcp.ElicitParams{Mode: "form", Message: er.Message, RequestedSchema: er.RequestedSchema})
	if err != nil {
		return nil, clientFailure(ctx, "elicitation", err)
	}
	b, err := json.Marshal(abi.ElicitResult{Action: res.Action, Content: res.Content})
	if err != nil {
		return nil, abi.NewEnvelope(abi.CodeInternal, "encoding the elicitation result: "+err.Error(), "")
	}
	return b, nil
}

// ListRoots sends roots/list (runtime.RootsLister).
func (c *client) ListRoots(ctx context.Context) (json.RawMessage, *abi.Envelope) {
	if c.caps().RootsV2 == nil {
		return nil, unsupported("roots")
	}
	res, err := c.session.ListRoots(ctx, nil)
	if err != nil {
		return nil, clientFailure(ctx, "roots", err)
	}
	if res.Roots == nil {
		res.Roots = []*mcp.Root{}
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, abi.NewEnvelope(abi.CodeInternal, "encoding the roots: "+err.Error(), "")
	}
	return b, nil
}

// ResourceUpdated sends notifications/resources/updated to the sessions
// subscribed to uri (runtime.ResourceUpdater).
func (c *client) ResourceUpdated(ctx context.Context, uri string) {
	if err := c.server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri}); err != nil && ctx.Err() == nil {
		c.log.Debug("resource update not sent", "uri", uri, "err", err)
	}
}

func unsupported(what string) *abi.Envelope {
	return abi.NewEnvelope(abi.CodeUnsupported, "the MCP client did not declare the "+what+" capability",
		"use a client that supports "+what+", or call a tool that does not need it")
}

// clientFailure is the envelope of a request to the client that failed: the
// call's own end (deadline, cancellation), the client refusing the method,
// or any other failure.
func clientFailure(ctx context.Context, what string, err error) *abi.Envelope {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return abi.NewEnvelope(abi.CodePluginTimeout, what+" did not finish before the call's deadline", "answer sooner, or give the tool a longer timeout_ms")
	case ctx.Err() != nil:
		return abi.NewEnvelope(abi.CodeCancelled, what+" was cancelled with the call", "")
	}
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) && rpc.Code == jsonrpc.CodeMethodNotFound {
		return unsupported(what)
	}
	return abi.NewEnvelope(abi.CodeUnavailable, fmt.Sprintf("the MCP client's %s failed: %v", what, err), "retry the call, or ask the user")
}

// Ask implements runtime.Asker: the questions go out together, as the
// go-sdk answers an input-required result for a client before 2026-07-28.
func (c *client) Ask(ctx context.Context, qs map[string]abi.Question) (map[string]abi.Answer, *abi.Envelope) {
	var (
		mu  sync.Mutex
		wg  sync.WaitGroup
		out = make(map[string]abi.Answer, len(qs))
	)
	for key, q := range qs {
		wg.Go(func() {
			a := runtime.AskOne(ctx, c, q)
			mu.Lock()
			out[key] = a
			mu.Unlock()
		})
	}
	wg.Wait()
	return out, nil
}
