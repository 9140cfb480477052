package scenario

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Client is the MCP client a scenario runs through: the go-sdk's (GoSDK,
// the default) or another one (conformance/clients drives the official
// TypeScript SDK and MCP Inspector through it). Its answers are what that
// client hands its user: a CallToolResult, or an error when the client
// refused or lost the result.
type Client interface {
	CallTool(ctx context.Context, tool string, args map[string]any) (*mcp.CallToolResult, error)
	ListTools(ctx context.Context) ([]*mcp.Tool, error)
	Close() error
}

// Transport names how a client reaches the server.
const (
	// TransportStdio: the client starts the server as its child process.
	TransportStdio = "stdio"
	// TransportHTTP: the server runs with --http on a loopback port and
	// the client connects to its URL (streamable HTTP).
	TransportHTTP = "http"
)

// Endpoint is the server a Connector reaches. Over stdio the client starts
// Binary with Args in Dir with Env, sending its stderr to Stderr; over HTTP
// the server already listens at URL.
type Endpoint struct {
	Binary string
	Args   []string
	Dir    string
	Env    []string
	Stderr io.Writer
	URL    string
	// ProtocolVersion is the MCP revision a client that can choose asks
	// for ("" for its newest).
	ProtocolVersion string
}

// Connector connects a client to a server.
type Connector func(ctx context.Context, ep Endpoint) (Client, error)

// GoSDK connects the go-sdk client.
func GoSDK(ctx context.Context, ep Endpoint) (Client, error) {
	s, err := DialGoSDK(ctx, ep, nil)
	if err != nil {
		return nil, err
	}
	return SessionClient{s}, nil
}

// DialGoSDK connects a go-sdk client with opts (nil for the defaults) to ep.
func DialGoSDK(ctx context.Context, ep Endpoint, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "plugboard-conformance", Version: "1"}, opts)
	var transport mcp.Transport
	if ep.URL != "" {
		transport = &mcp.StreamableClientTransport{Endpoint: ep.URL}
	} else {
		cmd := exec.Command(ep.Binary, ep.Args...)
		cmd.Dir, cmd.Env, cmd.Stderr = ep.Dir, ep.Env, ep.Stderr
		transport = &mcp.CommandTransport{Command: cmd, TerminateDuration: 3 * time.Second}
	}
	s, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: ep.ProtocolVersion})
	if err == nil && ep.ProtocolVersion != "" && s.InitializeResult().ProtocolVersion != ep.ProtocolVersion {
		got := s.InitializeResult().ProtocolVersion
		s.Close()
		return nil, fmt.Errorf("the go-sdk client negotiated MCP %s, asked for %s", got, ep.ProtocolVersion)
	}
	return s, err
}

// SessionClient is a go-sdk client session as a Client.
type SessionClient struct{ Session *mcp.ClientSession }

func (c SessionClient) CallTool(ctx context.Context, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	return c.Session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
}

func (c SessionClient) ListTools(ctx context.Context) ([]*mcp.Tool, error) {
	var out []*mcp.Tool
	for t, err := range c.Session.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func (c SessionClient) Close() error { return c.Session.Close() }

// HTTPServer is a `plugboard serve --http 127.0.0.1:0` child process.
type HTTPServer struct {
	URL  string
	cmd  *exec.Cmd
	done chan struct{}
}

var servingLine = regexp.MustCompile(`^plugboard: serving MCP over HTTP at (http://\S+)`)

// ServeHTTP starts `BINARY ARGS --http 127.0.0.1:0` in dir with env, copies
// its stderr to stderr and returns once it reports its URL.
func ServeHTTP(ctx context.Context, binary string, args []string, dir string, env []string, stderr io.Writer) (*HTTPServer, error) {
	cmd := exec.Command(binary, append(append([]string(nil), args...), "--http", "127.0.0.1:0")...)
	cmd.Dir, cmd.Env = dir, env
	pipe, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &HTTPServer{cmd: cmd, done: make(chan struct{})}
	found := make(chan string, 1)
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(pipe)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if stderr != nil {
				fmt.Fprintln(stderr, line)
			}
			if m := servingLine.FindStringSubmatch(line); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		io.Copy(io.Discard, pipe)
		cmd.Wait()
	}()
	wait := time.NewTimer(60 * time.Second)
	defer wait.Stop()
	select {
	case s.URL = <-found:
		return s, nil
	case <-s.done:
		return nil, fmt.Errorf("%s %s exited before it listened", binary, strings.Join(args, " "))
	case <-wait.C:
		err = errors.New("the server did not report its URL within 60s")
	case <-ctx.Done():
		err = ctx.Err()
	}
	s.Close()
	return nil, err
}

// Close stops the server (SIGTERM, then SIGKILL after 5 s) and waits.
func (s *HTTPServer) Close() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
}

// connection is a scenario's client with what it needs to close: over
// HTTP, the server it started.
type connection struct {
	Client
	http *HTTPServer
	log  *tailWriter
	file *os.File
	once sync.Once
}

// connect starts the scenario's server the transport's way and connects
// the client to it; the server's stderr goes to dir/server.log.
func (env *environment) connect(ctx context.Context, args []string, dir string) (*connection, error) {
	f, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		return nil, err
	}
	c := &connection{log: &tailWriter{w: f, max: 16 << 10}, file: f}
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	ep := Endpoint{Binary: env.binary, Args: args, Dir: dir, Env: cleanEnv(), Stderr: c.log}
	if env.transport == TransportHTTP {
		if c.http, err = ServeHTTP(cctx, env.binary, args, dir, ep.Env, c.log); err != nil {
			f.Close()
			return nil, fmt.Errorf("start %s %s --http: %v\nserver log:\n%s", env.binary, strings.Join(args, " "), err, c.log.tail())
		}
		ep.URL = c.http.URL
	}
	if c.Client, err = env.client(cctx, ep); err != nil {
		c.close()
		return nil, fmt.Errorf("connect to %s %s: %v\nserver log:\n%s", env.binary, strings.Join(args, " "), err, c.log.tail())
	}
	return c, nil
}

func (c *connection) close() {
	c.once.Do(func() {
		if c.Client != nil {
			c.Client.Close()
		}
		if c.http != nil {
			c.http.Close()
		}
		c.file.Close()
	})
}
