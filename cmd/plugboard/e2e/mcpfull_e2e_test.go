package e2e

//lint:file-ignore SA1019 sampling and logging are deprecated only from MCP 2026-07-28 on; plugboard speaks up to 2025-11-25.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// These tests drive the real binary over stdio with the go-sdk client
// against conformance/mcpfixture, the plugin the official conformance suite
// runs against: everything a plugin can serve besides tools (resources,
// templates, prompts, completions), the content types of ABI version 2,
// log notifications, progress, sampling and elicitation during a call, and
// list_changed when plugins come and go while serving.

// fullClient records what the server sends the client.
type fullClient struct {
	mu       sync.Mutex
	logs     []*mcp.LoggingMessageParams
	progress []*mcp.ProgressNotificationParams
	sampled  []*mcp.CreateMessageParams
	elicited []*mcp.ElicitParams
	changed  map[string]int
	// changes is signalled on every list_changed notification.
	changes chan string
}

func newFullClient() *fullClient {
	return &fullClient{changed: map[string]int{}, changes: make(chan string, 64)}
}

func (fc *fullClient) options(sampling, elicitation bool) *mcp.ClientOptions {
	o := &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			fc.mu.Lock()
			fc.logs = append(fc.logs, r.Params)
			fc.mu.Unlock()
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			fc.mu.Lock()
			fc.progress = append(fc.progress, r.Params)
			fc.mu.Unlock()
		},
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { fc.change("tools") },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { fc.change("prompts") },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { fc.change("resources") },
	}
	if sampling {
		o.CreateMessageHandler = func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			fc.mu.Lock()
			fc.sampled = append(fc.sampled, r.Params)
			fc.mu.Unlock()
			return &mcp.CreateMessageResult{Role: "assistant", Model: "test-model", StopReason: "endTurn",
				Content: &mcp.TextContent{Text: "four"}}, nil
		}
	}
	if elicitation {
		o.ElicitationHandler = func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			fc.mu.Lock()
			fc.elicited = append(fc.elicited, r.Params)
			fc.mu.Unlock()
			if strings.Contains(r.Params.Message, "decline") {
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": "ada", "email": "ada@example.com"}}, nil
		}
	}
	return o
}

func (fc *fullClient) change(list string) {
	fc.mu.Lock()
	fc.changed[list]++
	fc.mu.Unlock()
	fc.changes <- list
}

// startFull runs `plugboard serve` on dir and connects a client with opts.
func startFull(t *testing.T, dir string, opts *mcp.ClientOptions, extra ...string) *mcp.ClientSession {
	t.Helper()
	return startFullAt(t, legacyRevision, dir, opts, extra...)
}

// startFullAt is startFull at MCP revision version.
func startFullAt(t *testing.T, version, dir string, opts *mcp.ClientOptions, extra ...string) *mcp.ClientSession {
	t.Helper()
	s := dialServeAt(t, version, nil, opts, append([]string{"--plugins", dir, "--data", t.TempDir()}, extra...)...).session
	if got := s.InitializeResult().ProtocolVersion; got != version {
		t.Fatalf("negotiated MCP %s, asked for %s", got, version)
	}
	return s
}

// The revisions the go-sdk client is checked at: the last one with
// sessions and server-to-client requests during a call, and the first
// without.
const (
	legacyRevision = "2025-11-25"
	modernRevision = "2026-07-28"
)

var revisions = []string{legacyRevision, modernRevision}

func fixtureDir(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	dir, _ := buildtest.Plugins(t, "conformance/mcpfixture")
	return dir
}

