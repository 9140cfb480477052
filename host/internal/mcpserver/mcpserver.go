// Package mcpserver exposes the dispatcher over MCP with the official go-sdk:
// it lists the registry's tools, resources, resource templates and prompts,
// hands each tools/call, resources/read, prompts/get and completion/complete
// to the dispatcher, and maps its answers onto MCP results (a tool's
// structuredContent plus its content items; isError with the envelope as
// JSON text for failures; JSON-RPC errors carrying the envelope for the other methods). It
// owns transport concerns only — capabilities, progress tokens, log
// notifications, sampling and elicitation requests to the client,
// cancellation, and keeping the served lists equal to the registry's as
// plugins come and go (the go-sdk then sends list_changed), who the caller of
// a request is (Options.Caller, or the bearer token's identity) and showing
// each caller in tools/list only what the dispatcher's policy lets it call —
// and never validates, retries or interprets a plugin's answer.
package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"reflect"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/dispatch"
	"github.com/plugboard/plugboard/host/internal/registry"
	"github.com/plugboard/plugboard/host/internal/tracing"
)

// Options configures New.
type Options struct {
	Name, Version string
	Logger        *slog.Logger
	// Caller is the identity of a session the transport did not
	// authenticate (stdio; HTTP without a bearer token); nil leaves such
	// calls without one.
	Caller *abi.Caller
	// Callers maps an authenticated identity (the go-sdk's
	// auth.TokenInfo.UserID, from the Authenticator) to its caller; nil, or
	// a nil answer, gives a caller with that ID and no role.
	Callers func(id string) *abi.Caller
	// Auditor records the REST calls refused before the dispatcher saw
	// them (an agentId that is not the caller's); nil records none.
	Auditor dispatch.Auditor
	// StateKey seals the requestState of input-required results (MCP
	// 2026-07-28): hosts that share it accept each other's, so a client
	// behind a round-robin balancer may answer on any of them. nil takes a
	// random key of this process.
	StateKey []byte
	// Tracer makes each MCP request a span (tracing.go); nil, or one that
	// is off, makes none.
	Tracer *tracing.Tracer
}

// ProtocolVersions are the MCP versions the server negotiates, newest
// first: every version the go-sdk speaks. From 2026-07-28 on a server may
// not send requests to the client during a call, so a plugin's sample,
// elicit and roots reach a client at that revision as input-required
// results (rounds.go); older clients get them as requests, as before.
var ProtocolVersions = mcp.SupportedProtocolVersions()

// ModernRevision is the first MCP revision without sessions or
// server-to-client requests during a call.
const ModernRevision = "2026-07-28"

// IsModernRevision reports whether v, a negotiated or requested protocol
// version, is ModernRevision or later. Versions are dates, so they order
// as strings; an empty one is older.
func IsModernRevision(v string) bool { return v >= ModernRevision }

// server keeps the go-sdk server's lists equal to the registry's.
type server struct {
	// sealer seals the requestStates of input-required results.
	sealer *sealer
	reg    *registry.Registry
	d      *dispatch.Dispatcher
	log    *slog.Logger
	srv    *mcp.Server
	opts   Options

	mu        sync.Mutex // serialises sync
	tools     map[string]*abi.Tool
	resources map[string]*abi.Resource
	templates map[string]*abi.ResourceTemplate
	prompts   map[string]*abi.Prompt
}

