// Package oauth makes plugboard's HTTP transport an OAuth 2.1 resource
// server, as MCP's authorization specification describes: it owns the
// agents file's "oauth" section (Config), the Protected Resource Metadata
// the server publishes (RFC 9728), the validation of access tokens an
// organisation's authorization server issued for this server — JWTs
// checked locally against the issuer's JWKS, opaque tokens by
// introspection (RFC 7662) — and the mapping of a token's claims and
// scopes to a plugboard identity and role. It decides; the transport
// (host/internal/mcpserver) asks it and writes the challenge.
package oauth

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Config is the agents file's "oauth" section.
type Config struct {
	// Issuer is the authorization server's issuer identifier (RFC 8414):
	// tokens must carry it as "iss", and its metadata is read from its
	// well-known addresses. https, or http on a loopback host.
	Issuer string `json:"issuer"`
	// Resource is this server's canonical URI as clients reach it, the MCP
	// endpoint (https://plugboard.example.com/mcp): published as the
	// metadata's "resource", and what tokens must name in "aud".
	Resource string `json:"resource"`
	// Audience replaces Resource as the required "aud" value, for
	// authorization servers that name resources otherwise.
	Audience string `json:"audience,omitempty"`
	// JWKSURI replaces the jwks_uri of the issuer's metadata.
	JWKSURI string `json:"jwks_uri,omitempty"`
	// Introspection, when set, validates opaque (non-JWT) access tokens
	// at the issuer's introspection endpoint; without it they are refused.
	Introspection *Introspection `json:"introspection,omitempty"`
	// AgentClaim names a claim whose value is the id of an agent of this
	// file: the token then acts as that agent, with its type.
	AgentClaim string `json:"agent_claim,omitempty"`
	// RoleClaim names a claim whose value is an agent type (SUPERVISOR,
	// ORCHESTRATOR, WORKER): a token that names no agent acts as
	// "oauth:SUBJECT" with that type.
	RoleClaim string `json:"role_claim,omitempty"`
	// SubjectClaim names the claim whose value identifies the person or
	// client behind a role-claim identity (default "sub", then
	// "client_id" when a token has no "sub").
	SubjectClaim string `json:"subject_claim,omitempty"`
	// RoleScopes requires a scope of tokens acting with a type:
	// {"SUPERVISOR": "plugboard:admin"}. A token without it is refused with
	// insufficient_scope.
	RoleScopes map[string]string `json:"role_scopes,omitempty"`
	// ScopesSupported are the scopes the metadata advertises (default: the
	// values of RoleScopes).
	ScopesSupported []string `json:"scopes_supported,omitempty"`
	// ClockSkew is the tolerance on exp, nbf and iat (default 30s, at most
	// 5m), as a Go duration ("30s").
	ClockSkew string `json:"clock_skew,omitempty"`
}

// Introspection configures RFC 7662 token introspection.
type Introspection struct {
	// Endpoint replaces the introspection_endpoint of the issuer's
	// metadata.
	Endpoint string `json:"endpoint,omitempty"`
	// ClientID and the secret in ClientSecretFile are plugboard's own
	// client credentials at the authorization server
	// (client_secret_basic).
	ClientID         string `json:"client_id"`
	ClientSecretFile string `json:"client_secret_file"`
}

// SubjectPrefix starts the id of an identity a role claim gave: no agent
// id may contain ':', so none can be taken this way.
const SubjectPrefix = "oauth:"

// DefaultClockSkew and MaxClockSkew bound Config.ClockSkew.
const (
	DefaultClockSkew = 30 * time.Second
	MaxClockSkew     = 5 * time.Minute
)

// A Problem is one fault of a Config: the key at fault (under "oauth")
// and what is wrong with it.
type Problem struct {
	Key     []any
	Message string
}

