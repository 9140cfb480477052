package oauth

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// introspect asks the issuer about an opaque token (RFC 7662) on every
// request: no answer is cached, so a revoked token is refused from the
// next request on.
func (v *Verifier) introspect(ctx context.Context, token string) (*Identity, error) {
	endpoint, err := v.keys.introspectionEndpoint(ctx)
	if err != nil {
		return nil, v.unavailable(err)
	}
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, v.unavailable(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	// RFC 6749 §2.3.1: the client's id and secret are form-encoded before
	// they make the basic credentials.
	req.SetBasicAuth(url.QueryEscape(v.cfg.Introspection.ClientID), url.QueryEscape(v.secret))
	resp, err := v.opts.Client.Do(req)
	if err != nil {
		return nil, v.unavailable(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, v.unavailable(fmt.Errorf("POST %s: %s", endpoint, resp.Status))
	}
	var claims map[string]any
	if err := decodeBounded(resp.Body, &claims); err != nil {
		return nil, v.unavailable(fmt.Errorf("introspection answer: %w", err))
	}
	if active, _ := claims["active"].(bool); !active {
		return nil, invalid("the authorization server says the token is not active (revoked, expired or unknown)")
	}
	if iss, ok := claims["iss"].(string); ok && iss != v.cfg.Issuer {
		return nil, invalid("the token was issued by %q, not by this server's authorization server", iss)
	}
	// Audience binding is what keeps a token issued for another service
	// from being replayed here: an answer without "aud" is refused.
	if aud := audienceOf(claims["aud"]); !slices.Contains(aud, v.cfg.audience()) {
		return nil, invalid("the token is for %q, not for this server (%s)", strings.Join(aud, " "), v.cfg.audience())
	}
	var exp time.Time
	if e, ok := claims["exp"].(float64); ok {
		exp = time.Unix(int64(e), 0)
		if v.opts.Now().After(exp.Add(v.skew)) {
			return nil, invalid("the token expired at %s", exp.UTC().Format(time.RFC3339))
		}
	}
	return v.identity(claims, scopesOf(claims), exp)
}

// audienceOf reads "aud": a string or a list of them.
func audienceOf(v any) []string {
	switch a := v.(type) {
	case string:
		return []string{a}
	case []any:
		var out []string
		for _, e := range a {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// unavailable is the refusal when the authorization server did not
// answer: 503, retryable, with the cause logged for the operator.
func (v *Verifier) unavailable(err error) *Error {
	v.opts.Logger.Warn("oauth: token introspection failed", "issuer", v.cfg.Issuer, "err", err)
	return &Error{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
		Description: "the authorization server could not be asked about the token; try again in a moment"}
}
