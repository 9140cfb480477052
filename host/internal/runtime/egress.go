package runtime

// HTTP egress: Extism's http_request for plugins the operator let out.
//
// Design. Each plugin gets its own http.Client, built at compile time from
// PluginOptions.HTTP, with three gates, every one of which must pass:
//
//  1. the URL: scheme http or https, and host and port matching one of
//     Egress.AllowedHosts ("api.example.com", "*.example.com" for any
//     subdomain but not the domain itself, either with ":port"; without a
//     port only 80 and 443). Checked before the request and again for every
//     redirect hop (http.Client.CheckRedirect), at most maxRedirects hops.
//  2. the address: the Transport's DialContext resolves the name once,
//     checks every address it got, refuses all of them if any is loopback,
//     private (RFC 1918, ULA), link-local (cloud metadata at
//     169.254.169.254 included), unspecified, multicast, CGNAT 100.64/10,
//     "this network" 0/8, reserved 240/4 or the IPv4-mapped or NAT64 form
//     of one (unless Egress.AllowPrivate), and dials exactly the checked
//     addresses, by IP: there is no second lookup a rebinding DNS server
//     could answer differently. The Transport has no proxy (HTTP_PROXY and
//     friends are ignored), so the address checked is the one connected.
//  3. the budget: one request lasts at most Egress.Timeout (when > 0) and
//     never past the call's context, which cancels it; the body read is
//     capped at Egress.MaxResponseBytes (default: the engine's
//     MaxHostCallBytes), the headers at Limits.MaxHTTPHeaderBytes; a call
//     makes at most Limits.MaxHTTPRequests requests, each recorded with
//     its URL and error cut to maxRecordText.
//  4. the connections: every connection the plugin's client opens holds a
//     slot of the plugin's Limits.MaxHTTPConnections and of the engine's
//     Config.MaxHostHTTPConnections from the dial until it is closed.
//     When either is full the plugin's idle connections are closed and,
//     if that frees no slot, the request is refused (resource_exhausted
//     naming the setting) rather than queued. Go's Transport finishes a
//     dial and its TLS handshake in the background after the request that
//     started them ended (to pool the connection for a later request); a
//     guest would then hold connections past its calls, as many as it
//     could end calls while they were being opened. dial and dialTLS do
//     both within the request instead: a call that ends leaves no
//     connection being opened for it.
//
// Stand-ins, for tests: the conformance kit's --http-stand-in (engine-wide,
// Config.HTTPStandIns; serve has no such option) sends a plugin's requests
// to a host, say api.example.com, to a local test server instead. They
// change where a request the gates allow is sent, never what is allowed:
// the URL gate checks the URL the plugin asked for (and each redirect
// hop's) against the plugin's own allowed hosts first, exactly as under
// serve, and only then does the client's RoundTripper (standInRouter, in
// standin.go) send a copy to the stand-in's scheme, host and port, path
// and query kept, with the Host header of the host meant. The address gate
// lets through, without AllowPrivate, the stand-ins' own addresses only,
// and only on a second Transport that carries nothing but requests sent to
// a stand-in, so neither a redirect from the stand-in to another loopback
// port nor a request the plugin makes to the stand-in's address itself
// passes (and no pooled connection is shared between the two). The budget
// and connection gates count both Transports together, and the request's
// record keeps the URL the plugin asked for, followed by
// " (stand-in URL)".
//
// TLS verifies against the system roots (on Linux, SSL_CERT_FILE and
// SSL_CERT_DIR are honoured, which the tests use for a test CA).
//
// Failure semantics. Extism's own hosts (go-sdk and the Rust runtime) trap
// the call on every http_request failure: host not allowed, network error,
// body too large; a guest never sees an error value, and go-pdk's Send has
// no error return. plugboard does the same, but each trap carries an
// envelope that says why, to the agent and (through the decision log) the
// operator:
//
//   - refused (host, scheme, address, redirect): permission_denied, naming
//     the URL (without query string) and the plugin, with a hint naming the
//     setting that would allow it (plugins.settings.<plugin>.allowed_hosts
//     or .allow_private);
//   - body over the cap: resource_exhausted, details limit "http_response",
//     max_bytes and url;
//   - headers, requests or connections over the plugin's Limits:
//     resource_exhausted naming the setting (plugins.settings.<plugin>.
//     max_http_header_bytes, max_http_requests, max_http_connections);
//   - the call's deadline or cancellation: plugin_timeout or cancelled, as
//     for any other interrupted call;
//   - Egress.Timeout, or a network or TLS error reaching an allowed host:
//     unavailable (retryable), naming the URL and the cause. Returning
//     status 0 to the guest instead would let a plugin handle it, but no
//     Extism plugin expects that (Extism hosts trap), and a plugin that
//     ignores the status would answer as if an empty body had come back.
//
// A response with any status (4xx, 5xx included) is a success for the host:
// the guest reads it with http_status_code, as in Extism.

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/tracing"
)

