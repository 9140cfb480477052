package bench

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// BenchmarkHTTPEchoAuth measures one echo call (1 KiB) over streamable
// HTTP to the real binary, sequentially, authenticated three ways in the
// same run: the operator's static bearer token, and OAuth access tokens
// (JWTs signed RS256 and ES256 by a local issuer whose key set the host
// fetched once), validated on every request. The differences are the
// per-call cost of token validation.
func BenchmarkHTTPEchoAuth(b *testing.B) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		b.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	var issuerURL string
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": issuerURL, "jwks_uri": issuerURL + "/jwks"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
			{Key: &rsaKey.PublicKey, KeyID: "rsa", Use: "sig", Algorithm: "RS256"},
			{Key: &ecKey.PublicKey, KeyID: "ec", Use: "sig", Algorithm: "ES256"},
		}})
	})
	issuer := httptest.NewServer(mux)
	b.Cleanup(issuer.Close)
	issuerURL = issuer.URL

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	resource := "http://" + addr + "/mcp"
	dir := b.TempDir()
	agents, _ := json.Marshal(map[string]any{"oauth": map[string]any{
		"issuer": issuerURL, "resource": resource, "role_claim": "role",
		"role_scopes": map[string]string{"SUPERVISOR": "admin"},
	}})
	agentsFile := filepath.Join(dir, "agents.json")
	if err := os.WriteFile(agentsFile, agents, 0o600); err != nil {
		b.Fatal(err)
	}
	plugins, _ := buildtest.Plugins(b, "plugins/echo")
	const static = "bench-static-token-0123456789abcdef0123"
	cmd := exec.Command(buildtest.Binary(b), "serve", "--http", addr, "--plugins", plugins, "--data", filepath.Join(dir, "data"),
		"--agents", agentsFile, "--http-token", static)
	cmd.Env = benchEnv()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGINT); _ = cmd.Wait() })
	waitHTTP(b, "http://"+addr+"/healthz")

	sign := func(alg jose.SignatureAlgorithm, key crypto.Signer, kid string) string {
		signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key},
			(&jose.SignerOptions{}).WithType("at+jwt").WithHeader("kid", kid))
		if err != nil {
			b.Fatal(err)
		}
		tok, err := jwt.Signed(signer).Claims(map[string]any{"iss": issuerURL, "aud": resource, "sub": "bench",
			"role": "SUPERVISOR", "scope": "admin", "exp": time.Now().Add(time.Hour).Unix()}).Serialize()
		if err != nil {
			b.Fatal(err)
		}
		return tok
	}
	for _, c := range []struct{ name, token string }{
		{"static-token", static},
		{"oauth-jwt-RS256", sign(jose.RS256, rsaKey, "rsa")},
		{"oauth-jwt-ES256", sign(jose.ES256, ecKey, "ec")},
	} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
			s, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: resource,
				HTTPClient: &http.Client{Transport: authorize{c.token}}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				b.Fatalf("connect: %v\n%s", err, stderr.String())
			}
			defer s.Close()
			call := func() {
				res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": echoText}})
				if err != nil || res.IsError {
					b.Fatalf("echo: %v %+v", err, res)
				}
			}
			for range 20 {
				call()
			}
			b.ResetTimer()
			for b.Loop() {
				call()
			}
		})
	}
}

// authorize adds the bearer token to every request.
type authorize struct{ token string }

func (a authorize) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+a.token)
	return http.DefaultTransport.RoundTrip(r)
}

// waitHTTP waits for url to answer 200.
func waitHTTP(b *testing.B, url string) {
	b.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.Fatalf("%s did not answer in 60s", url)
}

// benchEnv is the environment without the caller's plugboard token.
func benchEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !regexp.MustCompile(`^PLUGBOARD_HTTP_TOKEN=`).MatchString(kv) {
			env = append(env, kv)
		}
	}
	return env
}
