package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/mcpserver"
	"github.com/plugboard/plugboard/host/policy"
)

func cmdServe(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var hf hostFlags
	hf.register(fs)
	warm := fs.Bool("warm", true, "compile plugins in the background at start-up so first calls are fast")
	cpuProfile := fs.String("cpu-profile", "", "write a CPU profile of the whole run to FILE (for performance work)")
	watch := fs.Duration("watch", 2*time.Second, "poll the plugin directories this often and serve plugins added, removed or changed while running (clients get list_changed); 0 turns it off")
	var hc httpFlags
	hc.register(fs)
	if err := fs.Parse(args); err != nil {
		return &exitError{code: 2, err: errSilent}
	}
	if fs.NArg() > 0 {
		return usageError("serve takes no arguments, got %q", fs.Args())
	}
	// Read the agents file and listen before loading plugins, so a bad
	// file, a taken port or a missing token fails at once.
	pol, err := hf.policy()
	if err != nil {
		return err
	}
	var ln net.Listener
	var httpOpts mcpserver.HTTPOptions
	if hc.addr != "" {
		if ln, httpOpts, err = hc.listen(pol.Tokens()); err != nil {
			return err
		}
		defer ln.Close()
	} else if hc.token != "" || hc.tokenFile != "" {
		return usageError("--http-token and --http-token-file need --http ADDR")
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	h, err := hf.open(ctx, stderr)
	if err != nil {
		return err
	}
	defer h.close(context.WithoutCancel(ctx))
	h.startPruner(ctx)
	// A session the transport did not authenticate (stdio, HTTP without
	// tokens) is --agent or the local identity; a bearer token's identity
	// is its agent (or local, for --http-token). tools/list shows each only
	// what it may call.
	mopts := mcpserver.Options{Name: "plugboard", Version: version, Logger: h.log, Caller: h.caller,
		Callers: func(id string) *abi.Caller { c, _ := h.policy.Caller(id); return c },
		Auditor: h.decisions}
	srv := mcpserver.New(h.registry, h.dispatcher, mopts)
	// A connected recipient hears of new mail as a log notification.
	h.mail.SetNotifier(mcpserver.NewMailNotifier(srv, mopts))
	if *warm {
		h.registry.Warm(ctx, 1, h.log)
	}
	go h.registry.Watch(ctx, *watch)
	if ln == nil {
		err = srv.Run(ctx, &mcp.StdioTransport{})
		if ctx.Err() != nil {
			return nil // interrupted: a normal way to stop a server
		}
		return err
	}
	httpOpts.Logger = h.log
	httpOpts.ShutdownGrace = shutdownGrace
	httpOpts.Execute = mcpserver.REST(h.dispatcher, mopts)
	hs := mcpserver.NewHTTP(srv, httpOpts)
	auth := "none"
	if httpOpts.Authenticate != nil {
		auth = "bearer token"
	}
	h.log.Info("HTTP transport", "loopback", httpOpts.Loopback, "auth", auth, "read_timeout", hc.readTimeout,
		"session_idle", hc.sessionIdle, "max_sessions", hc.maxSessions)
	// One parseable line: tests and scripts read the URL (and so the port
	// chosen for ADDR:0) from it.
	fmt.Fprintf(stderr, "plugboard: serving MCP over HTTP at http://%s%s\n", ln.Addr(), mcpserver.MCPPath)
	return hs.Serve(ctx, ln)
}

// httpFlags select the streamable HTTP transport.
type httpFlags struct {
	addr, token, tokenFile string
	// readTimeout, sessionIdle and maxSessions bound what one client can
	// hold (mcpserver.HTTPOptions).
	readTimeout, sessionIdle time.Duration
	maxSessions              int
}

// envHTTPToken is the bearer token when neither --http-token nor
// --http-token-file is given.
const envHTTPToken = "PLUGBOARD_HTTP_TOKEN"

func (f *httpFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.addr, "http", "", "serve MCP over streamable HTTP at http://ADDR/mcp instead of stdio (e.g. 127.0.0.1:8080; port 0 picks a free one)")
	fs.StringVar(&f.token, "http-token", "", "bearer token of the local SUPERVISOR identity over HTTP (default: $"+envHTTPToken+"); a token (this or an agent's from --agents) is required unless ADDR is loopback")
	fs.StringVar(&f.tokenFile, "http-token-file", "", "read the bearer token from FILE (surrounding whitespace ignored)")
	fs.DurationVar(&f.readTimeout, "http-read-timeout", mcpserver.DefaultReadTimeout, "time a client has to send one request's headers and body; a slower one loses its connection")
	fs.DurationVar(&f.sessionIdle, "http-session-idle", mcpserver.DefaultSessionIdle, "end an MCP session after this long without a request (0: never)")
	fs.IntVar(&f.maxSessions, "http-max-sessions", mcpserver.DefaultMaxSessions, "MCP sessions one identity may hold; opening another ends its least recently used idle one (0: no cap)")
}

