package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/host/mcpserver"
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
	// Listen before loading plugins, so a taken port or a missing token
	// fails at once.
	var ln net.Listener
	var httpOpts mcpserver.HTTPOptions
	if hc.addr != "" {
		var err error
		if ln, httpOpts, err = hc.listen(); err != nil {
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
	srv := mcpserver.New(h.registry, h.dispatcher, mcpserver.Options{Name: "plugboard", Version: version, Logger: h.log})
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
	hs := mcpserver.NewHTTP(srv, httpOpts)
	auth := "none"
	if httpOpts.Authenticate != nil {
		auth = "bearer token"
	}
	h.log.Info("HTTP transport", "loopback", httpOpts.Loopback, "auth", auth)
	if hc.shortToken {
		h.log.Warn("the HTTP bearer token is short; use 32 or more random characters (e.g. openssl rand -hex 32)")
	}
	// One parseable line: tests and scripts read the URL (and so the port
	// chosen for ADDR:0) from it.
	fmt.Fprintf(stderr, "plugboard: serving MCP over HTTP at http://%s%s\n", ln.Addr(), mcpserver.MCPPath)
	return hs.Serve(ctx, ln)
}

// httpFlags select the streamable HTTP transport.
type httpFlags struct {
	addr, token, tokenFile string
	// shortToken is set by listen when the token is easy to guess.
	shortToken bool
}

// envHTTPToken is the bearer token when neither --http-token nor
// --http-token-file is given.
const envHTTPToken = "PLUGBOARD_HTTP_TOKEN"

func (f *httpFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.addr, "http", "", "serve MCP over streamable HTTP at http://ADDR/mcp instead of stdio (e.g. 127.0.0.1:8080; port 0 picks a free one)")
	fs.StringVar(&f.token, "http-token", "", "bearer token every HTTP request must carry (default: $"+envHTTPToken+"); required unless ADDR is loopback")
	fs.StringVar(&f.tokenFile, "http-token-file", "", "read the bearer token from FILE (surrounding whitespace ignored)")
}

// listen opens ADDR and returns the transport's options: DNS-rebinding
// protection on a loopback address, bearer authentication when a token is
// set. Without a token, a non-loopback address is refused (exit 2).
func (f *httpFlags) listen() (net.Listener, mcpserver.HTTPOptions, error) {
	var opts mcpserver.HTTPOptions
	token, err := f.resolveToken()
	if err != nil {
		return nil, opts, err
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
	if token != "" {
		opts.Authenticate = mcpserver.StaticToken(token)
		f.shortToken = len(token) < 16
	} else if !opts.Loopback {
		ln.Close()
		return nil, opts, &exitError{code: 2, err: fmt.Errorf("--http %s listens beyond this machine (%s), so it needs a bearer token: "+
			"set --http-token-file FILE, --http-token TOKEN or $%s, or listen on 127.0.0.1", f.addr, tcp.IP, envHTTPToken)}
	}
	return ln, opts, nil
}

// resolveToken returns the bearer token: --http-token, else the content of
// --http-token-file, else $PLUGBOARD_HTTP_TOKEN, else "".
func (f *httpFlags) resolveToken() (string, error) {
	if f.token != "" && f.tokenFile != "" {
		return "", usageError("give --http-token or --http-token-file, not both")
	}
	token, from := f.token, "--http-token"
	if f.tokenFile != "" {
		b, err := os.ReadFile(f.tokenFile)
		if err != nil {
			return "", fmt.Errorf("--http-token-file: %w", err)
		}
		token, from = strings.TrimSpace(string(b)), "--http-token-file "+f.tokenFile
		if token == "" {
			return "", &exitError{code: 2, err: fmt.Errorf("%s is empty", from)}
		}
	} else if token == "" {
		token, from = os.Getenv(envHTTPToken), "$"+envHTTPToken
	}
	if strings.IndexFunc(token, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) || r > unicode.MaxASCII }) >= 0 {
		return "", &exitError{code: 2, err: errors.New(from + ": the token must be printable ASCII without spaces")}
	}
	return token, nil
}
