package mcpserver

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	oauthpkg "github.com/plugboard/plugboard/host/internal/oauth"
)

// The HTTP transport serves an MCP server over streamable HTTP (go-sdk
// sessions, server-sent events for progress) at MCPPath, behind small
// middlewares: a DNS-rebinding and cross-origin guard when the server listens
// on loopback, a request guard (JSON bodies only, one Authorization header),
// and bearer-token authentication when an Authenticator is set. Every limit
// holds under abuse: requests must arrive within ReadTimeout, sessions end
// after SessionIdle without a request, and each identity holds at most
// MaxSessions of them.

// MCPPath, ExecutePath and HealthPath are the endpoints of the HTTP
// transport.
const (
	MCPPath = "/mcp"
	// ExecutePath is the REST endpoint of one tool call (see REST).
	ExecutePath = "/mcp/execute"
	HealthPath  = "/healthz"
)

// An Authenticator decides whom a bearer token belongs to: it returns the
// caller's identity and true, or false to refuse the request. It must compare
// secrets in constant time. The identity becomes the go-sdk's
// auth.TokenInfo.UserID: tool handlers see it in req.Extra.TokenInfo, and a
// session is bound to the identity that opened it.
type Authenticator func(token string) (identity string, ok bool)

// StaticToken admits exactly token. Both sides are hashed before a
// constant-time comparison, so neither the content nor the length of the
// expected token leaks through timing. The identity is "token".
func StaticToken(token string) Authenticator {
	want := sha256.Sum256([]byte(token))
	return func(got string) (string, bool) {
		g := sha256.Sum256([]byte(got))
		return "token", subtle.ConstantTimeCompare(g[:], want[:]) == 1
	}
}

// Tokens admits any of tokens, each mapped to its identity (an agent's
// token to its id). Like StaticToken it compares SHA-256 sums in constant
// time, and it compares against every entry, so timing tells neither which
// token matched nor whether one did. Empty tokens are ignored; with none
// left it admits nobody.
func Tokens(tokens map[string]string) Authenticator {
	type entry struct {
		sum [32]byte
		id  string
	}
	var entries []entry
	for tok, id := range tokens {
		if tok != "" {
			entries = append(entries, entry{sha256.Sum256([]byte(tok)), id})
		}
	}
	return func(got string) (string, bool) {
		g := sha256.Sum256([]byte(got))
		id, ok := "", false
		for _, e := range entries {
			if subtle.ConstantTimeCompare(g[:], e.sum[:]) == 1 {
				id, ok = e.id, true
			}
		}
		return id, ok
	}
}

// HTTPOptions configures NewHTTP.
type HTTPOptions struct {
	// Loopback says the server listens on a loopback address only. Requests
	// must then name it in their Host header — localhost or a loopback IP
	// literal (127.0.0.1, [::1]) with Port — and a browser's Origin, if any,
	// must be the server's own (http, a loopback host, Port): protection
	// from DNS rebinding and from web pages on other local ports.
	Loopback bool
	// Port is the listening port that Host headers must carry when Loopback.
	Port string
	// Authenticate, when set, requires "Authorization: Bearer TOKEN" on every
	// request (HealthPath is exempt on loopback). Nil admits everyone.
	Authenticate Authenticator
	// OAuth, with Authenticate, also admits the access tokens its answer
	// validates, and serves that verifier's Protected Resource Metadata;
	// nil, or a nil answer, is OAuth off (static tokens only).
	OAuth func() *oauthpkg.Verifier
	// Logger receives the transport's logs; nil discards them.
	Logger *slog.Logger
	// ShutdownGrace is how long Serve lets calls in flight finish once its
	// context ends before cancelling them (default 10s).
	ShutdownGrace time.Duration
	// Execute, when set, serves ExecutePath (REST tool calls, see REST)
	// behind the same guard and authentication as MCPPath.
	Execute http.Handler
	// ReadTimeout bounds the reading of one request, headers and body
	// (default DefaultReadTimeout): a client trickling either loses its
	// connection. Responses, event streams included, are not bounded.
	ReadTimeout time.Duration
	// SessionIdle ends a session that has received no request for this
	// long (default DefaultSessionIdle; negative: never).
	SessionIdle time.Duration
	// MaxSessions caps the sessions of one identity (default
	// DefaultMaxSessions; negative: no cap). See sessionLimiter.
	MaxSessions int
	// Stateless serves every request in a session of its own that ends
	// with it (the go-sdk's stateless mode): no Mcp-Session-Id, so any
	// host behind a load balancer can answer any request. What needs a
	// session across requests is given up: notifications outside a
	// request (mail notices, list changes), and server-to-client requests
	// (sampling, elicitation, roots), which fail at once. SessionIdle and
	// MaxSessions do not apply.
	Stateless bool
	// Dashboard, when set, serves "/" and the paths Dashboard.Handles
	// (host/internal/dashboard) behind the same loopback and request
	// guards; it authenticates its own requests (a session cookie from a
	// login with a bearer token), so the bearer check does not apply.
	Dashboard interface {
		http.Handler
		Handles(path string) bool
	}
}