func callTool(t *testing.T, s *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

func TestMCPFullResourcesPromptsCompletion(t *testing.T) {
	dir := fixtureDir(t)
	for _, version := range revisions {
		t.Run(version, func(t *testing.T) { testResourcesPromptsCompletion(t, version, dir) })
	}
}

func testResourcesPromptsCompletion(t *testing.T, version, dir string) {
	s := startFullAt(t, version, dir, newFullClient().options(true, true))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	init := s.InitializeResult()
	if version == modernRevision {
		// Caching hints: a tools/list is the caller's own, the others anyone's.
		lt, err := s.ListTools(ctx, nil)
		if err != nil || lt.TTLMs != 2000 || lt.CacheScope != "private" {
			t.Errorf("tools/list caching hints: ttlMs %d, cacheScope %q (%v); want 2000, private", lt.TTLMs, lt.CacheScope, err)
		}
		lp, err := s.ListPrompts(ctx, nil)
		if err != nil || lp.TTLMs != 2000 || lp.CacheScope != "public" {
			t.Errorf("prompts/list caching hints: ttlMs %d, cacheScope %q (%v); want 2000, public", lp.TTLMs, lp.CacheScope, err)
		}
	}
	caps := init.Capabilities
	if caps.Tools == nil || !caps.Tools.ListChanged || caps.Resources == nil || !caps.Resources.ListChanged || !caps.Resources.Subscribe ||
		caps.Prompts == nil || !caps.Prompts.ListChanged || caps.Completions == nil || caps.Logging == nil {
		t.Errorf("capabilities %+v: want tools, resources (subscribe), prompts with listChanged, completions and logging", caps)
	}

	lr, err := s.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range lr.Resources {
		uris = append(uris, r.URI)
	}
	slices.Sort(uris) // the go-sdk lists by name
	if want := []string{"test://static-binary", "test://static-text", "test://watched-resource"}; !slices.Equal(uris, want) {
		t.Errorf("resources %v, want %v", uris, want)
	}
	text, err := s.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://static-text"})
	if err != nil {
		t.Fatal(err)
	}
	if c := text.Contents[0]; c.Text != "This is the content of the static text resource." || c.MIMEType != "text/plain" || c.URI != "test://static-text" {
		t.Errorf("static-text read %+v", c)
	}
	bin, err := s.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://static-binary"})
	if err != nil {
		t.Fatal(err)
	}
	if c := bin.Contents[0]; !bytes.HasPrefix(c.Blob, []byte("\x89PNG")) || c.MIMEType != "image/png" {
		t.Errorf("static-binary read: mime %q, blob %q", c.MIMEType, c.Blob)
	}
	lt, err := s.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(lt.ResourceTemplates) != 1 || lt.ResourceTemplates[0].URITemplate != "test://template/{id}/data" {
		t.Errorf("templates %+v", lt.ResourceTemplates)
	}
	tr, err := s.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://template/42/data"})
	if err != nil {
		t.Fatal(err)
	}
	var data struct {
		ID   string `json:"id"`
		Data string `json:"data"`
	}
	if err := json.Unmarshal([]byte(tr.Contents[0].Text), &data); err != nil || data.ID != "42" || data.Data != "Data for ID: 42" {
		t.Errorf("template read %q (%v)", tr.Contents[0].Text, err)
	}
	if _, err := s.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://nowhere"}); !isRPCCode(err, mcp.CodeResourceNotFound) {
		t.Errorf("reading an unknown resource: %v, want resource not found", err)
	}
	if err := s.Subscribe(ctx, &mcp.SubscribeParams{URI: "test://watched-resource"}); err != nil {
		t.Errorf("subscribe: %v", err)
	}
	if err := s.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "test://watched-resource"}); err != nil {
		t.Errorf("unsubscribe: %v", err)
	}
	// From 2026-07-28 on a client subscribes on its subscriptions/listen
	// stream, which names no resource the server could refuse.
	if err := s.Subscribe(ctx, &mcp.SubscribeParams{URI: "test://nowhere"}); err == nil && version == legacyRevision {
		t.Error("subscribing to an unknown resource succeeded")
	}

	lp, err := s.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range lp.Prompts {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	if want := []string{"test_input_required_result_prompt", "test_prompt_with_arguments", "test_prompt_with_embedded_resource", "test_prompt_with_image", "test_simple_prompt"}; !slices.Equal(names, want) {
		t.Errorf("prompts %v, want %v", names, want)
	}
	gp, err := s.GetPrompt(ctx, &mcp.GetPromptParams{Name: "test_prompt_with_arguments", Arguments: map[string]string{"arg1": "hello", "arg2": "world"}})
	if err != nil {
		t.Fatal(err)
	}
	if tc, ok := gp.Messages[0].Content.(*mcp.TextContent); !ok || tc.Text != "Prompt with arguments: arg1='hello', arg2='world'" || gp.Messages[0].Role != "user" {
		t.Errorf("prompt message %+v", gp.Messages[0])
	}
	_, err = s.GetPrompt(ctx, &mcp.GetPromptParams{Name: "test_prompt_with_arguments", Arguments: map[string]string{"arg1": "hello"}})
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams || !strings.Contains(string(rpc.Data), abi.CodeMissingRequired) {
		t.Errorf("prompt without a required argument: %v, want invalid params carrying missing_required", err)
	}
	img, err := s.GetPrompt(ctx, &mcp.GetPromptParams{Name: "test_prompt_with_image"})
	if err != nil {
		t.Fatal(err)
	}
	if ic, ok := img.Messages[0].Content.(*mcp.ImageContent); !ok || ic.MIMEType != "image/png" || len(ic.Data) == 0 {
		t.Errorf("image prompt message %+v", img.Messages[0].Content)
	}
	emb, err := s.GetPrompt(ctx, &mcp.GetPromptParams{Name: "test_prompt_with_embedded_resource", Arguments: map[string]string{"resourceUri": "test://x"}})
	if err != nil {
		t.Fatal(err)
	}
	if er, ok := emb.Messages[0].Content.(*mcp.EmbeddedResource); !ok || er.Resource.URI != "test://x" {
		t.Errorf("embedded prompt message %+v", emb.Messages[0].Content)
	}

	comp, err := s.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "test_prompt_with_arguments"},
		Argument: mcp.CompleteParamsArgument{Name: "arg1", Value: "par"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"paris", "park", "party"}; !slices.Equal(comp.Completion.Values, want) {
		t.Errorf("prompt completion %v, want %v", comp.Completion.Values, want)
	}
	comp, err = s.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "test://template/{id}/data"},
		Argument: mcp.CompleteParamsArgument{Name: "id", Value: "12"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"12", "123", "1234"}; !slices.Equal(comp.Completion.Values, want) {
		t.Errorf("template completion %v, want %v", comp.Completion.Values, want)
	}
	comp, err = s.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "test_simple_prompt"},
		Argument: mcp.CompleteParamsArgument{Name: "x", Value: ""}})
	if err != nil || comp.Completion.Values == nil || len(comp.Completion.Values) != 0 {
		t.Errorf("completion of a prompt without a completer: %+v, %v; want no values", comp, err)
	}
}

