package runtime

// HTTP stand-ins: for tests, where a plugin's requests to a host go instead
// (Config.HTTPStandIns; egress.go says where they fit among the gates).

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// ParseHTTPStandIn parses "HOST=URL", e.g.
// "api.example.com=http://127.0.0.1:8080": a plugin's requests to HOST
// (a host name or address, optionally with ":port"; without one, any port)
// that its allowed hosts let through go to URL's scheme, host and port
// instead (Config.HTTPStandIns). host comes back in lower case; target is
// an http or https URL of a host and port only, as Config.HTTPStandIns
// takes it.
func ParseHTTPStandIn(s string) (host string, target *url.URL, err error) {
	h, raw, ok := strings.Cut(s, "=")
	if !ok {
		return "", nil, fmt.Errorf("HTTP stand-in %q: want HOST=URL, e.g. api.example.com=http://127.0.0.1:8080", s)
	}
	// Errors name the host, not s: the URL may carry user info.
	key, err := parseStandInHost(h)
	if err != nil {
		return "", nil, fmt.Errorf("HTTP stand-in: %w", err)
	}
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return "", nil, fmt.Errorf("HTTP stand-in for %q: the URL: %w; give scheme://host:port, e.g. http://127.0.0.1:8080", h, err)
	}
	if target, err = standInTarget(u); err != nil {
		return "", nil, fmt.Errorf("HTTP stand-in for %q: %w", h, err)
	}
	return key.String(), target, nil
}

// standInKey is the host a stand-in replaces.
type standInKey struct {
	host string // lower case, no trailing dot, no brackets
	port string // "" matches any port
}

func (k standInKey) String() string {
	h := k.host
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	if k.port == "" {
		return h
	}
	return h + ":" + k.port
}

// parseStandInHost reads a key of Config.HTTPStandIns like an allowed_hosts
// entry, but exact names only: a stand-in replaces one host, and a wildcard
// would make which one a test talks to harder to see.
func parseStandInHost(s string) (standInKey, error) {
	r, err := parseHostRule(s)
	if err != nil {
		return standInKey{}, err
	}
	if r.wildcard {
		return standInKey{}, fmt.Errorf("%q: a stand-in replaces one host; give its exact name, not a wildcard", s)
	}
	return standInKey{host: r.host, port: r.port}, nil
}