// Defaults of HTTPOptions.
const (
	DefaultReadTimeout = 30 * time.Second
	DefaultSessionIdle = time.Hour
	DefaultMaxSessions = 64
)

// HTTPServer is the streamable HTTP transport of one MCP server. It is an
// http.Handler; Serve runs it on a listener with graceful shutdown.
type HTTPServer struct {
	opts    HTTPOptions
	handler http.Handler

	mu sync.Mutex
	// draining is set once shutdown starts: new requests are refused.
	draining bool
	// active counts the requests being served other than event streams;
	// idle, once draining, is closed when it reaches zero.
	active int
	idle   chan struct{}

	// streams ends the standalone event streams (GET), which last as long
	// as their session; a client whose stream ends reconnects, and fails
	// its session if it cannot, so they end only after the last call.
	streams    context.Context
	endStreams context.CancelFunc
	// calls ends the contexts of tool calls still running at the end of the
	// grace.
	calls       context.Context
	cancelCalls context.CancelFunc
	// sessions caps each identity's sessions; nil without a cap.
	sessions *sessionLimiter
}

// NewHTTP returns the HTTP transport of srv. It adds a receiving middleware
// to srv (so that Serve can cancel calls still running after the grace):
// create one HTTPServer per mcp.Server.
func NewHTTP(srv *mcp.Server, opts HTTPOptions) *HTTPServer {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.ShutdownGrace <= 0 {
		opts.ShutdownGrace = 10 * time.Second
	}
	if opts.ReadTimeout <= 0 {
		opts.ReadTimeout = DefaultReadTimeout
	}
	if opts.SessionIdle == 0 {
		opts.SessionIdle = DefaultSessionIdle
	}
	if opts.MaxSessions == 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	h := &HTTPServer{opts: opts}
	h.streams, h.endStreams = context.WithCancel(context.Background())
	h.calls, h.cancelCalls = context.WithCancel(context.Background())
	srv.AddReceivingMiddleware(h.cancelOnStop)
	if opts.MaxSessions > 0 && !opts.Stateless {
		h.sessions = newSessionLimiter(opts.MaxSessions)
		srv.AddReceivingMiddleware(h.sessions.middleware)
	}

	// The go-sdk closes a session once SessionIdle passes without a
	// request on it (a call in progress holds it open).
	streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Logger:         opts.Logger,
		SessionTimeout: max(opts.SessionIdle, 0),
		Stateless:      opts.Stateless,
	})
	// MCP 2026-07-28 has no sessions: every request says its version
	// (MCP-Protocol-Version) and carries what the server must know, and the
	// go-sdk serves that revision only in its stateless mode. Such requests
	// go to a stateless handler of the same server, whatever Stateless
	// says; the others keep the sessions of their revision. A request's
	// context ends when its POST does: closing the stream is how a client
	// at the new revision cancels, on whichever host runs the call.
	modern := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Logger:                       opts.Logger,
		Stateless:                    true,
		PropagateRequestCancellation: true,
	})
	mux := http.NewServeMux()
	mux.Handle(MCPPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if IsModernRevision(r.Header.Get("Mcp-Protocol-Version")) {
			modern.ServeHTTP(w, r)
			return
		}
		streamable.ServeHTTP(w, r)
	}))
	if opts.Execute != nil {
		mux.Handle(ExecutePath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// Like an MCP call, a REST call ends when Serve gives up on it.
			ctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			stop := context.AfterFunc(h.calls, cancel)
			defer stop()
			opts.Execute.ServeHTTP(w, r.WithContext(ctx))
		}))
	}
	mux.HandleFunc(HealthPath, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeHTTPError(w, http.StatusMethodNotAllowed, "method_not_allowed", "use GET")
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeHTTPError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no such endpoint %q; MCP is served at %s", r.URL.Path, MCPPath))
	})

	var next http.Handler = mux
	if opts.Authenticate != nil {
		authed := RequireBearer(opts.Authenticate, opts.OAuth, mux)
		if opts.Dashboard != nil {
			bearer := authed
			authed = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if opts.Dashboard.Handles(r.URL.Path) {
					opts.Dashboard.ServeHTTP(w, r)
					return
				}
				bearer.ServeHTTP(w, r)
			})
		}
		if opts.Loopback {
			// A local liveness probe needs no secret; elsewhere the health
			// endpoint would only tell scanners a server is here.
			next = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == HealthPath {
					mux.ServeHTTP(w, r)
					return
				}
				authed.ServeHTTP(w, r)
			})
		} else {
			next = authed
		}
	}
	if opts.Authenticate == nil && opts.Dashboard != nil {
		open := next
		next = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if opts.Dashboard.Handles(r.URL.Path) {
				opts.Dashboard.ServeHTTP(w, r)
				return
			}
			open.ServeHTTP(w, r)
		})
	}
	next = h.track(next)
	next = RequestGuard(next)
	if opts.Loopback {
		next = LoopbackGuard(opts.Port, next)
	}
	if opts.OAuth != nil {
		// The metadata is a public document clients read before they have
		// a token, from any origin (RFC 9728 §3): no guard applies.
		guarded := next
		next = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !metadataHandler(opts.OAuth, w, r) {
				guarded.ServeHTTP(w, r)
			}
		})
	}
	h.handler = next
	return h
}