// HTTPRecord is one Extism http_request a plugin made, handed to
// CallOptions.HTTP for the decision log. The runtime has already masked the
// plugin's secrets in every field.
type HTTPRecord struct {
	// Method is the request's method (GET when the plugin gave none).
	Method string
	// Host is the URL's host[:port], lower case.
	Host string
	// URL is scheme://host[:port]/path: without user info, query string or
	// fragment, which may carry keys. When the request (or a redirect hop)
	// went to a stand-in (Config.HTTPStandIns, for tests), it is followed
	// by " (stand-in scheme://host:port)".
	URL string
	// Status is the final response's status code; 0 when there was none.
	Status int
	// Bytes is the size of the response body read.
	Bytes int64
	// Duration is the time from the request to the end of the body.
	Duration time.Duration
	// Err is "" on success, else the message of the envelope the call
	// ended with (refusal, cap, timeout, network error).
	Err string
}

// maxRedirects bounds the hops of one request.
const maxRedirects = 5

// maxRecordText bounds each text field of an HTTPRecord: the record is kept
// for the whole call (and for the decision log), while the URL a guest
// passes may be as long as a host block.
const maxRecordText = 2048

// clipText cuts s to at most n bytes (on a UTF-8 boundary), saying how long
// it was.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:cut], len(s))
}

// hostRule is one parsed Egress.AllowedHosts entry.
type hostRule struct {
	host     string // lower case, without the "*." of a wildcard
	wildcard bool   // any subdomain of host, not host itself
	port     string // "" means 80 or 443
}

// egress is one plugin's HTTP client and policy.
type egress struct {
	plugin    string
	on        bool // Egress set; false refuses every request
	rules     []hostRule
	private   bool
	maxBytes  int64
	timeout   time.Duration
	client    *http.Client
	transport *http.Transport
	// standIns are the engine's stand-ins, nil without; standInTransport
	// carries the requests sent to one (standInRouter).
	standIns         *standIns
	standInTransport *http.Transport
	// headerBytes caps a response's header block; conns counts the
	// plugin's open connections and hostConns the engine's (gate 4).
	headerBytes int
	conns       *connLimiter
	hostConns   *connLimiter
}

func newEgress(plugin string, eg *Egress, defaultMax int, limits Limits, hostConns *connLimiter) (*egress, error) {
	g := &egress{plugin: plugin, maxBytes: int64(defaultMax), headerBytes: limits.MaxHTTPHeaderBytes,
		conns: newConnLimiter(limits.MaxHTTPConnections), hostConns: hostConns}
	if eg == nil {
		return g, nil
	}
	g.on = true
	g.private = eg.AllowPrivate
	g.timeout = max(eg.Timeout, 0)
	if eg.MaxResponseBytes > 0 {
		g.maxBytes = eg.MaxResponseBytes
	}
	for _, h := range eg.AllowedHosts {
		r, err := parseHostRule(h)
		if err != nil {
			return nil, fmt.Errorf("plugins.settings.%s.allowed_hosts: %w", plugin, err)
		}
		g.rules = append(g.rules, r)
	}
	g.transport = g.newTransport(false)
	g.client = &http.Client{Transport: g.transport, CheckRedirect: g.checkRedirect}
	return g, nil
}

// newTransport is one of the plugin's Transports: its own (standIn false)
// or the one carrying the requests sent to a stand-in, whose address gate
// lets the stand-ins' addresses through.
func (g *egress) newTransport(standIn bool) *http.Transport {
	t := &http.Transport{
		Proxy:                  nil,
		ForceAttemptHTTP2:      true,
		TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12},
		MaxIdleConns:           8,
		IdleConnTimeout:        30 * time.Second,
		MaxResponseHeaderBytes: int64(g.headerBytes),
	}
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		return g.dial(ctx, network, addr, standIn)
	}
	t.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		return g.dialTLS(ctx, t, network, addr, standIn)
	}
	return t
}