func isRPCCode(err error, code int64) bool {
	var rpc *jsonrpc.Error
	return errors.As(err, &rpc) && rpc.Code == code
}

func TestMCPFullToolContent(t *testing.T) {
	dir := fixtureDir(t)
	for _, version := range revisions {
		t.Run(version, func(t *testing.T) { testToolContent(t, version, dir) })
	}
}

func testToolContent(t *testing.T, version, dir string) {
	s := startFullAt(t, version, dir, newFullClient().options(false, false))
	res := callTool(t, s, "test_simple_text", map[string]any{})
	if tc, ok := res.Content[0].(*mcp.TextContent); res.IsError || len(res.Content) != 1 || !ok || tc.Text != "This is a simple text response for testing." {
		t.Errorf("simple text: %+v", res.Content)
	}
	res = callTool(t, s, "test_image_content", map[string]any{})
	if ic, ok := res.Content[0].(*mcp.ImageContent); res.IsError || !ok || ic.MIMEType != "image/png" || !bytes.HasPrefix(ic.Data, []byte("\x89PNG")) {
		t.Errorf("image: %+v", res.Content)
	}
	if res.StructuredContent != nil {
		t.Errorf("a content result has structuredContent %v", res.StructuredContent)
	}
	res = callTool(t, s, "test_audio_content", map[string]any{})
	if ac, ok := res.Content[0].(*mcp.AudioContent); res.IsError || !ok || ac.MIMEType != "audio/wav" || !bytes.HasPrefix(ac.Data, []byte("RIFF")) {
		t.Errorf("audio: %+v", res.Content)
	}
	res = callTool(t, s, "test_embedded_resource", map[string]any{})
	if er, ok := res.Content[0].(*mcp.EmbeddedResource); res.IsError || !ok || er.Resource.URI != "test://embedded-resource" || er.Resource.Text == "" {
		t.Errorf("embedded resource: %+v", res.Content)
	}
	res = callTool(t, s, "test_resource_link", map[string]any{})
	if rl, ok := res.Content[0].(*mcp.ResourceLink); res.IsError || !ok || rl.URI != "test://static-text" || rl.Name != "static-text" {
		t.Errorf("resource link: %+v", res.Content)
	}
	res = callTool(t, s, "test_multiple_content_types", map[string]any{})
	var types []string
	for _, c := range res.Content {
		b, _ := json.Marshal(c)
		var v struct{ Type string }
		_ = json.Unmarshal(b, &v)
		types = append(types, v.Type)
	}
	if want := []string{"text", "image", "resource"}; !slices.Equal(types, want) {
		t.Errorf("mixed content types %v, want %v", types, want)
	}
	res = callTool(t, s, "test_error_handling", map[string]any{})
	if env := clitest.EnvelopeOf(t, res); env.Code != abi.CodeToolError || !strings.Contains(env.Message, "intentionally") {
		t.Errorf("error tool: %+v", env)
	}
}