// New returns an MCP server serving everything reg serves through d. It
// follows the registry: after a reload (registry.Watch) it adds and removes
// tools, resources, resource templates and prompts, and the go-sdk notifies
// connected clients with list_changed.
func New(reg *registry.Registry, d *dispatch.Dispatcher, opts Options) *mcp.Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &server{sealer: newSealer(opts.StateKey), reg: reg, d: d, log: opts.Logger, opts: opts,
		tools: map[string]*abi.Tool{}, resources: map[string]*abi.Resource{},
		templates: map[string]*abi.ResourceTemplate{}, prompts: map[string]*abi.Prompt{}}
	s.srv = mcp.NewServer(&mcp.Implementation{Name: opts.Name, Version: opts.Version}, &mcp.ServerOptions{
		Logger: slog.New(clientFaults{opts.Logger.Handler()}),
		// Every capability is declared even while nothing of its kind is
		// served: plugins may bring some while serving.
		Capabilities: &mcp.ServerCapabilities{
			Tools:       &mcp.ToolCapabilities{ListChanged: true},
			Resources:   &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
			Prompts:     &mcp.PromptCapabilities{ListChanged: true},
			Completions: &mcp.CompletionCapabilities{},
			//lint:ignore SA1019 logging is deprecated only from MCP 2026-07-28 on; this server speaks up to 2025-11-25.
			Logging: &mcp.LoggingCapabilities{},
		},
		CompletionHandler:         s.complete,
		SubscribeHandler:          s.subscribe,
		UnsubscribeHandler:        func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
		SupportedProtocolVersions: ProtocolVersions,
		SetCacheable:              cacheHints,
	})
	s.srv.AddReceivingMiddleware(s.filterTools, s.unknownTools)
	// Added last, so outermost: the request's span covers all of it.
	if opts.Tracer.On() {
		s.srv.AddReceivingMiddleware(s.traced)
	}
	s.sync()
	reg.OnChange(s.sync)
	return s.srv
}

// ListTTL is how long a client may keep a list (MCP 2026-07-28 caching
// hints): the plugin folders are polled every 2 s by default, so a list
// kept no longer misses no change the server itself has seen yet.
const ListTTL = 2 * time.Second

// cacheHints sets the caching hints of lists and reads. tools/list is
// private: each caller sees only the tools its role may call. A resource
// read is the plugin's answer of the moment, private and never fresh.
func cacheHints(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
	switch req.(type) {
	case *mcp.ListToolsRequest:
		c.TTLMs, c.CacheScope = int(ListTTL.Milliseconds()), "private"
	case *mcp.ReadResourceRequest:
		c.TTLMs, c.CacheScope = 0, "private"
	default:
		c.TTLMs, c.CacheScope = int(ListTTL.Milliseconds()), "public"
	}
}

// clientFaults lowers to debug what the go-sdk logs as an error but a
// client caused: one calling a method its revision removed would fill the
// operator's log at error level.
type clientFaults struct{ slog.Handler }

func (h clientFaults) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelError && r.Message == "method removed in the new protocol" {
		if !h.Enabled(ctx, slog.LevelDebug) {
			return nil
		}
		r.Level = slog.LevelDebug
	}
	return h.Handler.Handle(ctx, r)
}

func (h clientFaults) WithAttrs(attrs []slog.Attr) slog.Handler {
	return clientFaults{h.Handler.WithAttrs(attrs)}
}

func (h clientFaults) WithGroup(name string) slog.Handler {
	return clientFaults{h.Handler.WithGroup(name)}
}

// CallerOf returns the identity behind a request: the caller of its bearer
// token's identity when the transport authenticated it, else opts.Caller.
func CallerOf(extra *mcp.RequestExtra, opts Options) *abi.Caller {
	if extra != nil && extra.TokenInfo != nil && extra.TokenInfo.UserID != "" {
		id := extra.TokenInfo.UserID
		if opts.Callers != nil {
			if c := opts.Callers(id); c != nil {
				return c
			}
		}
		// An OAuth token whose role claim, not an agent of the agents
		// file, gave the identity its type (RequireBearer).
		role, _ := extra.TokenInfo.Extra[RoleExtra].(string)
		return &abi.Caller{ID: id, Role: role}
	}
	return opts.Caller
}

// filterTools is a receiving middleware that shows each caller, in
// tools/list, only the tools the dispatcher's policy lets it call. Every
// tool stays registered, so a hidden one called anyway gets the policy's
// permission_denied rather than an unknown-tool error.
func (s *server) filterTools(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		list, ok := res.(*mcp.ListToolsResult)
		if method != "tools/list" || err != nil || !ok {
			return res, err
		}
		c := CallerOf(req.GetExtra(), s.opts)
		kept := make([]*mcp.Tool, 0, len(list.Tools))
		for _, t := range list.Tools {
			if tool, served := s.reg.Tool(t.Name); served && s.d.Permits(c, tool) {
				kept = append(kept, t)
			}
		}
		filtered := *list
		filtered.Tools = kept
		return &filtered, nil
	}
}