// useStandIns routes the plugin's requests through the engine's stand-ins
// (standInRouter); without any, or with egress off, the client stays as
// newEgress made it.
func (g *egress) useStandIns(s *standIns) {
	if s == nil || !g.on {
		return
	}
	g.standIns = s
	g.standInTransport = g.newTransport(true)
	g.client.Transport = standInRouter{g}
}

// closeIdle drops the idle connections of both Transports.
func (g *egress) closeIdle() {
	g.transport.CloseIdleConnections()
	if g.standInTransport != nil {
		g.standInTransport.CloseIdleConnections()
	}
}

// close drops the idle connections.
func (g *egress) close() {
	if g != nil && g.transport != nil {
		g.closeIdle()
	}
}

func parseHostRule(s string) (hostRule, error) {
	var r hostRule
	h := strings.ToLower(strings.TrimSpace(s))
	if h == "" {
		return r, errors.New("empty host")
	}
	if strings.Contains(h, "/") {
		return r, fmt.Errorf("%q: give a host name (api.example.com, *.example.com, host:port), not a URL", s)
	}
	host, port := h, ""
	switch {
	case strings.HasPrefix(h, "["):
		var err error
		if host, port, err = net.SplitHostPort(h); err != nil {
			if !strings.HasSuffix(h, "]") {
				return r, fmt.Errorf("%q: %v", s, err)
			}
			host, port = h[1:len(h)-1], ""
		}
	case strings.Count(h, ":") == 1:
		host, port, _ = strings.Cut(h, ":")
	}
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return r, fmt.Errorf("%q: port must be 1-65535", s)
		}
	}
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		r.wildcard, host = true, rest
	}
	host = strings.TrimSuffix(host, ".")
	if host == "" || strings.ContainsAny(host, "*@ ") {
		return r, fmt.Errorf("%q: a host is a name or an address, optionally \"*.\" followed by a domain", s)
	}
	r.host, r.port = host, port
	return r, nil
}

// urlHostPort returns u's host (lower case, without a trailing dot) and its
// port (the scheme's default when absent).
func urlHostPort(u *url.URL) (string, string) {
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return host, port
}

func (g *egress) allows(host, port string) bool {
	for _, r := range g.rules {
		if r.wildcard && !strings.HasSuffix(host, "."+r.host) || !r.wildcard && host != r.host {
			continue
		}
		if r.port == port || r.port == "" && (port == "80" || port == "443") {
			return true
		}
	}
	return false
}

// displayURL is u as messages and records show it: scheme://host/path,
// without user info, query string or fragment.
func displayURL(u *url.URL) string {
	c := *u
	c.User = nil
	c.RawQuery, c.ForceQuery = "", false
	c.Fragment, c.RawFragment = "", ""
	return c.String()
}

// suggestion is what the operator would add to allowed_hosts for u.
func suggestion(u *url.URL) string {
	host, port := urlHostPort(u)
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if u.Port() == "" || port == "80" || port == "443" {
		return host
	}
	return host + ":" + port
}

// refusal is an egress check that failed; it travels through net/http's
// error wrapping to http_request, which ends the call with env.
type refusal struct{ env *abi.Envelope }

func (r *refusal) Error() string { return r.env.Message }

func (g *egress) refuseURL(u *url.URL, redirectedFrom *url.URL) *refusal {
	shown := displayURL(u)
	setting := "plugins.settings." + g.plugin + ".allowed_hosts"
	var msg string
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		msg = fmt.Sprintf("plugin %s may not reach %s: only http and https URLs are allowed", g.plugin, shown)
		env := abi.NewEnvelope(abi.CodePermissionDenied, msg, "the plugin can only make http and https requests")
		env.Details = map[string]any{"plugin": g.plugin, "url": shown}
		return &refusal{env}
	case !g.on:
		msg = fmt.Sprintf("plugin %s may not reach %s: HTTP egress is off for this plugin", g.plugin, shown)
	case redirectedFrom != nil:
		msg = fmt.Sprintf("plugin %s may not reach %s (a redirect from %s): %s is not among its allowed hosts",
			g.plugin, shown, displayURL(redirectedFrom), suggestion(u))
	default:
		msg = fmt.Sprintf("plugin %s may not reach %s: %s is not among its allowed hosts", g.plugin, shown, suggestion(u))
	}
	hint := fmt.Sprintf("for the operator: if plugin %s should reach this host, add %q to %s in the configuration file",
		g.plugin, suggestion(u), setting)
	env := abi.NewEnvelope(abi.CodePermissionDenied, msg, hint)
	env.Details = map[string]any{"plugin": g.plugin, "url": shown, "host": suggestion(u), "setting": setting}
	return &refusal{env}
}