// ServeHTTP implements http.Handler.
func (h *HTTPServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.handler.ServeHTTP(w, r)
}

// Serve serves HTTP on ln until ctx ends, then shuts down gracefully: it
// stops listening and refuses new requests (503), lets requests in flight
// finish for up to ShutdownGrace, then cancels the calls still running,
// ends the standalone event streams and closes every connection. It returns
// nil after a shutdown, or the listener's error.
func (h *HTTPServer) Serve(ctx context.Context, ln net.Listener) error {
	// ReadTimeout covers a request's headers and body: net/http clears
	// the connection's read deadline once the body is read, so long calls
	// and event streams are not cut by it.
	hs := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: min(10*time.Second, h.opts.ReadTimeout),
		ReadTimeout:       h.opts.ReadTimeout,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(h.opts.Logger.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	idle := h.drain()
	h.opts.Logger.Info("HTTP transport shutting down; waiting for calls in flight", "grace", h.opts.ShutdownGrace)
	// Shutdown closes the listener and idle connections at once, then waits
	// for the active ones, which include the event streams until they end.
	stopWaiting, giveUp := context.WithCancel(context.WithoutCancel(ctx))
	defer giveUp()
	shutdown := make(chan error, 1)
	go func() { shutdown <- hs.Shutdown(stopWaiting) }()
	grace := time.NewTimer(h.opts.ShutdownGrace)
	defer grace.Stop()
	select {
	case <-idle:
	case <-grace.C:
		h.opts.Logger.Warn("calls still running after the shutdown grace; cancelling them", "grace", h.opts.ShutdownGrace)
		h.cancelCalls()
		// Cancelled calls answer at their plugin's next check; give their
		// responses a moment to reach the clients.
		select {
		case <-idle:
		case <-time.After(2 * time.Second):
		}
	}
	h.endStreams()
	select {
	case <-shutdown:
	case <-time.After(2 * time.Second):
		giveUp()
		<-shutdown
		_ = hs.Close()
	}
	<-served // http.ErrServerClosed
	return nil
}

// cancelOnStop is an mcp.Middleware giving every incoming request a context
// that also ends when Serve gives up waiting for it.
func (h *HTTPServer) cancelOnStop(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(h.calls, cancel)
		defer stop()
		return next(ctx, method, req)
	}
}