// standInTarget checks a stand-in's URL and returns its scheme://host[:port]
// (host in lower case). Anything else a URL can carry is refused rather
// than dropped: a path, query or user info would suggest the stand-in
// rewrites more than where a request is sent.
func standInTarget(u *url.URL) (*url.URL, error) {
	switch {
	case u == nil:
		return nil, errors.New("no URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("the URL %q must be http:// or https://", u.Redacted())
	case u.Opaque != "" || u.Host == "" || u.Hostname() == "":
		return nil, fmt.Errorf("the URL %q has no host; give scheme://host:port", u.Redacted())
	case u.User != nil:
		return nil, fmt.Errorf("the URL %q has user info; give scheme://host:port only", u.Redacted())
	case u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return nil, fmt.Errorf("the URL %q has a path, query or fragment; give scheme://host:port only (the request's own path and query are kept)", u.Redacted())
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("the URL %q: port must be 1-65535", u.Redacted())
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return nil, fmt.Errorf("the URL %q has an empty port", u.Redacted())
	}
	return &url.URL{Scheme: u.Scheme, Host: strings.ToLower(u.Host)}, nil
}

// standIn is one parsed entry of Config.HTTPStandIns.
type standIn struct {
	key    standInKey
	target *url.URL // scheme://host[:port]
	shown  string   // target as records show it
}

// standIns is the engine's parsed Config.HTTPStandIns, shared by its
// plugins' egress; nil when there are none.
type standIns struct {
	list []standIn
	// addrs are the targets' host:port as the stand-in Transport dials
	// them: the only addresses the address gate lets through without
	// AllowPrivate, and only for requests sent to a stand-in.
	addrs map[string]bool
}

// parseStandIns checks Config.HTTPStandIns (New refuses an engine whose
// stand-ins it cannot honour exactly) and returns them ready to match.
func parseStandIns(m map[string]*url.URL) (*standIns, error) {
	if len(m) == 0 {
		return nil, nil
	}
	s := &standIns{addrs: map[string]bool{}}
	seen := map[standInKey]string{}
	for _, h := range slices.Sorted(maps.Keys(m)) {
		key, err := parseStandInHost(h)
		if err != nil {
			return nil, fmt.Errorf("HTTP stand-in for %q: %w", h, err)
		}
		if prev, dup := seen[key]; dup {
			return nil, fmt.Errorf("HTTP stand-ins: %q and %q name the same host", prev, h)
		}
		seen[key] = h
		target, err := standInTarget(m[h])
		if err != nil {
			return nil, fmt.Errorf("HTTP stand-in for %q: %w", h, err)
		}
		s.list = append(s.list, standIn{key: key, target: target, shown: target.String()})
		s.addrs[dialAddr(target)] = true
	}
	return s, nil
}

// dialAddr is host:port as http.Transport dials u (its canonical address),
// in lower case and without a trailing dot, as isTarget compares it.
func dialAddr(u *url.URL) string {
	host, port := urlHostPort(u)
	return net.JoinHostPort(host, port)
}

// isTarget reports whether addr, as http.Transport dials it, is one of
// the stand-ins' own addresses.
func (s *standIns) isTarget(addr string) bool {
	host, port, err := net.SplitHostPort(addr)
	if s == nil || err != nil {
		return false
	}
	return s.addrs[net.JoinHostPort(strings.TrimSuffix(strings.ToLower(host), "."), port)]
}

// find returns the stand-in for u's host, nil when there is none: one
// naming u's port wins over one without a port.
func (s *standIns) find(u *url.URL) *standIn {
	if s == nil {
		return nil
	}
	host, port := urlHostPort(u)
	var anyPort *standIn
	for i := range s.list {
		si := &s.list[i]
		if si.key.host != host {
			continue
		}
		if si.key.port == port {
			return si
		}
		if si.key.port == "" {
			anyPort = si
		}
	}
	return anyPort
}

// standInNoteKey carries, in a request's context, a *string that
// standInRouter sets to the stand-in a request went to, for its record.
type standInNoteKey struct{}

// standInRouter is the client's RoundTripper when the engine has stand-ins.
// The client calls it for the request and for every redirect hop, each
// with the URL the plugin asked for or the redirect named, after the URL
// gate has checked that URL against the plugin's allowed hosts (httpRequest,
// checkRedirect): a host with a stand-in goes, by a copy of the request,
// to the stand-in's scheme, host and port, path and query kept, with the
// Host header of the host meant; every other host goes through the
// plugin's own Transport, as without stand-ins. The stand-ins' Transport is
// a second one so that a connection opened to a stand-in (the address gate
// let it through) is never reused for a request that was not sent to it.
// Relative redirects resolve against the URL the plugin meant, since the
// client keeps the request it passed here.
type standInRouter struct{ g *egress }

func (r standInRouter) RoundTrip(req *http.Request) (*http.Response, error) {
	si := r.g.standIns.find(req.URL)
	if si == nil {
		return r.g.transport.RoundTrip(req)
	}
	out := req.Clone(req.Context())
	out.URL.Scheme, out.URL.Host = si.target.Scheme, si.target.Host
	out.Host = cmp.Or(req.Host, req.URL.Host)
	if note, ok := req.Context().Value(standInNoteKey{}).(*string); ok {
		*note = si.shown
	}
	resp, err := r.g.standInTransport.RoundTrip(out)
	if resp != nil {
		resp.Request = req
	}
	return resp, err
}

// withStandInNote is ctx carrying note for standInRouter.
func withStandInNote(ctx context.Context, note *string) context.Context {
	return context.WithValue(ctx, standInNoteKey{}, note)
}
