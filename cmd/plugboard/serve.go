package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"runtime/pprof"
	"strings"
	"time"
	"unicode"

	plughost "github.com/plugboard/plugboard/host"
)

// serveCommand is the serve row of the command table.
func serveCommand(fs *flag.FlagSet) runFunc {
	var hf hostFlags
	hf.register(fs)
	warm := fs.Bool("warm", true, "compile plugins in the background at start-up so first calls are fast")
	cpuProfile := fs.String("cpu-profile", "", "write a CPU profile of the whole run to FILE (for performance work)")
	watch := fs.Duration("watch", 2*time.Second, "poll the plugin directories (and the configuration file's plugin settings, and the agents file) this often and serve plugins added, removed or changed while running (clients get list_changed); 0 turns it off")
	var hc httpFlags
	hc.register(fs)
	var mf metricsFlags
	mf.register(fs)
	var tf traceFlags
	tf.register(fs)
	return func(ctx context.Context, in *invocation) error {
		if err := in.nargs(0, 0); err != nil {
			return err
		}
		return serve(ctx, in.stderr, &hf, &hc, &mf, &tf, *warm, *cpuProfile, *watch)
	}
}

// serve runs the server the flags describe until ctx ends or, on stdio,
// the client leaves.
func serve(ctx context.Context, stderr io.Writer, hf *hostFlags, hc *httpFlags, mf *metricsFlags, tf *traceFlags, warm bool, cpuProfile string, watch time.Duration) error {
	// Inside an attempt the board is the host's, reached as the attempt's
	// WORKER: nothing here opens it (attempt_proxy.go).
	if a, ok := hf.throughAttempt(); ok {
		if hc.addr != "" || mf.addr != "" {
			return usageError("inside %s, serve speaks stdio only, as a proxy to $%s; give --data DIR to serve a board of your own over HTTP",
				a.name(), plughost.EnvAttemptURL)
		}
		return serveThroughAttempt(ctx, stderr, a)
	}
	// Read the configuration and agents files and listen before loading
	// plugins, so a bad file, a taken port or a missing token fails at
	// once.
	// The files are stamped before they are read: a change saved while the
	// server starts is then reloaded by the watchers, not taken for the
	// version read at start.
	seen := stampsBefore(hf)
	pol, err := hf.policy()
	if err != nil {
		return err
	}
	if hf.conf != nil && !hf.given["http-token-file"] && hc.tokenFile != "" {
		hc.tokenFileFrom = hf.conf.File + ": http.token_file " + hc.tokenFile
	}
	var ln net.Listener
	var httpOpts plughost.HTTPOptions
	if hc.addr != "" {
		if ln, httpOpts, err = hc.listen(pol.Tokens(), pol.OAuth() != nil); err != nil {
			return err
		}
		defer ln.Close()
	} else if hf.given["http-token"] || hf.given["http-token-file"] {
		// The configuration file's http.token_file waits for an http.addr
		// or --http; a flag given for nothing is a mistake.
		return usageError("--http-token and --http-token-file need --http ADDR")
	}
	// The metrics endpoint: its own listener, never without its token.
	confFile := ""
	if hf.conf != nil {
		confFile = hf.conf.File
	}
	metricsLn, metricsToken, err := mf.listen(confFile, hf.given)
	if err != nil {
		return err
	}
	if metricsLn != nil {
		defer metricsLn.Close()
		hf.metrics = true
	}
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	// Traces (traces.go): the provider outlives the host, whose Close
	// flushes it; it is shut down last.
	tp, traces, err := tf.provider(ctx, hf.conf)
	if err != nil {
		return err
	}
	var h *plughost.Host
	if tp != nil {
		defer shutdownTraces(ctx, tp, func() *slog.Logger {
			if h == nil {
				return nil
			}
			return h.Logger()
		})
		hf.tracer = tp
	}
	h, err = hf.open(ctx, stderr)
	if err != nil {
		return err
	}
	defer h.Close(context.WithoutCancel(ctx))
	logTraces(h.Logger(), traces)
	h.StartPruner(ctx)
	// A session the transport did not authenticate (stdio, HTTP without
	// tokens) is --agent or the local identity; a bearer token's identity
	// is its agent (or local, for --http-token). tools/list shows each only
	// what it may call.
	if warm {
		h.Warm(ctx)
	}
	if metricsLn != nil {
		go func() {
			if err := h.ServeMetrics(ctx, metricsLn, metricsToken); err != nil {
				h.Logger().Error("metrics endpoint stopped", "err", err)
			}
		}()
		// One parseable line, like the transport's.
		fmt.Fprintf(stderr, "plugboard: metrics at http://%s%s\n", metricsLn.Addr(), plughost.MetricsPath)
	}
	go h.Watch(ctx, watch)
	// The configuration file's plugin settings reload as the folders do.
	go watchPluginSettings(ctx, h, hf.conf, watch, seen)
	// So do the agents (agents_watch.go).
	if src, ok := hf.agentsSource(); ok {
		go watchAgents(ctx, h, src, watch, seen)
	}
	if ln == nil {
		h.Logger().Info("MCP transport", "transport", "stdio")
		h.Logger().Info("dashboard", "on", false, "why", "the dashboard is served over HTTP: serve --http ADDR")
		err = h.ServeStdio(ctx, "plugboard", version)
		if ctx.Err() != nil {
			return nil // interrupted: a normal way to stop a server
		}
		return err
	}
	httpOpts.Name, httpOpts.Version = "plugboard", version
	auth := "none"
	if len(httpOpts.Tokens) > 0 {
		auth = "bearer token"
	}
	if o := h.Policy().OAuth(); o != nil {
		auth = strings.TrimPrefix(auth+" + ", "none + ") + "oauth (issuer " + o.Issuer + ", resource " + o.Resource + ")"
	}
	h.Logger().Info("MCP transport", "transport", "http", "addr", ln.Addr().String(), "loopback", isLoopback(ln), "auth", auth,
		"read_timeout", hc.readTimeout, "session_idle", hc.sessionIdle, "max_sessions", hc.maxSessions, "stateless", hc.stateless)
	h.Logger().Info("dashboard", "on", !httpOpts.NoDashboard, "url", "http://"+ln.Addr().String()+"/")
	// One parseable line: tests and scripts read the URL (and so the port
	// chosen for ADDR:0) from it.
	fmt.Fprintf(stderr, "plugboard: serving MCP over HTTP at http://%s%s\n", ln.Addr(), plughost.MCPPath)
	fmt.Fprintf(stderr, "plugboard: dashboard at http://%s/\n", ln.Addr())
	return h.ServeHTTP(ctx, ln, httpOpts)
}

