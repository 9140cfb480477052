package oauth

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// What is fetched from the authorization server is bounded: a slow or
// hostile one can neither hold a request nor fill memory.
const (
	maxDocumentBytes = 1 << 20
	// metadataTTL is how long the issuer's metadata and keys are trusted
	// before they are read again.
	metadataTTL = 10 * time.Minute
	// refetchGap is the least time between two fetches of the keys: a
	// token naming an unknown key (a rotation) fetches them at most this
	// often, so a flood of forged key ids cannot flood the issuer.
	refetchGap = 30 * time.Second
)

// serverMetadata is what plugboard reads of RFC 8414 / OpenID metadata.
type serverMetadata struct {
	Issuer                string `json:"issuer"`
	JWKSURI               string `json:"jwks_uri"`
	IntrospectionEndpoint string `json:"introspection_endpoint"`
}

// keyCache holds the issuer's metadata and signing keys.
type keyCache struct {
	cfg    *Config
	client *http.Client
	log    *slog.Logger
	now    func() time.Time

	// fetch serialises fetches; mu guards the fields below it.
	fetch   sync.Mutex
	mu      sync.Mutex
	meta    *serverMetadata
	metaAt  time.Time
	keys    []jose.JSONWebKey
	keysAt  time.Time
	tried   time.Time
	lastErr error
}

func newKeyCache(cfg *Config, client *http.Client, log *slog.Logger, now func() time.Time) *keyCache {
	return &keyCache{cfg: cfg, client: client, log: log, now: now}
}

// lookup returns the keys that may have signed a token with key id kid
// and algorithm alg, fetching the key set when it is stale or lacks kid.
func (c *keyCache) lookup(ctx context.Context, kid, alg string) ([]jose.JSONWebKey, error) {
	if keys := c.match(kid, alg, false); keys != nil {
		return keys, nil
	}
	c.fetch.Lock()
	defer c.fetch.Unlock()
	if keys := c.match(kid, alg, false); keys != nil {
		return keys, nil
	}
	c.mu.Lock()
	recent := !c.tried.IsZero() && c.now().Sub(c.tried) < refetchGap
	c.mu.Unlock()
	if !recent {
		c.refresh(ctx)
	}
	if keys := c.match(kid, alg, true); keys != nil {
		return keys, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.keys == nil {
		return nil, &Error{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
			Description: fmt.Sprintf("the authorization server's keys could not be read: %v", c.lastErr)}
	}
	if kid != "" {
		return nil, invalid("no key of the issuer has the token's key id %q", kid)
	}
	return nil, invalid("no key of the issuer fits the token's algorithm %s", alg)
}

// match returns the signing keys for kid and alg; stale keys count only
// when anyway (the issuer did not answer: keys a little old beat none).
func (c *keyCache) match(kid, alg string, anyway bool) []jose.JSONWebKey {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.keys == nil || (!anyway && c.now().Sub(c.keysAt) > metadataTTL) {
		return nil
	}
	var out []jose.JSONWebKey
	for _, k := range c.keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		if kid != "" && k.KeyID != kid {
			continue
		}
		if k.Algorithm != "" && k.Algorithm != alg {
			continue
		}
		out = append(out, k)
	}
	return out
}

// refresh fetches the metadata (when stale) and the key set.
func (c *keyCache) refresh(ctx context.Context) {
	c.mu.Lock()
	c.tried = c.now()
	c.mu.Unlock()
	jwksURI := c.cfg.JWKSURI
	if jwksURI == "" {
		meta, err := c.metadata(ctx)
		if err != nil {
			c.failed(err)
			return
		}
		jwksURI = meta.JWKSURI
	}
	var set jose.JSONWebKeySet
	if err := c.getJSON(ctx, jwksURI, &set); err != nil {
		c.failed(fmt.Errorf("key set: %w", err))
		return
	}
	var keys []jose.JSONWebKey
	for _, k := range set.Keys {
		// Only public keys: a symmetric key in a key set would let anyone
		// who read the set sign tokens.
		if k.Valid() && k.IsPublic() {
			keys = append(keys, k)
		}
	}
	c.mu.Lock()
	c.keys, c.keysAt, c.lastErr = keys, c.now(), nil
	c.mu.Unlock()
}

