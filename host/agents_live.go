package host

// The agents configuration in force while the host runs: SetPolicy
// replaces it (plugboard serve does when the operator edits the agents
// file), and the HTTP transports' bearer tokens follow it.

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/plugboard/plugboard/host/internal/dashboard"
	"github.com/plugboard/plugboard/host/internal/mcpserver"
	"github.com/plugboard/plugboard/host/internal/oauth"
)

// Policy returns the agents configuration in force.
func (h *Host) Policy() *Policy { return h.policy.Load() }

// SetPolicy puts p in force while the host runs, for every new call, token
// check, scope and agent lookup: a call already past the policy step
// finishes under the old one, and an HTTP session whose agent lost its
// token is refused at its next request. The HTTP transports' bearer tokens
// become the agents' in p plus the ones ServeHTTP was given that were not
// agents' (the operator's --http-token).
//
// It refuses p, keeping the configuration in force, when p drops the agent
// the host serves as (Config.Agent), gives an agent the bearer token of
// the operator's own, or gives tokens while an HTTP transport runs without
// authentication (it started with no token at all, and stays open to
// everyone reaching it until a restart turns authentication on). A mail
// directory exists only when the configuration at Open had agents, so a
// host started without agents treats any recipient as valid until a
// restart.
func (h *Host) SetPolicy(p *Policy) error {
	if p == nil {
		return fmt.Errorf("no agents configuration")
	}
	if id := h.cfg.Agent; id != "" {
		if _, ok := p.Agent(id); !ok {
			return fmt.Errorf("agent %q, the identity this server runs as (--agent), is no longer configured; "+
				"keep it in the agents file, or restart the server as another agent", id)
		}
	}
	h.tokens.mu.Lock()
	defer h.tokens.mu.Unlock()
	agents := p.Tokens()
	if h.tokens.open > 0 && (len(agents) > 0 || p.OAuth() != nil) {
		return fmt.Errorf("the agents file gives bearer tokens or OAuth, but the HTTP transport started without any and " +
			"authenticates no request: restart the server to turn authentication on")
	}
	verifier, err := h.newVerifier(p)
	if err != nil {
		return err
	}
	for _, r := range h.tokens.routes {
		for _, tok := range slices.Sorted(maps.Keys(agents)) {
			if _, clash := r.own[tok]; clash {
				return fmt.Errorf("agent %q's token is the server's own bearer token (--http-token); give each its own", agents[tok])
			}
		}
	}
	h.policy.Store(p)
	h.tokens.oauth.Store(verifier)
	for _, r := range h.tokens.routes {
		r.apply(agents)
	}
	return nil
}

// httpTokens are the bearer tokens of the HTTP transports ServeHTTP runs,
// kept equal to the agents configuration in force (SetPolicy).
type httpTokens struct {
	mu     sync.Mutex
	routes []*tokenRoute
	// open counts the transports running without authentication.
	open int
	// oauth is the verifier of the oauth section in force, nil without one.
	oauth atomic.Pointer[oauth.Verifier]
}

// tokenRoute is one transport's tokens: its own (the ones ServeHTTP was
// given that are not agents') and the agents' in force, checked by the
// transport's authenticator and the dashboard's sign-in.
type tokenRoute struct {
	own  map[string]string
	auth atomic.Pointer[mcpserver.Authenticator]
	dash *dashboard.Dashboard
	all  map[string]string
}

// authenticate is the transport's mcpserver.Authenticator.
func (r *tokenRoute) authenticate(token string) (string, bool) { return (*r.auth.Load())(token) }

// apply makes the route's tokens its own plus agents (token → agent id).
// The caller holds httpTokens.mu.
func (r *tokenRoute) apply(agents map[string]string) {
	r.all = maps.Clone(r.own)
	maps.Copy(r.all, agents)
	auth := mcpserver.Tokens(r.all)
	r.auth.Store(&auth)
	if r.dash != nil {
		r.dash.SetTokens(r.all)
	}
}

// routeTokens registers a transport given tokens (token → identity): those
// that are the agents' tokens in force follow the agents file from now
// on; the others stay. The returned func unregisters it.
func (h *Host) routeTokens(given map[string]string) (*tokenRoute, func()) {
	h.tokens.mu.Lock()
	defer h.tokens.mu.Unlock()
	agents := h.policy.Load().Tokens()
	r := &tokenRoute{own: map[string]string{}}
	for tok, id := range given {
		if agents[tok] != id {
			r.own[tok] = id
		}
	}
	r.apply(agents)
	h.tokens.routes = append(h.tokens.routes, r)
	return r, func() {
		h.tokens.mu.Lock()
		defer h.tokens.mu.Unlock()
		h.tokens.routes = slices.DeleteFunc(h.tokens.routes, func(x *tokenRoute) bool { return x == r })
	}
}

// attach makes d's sign-in follow the route's tokens.
func (h *Host) attach(r *tokenRoute, d *dashboard.Dashboard) {
	h.tokens.mu.Lock()
	defer h.tokens.mu.Unlock()
	r.dash = d
	d.SetTokens(r.all)
}

// openTransport records a transport without authentication, for as long
// as it runs (until the returned func).
func (h *Host) openTransport() func() {
	h.tokens.mu.Lock()
	defer h.tokens.mu.Unlock()
	h.tokens.open++
	return func() {
		h.tokens.mu.Lock()
		defer h.tokens.mu.Unlock()
		h.tokens.open--
	}
}