func (g *egress) refuseAddr(host string, ip netip.Addr, kind string) *refusal {
	ip = ip.Unmap()
	setting := "plugins.settings." + g.plugin + ".allow_private"
	msg := fmt.Sprintf("plugin %s may not reach host %s: it resolves to %s, a %s address", g.plugin, host, ip, kind)
	hint := fmt.Sprintf("for the operator: if plugin %s should reach hosts on this machine or a private network, set %s = true in the configuration file",
		g.plugin, setting)
	env := abi.NewEnvelope(abi.CodePermissionDenied, msg, hint)
	env.Details = map[string]any{"plugin": g.plugin, "host": host, "address": ip.String(), "setting": setting}
	return &refusal{env}
}

// check is the URL gate, for the request and each redirect hop.
func (g *egress) check(u *url.URL, from *url.URL) *refusal {
	if !g.on || u.Scheme != "http" && u.Scheme != "https" {
		return g.refuseURL(u, from)
	}
	if host, port := urlHostPort(u); !g.allows(host, port) {
		return g.refuseURL(u, from)
	}
	return nil
}

func (g *egress) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	if r := g.check(req.URL, via[len(via)-1].URL); r != nil {
		return r
	}
	return nil
}

// lookupNetIP resolves names for dial; a variable so tests could stand in
// a resolver.
var lookupNetIP = net.DefaultResolver.LookupNetIP

// requestCtxKey carries, in a request's context, that context itself: the
// Transport hands dial a context detached from the request's cancellation,
// and dial finds the request's through its values, which are kept.
type requestCtxKey struct{}

// withRequestCtx is ctx as a request's context, whose end ends the dial
// the request starts.
func withRequestCtx(ctx context.Context) context.Context {
	return context.WithValue(ctx, requestCtxKey{}, ctx)
}

// boundToRequest returns ctx, cancelled too when the request that carries
// it (withRequestCtx) ends, and the function releasing it.
func boundToRequest(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if rc, ok := ctx.Value(requestCtxKey{}).(context.Context); ok {
		stop := context.AfterFunc(rc, cancel)
		return ctx, func() {
			stop()
			cancel()
		}
	}
	return ctx, cancel
}

// tlsHandshakeTimeout bounds a TLS handshake, within its request; a
// variable so that a test can take it out of the way.
var tlsHandshakeTimeout = 10 * time.Second

// dial is the Transport's dial of http URLs, within the request; standIn
// is set on the stand-ins' Transport.
func (g *egress) dial(ctx context.Context, network, addr string, standIn bool) (net.Conn, error) {
	ctx, done := boundToRequest(ctx)
	defer done()
	return g.openConn(ctx, network, addr, standIn)
}

// dialTLS is the Transport's dial of https URLs: openConn and the TLS
// handshake (against the system roots, for the URL's host name), both
// within the request. t is the Transport dialling.
func (g *egress) dialTLS(ctx context.Context, t *http.Transport, network, addr string, standIn bool) (net.Conn, error) {
	ctx, done := boundToRequest(ctx)
	defer done()
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	raw, err := g.openConn(ctx, network, addr, standIn)
	if err != nil {
		return nil, err
	}
	// The Transport has set the protocols (h2, http/1.1) it speaks in its
	// TLSClientConfig before its first dial.
	cfg := t.TLSClientConfig.Clone()
	if cfg.ServerName == "" {
		cfg.ServerName = host
	}
	hctx, cancel := context.WithTimeout(ctx, tlsHandshakeTimeout)
	defer cancel()
	tc := tls.Client(raw, cfg)
	if err := tc.HandshakeContext(hctx); err != nil {
		raw.Close()
		return nil, err
	}
	return tc, nil
}