// unknownTools is a receiving middleware that answers a tools/call the
// go-sdk has no handler for — a name never served, or a tool withdrawn
// since the client listed it (its plugin deleted, a reload) — the way
// plugboard answers every failed call: a tool result with isError and
// the dispatcher's envelope (tool_not_found, with its hint), not the
// go-sdk's JSON-RPC invalid-params error, which agents show as a protocol
// failure rather than something to act on. The dispatcher resolves the
// name itself, so an alias a tool declares is called as over REST.
func (s *server) unknownTools(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		call, ok := req.(*mcp.CallToolRequest)
		if method != "tools/call" || !ok || call.Params == nil || !s.unregistered(err, call.Params.Name) {
			return res, err
		}
		res, err = s.callTool(call.Params.Name)(ctx, call)
		if err != nil || !IsModernRevision(call.ProtocolVersion()) {
			return res, err
		}
		return completeResult(res.(*mcp.CallToolResult)), nil
	}
}

// completeResult marks a result made outside the go-sdk's tools/call
// handler (which marks the others) complete, as MCP 2026-07-28 requires
// of every result: the go-sdk sets resultType only while decoding.
func completeResult(res *mcp.CallToolResult) *mcp.CallToolResult {
	b, err := json.Marshal(res)
	if err != nil {
		return res
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(b, &fields) != nil {
		return res
	}
	fields["resultType"] = json.RawMessage(`"complete"`)
	b, _ = json.Marshal(fields)
	var out mcp.CallToolResult
	if json.Unmarshal(b, &out) != nil {
		return res
	}
	return &out
}

// unregistered reports whether err is the go-sdk's answer to a call of a
// tool it has no handler for (an invalid-params error) and name is indeed
// not among the tools served.
func (s *server) unregistered(err error, name string) bool {
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, served := s.tools[name]
	return !served
}

// sync makes the served lists equal to the registry's. Entries whose
// definition is unchanged in content are left alone, even when a reload or
// a relisting made them anew: every AddTool and RemoveTools tells clients
// the list changed, and a plugin relisted for one changed tool must not
// re-announce all of them (handlers find their entry by name at call time).
func (s *server) sync() {
	s.mu.Lock()
	defer s.mu.Unlock()
	syncServed(s.tools, s.reg.Tools(),
		func(t registry.Tool) (string, *abi.Tool) { return t.Def.Name, t.Def },
		s.srv.RemoveTools,
		func(t registry.Tool) bool {
			s.srv.AddTool(toolOf(t.Def), s.callTool(t.Def.Name))
			return true
		})
	syncServed(s.resources, s.reg.Resources(),
		func(r registry.Resource) (string, *abi.Resource) { return r.Def.URI, r.Def },
		s.srv.RemoveResources,
		func(r registry.Resource) bool {
			s.srv.AddResource(&mcp.Resource{URI: r.Def.URI, Name: r.Def.Name, Title: r.Def.Title,
				Description: r.Def.Description, MIMEType: r.Def.MIMEType, Size: derefSize(r.Def.Size)}, s.readResource)
			return true
		})
	syncServed(s.templates, s.reg.Templates(),
		func(t registry.Template) (string, *abi.ResourceTemplate) { return t.Def.URITemplate, t.Def },
		s.srv.RemoveResourceTemplates,
		func(t registry.Template) bool {
			if _, err := uritemplate.New(t.Def.URITemplate); err != nil {
				s.log.Error("resource template not served: invalid URI template", "plugin", t.Plugin.Name(), "uriTemplate", t.Def.URITemplate, "err", err)
				return false
			}
			s.srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: t.Def.URITemplate, Name: t.Def.Name, Title: t.Def.Title,
				Description: t.Def.Description, MIMEType: t.Def.MIMEType}, s.readTemplate(t.Def.URITemplate))
			return true
		})
	syncServed(s.prompts, s.reg.Prompts(),
		func(p registry.Prompt) (string, *abi.Prompt) { return p.Def.Name, p.Def },
		s.srv.RemovePrompts,
		func(p registry.Prompt) bool {
			s.srv.AddPrompt(promptOf(p.Def), s.getPrompt)
			return true
		})
}

