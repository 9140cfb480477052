package clients

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/conformance/scenario"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// firstPartyPlugins are the plugins the first-party pack runs against.
var firstPartyPlugins = []string{"plugins/tasks-read", "plugins/tasks-write", "plugins/tasks-control",
	"plugins/tasks-workspace", "plugins/echo", "plugins/textdiff"}

// inspectorScenarios are the pack's scenarios MCP Inspector's CLI runs: one
// process per call makes it slow, so it runs every scenario that checks an
// error code plus discovery and the closed loop, not the whole pack.
const inspectorScenarios = `^(tools-are-discoverable|reject-dual-targeting|reject-mixed-pagination-modes|` +
	`missing-session-yields-actionable-hint|request-id-reuse-with-different-payload-is-rejected|` +
	`follow-up-send-requires-prompt-by-schema|unknown-id-is-not-found|closed-loop)$`

// inspectorStdioScenarios are those of inspectorScenarios that hold when
// every call is its own server process: an attempt started by one call ends
// with that call's server, so the scenarios that need a live process are
// left to HTTP.
const inspectorStdioScenarios = `^(tools-are-discoverable|reject-mixed-pagination-modes|` +
	`request-id-reuse-with-different-payload-is-rejected|follow-up-send-requires-prompt-by-schema|unknown-id-is-not-found)$`

type matrixClient struct {
	name    string
	connect func(ctx context.Context, ep scenario.Endpoint) (Client, error)
	filter  map[string]string // transport → scenarios to run ("" for all)
	// more checks what only this client can, on checkFeatures' server.
	more func(ctx context.Context, t *testing.T, c Client, failf func(format string, args ...any))
}

// TestClientMatrix drives the real binary with each client over each
// transport: the first-party scenario pack (tools/list, every error code of
// the spec's scenarios arriving as an isError envelope the client hands
// over, the guide's closed loop), then progress, cancellation, resources
// and prompts from a plugin. The TypeScript SDK v2 cell runs all of it
// pinned to MCP 2026-07-28, then input-required results. It fails when any
// client loses an envelope.
func TestClientMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("installs Node.js clients, builds the binary and the plugins, runs servers")
	}
	ctx := context.Background()
	root := buildtest.Root(t)
	dir, err := Install(ctx, root)
	if err != nil {
		t.Fatalf("%v\n(the client matrix needs npm and the npm registry; conformance/clients/install.sh installs the pinned clients)", err)
	}
	bin := buildtest.Binary(t)
	plugins, _ := buildtest.Plugins(t, firstPartyPlugins...)
	fixture, _ := buildtest.Plugins(t, "conformance/mcpfixture")
	cache := filepath.Join(os.TempDir(), "plugboard-client-matrix-compiled")
	pack := filepath.Join(root, "conformance", "scenarios", "first-party.json")

	clients := []matrixClient{
		// The go-sdk at the first revision without sessions, and at the
		// last with them.
		{name: "go-sdk", connect: ConnectGoSDKAt("2026-07-28")},
		{name: "go-sdk-2025-11-25", connect: ConnectGoSDKAt("2025-11-25")},
		{name: "typescript", connect: func(ctx context.Context, ep scenario.Endpoint) (Client, error) {
			return ConnectTypeScript(ctx, dir, ep)
		}},
		{name: "inspector", connect: func(ctx context.Context, ep scenario.Endpoint) (Client, error) {
			return ConnectInspector(ctx, dir, ep)
		}, filter: map[string]string{scenario.TransportHTTP: inspectorScenarios, scenario.TransportStdio: inspectorStdioScenarios}},
		{name: "typescript-v2", connect: func(ctx context.Context, ep scenario.Endpoint) (Client, error) {
			c, err := ConnectTypeScriptV2(ctx, dir, ep)
			if err != nil {
				return nil, err
			}
			return c, nil
		}, more: checkInputRequired},
	}
	for _, c := range clients {
		for _, transport := range []string{scenario.TransportStdio, scenario.TransportHTTP} {
			t.Run(c.name+"/"+transport, func(t *testing.T) {
				connect := func(ctx context.Context, ep scenario.Endpoint) (scenario.Client, error) { return c.connect(ctx, ep) }
				runPack(t, pack, scenario.Options{Binary: bin, PluginDirs: []string{plugins}, CacheDir: cache,
					Client: connect, Transport: transport, Filter: c.filter[transport]})
				checkFeatures(t, c, transport, bin, fixture, cache)
			})
		}
	}
}