func TestMCPFullLoggingAndProgress(t *testing.T) {
	fc := newFullClient()
	s := startFull(t, fixtureDir(t), fc.options(false, false))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Before the client sets a level, log notifications are not sent.
	callTool(t, s, "test_tool_with_logging", map[string]any{})
	if err := s.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	callTool(t, s, "test_tool_with_logging", map[string]any{})
	waitUntil(t, func() bool { fc.mu.Lock(); defer fc.mu.Unlock(); return len(fc.logs) >= 3 })
	fc.mu.Lock()
	var got []string
	for _, l := range fc.logs {
		got = append(got, string(l.Level)+" "+l.Logger+" "+l.Data.(string))
	}
	fc.mu.Unlock()
	want := []string{"info mcpfixture Tool execution started", "info mcpfixture Tool processing data", "info mcpfixture Tool execution completed"}
	if !slices.Equal(got, want) {
		t.Errorf("log notifications %q, want %q", got, want)
	}
	if err := s.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "warning"}); err != nil {
		t.Fatal(err)
	}
	callTool(t, s, "test_tool_with_logging", map[string]any{})
	time.Sleep(200 * time.Millisecond)
	fc.mu.Lock()
	if len(fc.logs) != 3 {
		t.Errorf("info notifications reached a client at level warning: %d in all", len(fc.logs))
	}
	fc.mu.Unlock()

	params := &mcp.CallToolParams{Name: "test_tool_with_progress", Arguments: map[string]any{}}
	params.SetProgressToken("tok-1")
	if _, err := s.CallTool(ctx, params); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool { fc.mu.Lock(); defer fc.mu.Unlock(); return len(fc.progress) >= 3 })
	fc.mu.Lock()
	defer fc.mu.Unlock()
	for i, p := range fc.progress {
		if p.ProgressToken != "tok-1" || p.Total != 100 || p.Progress != float64(50*i) {
			t.Errorf("progress %d: %+v", i, p)
		}
	}
}

// TestMCPFullSamplingAndElicitation: a plugin's sample and elicit reach
// the client as requests during the call before MCP 2026-07-28, and as
// input-required results from it on (which the go-sdk client answers and
// retries); either way the plugin gets the answer.
func TestMCPFullSamplingAndElicitation(t *testing.T) {
	dir := fixtureDir(t)
	for _, version := range revisions {
		t.Run(version, func(t *testing.T) { testSamplingAndElicitation(t, version, dir) })
	}
}

