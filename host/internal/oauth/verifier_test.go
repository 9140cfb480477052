package oauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// issuer is an authorization server of the test's: RFC 8414 metadata, a
// key set, an introspection endpoint answering from a map.
type issuer struct {
	srv        *httptest.Server
	key        *ecdsa.PrivateKey
	kid        string
	keyFetches atomic.Int32
	active     map[string]map[string]any
}

func newIssuer(t testing.TB) *issuer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	is := &issuer{key: key, kid: "k1", active: map[string]map[string]any{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": is.srv.URL, "jwks_uri": is.srv.URL + "/jwks",
			"introspection_endpoint": is.srv.URL + "/introspect"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		is.keyFetches.Add(1)
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &is.key.PublicKey, KeyID: is.kid, Use: "sig", Algorithm: "ES256"}}})
	})
	mux.HandleFunc("/introspect", func(w http.ResponseWriter, r *http.Request) {
		if id, secret, _ := r.BasicAuth(); id != "rs" || secret != "s3cret" {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		_ = r.ParseForm()
		claims, ok := is.active[r.PostForm.Get("token")]
		if !ok {
			claims = map[string]any{"active": false}
		}
		_ = json.NewEncoder(w).Encode(claims)
	})
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	return is
}

// sign returns a JWT of claims, signed with key (the issuer's when nil),
// with header typ.
func (is *issuer) sign(t testing.TB, claims map[string]any, typ string) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithHeader(jose.HeaderKey("kid"), is.kid)
	if typ != "" {
		opts = opts.WithType(jose.ContentType(typ))
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: is.key}, opts)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

const resource = "https://plugboard.example/mcp"

func testVerifier(t *testing.T, is *issuer, now time.Time) *Verifier {
	return testVerifierTB(t, is, now)
}

func testVerifierTB(t testing.TB, is *issuer, now time.Time) *Verifier {
	t.Helper()
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Issuer: is.srv.URL, Resource: resource, AgentClaim: "agent", RoleClaim: "role",
		RoleScopes:    map[string]string{"SUPERVISOR": "admin", "WORKER": "work"},
		Introspection: &Introspection{ClientID: "rs", ClientSecretFile: secret}}
	if p := cfg.Check([]string{"SUPERVISOR", "ORCHESTRATOR", "WORKER"}); len(p) > 0 {
		t.Fatalf("Check: %v", p)
	}
	v, err := New(cfg, Options{Roles: []string{"SUPERVISOR", "ORCHESTRATOR", "WORKER"}, Now: func() time.Time { return now },
		Agent: func(id string) (string, bool) { return "ORCHESTRATOR", id == "orch" }})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestVerify(t *testing.T) {
	is := newIssuer(t)
	now := time.Now()
	v := testVerifier(t, is, now)
	good := func(extra map[string]any) map[string]any {
		c := map[string]any{"iss": is.srv.URL, "aud": resource, "exp": now.Add(time.Minute).Unix(), "iat": now.Unix(),
			"sub": "alice", "role": "SUPERVISOR", "scope": "admin other"}
		for k, val := range extra {
			if val == nil {
				delete(c, k)
			} else {
				c[k] = val
			}
		}
		return c
	}
	ctx := context.Background()

	id, err := v.Verify(ctx, is.sign(t, good(nil), "at+jwt"))
	if err != nil || id.ID != "oauth:alice" || id.Role != "SUPERVISOR" || id.Agent {
		t.Fatalf("a good token: %+v, %v", id, err)
	}
	id, err = v.Verify(ctx, is.sign(t, good(map[string]any{"agent": "orch", "scope": []any{"admin"}}), ""))
	if err != nil || id.ID != "orch" || id.Role != "ORCHESTRATOR" || !id.Agent {
		t.Fatalf("an agent's token: %+v, %v", id, err)
	}

	refused := []struct {
		name   string
		token  string
		status int
		says   string
	}{
		{"expired beyond the skew", is.sign(t, good(map[string]any{"exp": now.Add(-time.Minute).Unix()}), ""), 401, "expired"},
		{"no exp", is.sign(t, good(map[string]any{"exp": nil}), ""), 401, "no expiry"},
		{"another audience", is.sign(t, good(map[string]any{"aud": "https://other/mcp"}), ""), 401, "not for this server"},
		{"another issuer", is.sign(t, good(map[string]any{"iss": "https://evil.example"}), ""), 401, "issued by"},
		{"an ID token", is.sign(t, good(nil), "id_token+jwt"), 401, "not an access token"},
		{"an unknown agent", is.sign(t, good(map[string]any{"agent": "mallory"}), ""), 401, "no agent"},
		{"no role", is.sign(t, good(map[string]any{"role": nil}), ""), 401, "no role claim"},
		{"an unknown role", is.sign(t, good(map[string]any{"role": "ROOT"}), ""), 401, "no agent type"},
		{"missing scope", is.sign(t, good(map[string]any{"scope": "work"}), ""), 403, `"admin"`},
		{"alg none", unsigned(good(nil)), 401, "not a signed JWT"},
		{"opaque, not introspected active", "opaque-token-1", 401, "not active"},
	}
	for _, c := range refused {
		_, err := v.Verify(ctx, c.token)
		var e *Error
		if !errors.As(err, &e) || e.Status != c.status || !strings.Contains(e.Description+e.Scope, strings.Trim(c.says, `"`)) {
			t.Errorf("%s: %v", c.name, err)
		}
	}

	// A forged key id fetches the key set at most once per refetchGap.
	before := is.keyFetches.Load()
	for range 5 {
		is.kid = "forged"
		tok := is.sign(t, good(nil), "")
		is.kid = "k1"
		if _, err := v.Verify(ctx, tok); err == nil {
			t.Fatal("a token with an unknown key id passed")
		}
	}
	if n := is.keyFetches.Load() - before; n > 1 {
		t.Errorf("5 unknown key ids fetched the key set %d times", n)
	}
}