// openConn is the connection gate and the address gate: take a connection
// slot, resolve once, check every address, dial the checked addresses
// only; the connection gives its slot back when closed. standIn (the
// stand-ins' Transport) lets a stand-in's own address through the address
// gate; nothing else.
func (g *egress) openConn(ctx context.Context, network, addr string, standIn bool) (_ net.Conn, err error) {
	release, refused := g.reserveConn()
	if refused != nil {
		return nil, refused
	}
	defer func() {
		if err != nil {
			release()
		}
	}()
	private := g.private || standIn && g.standIns.isTarget(addr)
	c, err := g.dialChecked(ctx, network, addr, private)
	if err != nil {
		return nil, err
	}
	return &countedConn{Conn: c, release: release}, nil
}

// reserveConn takes a slot of the plugin's connections and of the
// engine's, closing the plugin's idle connections once if either is full;
// it returns the function giving both back, or the refusal.
func (g *egress) reserveConn() (func(), *refusal) {
	for closedIdle := false; ; closedIdle = true {
		mine := g.conns.tryAcquire()
		all := mine && g.hostConns.tryAcquire()
		if all {
			return sync.OnceFunc(func() {
				g.hostConns.release()
				g.conns.release()
			}), nil
		}
		if mine {
			g.conns.release()
		}
		if !closedIdle {
			g.closeIdle()
			continue
		}
		if !mine {
			setting := "plugins.settings." + g.plugin + ".max_http_connections"
			env := abi.NewEnvelope(abi.CodeResourceExhausted,
				fmt.Sprintf("plugin %s has %d HTTP connections open or being opened, its cap (%s)", g.plugin, g.conns.max, setting),
				fmt.Sprintf("retry once its other requests have ended; for the operator: if plugin %s needs more connections at once, raise %s in the configuration file, or lower its max_instances", g.plugin, setting))
			env.Details = map[string]any{"plugin": g.plugin, "limit": "max_http_connections", "max_count": g.conns.max, "setting": setting}
			return nil, &refusal{env}
		}
		env := abi.NewEnvelope(abi.CodeResourceExhausted,
			fmt.Sprintf("the host has %d outbound HTTP connections open for its plugins, its cap; plugin %s cannot open another", g.hostConns.max, g.plugin),
			"retry later; for the operator: lower max_http_connections of the plugins that hold many")
		env.Retryable = true
		env.Details = map[string]any{"plugin": g.plugin, "limit": "host_http_connections", "max_count": g.hostConns.max}
		return nil, &refusal{env}
	}
}

// countedConn gives its connection slots back when closed.
type countedConn struct {
	net.Conn
	release func()
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}