// syncServed makes served (key → definition) equal to want: the keys no
// longer wanted are removed in one call, and entries whose definition is
// new or changed are added (add returns false to leave one out). Keys and
// definitions come from entry.
func syncServed[D comparable, E any](served map[string]D, want []E, entry func(E) (string, D),
	remove func(...string), add func(E) bool) {
	wanted := make(map[string]bool, len(want))
	for _, e := range want {
		k, _ := entry(e)
		wanted[k] = true
	}
	var gone []string
	for k := range served {
		if !wanted[k] {
			gone = append(gone, k)
			delete(served, k)
		}
	}
	if len(gone) > 0 {
		remove(gone...)
	}
	for _, e := range want {
		k, d := entry(e)
		if old, ok := served[k]; ok && (old == d || reflect.DeepEqual(old, d)) {
			served[k] = d
			continue
		}
		if add(e) {
			served[k] = d
		}
	}
}

func derefSize(n *int64) int64 {
	if n == nil {
		return 0
	}
	return *n
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

func promptOf(def *abi.Prompt) *mcp.Prompt {
	p := &mcp.Prompt{Name: def.Name, Title: def.Title, Description: def.Description}
	for _, a := range def.Arguments {
		p.Arguments = append(p.Arguments, &mcp.PromptArgument{Name: a.Name, Title: a.Title, Description: a.Description, Required: a.Required})
	}
	return p
}

func (s *server) callTool(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		dreq := dispatch.Request{Tool: name, Arguments: req.Params.Arguments, Client: s.newClient(req.Session),
			Caller: CallerOf(req.Extra, s.opts)}
		dreq.Progress = progress(ctx, req.Session, req.Params.GetProgressToken())
		if !IsModernRevision(req.ProtocolVersion()) {
			return ToCallToolResult(s.d.Call(ctx, dreq)), nil
		}
		rd, rctx, err := s.startRound(ctx, dreq.Client, roundRequest{kind: "tools/call", name: name, args: req.Params.Arguments,
			caller: dreq.Caller, caps: req.ClientCapabilities(), responses: req.Params.InputResponses, state: req.Params.RequestState})
		if err != nil {
			return nil, err
		}
		dreq.Client, dreq.ReplayKey = rd, rd.st.Call
		res := s.d.Call(rctx, dreq)
		reqs, state, env := rd.finish(s)
		switch {
		case env != nil:
			return ToCallToolResult(dispatch.Failed(env)), nil
		case reqs != nil:
			return &mcp.CallToolResult{InputRequests: reqs, RequestState: state}, nil
		}
		if err := rd.missingCapability(res); err != nil {
			return nil, err
		}
		return ToCallToolResult(res), nil
	}
}

// progress turns plugin progress reports into notifications/progress for
// token, or is nil when the client asked for none.
func progress(ctx context.Context, session *mcp.ServerSession, token any) func(abi.ProgressRequest) {
	if token == nil {
		return nil
	}
	return func(p abi.ProgressRequest) {
		// Progress is advisory: a client gone away must not fail the call.
		_ = session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
			ProgressToken: token,
			Progress:      p.Progress,
			Total:         p.Total,
			Message:       p.Message,
		})
	}
}

func (s *server) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	r, ok := s.reg.Resource(uri)
	if !ok {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	return s.read(ctx, req, r.Plugin)
}

func (s *server) readTemplate(uriTemplate string) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		t, ok := s.reg.Template(uriTemplate)
		if !ok {
			return nil, mcp.ResourceNotFoundError(req.Params.URI)
		}
		return s.read(ctx, req, t.Plugin)
	}
}