func (c *keyCache) failed(err error) {
	c.log.Warn("oauth: the authorization server did not answer; tokens signed with keys not seen yet are refused",
		"issuer", c.cfg.Issuer, "err", err)
	c.mu.Lock()
	c.lastErr = err
	c.mu.Unlock()
}

// metadata returns the issuer's metadata, read from its well-known
// addresses: RFC 8414's, then OpenID Connect Discovery's.
func (c *keyCache) metadata(ctx context.Context) (*serverMetadata, error) {
	c.mu.Lock()
	if c.meta != nil && c.now().Sub(c.metaAt) < metadataTTL {
		defer c.mu.Unlock()
		return c.meta, nil
	}
	c.mu.Unlock()
	var errs []string
	for _, u := range wellKnown(c.cfg.Issuer) {
		var m serverMetadata
		if err := c.getJSON(ctx, u, &m); err != nil {
			errs = append(errs, err.Error())
			continue
		}
		// RFC 8414 §3.3: metadata naming another issuer is not this one's.
		if m.Issuer != c.cfg.Issuer {
			errs = append(errs, fmt.Sprintf("%s names the issuer %q, not %q", u, m.Issuer, c.cfg.Issuer))
			continue
		}
		if m.JWKSURI != "" {
			if err := checkServerURL(m.JWKSURI); err != nil {
				errs = append(errs, fmt.Sprintf("jwks_uri %q: %v", m.JWKSURI, err))
				continue
			}
		}
		c.mu.Lock()
		c.meta, c.metaAt = &m, c.now()
		c.mu.Unlock()
		return &m, nil
	}
	return nil, fmt.Errorf("issuer metadata: %s", strings.Join(errs, "; "))
}

// wellKnown lists the metadata addresses of issuer: RFC 8414 inserts the
// well-known segment before the issuer's path; OpenID appends it.
func wellKnown(issuer string) []string {
	u, err := url.Parse(issuer)
	if err != nil {
		return nil
	}
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	base := (&url.URL{Scheme: u.Scheme, Host: u.Host}).String()
	return []string{
		base + "/.well-known/oauth-authorization-server" + path,
		base + "/.well-known/openid-configuration" + path,
		base + path + "/.well-known/openid-configuration",
	}
}

// getJSON GETs a JSON document of at most maxDocumentBytes.
func (c *keyCache) getJSON(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return decodeBounded(resp.Body, v)
}

func decodeBounded(r io.Reader, v any) error {
	b, err := io.ReadAll(io.LimitReader(r, maxDocumentBytes+1))
	if err != nil {
		return err
	}
	if len(b) > maxDocumentBytes {
		return fmt.Errorf("the document is over %d bytes", maxDocumentBytes)
	}
	return json.Unmarshal(b, v)
}

// introspectionEndpoint is the configured endpoint, else the metadata's.
func (c *keyCache) introspectionEndpoint(ctx context.Context) (string, error) {
	if e := c.cfg.Introspection.Endpoint; e != "" {
		return e, nil
	}
	meta, err := c.metadata(ctx)
	if err != nil {
		return "", err
	}
	if meta.IntrospectionEndpoint == "" {
		return "", fmt.Errorf("the issuer's metadata names no introspection_endpoint; set oauth.introspection.endpoint")
	}
	if err := checkServerURL(meta.IntrospectionEndpoint); err != nil {
		return "", fmt.Errorf("introspection_endpoint %q: %v", meta.IntrospectionEndpoint, err)
	}
	return meta.IntrospectionEndpoint, nil
}
