package oauth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Options configures New.
type Options struct {
	// Roles are the agent types a role claim may name.
	Roles []string
	// Agent returns the type of the configured agent id, for AgentClaim.
	Agent func(id string) (typ string, ok bool)
	// Client fetches the issuer's metadata and keys and introspects
	// tokens; nil takes one with a 10s timeout that follows no redirects.
	Client *http.Client
	// Logger hears of authorization-server failures; nil discards.
	Logger *slog.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Identity is who a valid token acts as.
type Identity struct {
	// ID is the agent's id (AgentClaim) or SubjectPrefix+subject (RoleClaim).
	ID string
	// Role is the agent type the token acts with.
	Role string
	// Agent says ID is a configured agent's.
	Agent bool
	// Scopes are the token's scopes.
	Scopes []string
	// Expiry is the token's exp.
	Expiry time.Time
}

// Error is a refused token: the HTTP status and the RFC 6750 error code
// the challenge carries, a description for the client, and for
// insufficient_scope the scope it lacks.
type Error struct {
	Status      int
	Code        string
	Description string
	Scope       string
}

func (e *Error) Error() string { return e.Code + ": " + e.Description }

// RFC 6750 error codes, and the one of an authorization server that did
// not answer (503, no challenge).
const (
	CodeInvalidToken      = "invalid_token"
	CodeInsufficientScope = "insufficient_scope"
	CodeUnavailable       = "temporarily_unavailable"
)

func invalid(format string, args ...any) *Error {
	return &Error{Status: http.StatusUnauthorized, Code: CodeInvalidToken, Description: fmt.Sprintf(format, args...)}
}

// Verifier validates access tokens for one Config. It is safe for
// concurrent use.
type Verifier struct {
	cfg    Config
	opts   Options
	skew   time.Duration
	secret string
	keys   *keyCache
	// verified keeps tokens whose signature checked out (cache.go).
	verified verifiedCache
}

// signingAlgs are the algorithms tokens may be signed with: asymmetric
// only, so a token "signed" with a public key as an HMAC secret, or with
// "none", never passes.
var signingAlgs = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA}

