package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/abi"
	plughost "github.com/plugboard/plugboard/host"
)

// Inside an attempt. The board gives each attempt process the URL of its
// host's agent endpoint and a token of its own (PLUGBOARD_URL,
// PLUGBOARD_TOKEN: host/attemptaccess.go), never the board's data
// directory. A plugboard started there without --data opens no board,
// store or data directory: `serve` (stdio) is a proxy to that endpoint and
// `call` makes its one call through it, both as the attempt's WORKER
// identity, with the host's tools, policy and decision log.

// attemptEnv is what an attempt process got from the board to reach it.
type attemptEnv struct {
	url, token string
	// attempt names the attempt in messages ("" when the board gave
	// none).
	attempt string
}

// insideAttempt reports whether this process runs inside an attempt: the
// board gave it an endpoint and a token.
func insideAttempt() (attemptEnv, bool) {
	a := attemptEnv{url: os.Getenv(plughost.EnvAttemptURL), token: os.Getenv(plughost.EnvAttemptToken),
		attempt: os.Getenv("PLUGBOARD_ATTEMPT_ID")}
	return a, a.url != "" && a.token != ""
}

// name is how messages name the attempt.
func (a attemptEnv) name() string {
	if a.attempt == "" {
		return "an attempt"
	}
	return "attempt " + a.attempt
}

// throughAttempt reports whether a command with these flags works through
// the attempt's endpoint: inside an attempt, unless the command line chose
// a board itself (--data, or --config, whose file may name one) — the
// operator's choice, left as it is.
func (h *hostFlags) throughAttempt() (attemptEnv, bool) {
	a, inside := insideAttempt()
	if !inside || h.fs == nil {
		return a, inside
	}
	h.fs.Visit(func(f *flag.Flag) {
		if f.Name == "data" || f.Name == "config" {
			inside = false
		}
	})
	return a, inside
}

// announce says, once, where the tools come from.
func (a attemptEnv) announce(stderr io.Writer) {
	fmt.Fprintf(stderr, "plugboard: inside %s; tools are the host's, as this attempt's WORKER identity (%s)\n", a.name(), a.url)
}

// bearerTransport adds the attempt's token to every request.
type bearerTransport struct {
	token string
	next  http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// connect opens an MCP session to the attempt's endpoint. A failure says
// what was tried, and the likely reason: the host or the attempt's
// access is gone.
func (a attemptEnv) connect(ctx context.Context, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "plugboard-attempt", Version: version}, opts)
	session, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: a.url, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearerTransport{a.token, http.DefaultTransport}}}, nil)
	if err != nil {
		return nil, &exitError{code: 1, err: fmt.Errorf("inside %s: cannot reach the board at $%s %s: %w\n"+
			"(the host may have stopped, or this attempt's access ended with its process; a plugboard inside an attempt "+
			"never opens the board itself: give --data DIR to use a board of your own)", a.name(), plughost.EnvAttemptURL, a.url, err)}
	}
	return session, nil
}

// callThroughAttempt is `call` inside an attempt: one call through the
// endpoint, printed as call prints it.
func callThroughAttempt(ctx context.Context, in *invocation, a attemptEnv, tool string, args json.RawMessage, progress bool) error {
	a.announce(in.stderr)
	opts := &mcp.ClientOptions{}
	if progress {
		opts.ProgressNotificationHandler = func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			printProgress(in.stderr, abi.ProgressRequest{Progress: req.Params.Progress, Total: req.Params.Total, Message: req.Params.Message})
		}
	}
	session, err := a.connect(ctx, opts)
	if err != nil {
		return err
	}
	defer session.Close()
	params := &mcp.CallToolParams{Name: tool, Arguments: args}
	if progress {
		params.SetProgressToken("call")
	}
	res, err := session.CallTool(ctx, params)
	if err != nil {
		res, err = unknownTool(tool, err)
		if err != nil {
			return fmt.Errorf("inside %s: %s: %w", a.name(), tool, err)
		}
	}
	out := remoteOutput(res)
	var pretty bytes.Buffer
	if json.Indent(&pretty, out, "", "  ") != nil {
		pretty.Reset()
		pretty.Write(out)
	}
	fmt.Fprintln(in.stdout, pretty.String())
	if res.IsError {
		return &exitError{code: 1, err: errSilent}
	}
	return nil
}

// unknownTool turns the go-sdk's answer to a tool it does not serve (a
// JSON-RPC invalid-params error) into the envelope the host answers a
// local call with, so that call prints the same either way.
func unknownTool(tool string, err error) (*mcp.CallToolResult, error) {
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams || !strings.Contains(rpc.Message, "unknown tool") {
		return nil, err
	}
	env := abi.NewEnvelope(abi.CodeToolNotFound, fmt.Sprintf("no tool named %q is served", tool),
		"call tools/list and use one of the names it returns").WithDetail("tool", tool)
	return envelopeResult(env), nil
}

// envelopeResult is an envelope as the host's MCP server sends it: isError,
// its compact JSON as the first text item.
func envelopeResult(env *abi.Envelope) *mcp.CallToolResult {
	b, _ := json.Marshal(env)
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
}

// remoteOutput is what call prints of a result: the envelope of an error
// (its first text item), else the structured answer, else the content
// items (text as strings, the others as MCP sends them).
func remoteOutput(res *mcp.CallToolResult) json.RawMessage {
	if res.IsError && len(res.Content) > 0 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok && json.Valid([]byte(tc.Text)) {
			return json.RawMessage(tc.Text)
		}
	}
	if !res.IsError && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			return b
		}
	}
	items := make([]any, 0, len(res.Content))
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			items = append(items, tc.Text)
		} else {
			items = append(items, c)
		}
	}
	b, _ := json.Marshal(map[string]any{"content": items})
	return b
}