func runPack(t *testing.T, pack string, opts scenario.Options) {
	t.Helper()
	var progress bytes.Buffer
	opts.Stderr = &progress
	rep, err := scenario.Run(context.Background(), pack, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d scenarios in %s\n%s", len(rep.Results), rep.Duration.Round(time.Millisecond), progress.String())
	if rep.Failed > 0 || rep.Passed != len(rep.Results) || rep.Passed == 0 {
		var b strings.Builder
		scenario.WriteText(&b, rep, filepath.Base(pack))
		t.Fatalf("the first-party pack does not pass through this client:\n%s", b.String())
	}
	if opts.Filter == "" && len(rep.Results) < 38 {
		t.Errorf("%d scenarios, want every spec scenario, the parallel create_task, not_found and the closed loop", len(rep.Results))
	}
}

// checkFeatures serves the MCP fixture plugin and checks progress,
// cancellation, resources and prompts through the client.
func checkFeatures(t *testing.T, c matrixClient, transport, bin, fixture, cache string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	work := t.TempDir()
	data := filepath.Join(work, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(cache, filepath.Join(data, "compiled")); err != nil {
		t.Fatal(err)
	}
	// The cache's signing key goes with it (see hostkey).
	if err := os.MkdirAll(cache+"-keys", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(cache+"-keys", filepath.Join(data, "keys")); err != nil {
		t.Fatal(err)
	}
	log := &clitest.SyncBuffer{}
	args := []string{"serve", "--data", data, "--plugins", fixture, "--log-level", "info"}
	ep := scenario.Endpoint{Binary: bin, Args: args, Dir: work, Env: os.Environ(), Stderr: log}
	if transport == scenario.TransportHTTP {
		srv, err := scenario.ServeHTTP(ctx, bin, args, work, ep.Env, log)
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		ep.URL = srv.URL
	}
	client, err := c.connect(ctx, ep)
	if err != nil {
		t.Fatalf("connect: %v\nserver log:\n%s", err, log.String())
	}
	defer client.Close()
	failf := func(format string, args ...any) {
		t.Helper()
		t.Errorf(format+"\nserver log (last lines):\n%s", append(args, lastLines(log.String(), 15))...)
	}

	// Resources and prompts from a plugin.
	resources, err := client.ListResources(ctx)
	if err != nil || !slices.ContainsFunc(resources, func(r *mcp.Resource) bool { return r.URI == "test://static-text" }) {
		failf("resources/list: %v, %d resources, want test://static-text", err, len(resources))
	}
	read, err := client.ReadResource(ctx, "test://static-text")
	if err != nil || len(read.Contents) != 1 || !strings.Contains(read.Contents[0].Text, "static") {
		failf("resources/read test://static-text: %v %+v", err, read)
	}
	prompts, err := client.ListPrompts(ctx)
	if err != nil || !slices.ContainsFunc(prompts, func(p *mcp.Prompt) bool { return p.Name == "test_prompt_with_arguments" }) {
		failf("prompts/list: %v, %d prompts, want test_prompt_with_arguments", err, len(prompts))
	}
	got, err := client.GetPrompt(ctx, "test_prompt_with_arguments", map[string]string{"arg1": "alpha", "arg2": "beta"})
	if err != nil || len(got.Messages) != 1 {
		failf("prompts/get: %v %+v", err, got)
	} else if tc, ok := got.Messages[0].Content.(*mcp.TextContent); !ok || !strings.Contains(tc.Text, "arg1='alpha'") {
		failf("prompts/get: message %+v does not hold the arguments", got.Messages[0].Content)
	}

	// A plugin's plain-text error reaches the client as an envelope.
	res, err := client.CallTool(ctx, "test_error_handling", map[string]any{})
	if err != nil || !res.IsError || len(res.Content) == 0 {
		failf("test_error_handling: %v %+v", err, res)
	} else if tc, ok := res.Content[0].(*mcp.TextContent); !ok || !strings.Contains(tc.Text, `"code":"tool_error"`) || !strings.Contains(tc.Text, `"retryable":false`) {
		failf("test_error_handling: the error is not an envelope: %+v", res.Content[0])
	}

	// Progress.
	res, progress, err := client.CallWithProgress(ctx, "test_tool_with_progress", map[string]any{})
	switch {
	case errors.Is(err, ErrUnsupported):
		t.Logf("progress: %v", err)
	case err != nil || res.IsError:
		failf("test_tool_with_progress: %v %+v", err, res)
	case !progressOK(progress):
		failf("test_tool_with_progress: progress notifications %+v, want 0 and 50 (and maybe 100) of 100, in order", progress)
	}

	// Cancellation: cancelled at its first progress, the call ends on the
	// server as cancelled long before its 10 s are up.
	start := time.Now()
	progress, err = client.CancelAtFirstProgress(ctx, "test_slow_progress", map[string]any{})
	switch {
	case errors.Is(err, ErrUnsupported):
		t.Logf("cancellation: %v", err)
	case err == nil:
		failf("test_slow_progress: the call answered although it was cancelled (%d progress)", len(progress))
	case len(progress) == 0:
		failf("test_slow_progress: cancelled before any progress: %v", err)
	default:
		for !strings.Contains(log.String(), "tool=test_slow_progress code=cancelled") {
			if time.Since(start) > 8*time.Second {
				failf("test_slow_progress: the server did not report the call cancelled within 8 s (client: %v)", err)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	if c.more != nil {
		c.more(ctx, t, client, failf)
	}
}

// inputRequiredCalls are the fixture's tools that ask the client for input
// during a call, with their arguments, the answers of the TypeScript v2
// driver's handlers their final results must carry, and how many input
// requests and retries (rounds) the client must have made for them.
var inputRequiredCalls = []struct {
	tool                  string
	args                  map[string]any
	want                  []string
	minRequests, minRetry int
}{
	{"test_sampling", map[string]any{"prompt": "What is the capital of France?"}, []string{"LLM response: " + TypeScriptV2SamplingText}, 1, 1},
	{"test_elicitation", map[string]any{"message": "Who are you?"}, []string{"action=accept", `"username":"Alice"`, `"email":"alice@example.com"`}, 1, 1},
	// Several requests in one input-required result, answered at once.
	{"test_input_required_result_multiple_inputs", map[string]any{}, nil, 2, 1},
	// Input asked over more than one round.
	{"test_input_required_result_multi_round", map[string]any{}, nil, 2, 2},
}

// checkInputRequired: at MCP 2026-07-28 a plugin's sampling, elicitation
// and roots reach the client as input-required results; the TypeScript v2
// client answers them from its handlers and calls again (echoing the
// requestState) until the final result, which must carry the handlers'
// answers.
func checkInputRequired(ctx context.Context, t *testing.T, c Client, failf func(format string, args ...any)) {
	v2, ok := c.(TypeScriptV2Client)
	if !ok {
		t.Fatalf("checkInputRequired needs the TypeScript v2 client, got %T", c)
	}
	for _, call := range inputRequiredCalls {
		res, did, err := v2.CallToolAnswered(ctx, call.tool, call.args)
		if err != nil || res.IsError {
			failf("%s at %s: %v %s", call.tool, v2.ProtocolVersion(), err, resultText(res))
			continue
		}
		text := resultText(res)
		if len(did.Requests) < call.minRequests || len(did.Retries) < call.minRetry {
			failf("%s: the client answered %d input requests %s in %d retries, want at least %d in %d; result %s",
				call.tool, len(did.Requests), methods(did.Requests), len(did.Retries), call.minRequests, call.minRetry, text)
		}
		// plugboard seals the answers so far into every input-required
		// result's requestState, which the client echoes.
		for i, r := range did.Retries {
			if !r.RequestState || len(r.InputResponses) == 0 {
				failf("%s: retry %d sent inputResponses %v and requestState %v, want both", call.tool, i+1, r.InputResponses, r.RequestState)
			}
		}
		want := slices.Clone(call.want)
		// Each answer the client gave must reach the final result.
		for _, a := range did.Requests {
			switch a.Method {
			case "sampling/createMessage":
				want = append(want, TypeScriptV2SamplingText)
			case "elicitation/create":
				want = append(want, "Alice")
			case "roots/list":
				want = append(want, TypeScriptV2RootURI)
			default:
				failf("%s: the client answered an input request %s", call.tool, a.Method)
			}
		}
		for _, w := range want {
			if !strings.Contains(text, w) {
				failf("%s: the final result %s does not carry %q (the client answered %s)", call.tool, text, w, methods(did.Requests))
			}
		}
	}
}

// resultText is a result's text content, for checks and messages.
func resultText(res *mcp.CallToolResult) string {
	if res == nil {
		return "<nil>"
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func methods(rs []InputRequest) string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Method)
	}
	return "[" + strings.Join(out, " ") + "]"
}

// progressOK accepts the fixture's progress (0, 50, 100 of 100) as a client
// hands it over. The server sends all three before the result (in order on
// the wire), but the TypeScript SDK and the go-sdk client run notification
// handlers after they deliver a response that arrived in the same read, and
// the TypeScript SDK drops a progress notification whose request has
// completed, so the last one may be missing; the first two may not.
func progressOK(p []Progress) bool {
	if len(p) < 2 || len(p) > 3 {
		return false
	}
	for i, want := range []float64{0, 50, 100}[:len(p)] {
		if p[i].Progress != want || p[i].Total != 100 {
			return false
		}
	}
	return true
}

// TestInspectorSchemaPortability: MCP Inspector's --strict lint of the
// first-party tools' schemas finds no error-severity problem (a bare false
// schema, say), which some clients cannot map.
func TestInspectorSchemaPortability(t *testing.T) {
	if testing.Short() {
		t.Skip("installs Node.js clients, builds the binary and the plugins, runs servers")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	root := buildtest.Root(t)
	dir, err := Install(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	bin := buildtest.Binary(t)
	plugins, _ := buildtest.Plugins(t, append([]string{"plugins/agents"}, firstPartyPlugins...)...)
	work := t.TempDir()
	cmd := exec.CommandContext(ctx, node(dir), filepath.Join(dir, "node_modules", "@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js"),
		"--cli", "--strict", "--method", "tools/list", "--cwd", work, "--", bin, "serve", "--plugins", plugins, "--data", filepath.Join(work, "data"))
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "HOME="+work)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("inspector --strict tools/list: %v\n%s", err, lastLines(string(out), 40))
	}
	if !strings.Contains(string(out), `"tools"`) {
		t.Fatalf("inspector --strict listed no tools:\n%s", lastLines(string(out), 40))
	}
}