// Check returns every fault of c. roles are the agent types a role claim
// and RoleScopes may name.
func (c *Config) Check(roles []string) []Problem {
	var out []Problem
	fail := func(msg string, key ...any) { out = append(out, Problem{key, msg}) }
	if c.Issuer == "" {
		fail("the issuer is empty: give the authorization server's issuer URL (its metadata's \"issuer\")", "issuer")
	} else if err := checkServerURL(c.Issuer); err != nil {
		fail(fmt.Sprintf("issuer %q: %v", c.Issuer, err), "issuer")
	}
	if c.Resource == "" {
		fail("the resource is empty: give the MCP endpoint's URL as clients reach it (https://HOST/mcp)", "resource")
	} else if u, err := url.Parse(c.Resource); err != nil || !u.IsAbs() || u.Host == "" || u.Fragment != "" || u.RawQuery != "" {
		fail(fmt.Sprintf("resource %q is not an absolute URL without query or fragment (RFC 8707)", c.Resource), "resource")
	}
	if c.JWKSURI != "" {
		if err := checkServerURL(c.JWKSURI); err != nil {
			fail(fmt.Sprintf("jwks_uri %q: %v", c.JWKSURI, err), "jwks_uri")
		}
	}
	if in := c.Introspection; in != nil {
		if in.Endpoint != "" {
			if err := checkServerURL(in.Endpoint); err != nil {
				fail(fmt.Sprintf("endpoint %q: %v", in.Endpoint, err), "introspection", "endpoint")
			}
		}
		if in.ClientID == "" {
			fail("the client_id is empty: plugboard's own client at the authorization server", "introspection", "client_id")
		}
		if in.ClientSecretFile == "" {
			fail("client_secret_file is empty: a file holding that client's secret", "introspection", "client_secret_file")
		}
	}
	if c.AgentClaim == "" && c.RoleClaim == "" {
		fail("neither agent_claim nor role_claim is set: say which claim names the agent (agent_claim) or its type (role_claim)", "agent_claim")
	}
	for _, role := range slices.Sorted(maps.Keys(c.RoleScopes)) {
		if !slices.Contains(roles, role) {
			fail(fmt.Sprintf("unknown agent type %q (one of %s)", role, strings.Join(roles, ", ")), "role_scopes", role)
		} else if s := c.RoleScopes[role]; s == "" || strings.ContainsAny(s, " \t\"\\") {
			fail(fmt.Sprintf("scope %q must be one scope token (no spaces or quotes)", s), "role_scopes", role)
		}
	}
	if c.ClockSkew != "" {
		if d, err := time.ParseDuration(c.ClockSkew); err != nil || d < 0 || d > MaxClockSkew {
			fail(fmt.Sprintf("clock_skew %q is not a duration from 0s to %v", c.ClockSkew, MaxClockSkew), "clock_skew")
		}
	}
	return out
}

// skew is the configured clock skew.
func (c *Config) skew() time.Duration {
	if d, err := time.ParseDuration(c.ClockSkew); err == nil && c.ClockSkew != "" {
		return d
	}
	return DefaultClockSkew
}

// audience is the "aud" value tokens must carry.
func (c *Config) audience() string {
	if c.Audience != "" {
		return c.Audience
	}
	return c.Resource
}

// scopes are the scopes the metadata advertises.
func (c *Config) scopes() []string {
	if len(c.ScopesSupported) > 0 {
		return c.ScopesSupported
	}
	var out []string
	for _, s := range c.RoleScopes {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// checkServerURL accepts https URLs, and http ones on a loopback host (an
// authorization server on this machine, as in tests): anything else would
// let the network between swap the keys tokens are checked with.
func checkServerURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" {
		return fmt.Errorf("not an absolute URL")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		host := u.Hostname()
		if strings.EqualFold(host, "localhost") {
			return nil
		}
		if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
			return nil
		}
		return fmt.Errorf("http is allowed on a loopback host only; use https")
	}
	return fmt.Errorf("scheme %q: use https", u.Scheme)
}
