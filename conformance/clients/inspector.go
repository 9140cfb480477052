package clients

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/conformance/scenario"
)

// Inspector connects MCP Inspector's CLI of the installation at dir
// (Install). The CLI makes one request per run, so every call is one
// `inspector --cli --format json` process: over HTTP a new session on the
// running server, over stdio a new server process started by the CLI (so a
// stdio attempt lives only as long as the call that started it). The CLI
// has no way to ask for progress or to cancel a call.
func Inspector(dir string) scenario.Connector {
	return func(ctx context.Context, ep scenario.Endpoint) (scenario.Client, error) {
		return ConnectInspector(ctx, dir, ep)
	}
}

// ConnectInspector returns the CLI's client for ep. It makes no request:
// each call is a session of its own, so the first one (a scenario's
// tools/list) is what shows a CLI or server that does not work.
func ConnectInspector(_ context.Context, dir string, ep scenario.Endpoint) (Client, error) {
	home, err := os.MkdirTemp("", "plugboard-inspector-home-")
	if err != nil {
		return nil, err
	}
	return &inspectorClient{dir: dir, ep: ep, home: home}, nil
}

type inspectorClient struct {
	dir  string
	ep   scenario.Endpoint
	home string // HOME of the CLI: its catalog and state stay out of the user's
}

// run makes one CLI run of method with flags and decodes its result into
// out. A run that printed no result (the CLI failed or refused) is a
// ClientError with what it said.
func (c *inspectorClient) run(ctx context.Context, out any, method string, flags ...string) error {
	argv := []string{filepath.Join(c.dir, "node_modules", "@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js"),
		"--cli", "--format", "json", "--method", method}
	argv = append(argv, flags...)
	if c.ep.URL != "" {
		argv = append(argv, "--transport", "http", "--server-url", c.ep.URL)
	} else {
		argv = append(argv, "--cwd", c.ep.Dir, "--")
		argv = append(argv, c.ep.Binary)
		argv = append(argv, c.ep.Args...)
	}
	cmd := exec.CommandContext(ctx, node(c.dir), argv...)
	cmd.Dir = c.home
	cmd.Env = append(withoutKey(c.ep.Env, "HOME"), "HOME="+c.home)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if c.ep.Stderr != nil {
		cmd.Stderr = io.MultiWriter(&stderr, c.ep.Stderr)
	}
	runErr := cmd.Run()
	var answer struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    any    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &answer); err != nil || len(answer.Result) == 0 {
		msg := strings.TrimSpace(stdout.String() + "\n" + lastLines(stderr.String(), 5))
		var code any
		if answer.Error != nil {
			code, msg = answer.Error.Code, answer.Error.Message
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &ClientError{Client: "MCP Inspector", Code: code, Message: fmt.Sprintf("%s (%v)", msg, runErr)}
	}
	return json.Unmarshal(answer.Result, out)
}

func (c *inspectorClient) CallTool(ctx context.Context, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	if args == nil {
		args = map[string]any{}
	}
	b, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	var res mcp.CallToolResult
	if err := c.run(ctx, &res, "tools/call", "--tool-name", tool, "--tool-args-json", string(b)); err != nil {
		return nil, err
	}
	return &res, nil
}

func (c *inspectorClient) ListTools(ctx context.Context) ([]*mcp.Tool, error) {
	var res mcp.ListToolsResult
	if err := c.run(ctx, &res, "tools/list"); err != nil {
		return nil, err
	}
	return res.Tools, nil
}

func (c *inspectorClient) CallWithProgress(context.Context, string, map[string]any) (*mcp.CallToolResult, []Progress, error) {
	return nil, nil, fmt.Errorf("MCP Inspector's CLI shows no progress notifications: %w", ErrUnsupported)
}

func (c *inspectorClient) CancelAtFirstProgress(context.Context, string, map[string]any) ([]Progress, error) {
	return nil, fmt.Errorf("MCP Inspector's CLI cannot cancel a call: %w", ErrUnsupported)
}

func (c *inspectorClient) ListResources(ctx context.Context) ([]*mcp.Resource, error) {
	var res mcp.ListResourcesResult
	if err := c.run(ctx, &res, "resources/list"); err != nil {
		return nil, err
	}
	return res.Resources, nil
}

func (c *inspectorClient) ReadResource(ctx context.Context, uri string) (*mcp.ReadResourceResult, error) {
	var res mcp.ReadResourceResult
	if err := c.run(ctx, &res, "resources/read", "--uri", uri); err != nil {
		return nil, err
	}
	return &res, nil
}

func (c *inspectorClient) ListPrompts(ctx context.Context) ([]*mcp.Prompt, error) {
	var res mcp.ListPromptsResult
	if err := c.run(ctx, &res, "prompts/list"); err != nil {
		return nil, err
	}
	return res.Prompts, nil
}

func (c *inspectorClient) GetPrompt(ctx context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	flags := []string{"--prompt-name", name}
	if len(args) > 0 {
		flags = append(flags, "--prompt-args")
		for k, v := range args {
			flags = append(flags, k+"="+v)
		}
	}
	var res mcp.GetPromptResult
	if err := c.run(ctx, &res, "prompts/get", flags...); err != nil {
		return nil, err
	}
	return &res, nil
}

func (c *inspectorClient) Close() error { return os.RemoveAll(c.home) }

func withoutKey(env []string, key string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return out
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