func testSamplingAndElicitation(t *testing.T, version, dir string) {
	fc := newFullClient()
	s := startFullAt(t, version, dir, fc.options(true, true))
	res := callTool(t, s, "test_sampling", map[string]any{"prompt": "two plus two?"})
	if tc, ok := res.Content[0].(*mcp.TextContent); res.IsError || !ok || tc.Text != "LLM response: four" {
		t.Errorf("sampling result %+v", res.Content)
	}
	fc.mu.Lock()
	if len(fc.sampled) != 1 || fc.sampled[0].MaxTokens != 100 || fc.sampled[0].Messages[0].Content.(*mcp.TextContent).Text != "two plus two?" {
		t.Errorf("sampling requests %+v", fc.sampled)
	}
	fc.mu.Unlock()
	res = callTool(t, s, "test_elicitation", map[string]any{"message": "who are you?"})
	if tc, ok := res.Content[0].(*mcp.TextContent); res.IsError || !ok ||
		tc.Text != `Elicitation completed: action=accept, content={"email":"ada@example.com","username":"ada"}` {
		t.Errorf("elicitation result %+v", res.Content)
	}
	res = callTool(t, s, "test_elicitation", map[string]any{"message": "please decline"})
	if tc, ok := res.Content[0].(*mcp.TextContent); res.IsError || !ok || !strings.Contains(tc.Text, "action=decline") {
		t.Errorf("declined elicitation %+v", res.Content)
	}
	fc.mu.Lock()
	if len(fc.elicited) != 2 || fc.elicited[0].Message != "who are you?" {
		t.Errorf("elicitation requests %+v", fc.elicited)
	}
	fc.mu.Unlock()

	// A client without the capabilities: the plugin gets an unsupported
	// envelope, which it returns; from 2026-07-28 on the revision makes
	// that a missing-capability error (-32021).
	bare := startFullAt(t, version, dir, newFullClient().options(false, false))
	for tool, args := range map[string]any{"test_sampling": map[string]any{"prompt": "x"}, "test_elicitation": map[string]any{"message": "x"}} {
		if version == legacyRevision {
			if env := clitest.EnvelopeOf(t, callTool(t, bare, tool, args)); env.Code != abi.CodeUnsupported {
				t.Errorf("%s without the client capability: %+v, want unsupported", tool, env)
			}
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		res, err := bare.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		cancel()
		var rpc *jsonrpc.Error
		if !errors.As(err, &rpc) || rpc.Code != mcp.CodeMissingRequiredClientCapabilities {
			t.Errorf("%s without the client capability: %+v, %v; want JSON-RPC error %d", tool, res, err, mcp.CodeMissingRequiredClientCapabilities)
		}
	}
}

// TestMCPFullListChanged adds and removes a plugin file while the server
// runs: the client is told (list_changed) and the lists follow.
func TestMCPFullListChanged(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	_, wasm := buildtest.Plugins(t, "plugins/echo", "conformance/mcpfixture")
	dir := t.TempDir()
	copyFile(t, wasm["echo"], filepath.Join(dir, "echo.wasm"))
	fc := newFullClient()
	s := startFull(t, dir, fc.options(false, false), "--watch", "100ms")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	toolNames := func() []string {
		lt, err := s.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range lt.Tools {
			names = append(names, tool.Name)
		}
		return names
	}
	if names := toolNames(); slices.Contains(names, "test_simple_text") || !slices.Contains(names, "echo") {
		t.Fatalf("tools before adding the plugin: %v", names)
	}

	// Written elsewhere and renamed in, as an installer would.
	tmp := filepath.Join(t.TempDir(), "mcpfixture.wasm")
	copyFile(t, wasm["mcpfixture"], tmp)
	if err := os.Rename(tmp, filepath.Join(dir, "mcpfixture.wasm")); err != nil {
		t.Fatal(err)
	}
	waitChanges(t, fc, "tools", "prompts", "resources")
	if names := toolNames(); !slices.Contains(names, "test_simple_text") || !slices.Contains(names, "echo") {
		t.Errorf("tools after adding the plugin: %v", names)
	}
	if res := callTool(t, s, "test_simple_text", map[string]any{}); res.IsError {
		t.Errorf("calling a tool of the added plugin: %+v", res.Content)
	}
	lp, err := s.ListPrompts(ctx, nil)
	if err != nil || len(lp.Prompts) != 5 {
		t.Errorf("prompts after adding the plugin: %+v, %v", lp, err)
	}

	if err := os.Remove(filepath.Join(dir, "mcpfixture.wasm")); err != nil {
		t.Fatal(err)
	}
	waitChanges(t, fc, "tools", "prompts", "resources")
	if names := toolNames(); slices.Contains(names, "test_simple_text") || !slices.Contains(names, "echo") {
		t.Errorf("tools after removing the plugin: %v", names)
	}
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "test_simple_text", Arguments: map[string]any{}})
	if err == nil && !res.IsError {
		t.Error("a tool of the removed plugin still answers")
	}
	lr, err := s.ListResources(ctx, nil)
	if err != nil || len(lr.Resources) != 0 {
		t.Errorf("resources after removing the plugin: %+v, %v", lr, err)
	}
}

// waitChanges waits until a list_changed notification arrived for each list.
func waitChanges(t *testing.T, fc *fullClient, lists ...string) {
	t.Helper()
	want := map[string]bool{}
	for _, l := range lists {
		want[l] = true
	}
	timeout := time.After(30 * time.Second)
	for len(want) > 0 {
		select {
		case l := <-fc.changes:
			delete(want, l)
		case <-timeout:
			t.Fatalf("no list_changed notification for %v", want)
		}
	}
}

func waitUntil(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
