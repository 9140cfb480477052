package clients

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/conformance/scenario"
)

//go:embed ts-driver.mjs
var tsDriver []byte

// TypeScript connects the official TypeScript SDK's Client of the
// installation at dir (Install), driven by ts-driver.mjs in a Node.js child
// process: every call goes through Client.callTool and Client.listTools, so
// the SDK's own checks (structuredContent against the outputSchema, also on
// error results) apply.
func TypeScript(dir string) scenario.Connector {
	return func(ctx context.Context, ep scenario.Endpoint) (scenario.Client, error) {
		return ConnectTypeScript(ctx, dir, ep)
	}
}

// ConnectTypeScript starts the driver and connects it to ep.
func ConnectTypeScript(ctx context.Context, dir string, ep scenario.Endpoint) (Client, error) {
	return startDriver(ctx, dir, "ts-driver.mjs", tsDriver, map[string]any{}, ep, "TypeScript")
}

// startDriver starts the Node.js driver content (written beside the SDK's
// node_modules in dir as file, so Node resolves the SDK from it) with cfg
// and ep, and waits for it to connect. name is the client's, for errors.
func startDriver(ctx context.Context, dir, file string, content []byte, cfg map[string]any, ep scenario.Endpoint, name string) (*tsClient, error) {
	script := filepath.Join(dir, file)
	if old, err := os.ReadFile(script); err != nil || !bytes.Equal(old, content) {
		if err := writeDriver(script, content); err != nil {
			return nil, err
		}
	}
	if ep.URL != "" {
		cfg["url"] = ep.URL
	} else {
		env := map[string]string{}
		for _, kv := range ep.Env {
			if k, v, ok := strings.Cut(kv, "="); ok {
				env[k] = v
			}
		}
		cfg["command"], cfg["args"], cfg["cwd"], cfg["env"] = ep.Binary, ep.Args, ep.Dir, env
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(node(dir), script, string(b))
	cmd.Dir = dir
	cmd.Stderr = ep.Stderr
	if cmd.Stderr == nil {
		cmd.Stderr = io.Discard
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &tsClient{name: name, cmd: cmd, stdin: stdin, pending: map[int64]chan tsAnswer{}, done: make(chan struct{})}
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 1<<20), 64<<20)
	ready := make(chan error, 1)
	go c.read(lines, ready)
	select {
	case err = <-ready:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// tsClient is a driver process: a TypeScript SDK client behind a line
// protocol on its stdin and stdout.
type tsClient struct {
	name    string // the client's, for errors
	version string // the MCP revision the driver negotiated
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	mu      sync.Mutex // guards next, pending, writes to stdin and exit
	next    int64
	pending map[int64]chan tsAnswer
	done    chan struct{}
	exit    error
	once    sync.Once
}

type tsAnswer struct {
	ID     *int64          `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Name     string     `json:"name"`
		Code     any        `json:"code"`
		Message  string     `json:"message"`
		Progress []Progress `json:"progress"`
	} `json:"error"`
	Ready           *bool  `json:"ready"`
	ProtocolVersion string `json:"protocolVersion"`
}

// read hands each answer to its request; the first line is the driver's
// ready (or its connect error).
func (c *tsClient) read(lines *bufio.Scanner, ready chan<- error) {
	first := true
	for lines.Scan() {
		var a tsAnswer
		if err := json.Unmarshal(lines.Bytes(), &a); err != nil {
			continue
		}
		if first {
			first = false
			switch {
			case a.Ready != nil && *a.Ready:
				c.version = a.ProtocolVersion
				ready <- nil
			case a.Error != nil:
				ready <- &ClientError{Client: c.name, Code: a.Error.Code, Message: "connect: " + a.Error.Message}
			default:
				ready <- fmt.Errorf("%s driver: unexpected first line %s", c.name, lines.Bytes())
			}
			continue
		}
		if a.ID == nil {
			continue
		}
		c.mu.Lock()
		ch := c.pending[*a.ID]
		delete(c.pending, *a.ID)
		c.mu.Unlock()
		if ch != nil {
			ch <- a
		}
	}
	err := c.cmd.Wait()
	c.mu.Lock()
	c.exit = fmt.Errorf("the %s driver exited (%v)", c.name, err)
	for id, ch := range c.pending {
		close(ch)
		delete(c.pending, id)
	}
	c.mu.Unlock()
	if first {
		ready <- c.exit
	}
	close(c.done)
}

// request sends one request and waits for its answer; when ctx ends first,
// a callTool is aborted in the client (which notifies the server).
func (c *tsClient) request(ctx context.Context, req map[string]any) (tsAnswer, error) {
	c.mu.Lock()
	if c.exit != nil {
		c.mu.Unlock()
		return tsAnswer{}, c.exit
	}
	c.next++
	id := c.next
	ch := make(chan tsAnswer, 1)
	c.pending[id] = ch
	req["id"] = id
	b, _ := json.Marshal(req)
	_, err := c.stdin.Write(append(b, '\n'))
	c.mu.Unlock()
	if err != nil {
		return tsAnswer{}, err
	}
	select {
	case a, ok := <-ch:
		if !ok {
			return tsAnswer{}, c.exit
		}
		return a, nil
	case <-ctx.Done():
		if req["op"] == "callTool" {
			c.mu.Lock()
			b, _ := json.Marshal(map[string]any{"op": "cancel", "target": id})
			c.stdin.Write(append(b, '\n'))
			c.mu.Unlock()
		}
		return tsAnswer{}, ctx.Err()
	}
}

// result decodes a successful answer into out, or turns the client's error
// into a ClientError.
func (c *tsClient) result(ctx context.Context, req map[string]any, out any) error {
	a, err := c.request(ctx, req)
	if err != nil {
		return err
	}
	if a.Error != nil {
		return &ClientError{Client: c.name, Code: a.Error.Code, Message: a.Error.Message}
	}
	return json.Unmarshal(a.Result, out)
}

func (c *tsClient) CallTool(ctx context.Context, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	var res mcp.CallToolResult
	err := c.result(ctx, map[string]any{"op": "callTool", "name": tool, "arguments": args, "timeoutMs": timeoutMS(ctx)}, &res)
	if err != nil {
		return nil, err
	}
	return &res, nil
}

func (c *tsClient) ListTools(ctx context.Context) ([]*mcp.Tool, error) {
	var res mcp.ListToolsResult
	if err := c.result(ctx, map[string]any{"op": "listTools"}, &res); err != nil {
		return nil, err
	}
	return res.Tools, nil
}

func (c *tsClient) CallWithProgress(ctx context.Context, tool string, args map[string]any) (*mcp.CallToolResult, []Progress, error) {
	a, err := c.request(ctx, map[string]any{"op": "callTool", "name": tool, "arguments": args, "progress": true, "timeoutMs": timeoutMS(ctx)})
	if err != nil {
		return nil, nil, err
	}
	if a.Error != nil {
		return nil, a.Error.Progress, &ClientError{Client: c.name, Code: a.Error.Code, Message: a.Error.Message}
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(a.Result, &res); err != nil {
		return nil, nil, err
	}
	var p struct {
		Progress []Progress `json:"_progress"`
	}
	json.Unmarshal(a.Result, &p)
	return &res, p.Progress, nil
}

func (c *tsClient) CancelAtFirstProgress(ctx context.Context, tool string, args map[string]any) ([]Progress, error) {
	a, err := c.request(ctx, map[string]any{"op": "callTool", "name": tool, "arguments": args, "cancelAfterProgress": true, "timeoutMs": timeoutMS(ctx)})
	if err != nil {
		return nil, err
	}
	if a.Error == nil {
		var p struct {
			Progress []Progress `json:"_progress"`
		}
		json.Unmarshal(a.Result, &p)
		return p.Progress, nil
	}
	return a.Error.Progress, &ClientError{Client: c.name, Code: a.Error.Code, Message: a.Error.Message}
}

func (c *tsClient) ListResources(ctx context.Context) ([]*mcp.Resource, error) {
	var res mcp.ListResourcesResult
	if err := c.result(ctx, map[string]any{"op": "listResources"}, &res); err != nil {
		return nil, err
	}
	return res.Resources, nil
}

func (c *tsClient) ReadResource(ctx context.Context, uri string) (*mcp.ReadResourceResult, error) {
	var res mcp.ReadResourceResult
	if err := c.result(ctx, map[string]any{"op": "readResource", "uri": uri}, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

func (c *tsClient) ListPrompts(ctx context.Context) ([]*mcp.Prompt, error) {
	var res mcp.ListPromptsResult
	if err := c.result(ctx, map[string]any{"op": "listPrompts"}, &res); err != nil {
		return nil, err
	}
	return res.Prompts, nil
}

func (c *tsClient) GetPrompt(ctx context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	var res mcp.GetPromptResult
	if err := c.result(ctx, map[string]any{"op": "getPrompt", "name": name, "arguments": args}, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Close ends the driver: EOF on its stdin closes the client (and a stdio
// server with it); it is killed after 10 s.
func (c *tsClient) Close() error {
	c.once.Do(func() {
		c.mu.Lock()
		c.stdin.Close()
		c.mu.Unlock()
		select {
		case <-c.done:
		case <-time.After(10 * time.Second):
			c.cmd.Process.Kill()
			<-c.done
		}
	})
	return nil
}

// timeoutMS is the client-side timeout of a call: ctx's deadline, else 60 s
// (the SDK's default).
func timeoutMS(ctx context.Context) int64 {
	if d, ok := ctx.Deadline(); ok {
		return max(time.Until(d).Milliseconds(), 1)
	}
	return 60000
}

// writeDriver replaces script with content through a temporary file of
// its own: clients of several scenarios connect at once in one test
// process, so a temporary name shared between them (the process id) lets
// one rename away the file another is about to rename.
func writeDriver(script string, content []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(script), ".driver-*.mjs")
	if err != nil {
		return err
	}
	_, err = tmp.Write(content)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), script)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}
