package host

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/plugboard/plugboard/host/internal/mcpserver"
)

// HTTP transport defaults and paths.
const (
	// MCPPath is where streamable HTTP MCP is served.
	MCPPath = mcpserver.MCPPath
	// DefaultHTTPReadTimeout, DefaultHTTPSessionIdle and
	// DefaultHTTPMaxSessions are HTTPOptions' zero values.
	DefaultHTTPReadTimeout = mcpserver.DefaultReadTimeout
	DefaultHTTPSessionIdle = mcpserver.DefaultSessionIdle
	DefaultHTTPMaxSessions = mcpserver.DefaultMaxSessions
)

// HTTPOptions configure ServeHTTP.
type HTTPOptions struct {
	// Name and Version are the server's, as clients see them.
	Name, Version string
	// Tokens maps each bearer token to the agent it authenticates (LocalID
	// for the operator). Without tokens requests are not authenticated:
	// the caller decides whether the listener may then be reached from
	// beyond this machine. Those that are agents' tokens in the host's
	// Policy follow it when SetPolicy replaces it; the others stay.
	Tokens map[string]string
	// ReadTimeout is how long a client has to send one request's headers
	// and body; SessionIdle ends an MCP session without requests for this
	// long; MaxSessions caps the sessions one identity holds. Zero is the
	// default, negative none (ReadTimeout must not be negative).
	ReadTimeout, SessionIdle time.Duration
	MaxSessions              int
	// Stateless serves each request in a session of its own, so that
	// hosts sharing a store behind a load balancer need no sticky routing
	// (see mcpserver.HTTPOptions.Stateless for what it gives up).
	Stateless bool
	// NoDashboard leaves the web dashboard out: "/" is then a 404 like
	// any other path but the MCP endpoints.
	NoDashboard bool
	// StateKey seals the requestState of input-required results (MCP
	// 2026-07-28): hosts behind one balancer share it, so a client may
	// answer on any of them. nil takes a key of the data directory's.
	StateKey []byte
}

// ServeHTTP serves MCP over streamable HTTP at MCPPath (and the REST
// route, and the web dashboard at "/") on ln until ctx ends, then lets requests in flight finish within
// ShutdownGrace. A loopback listener gets DNS-rebinding protection.
func (h *Host) ServeHTTP(ctx context.Context, ln net.Listener, opts HTTPOptions) error {
	tcp, ok := ln.Addr().(*net.TCPAddr)
	if !ok {
		return fmt.Errorf("serve HTTP on %s: not a TCP address", ln.Addr())
	}
	if opts.ReadTimeout < 0 {
		return fmt.Errorf("serve HTTP: negative read timeout %v", opts.ReadTimeout)
	}
	mopts := h.serverOptions(opts.Name, opts.Version)
	if len(opts.StateKey) > 0 {
		mopts.StateKey = opts.StateKey
	}
	hopts := mcpserver.HTTPOptions{
		Loopback: tcp.IP.IsLoopback(), Port: strconv.Itoa(tcp.Port),
		Logger: h.log, ShutdownGrace: ShutdownGrace, Execute: mcpserver.REST(h.dispatcher, mopts),
		ReadTimeout: opts.ReadTimeout, SessionIdle: opts.SessionIdle, MaxSessions: opts.MaxSessions,
		Stateless: opts.Stateless,
	}
	// The agents' tokens follow the agents file (SetPolicy).
	var route *tokenRoute
	if len(opts.Tokens) > 0 || h.verifier() != nil {
		var unroute func()
		route, unroute = h.routeTokens(opts.Tokens)
		defer unroute()
		hopts.Authenticate = route.authenticate
		hopts.OAuth = h.verifier
	} else {
		defer h.openTransport()()
	}
	if !opts.NoDashboard {
		dash := h.dashboardFor(opts, mopts)
		// The pages' event streams end when serving does, or they would
		// hold the shutdown for its whole grace.
		defer context.AfterFunc(ctx, dash.Close)()
		hopts.Dashboard = dash
		if route != nil {
			h.attach(route, dash)
		}
	}
	return mcpserver.NewHTTP(h.server(mopts), hopts).Serve(ctx, ln)
}