// listen opens ADDR and returns the transport's options: DNS-rebinding
// protection on a loopback address, bearer authentication when a token is
// set — the --http-token (the local identity) or an agent's (agentTokens,
// token → agent id). Without any, a non-loopback address is refused
// (exit 2).
func (f *httpFlags) listen(agentTokens map[string]string) (net.Listener, mcpserver.HTTPOptions, error) {
	var opts mcpserver.HTTPOptions
	token, from, err := f.resolveToken()
	if err != nil {
		return nil, opts, err
	}
	// A short token is refused outright, not warned about: a warning in a
	// log nobody reads leaves the server guessable. Agents-file tokens are
	// checked when the file is read (host/policy).
	if n := len(token); token != "" && n < policy.MinTokenLength {
		return nil, opts, &exitError{code: 2, err: fmt.Errorf("%s: the bearer token is %d characters; it needs at least %d random ones (e.g. openssl rand -hex 32)",
			from, n, policy.MinTokenLength)}
	}
	switch {
	case f.readTimeout <= 0:
		return nil, opts, usageError("--http-read-timeout must be positive, got %v", f.readTimeout)
	case f.sessionIdle < 0:
		return nil, opts, usageError("--http-session-idle must not be negative, got %v", f.sessionIdle)
	case f.maxSessions < 0:
		return nil, opts, usageError("--http-max-sessions must not be negative, got %d", f.maxSessions)
	}
	opts.ReadTimeout, opts.SessionIdle, opts.MaxSessions = f.readTimeout, f.sessionIdle, f.maxSessions
	// In HTTPOptions zero means the default and negative "none".
	if f.sessionIdle == 0 {
		opts.SessionIdle = -1
	}
	if f.maxSessions == 0 {
		opts.MaxSessions = -1
	}
	tokens := map[string]string{}
	maps.Copy(tokens, agentTokens)
	if token != "" {
		if id, taken := tokens[token]; taken {
			return nil, opts, &exitError{code: 2, err: fmt.Errorf("the --http-token is also agent %s's token; give each its own", id)}
		}
		tokens[token] = policy.LocalID
	}
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return nil, opts, fmt.Errorf("--http: %w", err)
	}
	tcp, _ := ln.Addr().(*net.TCPAddr)
	if tcp == nil {
		ln.Close()
		return nil, opts, fmt.Errorf("--http %s: not a TCP address", f.addr)
	}
	opts.Loopback = tcp.IP.IsLoopback()
	opts.Port = strconv.Itoa(tcp.Port)
	if len(tokens) > 0 {
		opts.Authenticate = mcpserver.Tokens(tokens)
	} else if !opts.Loopback {
		ln.Close()
		return nil, opts, &exitError{code: 2, err: fmt.Errorf("--http %s listens beyond this machine (%s), so it needs a bearer token: "+
			"give agents tokens in --agents FILE, or set --http-token-file FILE, --http-token TOKEN or $%s, or listen on 127.0.0.1", f.addr, tcp.IP, envHTTPToken)}
	}
	return ln, opts, nil
}

// resolveToken returns the bearer token — --http-token, else the content of
// --http-token-file, else $PLUGBOARD_HTTP_TOKEN, else "" — and where it
// came from.
func (f *httpFlags) resolveToken() (string, string, error) {
	if f.token != "" && f.tokenFile != "" {
		return "", "", usageError("give --http-token or --http-token-file, not both")
	}
	token, from := f.token, "--http-token"
	if f.tokenFile != "" {
		b, err := os.ReadFile(f.tokenFile)
		if err != nil {
			return "", "", fmt.Errorf("--http-token-file: %w", err)
		}
		token, from = strings.TrimSpace(string(b)), "--http-token-file "+f.tokenFile
		if token == "" {
			return "", "", &exitError{code: 2, err: fmt.Errorf("%s is empty", from)}
		}
	} else if token == "" {
		token, from = os.Getenv(envHTTPToken), "$"+envHTTPToken
	}
	if strings.IndexFunc(token, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) || r > unicode.MaxASCII }) >= 0 {
		return "", "", &exitError{code: 2, err: errors.New(from + ": the token must be printable ASCII without spaces")}
	}
	return token, from, nil
}