func (s *server) read(ctx context.Context, req *mcp.ReadResourceRequest, p *registry.Plugin) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	o := s.methodOptions(ctx, req.Session, req.Params.GetProgressToken())
	var rd *round
	if IsModernRevision(req.ProtocolVersion()) {
		var err error
		rd, ctx, err = s.startRound(ctx, o.Client, roundRequest{kind: "resources/read", name: uri,
			caller: CallerOf(req.Extra, s.opts), caps: req.ClientCapabilities(), responses: req.Params.InputResponses, state: req.Params.RequestState})
		if err != nil {
			return nil, err
		}
		o.Client = rd
	}
	res, env := s.d.ReadResource(ctx, p, uri, o)
	if rd != nil {
		if reqs, state, err := s.endRound(rd, env); err != nil {
			return nil, err
		} else if reqs != nil {
			return &mcp.ReadResourceResult{InputRequests: reqs, RequestState: state}, nil
		}
	}
	if env != nil {
		if env.Code == abi.CodeNotFound {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		return nil, rpcError(env)
	}
	out := &mcp.ReadResourceResult{Contents: make([]*mcp.ResourceContents, 0, len(res.Contents))}
	for i := range res.Contents {
		out.Contents = append(out.Contents, resourceContentsOf(&res.Contents[i]))
	}
	return out, nil
}

func (s *server) getPrompt(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	p, ok := s.reg.Prompt(req.Params.Name)
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown prompt " + req.Params.Name}
	}
	o := s.methodOptions(ctx, req.Session, req.Params.GetProgressToken())
	var rd *round
	if IsModernRevision(req.ProtocolVersion()) {
		args, _ := json.Marshal(req.Params.Arguments)
		var err error
		rd, ctx, err = s.startRound(ctx, o.Client, roundRequest{kind: "prompts/get", name: req.Params.Name, args: args,
			caller: CallerOf(req.Extra, s.opts), caps: req.ClientCapabilities(), responses: req.Params.InputResponses, state: req.Params.RequestState})
		if err != nil {
			return nil, err
		}
		o.Client = rd
	}
	res, env := s.d.GetPrompt(ctx, p, req.Params.Arguments, o)
	if rd != nil {
		if reqs, state, err := s.endRound(rd, env); err != nil {
			return nil, err
		} else if reqs != nil {
			return &mcp.GetPromptResult{InputRequests: reqs, RequestState: state}, nil
		}
	}
	if env != nil {
		return nil, rpcError(env)
	}
	out := &mcp.GetPromptResult{Description: res.Description, Messages: make([]*mcp.PromptMessage, 0, len(res.Messages))}
	for i := range res.Messages {
		out.Messages = append(out.Messages, &mcp.PromptMessage{Role: mcp.Role(res.Messages[i].Role), Content: contentOf(&res.Messages[i].Content)})
	}
	return out, nil
}

// complete routes completion/complete to the plugin serving the prompt or
// resource template; one that declares no completion gets no suggestions.
func (s *server) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	ref := req.Params.Ref
	var (
		plugin   *registry.Plugin
		declared bool
	)
	switch ref.Type {
	case abi.RefPrompt:
		p, ok := s.reg.Prompt(ref.Name)
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown prompt " + ref.Name}
		}
		plugin, declared = p.Plugin, p.Def.Completion
	case abi.RefResource:
		if t, ok := s.reg.Template(ref.URI); ok {
			plugin, declared = t.Plugin, t.Def.Completion
		}
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown completion reference type " + ref.Type}
	}
	empty := &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}
	if !declared {
		return empty, nil
	}
	params := abi.CallParams{
		Ref:      &abi.CompletionRef{Type: ref.Type, Name: ref.Name, URI: ref.URI},
		Argument: &abi.CompletionArg{Name: req.Params.Argument.Name, Value: req.Params.Argument.Value},
	}
	if c := req.Params.Context; c != nil {
		params.CompletionContext = &abi.CompletionContext{Arguments: c.Arguments}
	}
	res, env := s.d.Complete(ctx, plugin, params, s.methodOptions(ctx, req.Session, nil))
	if env != nil {
		return nil, rpcError(env)
	}
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{
		Values: res.Completion.Values, Total: res.Completion.Total, HasMore: res.Completion.HasMore}}, nil
}