// New returns the verifier of cfg, which Check found sound. It reads the
// introspection client's secret file now; the issuer's metadata and keys
// are fetched on first use.
func New(cfg Config, opts Options) (*Verifier, error) {
	if opts.Client == nil {
		opts.Client = &http.Client{Timeout: 10 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	v := &Verifier{cfg: cfg, opts: opts, skew: cfg.skew()}
	if in := cfg.Introspection; in != nil {
		b, err := os.ReadFile(in.ClientSecretFile)
		if err != nil {
			return nil, fmt.Errorf("oauth.introspection.client_secret_file: %w", err)
		}
		if v.secret = strings.TrimSpace(string(b)); v.secret == "" {
			return nil, fmt.Errorf("oauth.introspection.client_secret_file %s is empty", in.ClientSecretFile)
		}
	}
	v.keys = newKeyCache(&v.cfg, opts.Client, opts.Logger, opts.Now)
	return v, nil
}

// Config returns the verifier's configuration.
func (v *Verifier) Config() Config { return v.cfg }

// Verify validates token and returns whom it acts as, or an *Error.
func (v *Verifier) Verify(ctx context.Context, token string) (*Identity, error) {
	if looksLikeJWT(token) {
		return v.verifyJWT(ctx, token)
	}
	if v.cfg.Introspection == nil {
		return nil, invalid("the token is not a JWT, and this server validates opaque tokens only with introspection, which is not configured")
	}
	return v.introspect(ctx, token)
}

// looksLikeJWT says token has a JWS compact form: three dot-separated parts.
func looksLikeJWT(token string) bool {
	return strings.Count(token, ".") == 2
}

func (v *Verifier) verifyJWT(ctx context.Context, raw string) (*Identity, error) {
	now := v.opts.Now()
	sum := sha256.Sum256([]byte(raw))
	if hit, ok := v.verified.get(sum, now); ok {
		if now.After(hit.expiry.Add(v.skew)) {
			return nil, invalid("the token expired at %s", hit.expiry.UTC().Format(time.RFC3339))
		}
		return v.identity(hit.claims, hit.scopes, hit.expiry)
	}
	tok, err := jwt.ParseSigned(raw, signingAlgs)
	if err != nil {
		return nil, invalid("the token is not a signed JWT this server accepts: %v", err)
	}
	if len(tok.Headers) != 1 {
		return nil, invalid("the token carries %d signatures; one is expected", len(tok.Headers))
	}
	h := tok.Headers[0]
	// RFC 9068 names access tokens "at+jwt"; plain "JWT" is common. Any
	// other type (an ID token's, a logout token's) is not an access token.
	if typ, ok := h.ExtraHeaders[jose.HeaderType].(string); ok {
		switch strings.ToLower(typ) {
		case "at+jwt", "application/at+jwt", "jwt":
		default:
			return nil, invalid("the token's type %q is not an access token's (at+jwt)", typ)
		}
	}
	keys, err := v.keys.lookup(ctx, h.KeyID, h.Algorithm)
	if err != nil {
		return nil, err
	}
	var std jwt.Claims
	var all map[string]any
	signed := false
	for _, k := range keys {
		if tok.Claims(k.Key, &std, &all) == nil {
			signed = true
			break
		}
	}
	if !signed {
		return nil, invalid("the token's signature does not verify with the issuer's keys")
	}
	if std.Expiry == nil {
		return nil, invalid("the token has no expiry (exp)")
	}
	if err := std.ValidateWithLeeway(jwt.Expected{Issuer: v.cfg.Issuer, AnyAudience: jwt.Audience{v.cfg.audience()}, Time: now}, v.skew); err != nil {
		switch {
		case errors.Is(err, jwt.ErrExpired):
			return nil, invalid("the token expired at %s", std.Expiry.Time().UTC().Format(time.RFC3339))
		case errors.Is(err, jwt.ErrInvalidIssuer):
			return nil, invalid("the token was issued by %q, not by this server's authorization server", std.Issuer)
		case errors.Is(err, jwt.ErrInvalidAudience):
			return nil, invalid("the token is for %q, not for this server (%s)", strings.Join(std.Audience, " "), v.cfg.audience())
		default:
			return nil, invalid("%v", err)
		}
	}
	scopes := scopesOf(all)
	v.verified.put(sum, verifiedToken{claims: all, scopes: scopes, expiry: std.Expiry.Time(), checked: now})
	return v.identity(all, scopes, std.Expiry.Time())
}

// scopesOf reads a token's scopes: "scope" (a space-separated string,
// RFC 9068 and 7662) or "scp" (a list or string, as some issuers write).
func scopesOf(claims map[string]any) []string {
	var out []string
	for _, key := range []string{"scope", "scp"} {
		switch s := claims[key].(type) {
		case string:
			out = append(out, strings.Fields(s)...)
		case []any:
			for _, e := range s {
				if str, ok := e.(string); ok {
					out = append(out, str)
				}
			}
		}
	}
	return out
}

// identity maps a valid token's claims to an identity, and checks the
// scope its type needs.
func (v *Verifier) identity(claims map[string]any, scopes []string, exp time.Time) (*Identity, error) {
	id := &Identity{Scopes: scopes, Expiry: exp}
	if c := v.cfg.AgentClaim; c != "" {
		if name, ok := claims[c].(string); ok && name != "" {
			typ, known := "", false
			if v.opts.Agent != nil {
				typ, known = v.opts.Agent(name)
			}
			if !known {
				return nil, invalid("the token's %s claim names %q, which is no agent of this server", c, name)
			}
			id.ID, id.Role, id.Agent = name, typ, true
		}
	}
	if id.ID == "" && v.cfg.RoleClaim != "" {
		role, _ := claims[v.cfg.RoleClaim].(string)
		if role == "" {
			return nil, invalid("the token has no %s claim naming its agent type", v.cfg.RoleClaim)
		}
		role = strings.ToUpper(role)
		if !slices.Contains(v.opts.Roles, role) {
			return nil, invalid("the token's %s claim %q is no agent type", v.cfg.RoleClaim, role)
		}
		subject := v.subject(claims)
		if subject == "" {
			return nil, invalid("the token has no subject (%s)", v.subjectClaim())
		}
		id.ID, id.Role = SubjectPrefix+subject, role
	}
	if id.ID == "" {
		return nil, invalid("the token names no agent (%s) of this server", v.cfg.AgentClaim)
	}
	if need := v.cfg.RoleScopes[id.Role]; need != "" && !slices.Contains(scopes, need) {
		return nil, &Error{Status: http.StatusForbidden, Code: CodeInsufficientScope, Scope: need,
			Description: fmt.Sprintf("acting as %s needs the scope %q", id.Role, need)}
	}
	return id, nil
}

func (v *Verifier) subjectClaim() string {
	if v.cfg.SubjectClaim != "" {
		return v.cfg.SubjectClaim
	}
	return "sub"
}

// subject is the identity a role claim's token names: the subject claim,
// or the client's id for a token issued to a client itself (client
// credentials tokens may have no "sub").
func (v *Verifier) subject(claims map[string]any) string {
	if s, ok := claims[v.subjectClaim()].(string); ok && s != "" {
		return s
	}
	if v.cfg.SubjectClaim == "" {
		if s, ok := claims["client_id"].(string); ok {
			return s
		}
	}
	return ""
}

// Metadata is the Protected Resource Metadata (RFC 9728) the server
// publishes.
func (v *Verifier) Metadata() *oauthex.ProtectedResourceMetadata {
	return &oauthex.ProtectedResourceMetadata{
		Resource:               v.cfg.Resource,
		AuthorizationServers:   []string{v.cfg.Issuer},
		ScopesSupported:        v.cfg.scopes(),
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "plugboard",
	}
}

// MetadataPath is where the metadata is served (RFC 9728 §3.1): the
// well-known prefix followed by the resource's path.
func (v *Verifier) MetadataPath() string {
	u, _ := url.Parse(v.cfg.Resource)
	return WellKnownPath + strings.TrimSuffix(u.EscapedPath(), "/")
}

// MetadataURL is the metadata's absolute URL, for the challenge.
func (v *Verifier) MetadataURL() string {
	u, _ := url.Parse(v.cfg.Resource)
	return (&url.URL{Scheme: u.Scheme, Host: u.Host}).String() + v.MetadataPath()
}

// WellKnownPath starts the metadata's path.
const WellKnownPath = "/.well-known/oauth-protected-resource"

// Challenge is the WWW-Authenticate value answering err (an *Error) or,
// for a request without a token, nil.
func (v *Verifier) Challenge(err *Error) string {
	params := []string{`resource_metadata="` + v.MetadataURL() + `"`}
	if err != nil {
		params = append(params, `error="`+err.Code+`"`, `error_description="`+quote(err.Description)+`"`)
		if err.Scope != "" {
			params = append(params, `scope="`+err.Scope+`"`)
		}
	} else if s := v.cfg.scopes(); len(s) > 0 {
		params = append(params, `scope="`+strings.Join(s, " ")+`"`)
	}
	return "Bearer " + strings.Join(params, ", ")
}

// quote makes s fit a quoted-string: no quotes, backslashes or controls.
func quote(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '"' || r == '\\' || r < 0x20 || r == 0x7f {
			return '\''
		}
		return r
	}, s)
}