// serveThroughAttempt is `serve` (stdio) inside an attempt: an MCP server
// on stdin and stdout whose tools are the endpoint's (startAttemptProxy).
func serveThroughAttempt(ctx context.Context, stderr io.Writer, a attemptEnv) error {
	a.announce(stderr)
	p, err := startAttemptProxy(ctx, a)
	if err != nil {
		return err
	}
	defer p.remote.Close()
	err = p.local.Run(ctx, &mcp.StdioTransport{})
	if ctx.Err() != nil {
		return nil // interrupted: a normal way to stop a server
	}
	return err
}

// startAttemptProxy connects to the attempt's endpoint and returns the
// local server mirroring its tools: listed and called there, kept in step
// when the host's list changes, progress reports passed back to the
// client.
func startAttemptProxy(ctx context.Context, a attemptEnv) (*attemptProxy, error) {
	p := &attemptProxy{served: map[string]string{}}
	p.local = mcp.NewServer(&mcp.Implementation{Name: "plugboard", Version: version},
		&mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}}})
	p.local.AddReceivingMiddleware(p.forwardUnlisted)
	remote, err := a.connect(ctx, &mcp.ClientOptions{
		ToolListChangedHandler:      func(ctx context.Context, _ *mcp.ToolListChangedRequest) { p.mirror(ctx) },
		ProgressNotificationHandler: p.progress,
	})
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.remote = remote
	p.mu.Unlock()
	if err := p.mirror(ctx); err != nil {
		remote.Close()
		return nil, fmt.Errorf("inside %s: list the host's tools: %w", a.name(), err)
	}
	return p, nil
}

// attemptProxy serves the endpoint's tools on a local MCP server.
type attemptProxy struct {
	local *mcp.Server

	mu     sync.Mutex // serialises mirror
	remote *mcp.ClientSession
	// served is each mirrored tool's definition as JSON, to tell changes.
	served map[string]string

	// calls maps the progress token sent to the endpoint with a call to
	// the local client's session and token; seq numbers them.
	calls sync.Map // string → progressTarget
	seq   atomic.Uint64
}

type progressTarget struct {
	session *mcp.ServerSession
	token   any
}

// mirror makes the local tools the endpoint's: those gone are removed,
// those new or changed (re)added. The client then hears list_changed.
func (p *attemptProxy) mirror(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.remote == nil {
		return nil // connecting: the first mirror follows
	}
	want := map[string]*mcp.Tool{}
	for tool, err := range p.remote.Tools(ctx, nil) {
		if err != nil {
			return err
		}
		want[tool.Name] = tool
	}
	var gone []string
	for name := range p.served {
		if want[name] == nil {
			gone = append(gone, name)
			delete(p.served, name)
		}
	}
	if len(gone) > 0 {
		p.local.RemoveTools(gone...)
	}
	for name, tool := range want {
		def, _ := json.Marshal(tool)
		if p.served[name] == string(def) || !objectSchema(tool.InputSchema) {
			continue
		}
		p.local.AddTool(tool, p.call(name))
		p.served[name] = string(def)
	}
	return nil
}

// forwardUnlisted is a receiving middleware sending calls of tools the
// endpoint does not list to it all the same: the host keeps every tool it
// hides from a caller, and answers a call of one with the policy's
// permission_denied (recorded in the decision log), or tool_not_found.
func (p *attemptProxy) forwardUnlisted(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		call, ok := req.(*mcp.CallToolRequest)
		if method != "tools/call" || !ok || call.Params == nil {
			return next(ctx, method, req)
		}
		p.mu.Lock()
		_, listed := p.served[call.Params.Name]
		p.mu.Unlock()
		if listed {
			return next(ctx, method, req)
		}
		return p.call(call.Params.Name)(ctx, call)
	}
}

// objectSchema reports whether an input schema is a JSON object of type
// "object", as the go-sdk requires of a served tool (it panics otherwise).
func objectSchema(schema any) bool {
	b, err := json.Marshal(schema)
	if err != nil {
		return false
	}
	var s struct {
		Type any `json:"type"`
	}
	return json.Unmarshal(b, &s) == nil && s.Type == "object"
}

// call forwards one tools/call to the endpoint. A failure to reach it is
// an unavailable envelope, as a tool's failure would be.
func (p *attemptProxy) call(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		params := &mcp.CallToolParams{Name: name, Arguments: req.Params.Arguments}
		if token := req.Params.GetProgressToken(); token != nil {
			// A token of the proxy's own: the client's may be a number,
			// which would come back from JSON as another type.
			id := "proxy-" + strconv.FormatUint(p.seq.Add(1), 10)
			p.calls.Store(id, progressTarget{req.Session, token})
			defer p.calls.Delete(id)
			params.SetProgressToken(id)
		}
		p.mu.Lock()
		remote := p.remote
		p.mu.Unlock()
		res, err := remote.CallTool(ctx, params)
		if err == nil {
			return res, nil
		}
		if res, err := unknownTool(name, err); err == nil {
			return res, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return envelopeResult(abi.NewEnvelope(abi.CodeUnavailable, "the board's endpoint did not answer: "+err.Error(),
			"the host may have stopped or this attempt's access ended; retry once, then stop")), nil
	}
}

// progress passes a progress report from the endpoint to the client whose
// call it belongs to.
func (p *attemptProxy) progress(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
	id, _ := req.Params.ProgressToken.(string)
	v, ok := p.calls.Load(id)
	if !ok {
		return
	}
	to := v.(progressTarget)
	// Progress is advisory: a client gone away must not fail the call.
	_ = to.session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: to.token,
		Progress: req.Params.Progress, Total: req.Params.Total, Message: req.Params.Message})
}