// subscribe accepts subscriptions to served resources and to URIs matching
// a served template. Plugins cannot yet announce updates, so subscribers
// receive none; the subscription itself is honoured for clients that need it.
func (s *server) subscribe(_ context.Context, req *mcp.SubscribeRequest) error {
	uri := req.Params.URI
	if _, ok := s.reg.Resource(uri); ok {
		return nil
	}
	for _, t := range s.reg.Templates() {
		if tmpl, err := uritemplate.New(t.Def.URITemplate); err == nil && tmpl.Regexp().MatchString(uri) {
			return nil
		}
	}
	return mcp.ResourceNotFoundError(uri)
}

func (s *server) methodOptions(ctx context.Context, session *mcp.ServerSession, token any) dispatch.MethodOptions {
	return dispatch.MethodOptions{Client: s.newClient(session), Progress: progress(ctx, session, token)}
}

// rpcError is the JSON-RPC error of a failed method other than tools/call:
// invalid params for argument failures, internal error otherwise, with the
// envelope as data.
func rpcError(env *abi.Envelope) error {
	code := int64(jsonrpc.CodeInternalError)
	switch env.Code {
	case abi.CodeInvalidArgument, abi.CodeMissingRequired, abi.CodeNotFound:
		code = jsonrpc.CodeInvalidParams
	}
	data, _ := json.Marshal(env)
	return &jsonrpc.Error{Code: code, Message: env.Code + ": " + env.Message, Data: data}
}

// ToCallToolResult maps a dispatcher result onto MCP's result type. An
// error result carries its envelope as the compact JSON text of its first
// content item (a foreign plugin's own items, kept, follow it) and never as
// structuredContent: a tool's outputSchema describes its successes, and
// clients that check structuredContent against it also on isError (the
// TypeScript SDK's Client.callTool, MCP Inspector) would throw the envelope
// away (docs/DECISIONS.md).
func ToCallToolResult(r *dispatch.Result) *mcp.CallToolResult {
	out := &mcp.CallToolResult{IsError: r.IsError(), Content: make([]mcp.Content, 0, len(r.Content))}
	for i := range r.Content {
		out.Content = append(out.Content, contentOf(&r.Content[i]))
	}
	if len(r.Structured) > 0 && !r.IsError() {
		out.StructuredContent = json.RawMessage(r.Structured)
	}
	return out
}

// contentOf maps one content item (checked by the dispatcher) onto the
// go-sdk's type.
func contentOf(c *abi.Content) mcp.Content {
	a, meta := annotationsOf(c.Annotations), mcp.Meta(c.Meta)
	switch c.Type {
	case abi.ContentImage:
		return &mcp.ImageContent{Data: c.Data, MIMEType: c.MIMEType, Annotations: a, Meta: meta}
	case abi.ContentAudio:
		return &mcp.AudioContent{Data: c.Data, MIMEType: c.MIMEType, Annotations: a, Meta: meta}
	case abi.ContentResource:
		return &mcp.EmbeddedResource{Resource: resourceContentsOf(c.Resource), Annotations: a, Meta: meta}
	case abi.ContentResourceLink:
		return &mcp.ResourceLink{URI: c.URI, Name: c.Name, Title: c.Title, Description: c.Description, MIMEType: c.MIMEType, Size: c.Size,
			Annotations: a, Meta: meta}
	}
	return &mcp.TextContent{Text: c.Text, Annotations: a, Meta: meta}
}

func annotationsOf(a *abi.ContentAnnotations) *mcp.Annotations {
	if a == nil {
		return nil
	}
	out := &mcp.Annotations{LastModified: a.LastModified}
	for _, r := range a.Audience {
		out.Audience = append(out.Audience, mcp.Role(r))
	}
	if a.Priority != nil {
		out.Priority = *a.Priority
	}
	return out
}

func resourceContentsOf(r *abi.ResourceContents) *mcp.ResourceContents {
	return &mcp.ResourceContents{URI: r.URI, MIMEType: r.MIMEType, Text: r.Text, Blob: r.Blob}
}