// dialChecked resolves addr's host once, refuses it unless every address
// is allowed (any address, with private), and dials the checked addresses
// by IP.
func (g *egress) dialChecked(ctx context.Context, network, addr string, private bool) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	pn, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("bad port %q", port)
	}
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else {
		want := "ip"
		switch network {
		case "tcp4":
			want = "ip4"
		case "tcp6":
			want = "ip6"
		}
		if ips, err = lookupNetIP(ctx, want, host); err != nil {
			return nil, err
		}
		if len(ips) == 0 {
			return nil, fmt.Errorf("lookup %s: no addresses", host)
		}
	}
	if !private {
		for _, ip := range ips {
			if kind := blockedKind(ip); kind != "" {
				return nil, g.refuseAddr(host, ip, kind)
			}
		}
	}
	var d net.Dialer
	var firstErr error
	for _, ip := range ips {
		c, err := d.DialContext(ctx, network, netip.AddrPortFrom(ip.Unmap(), uint16(pn)).String())
		if err == nil {
			return c, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, firstErr
}

var (
	cgnat       = netip.MustParsePrefix("100.64.0.0/10")
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")
	reserved4   = netip.MustParsePrefix("240.0.0.0/4")
	nat64       = netip.MustParsePrefix("64:ff9b::/96")
	siteLocal6  = netip.MustParsePrefix("fec0::/10")
)

// blockedKind names the class of an address plugins may not reach without
// AllowPrivate, or "" for a public address.
func blockedKind(ip netip.Addr) string {
	ip = ip.Unmap()
	if ip.Is6() && nat64.Contains(ip) {
		b := ip.As16()
		ip = netip.AddrFrom4([4]byte(b[12:16]))
	}
	switch {
	case ip.IsLoopback():
		return "loopback"
	case ip.IsUnspecified() || thisNetwork.Contains(ip):
		return "unspecified"
	case ip.IsPrivate() || siteLocal6.Contains(ip):
		return "private"
	case ip.IsLinkLocalUnicast():
		return "link-local (cloud metadata)"
	case ip.IsMulticast() || ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast():
		return "multicast"
	case cgnat.Contains(ip):
		return "shared (CGNAT)"
	case reserved4.Contains(ip):
		return "reserved"
	}
	return ""
}

// httpRequestMeta is Extism's request JSON (go-pdk's HTTPRequestMeta).
type httpRequestMeta struct {
	URL     string            `json:"url"`
	Method  string            `json:"method"`
	Headers map[string]string `json:"headers"`
}

// httpRequest implements extism:host/env http_request(req, body) -> body.
// It ends the call (see the package comment above) on every failure.
func (k *kernel) httpRequest(e *Engine, ctx context.Context, reqOff, bodyOff uint64) uint64 {
	k.httpStatus, k.httpHeaders = 0, nil
	var meta httpRequestMeta
	if err := json.Unmarshal(k.bytesAt(reqOff), &meta); err != nil {
		k.fail(abi.NewEnvelope(abi.CodePluginFailed,
			fmt.Sprintf("plugin %s sent an http_request that is not Extism's request JSON: %v", k.plugin.name, err),
			"report it to the plugin's authors"))
	}
	var body []byte
	if bodyOff != 0 {
		body = bytes.Clone(k.bytesAt(bodyOff))
	}
	if meta.Method == "" {
		meta.Method = http.MethodGet
	}
	meta.Method = strings.ToUpper(meta.Method)
	g := k.plugin.egress
	red := k.plugin.redactor
	rec := HTTPRecord{Method: meta.Method}
	// standIn is set by standInRouter to the stand-in the request went to.
	var standIn string
	// hostName is the URL's host without its port, for the metrics.
	var hostName string
	start := time.Now()
	record := func(env *abi.Envelope) {
		if env != nil {
			rec.Err = env.Message
		}
		rec.Duration = time.Since(start)
		tracing.HTTP(ctx, rec.Method, hostName, rec.Status)
		if m := e.cfg.Metrics; m != nil {
			m.Egress(hostName, env != nil && env.Code == abi.CodePermissionDenied, env != nil, rec.Status)
		}
		if k.opts != nil && k.opts.HTTP != nil {
			rec.Host = clipText(red.String(rec.Host), maxRecordText)
			rec.URL = clipText(red.String(rec.URL), maxRecordText)
			if standIn != "" {
				rec.URL += " (stand-in " + red.String(standIn) + ")"
			}
			rec.Err = clipText(red.String(rec.Err), maxRecordText)
			k.opts.HTTP(rec)
		}
	}
	end := func(env *abi.Envelope) {
		record(env)
		k.fail(env)
	}

	u, err := url.Parse(meta.URL)
	if err != nil || u.Host == "" {
		reason := "it has no host"
		if err != nil {
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err
			}
			reason = err.Error()
		}
		env := abi.NewEnvelope(abi.CodeInvalidArgument,
			fmt.Sprintf("plugin %s asked for an HTTP request to an invalid URL: %s", k.plugin.name, reason),
			"pass an absolute http or https URL")
		end(env)
	}
	rec.Host, rec.URL = strings.ToLower(u.Host), displayURL(u)
	hostName = strings.ToLower(u.Hostname())
	if limit := k.plugin.limits.MaxHTTPRequests; k.httpRequests >= limit {
		end(k.capEnvelope("HTTP requests in one call", "max_http_requests", k.httpRequests+1, limit, "count"))
	}
	k.httpRequests++
	if r := g.check(u, nil); r != nil {
		end(r.env)
	}
	reqCtx, cancel := ctx, context.CancelFunc(func() {})
	if g.timeout > 0 {
		reqCtx, cancel = context.WithTimeout(ctx, g.timeout)
	}
	defer cancel()
	// fail ends the call after an error of the request or of its body.
	// When the call's own deadline or cancellation caused it, the guest
	// unwinds as one asleep past it would (the call fails with
	// plugin_timeout or cancelled), and the request is recorded first,
	// with the message of that envelope: the decision log keeps a request
	// cut short by the deadline like any other.
	fail := func(err error) {
		var r *refusal
		if !errors.As(err, &r) && ctx.Err() != nil {
			record(k.plugin.contextEnvelope(ctx, "running"))
			panic(errInterrupted{ctx.Err()})
		}
		end(g.failure(reqCtx, rec.URL, err))
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(withRequestCtx(withStandInNote(reqCtx, &standIn)), meta.Method, u.String(), rd)
	if err != nil {
		end(abi.NewEnvelope(abi.CodeInvalidArgument,
			fmt.Sprintf("plugin %s asked for an invalid HTTP request to %s: %v", k.plugin.name, rec.URL, err),
			"report it to the plugin's authors"))
	}
	for name, v := range meta.Headers {
		req.Header.Set(name, v)
	}
	resp, err := g.client.Do(req)
	if err != nil {
		fail(err)
	}
	defer resp.Body.Close()
	rec.Status = resp.StatusCode
	data, err := io.ReadAll(io.LimitReader(resp.Body, g.maxBytes+1))
	rec.Bytes = int64(len(data))
	if err != nil {
		fail(err)
	}
	if int64(len(data)) > g.maxBytes {
		env := abi.NewEnvelope(abi.CodeResourceExhausted,
			fmt.Sprintf("the response of %s to plugin %s is over its cap of %d bytes", rec.URL, k.plugin.name, g.maxBytes),
			"ask the plugin for less (a page, a filter); the operator sets the cap")
		env.Details = map[string]any{"limit": "http_response", "max_bytes": g.maxBytes, "url": rec.URL, "plugin": k.plugin.name}
		end(env)
	}
	record(nil)
	k.httpStatus = int32(resp.StatusCode)
	k.httpHeaders = make(map[string]string, len(resp.Header))
	for name, vs := range resp.Header {
		k.httpHeaders[strings.ToLower(name)] = strings.Join(vs, ",")
	}
	if len(data) == 0 {
		return 0
	}
	// Capped by maxBytes above, not by the per-block cap of alloc: the
	// operator chose the response cap; the kernel's total still applies.
	off := k.grow(uint64(len(data)), &e.cfg)
	copy(k.arena[off:], data)
	return off
}

// failure classifies an error of Do or of the body read that the call's
// own deadline or cancellation did not cause (httpRequest unwinds the guest
// for those).
func (g *egress) failure(reqCtx context.Context, shown string, err error) *abi.Envelope {
	var r *refusal
	if errors.As(err, &r) {
		return r.env
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // its text repeats the URL, query string included
	}
	// net/http reports headers over MaxResponseHeaderBytes with this text
	// only: no error value to match.
	if strings.Contains(err.Error(), "server response headers exceeded") {
		setting := "plugins.settings." + g.plugin + ".max_http_header_bytes"
		env := abi.NewEnvelope(abi.CodeResourceExhausted,
			fmt.Sprintf("the response of %s to plugin %s has headers over its cap of %d bytes (%s)", shown, g.plugin, g.headerBytes, setting),
			fmt.Sprintf("for the operator: if plugin %s must read such responses, raise %s in the configuration file", g.plugin, setting))
		env.Details = map[string]any{"plugin": g.plugin, "url": shown, "limit": "max_http_header_bytes", "max_bytes": g.headerBytes, "setting": setting}
		return env
	}
	if reqCtx.Err() != nil {
		env := abi.NewEnvelope(abi.CodeUnavailable,
			fmt.Sprintf("HTTP request of plugin %s to %s took longer than %v", g.plugin, shown, g.timeout),
			"retry later, or ask for less; the operator sets the limit")
		env.Details = map[string]any{"plugin": g.plugin, "url": shown, "timeout_ms": g.timeout.Milliseconds()}
		return env
	}
	env := abi.NewEnvelope(abi.CodeUnavailable,
		fmt.Sprintf("HTTP request of plugin %s to %s failed: %v", g.plugin, shown, err),
		"retry later; if it keeps failing, the host may be down or unreachable from this machine")
	env.Details = map[string]any{"plugin": g.plugin, "url": shown}
	return env
}