// httpFlags select the streamable HTTP transport. The configuration
// file's http section gives them values (host/config).
type httpFlags struct {
	addr, token, tokenFile string
	// tokenFileFrom names where tokenFile came from when not from the
	// command line (the configuration file), for errors.
	tokenFileFrom string
	// readTimeout, sessionIdle and maxSessions bound what one client can
	// hold (host.HTTPOptions).
	readTimeout, sessionIdle time.Duration
	maxSessions              int
	// stateless serves each request in a session of its own.
	stateless bool
	// stateKeyFile holds the key sealing requestStates.
	stateKeyFile string
}

// envHTTPToken is the bearer token when neither --http-token nor
// --http-token-file is given.
const envHTTPToken = "PLUGBOARD_HTTP_TOKEN"

func (f *httpFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.addr, "http", "", "serve MCP over streamable HTTP at http://ADDR/mcp instead of stdio (e.g. 127.0.0.1:8080; port 0 picks a free one)")
	fs.StringVar(&f.token, "http-token", "", "bearer token of the local SUPERVISOR identity over HTTP (default: $"+envHTTPToken+"); a token (this or an agent's from --agents) is required unless ADDR is loopback")
	fs.StringVar(&f.tokenFile, "http-token-file", "", "read the bearer token from FILE (surrounding whitespace ignored)")
	fs.DurationVar(&f.readTimeout, "http-read-timeout", plughost.DefaultHTTPReadTimeout, "time a client has to send one request's headers and body; a slower one loses its connection")
	fs.DurationVar(&f.sessionIdle, "http-session-idle", plughost.DefaultHTTPSessionIdle, "end an MCP session after this long without a request (0: never)")
	fs.IntVar(&f.maxSessions, "http-max-sessions", plughost.DefaultHTTPMaxSessions, "MCP sessions one identity may hold; opening another ends its least recently used idle one (0: no cap)")
	fs.BoolVar(&f.stateless, "http-stateless", false, "serve each request of clients before MCP 2026-07-28 in a session of its own (no Mcp-Session-Id): hosts behind a load balancer need no sticky routing; such clients get no mail notices, sampling or elicitation")
	fs.StringVar(&f.stateKeyFile, "http-state-key-file", "", "read the key sealing input-required results' requestState from FILE (at least 32 bytes, e.g. openssl rand -hex 32); hosts behind one load balancer share it (default: a key of the data directory)")
}