func TestIntrospection(t *testing.T) {
	is := newIssuer(t)
	now := time.Now()
	v := testVerifier(t, is, now)
	is.active["live"] = map[string]any{"active": true, "iss": is.srv.URL, "aud": resource, "exp": float64(now.Add(time.Minute).Unix()),
		"client_id": "app", "role": "WORKER", "scope": "work"}
	is.active["no-aud"] = map[string]any{"active": true, "iss": is.srv.URL, "client_id": "app", "role": "WORKER", "scope": "work"}
	id, err := v.Verify(context.Background(), "live")
	if err != nil || id.ID != "oauth:app" || id.Role != "WORKER" {
		t.Fatalf("a live opaque token: %+v, %v", id, err)
	}
	if _, err := v.Verify(context.Background(), "no-aud"); err == nil || !strings.Contains(err.Error(), "not for this server") {
		t.Errorf("an introspected token without aud: %v", err)
	}
	delete(is.active, "live") // revoked
	if _, err := v.Verify(context.Background(), "live"); err == nil {
		t.Error("a revoked token still passes")
	}
}

func TestUnreachableIssuerIsUnavailable(t *testing.T) {
	is := newIssuer(t)
	v := testVerifier(t, is, time.Now())
	tok := is.sign(t, map[string]any{"iss": is.srv.URL, "aud": resource, "exp": time.Now().Add(time.Minute).Unix(), "role": "WORKER", "sub": "x"}, "")
	is.srv.Close()
	_, err := v.Verify(context.Background(), tok)
	var e *Error
	if !errors.As(err, &e) || e.Status != http.StatusServiceUnavailable {
		t.Fatalf("issuer down: %v", err)
	}
}

// unsigned is a JWT with alg "none".
func unsigned(claims map[string]any) string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return enc(map[string]string{"alg": "none", "typ": "JWT"}) + "." + enc(claims) + "."
}

func TestCheck(t *testing.T) {
	roles := []string{"SUPERVISOR", "ORCHESTRATOR", "WORKER"}
	bad := Config{Issuer: "http://idp.example.com", Resource: "plugboard", RoleScopes: map[string]string{"ROOT": "x", "WORKER": "a b"},
		ClockSkew: "1h", Introspection: &Introspection{}}
	got := map[string]bool{}
	for _, p := range bad.Check(roles) {
		got[keyString(p.Key)] = true
	}
	for _, want := range []string{"issuer", "resource", "agent_claim", "role_scopes.ROOT", "role_scopes.WORKER", "clock_skew",
		"introspection.client_id", "introspection.client_secret_file"} {
		if !got[want] {
			t.Errorf("Check misses %s (got %v)", want, got)
		}
	}
	ok := Config{Issuer: "http://127.0.0.1:8080", Resource: "https://h/mcp", RoleClaim: "r"}
	if p := ok.Check(roles); len(p) != 0 {
		t.Errorf("a loopback http issuer: %v", p)
	}
}

func keyString(k []any) string {
	var parts []string
	for _, e := range k {
		parts = append(parts, e.(string))
	}
	return strings.Join(parts, ".")
}

// A token kept as verified still expires, and still maps through the
// agents configuration of the moment.
func TestVerifiedCacheKeepsExpiry(t *testing.T) {
	is := newIssuer(t)
	now := time.Now()
	v := testVerifier(t, is, now)
	clock := now
	v.opts.Now = func() time.Time { return clock }
	tok := is.sign(t, map[string]any{"iss": is.srv.URL, "aud": resource, "exp": now.Add(10 * time.Second).Unix(),
		"sub": "alice", "role": "WORKER", "scope": "work"}, "")
	if _, err := v.Verify(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	clock = now.Add(10*time.Second + DefaultClockSkew + time.Second)
	if _, err := v.Verify(context.Background(), tok); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("a cached token past its expiry: %v", err)
	}
}