// track counts the requests in flight for the shutdown and answers 503
// once it has started. Event streams (GET on MCPPath) are not counted:
// they get a context that ends after the last call.
func (h *HTTPServer) track(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stream := r.Method == http.MethodGet && r.URL.Path == MCPPath
		if !h.enter(!stream) {
			w.Header().Set("Connection", "close")
			writeHTTPError(w, http.StatusServiceUnavailable, "shutting_down", "the server is shutting down")
			return
		}
		if stream {
			ctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			stop := context.AfterFunc(h.streams, cancel)
			defer stop()
			r = r.WithContext(ctx)
		} else {
			defer h.leave()
		}
		next.ServeHTTP(w, r)
	})
}

// enter admits a request unless draining, counting it if count.
func (h *HTTPServer) enter(count bool) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.draining {
		return false
	}
	if count {
		h.active++
	}
	return true
}

func (h *HTTPServer) leave() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.active--
	if h.active == 0 && h.idle != nil {
		close(h.idle)
		h.idle = nil
	}
}

// drain starts refusing requests and returns a channel closed once none
// is in flight.
func (h *HTTPServer) drain() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.draining = true
	idle := make(chan struct{})
	if h.active == 0 {
		close(idle)
	} else {
		h.idle = idle
	}
	return idle
}