// listen opens ADDR and returns the transport's options: DNS-rebinding
// protection on a loopback address, bearer authentication when a token is
// set — the --http-token (the local identity) or an agent's (agentTokens,
// token → agent id) — or when the agents file has an oauth section. Without
// any, a non-loopback address is refused (exit 2).
func (f *httpFlags) listen(agentTokens map[string]string, oauth bool) (net.Listener, plughost.HTTPOptions, error) {
	var opts plughost.HTTPOptions
	token, from, err := f.resolveToken()
	if err != nil {
		return nil, opts, err
	}
	// A short token is refused outright, not warned about: a warning in a
	// log nobody reads leaves the server guessable. Agents-file tokens are
	// checked when the file is read (host/internal/policy).
	if n := len(token); token != "" && n < plughost.MinTokenLength {
		return nil, opts, &exitError{code: 2, err: fmt.Errorf("%s: the bearer token is %d characters; it needs at least %d random ones (e.g. openssl rand -hex 32)",
			from, n, plughost.MinTokenLength)}
	}
	switch {
	case f.readTimeout <= 0:
		return nil, opts, usageError("--http-read-timeout must be positive, got %v", f.readTimeout)
	case f.sessionIdle < 0:
		return nil, opts, usageError("--http-session-idle must not be negative, got %v", f.sessionIdle)
	case f.maxSessions < 0:
		return nil, opts, usageError("--http-max-sessions must not be negative, got %d", f.maxSessions)
	}
	opts.ReadTimeout, opts.SessionIdle, opts.MaxSessions, opts.Stateless = f.readTimeout, f.sessionIdle, f.maxSessions, f.stateless
	if f.stateKeyFile != "" {
		key, err := os.ReadFile(f.stateKeyFile)
		if err != nil {
			return nil, opts, &exitError{code: 2, err: fmt.Errorf("--http-state-key-file: %w", err)}
		}
		if key = bytes.TrimSpace(key); len(key) < 32 {
			return nil, opts, &exitError{code: 2, err: fmt.Errorf("--http-state-key-file %s: the key is %d bytes; it needs at least 32 random ones (e.g. openssl rand -hex 32)", f.stateKeyFile, len(key))}
		}
		opts.StateKey = key
	}
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
		tokens[token] = plughost.LocalID
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
	if len(tokens) > 0 {
		opts.Tokens = tokens
	} else if !oauth && !tcp.IP.IsLoopback() {
		ln.Close()
		return nil, opts, &exitError{code: 2, err: fmt.Errorf("--http %s listens beyond this machine (%s), so it needs a bearer token: "+
			"give agents tokens or an oauth section in --agents FILE, or set --http-token-file FILE, --http-token TOKEN or $%s, or listen on 127.0.0.1", f.addr, tcp.IP, envHTTPToken)}
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
			if f.tokenFileFrom != "" {
				return "", "", fmt.Errorf("%s: %w", f.tokenFileFrom, err)
			}
			return "", "", fmt.Errorf("--http-token-file: %w", err)
		}
		token, from = strings.TrimSpace(string(b)), "--http-token-file "+f.tokenFile
		if f.tokenFileFrom != "" {
			from = f.tokenFileFrom
		}
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

// isLoopback reports whether ln listens on a loopback address.
func isLoopback(ln net.Listener) bool {
	tcp, ok := ln.Addr().(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}