// RequireBearer admits requests whose "Authorization: Bearer TOKEN" header
// a admits or, when oauth gives a verifier, that holds an access token the
// authorization server issued for this server; it answers 401 (403 for a
// scope the token lacks) with a WWW-Authenticate challenge otherwise,
// naming the Protected Resource Metadata when OAuth is on. The identity is
// attached as the go-sdk's auth.TokenInfo. oauth may be nil, and may
// answer nil (OAuth off for now).
func RequireBearer(a Authenticator, oauth func() *oauthpkg.Verifier, next http.Handler) http.Handler {
	// The go-sdk's own middleware attaches the TokenInfo (its context key is
	// unexported); the verifier only hands over what was decided below.
	// Expiry with skew was checked by the oauth verifier already.
	attach := auth.RequireBearerToken(func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		info, ok := ctx.Value(identityKey{}).(*auth.TokenInfo)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return info, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true, ClockSkew: oauthpkg.MaxClockSkew})(next)
	if oauth == nil {
		oauth = func() *oauthpkg.Verifier { return nil }
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := oauth()
		token, present := bearerToken(r)
		if !present {
			if v != nil {
				w.Header().Set("WWW-Authenticate", v.Challenge(nil))
			} else {
				w.Header().Set("WWW-Authenticate", `Bearer realm="plugboard"`)
			}
			writeHTTPError(w, http.StatusUnauthorized, "unauthorized", "missing bearer token: send Authorization: Bearer TOKEN")
			return
		}
		if id, ok := a(token); ok {
			attach.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), identityKey{}, &auth.TokenInfo{UserID: id})))
			return
		}
		if v == nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="plugboard", error="invalid_token"`)
			writeHTTPError(w, http.StatusUnauthorized, "unauthorized", "invalid bearer token")
			return
		}
		who, err := v.Verify(r.Context(), token)
		if err != nil {
			refusal, ok := err.(*oauthpkg.Error)
			if !ok {
				refusal = &oauthpkg.Error{Status: http.StatusUnauthorized, Code: oauthpkg.CodeInvalidToken, Description: err.Error()}
			}
			if refusal.Status == http.StatusServiceUnavailable {
				w.Header().Set("Retry-After", "5")
			} else {
				w.Header().Set("WWW-Authenticate", v.Challenge(refusal))
			}
			writeHTTPError(w, refusal.Status, refusal.Code, refusal.Description)
			return
		}
		info := &auth.TokenInfo{UserID: who.ID, Scopes: who.Scopes, Expiration: who.Expiry}
		if !who.Agent {
			info.Extra = map[string]any{RoleExtra: who.Role}
		}
		attach.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), identityKey{}, info)))
	})
}

// RoleExtra is the auth.TokenInfo.Extra key of the agent type an OAuth
// token's role claim gave an identity that is no configured agent.
const RoleExtra = "plugboard.role"

// metadataHandler serves the Protected Resource Metadata (RFC 9728) of
// the verifier in force, at its path and at the bare well-known path; it
// answers false for any other request, or when OAuth is off.
func metadataHandler(oauth func() *oauthpkg.Verifier, w http.ResponseWriter, r *http.Request) bool {
	if oauth == nil || !strings.HasPrefix(r.URL.Path, oauthpkg.WellKnownPath) {
		return false
	}
	v := oauth()
	if v == nil || (r.URL.Path != v.MetadataPath() && r.URL.Path != oauthpkg.WellKnownPath) {
		return false
	}
	auth.ProtectedResourceMetadataHandler(v.Metadata()).ServeHTTP(w, r)
	return true
}

type identityKey struct{}

// bearerToken parses "Authorization: Bearer TOKEN" exactly as the go-sdk
// does (two fields, scheme case-insensitive).
func bearerToken(r *http.Request) (string, bool) {
	fields := strings.Fields(r.Header.Get("Authorization"))
	if len(fields) != 2 || !strings.EqualFold(fields[0], "bearer") {
		return "", false
	}
	return fields[1], true
}

// RequestGuard refuses what no client of this server sends and a forger
// would: a POST whose body is not JSON (415; a web page can post
// text/plain, form and multipart bodies without asking the server first,
// but never application/json) and a request with more than one
// Authorization header (400; which one a proxy, this server and the
// go-sdk would each read is anyone's guess).
func RequestGuard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.Header.Values("Authorization")) > 1 {
			writeHTTPError(w, http.StatusBadRequest, "ambiguous_authorization",
				"the request carries more than one Authorization header; send exactly one: Authorization: Bearer TOKEN")
			return
		}
		if r.Method == http.MethodPost {
			if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
				writeHTTPError(w, http.StatusUnsupportedMediaType, "unsupported_media_type",
					fmt.Sprintf("Content-Type %q is not application/json; send a JSON body with Content-Type: application/json", r.Header.Get("Content-Type")))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// LoopbackGuard protects a server listening on loopback from DNS rebinding
// and from web pages: it answers 403 unless the Host header names a
// loopback host (localhost or a loopback IP literal) with port, and any
// Origin header is the server's own origin — http, a loopback host, port.
// Loopback is not a credential: a page served by anything else on this
// machine (another port is another origin) is refused like any other.
func LoopbackGuard(port string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackHost(r.Host, port) {
			writeHTTPError(w, http.StatusForbidden, "forbidden_host",
				fmt.Sprintf("Host %q is not this server's loopback address (localhost:%s, 127.0.0.1:%s or [::1]:%s)", r.Host, port, port, port))
			return
		}
		if origin, sent := r.Header["Origin"]; sent && (len(origin) != 1 || !ownOrigin(origin[0], port)) {
			writeHTTPError(w, http.StatusForbidden, "forbidden_origin",
				fmt.Sprintf("cross-origin request from %q refused: only this server's own origin (http://localhost:%s) may call it", strings.Join(origin, ", "), port))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// loopbackHost reports whether a Host header names a loopback host on port
// (a header without a port stands for port 80).
func loopbackHost(hostport, port string) bool {
	host, p, err := net.SplitHostPort(hostport)
	if err != nil {
		// No port ("localhost", "[::1]"): the default one.
		if host, _, err = net.SplitHostPort(hostport + ":80"); err != nil {
			return false
		}
		p = "80"
	}
	return p == port && isLoopbackName(host)
}

// ownOrigin reports whether an Origin header is this server's own origin:
// http on a loopback host with port (no port is 80). "null" and other
// opaque origins, https (the server speaks plain HTTP) and other ports are
// not.
func ownOrigin(origin, port string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Scheme != "http" || u.Host == "" || u.Path != "" || u.User != nil {
		return false
	}
	p := u.Port()
	if p == "" {
		p = "80"
	}
	return p == port && isLoopbackName(u.Hostname())
}

func isLoopbackName(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Zone() == "" && ip.IsLoopback()
}

// writeHTTPError answers status with a small JSON body
// {"error": code, "message": message}.
func writeHTTPError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(struct {
		Error   string `json:"error"`
		Message string `json:"message"`
	}{code, message})
}
