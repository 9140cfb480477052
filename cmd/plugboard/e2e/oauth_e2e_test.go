package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plugboard/plugboard/conformance/clients"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// TestOAuthResourceServer puts the real binary behind a real OpenID
// provider (oidc-provider from npm, two issuers) as MCP's authorization
// specification describes it:
//   - the official TypeScript SDK's OAuth client connects with no token,
//     discovers the authorization server from the 401's resource_metadata,
//     obtains a token for the server's resource and calls a tool, once as
//     a person whose token's role claim says SUPERVISOR and once as a CI
//     client whose agent claim names the agents file's orchestrator;
//   - the decision log records each call under the identity and type the
//     claims gave;
//   - a token for another audience, an expired one, one from another
//     issuer, one lacking its type's scope and a revoked opaque one
//     (introspection) are refused with the right status and challenge,
//     while the operator's static token keeps working.
func TestOAuthResourceServer(t *testing.T) {
	if testing.Short() {
		t.Skip("installs Node.js clients and builds the binary")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	nodeDir, err := clients.Install(ctx, buildtest.Root(t))
	if err != nil {
		t.Fatal(err)
	}
	const scopes = "plugboard:admin plugboard:work"
	role := func(r string) map[string]any { return map[string]any{"plugboard_role": r} }
	op, err := clients.StartOpenIDProvider(ctx, nodeDir, scopes,
		clients.OIDCIssuer{Clients: []clients.OIDCClient{
			{ID: "alice-laptop", Secret: "alice-secret", Claims: role("SUPERVISOR")},
			{ID: "ci-bot", Secret: "ci-secret", Claims: map[string]any{"plugboard_agent": "orch"}},
			{ID: "short-lived", Secret: "short-secret", TTL: 1, Claims: role("SUPERVISOR")},
			{ID: "opaque-app", Secret: "opaque-secret", Format: "opaque", Claims: role("SUPERVISOR")},
			{ID: "plugboard", Secret: "plugboard-introspection-secret"},
		}},
		clients.OIDCIssuer{Clients: []clients.OIDCClient{
			{ID: "alice-laptop", Secret: "alice-secret", Claims: role("SUPERVISOR")},
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(op.Close)
	issuer, otherIssuer := op.Issuers[0], op.Issuers[1]

	// The resource URI is the endpoint's, so the port is chosen first.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	resource := "http://" + addr + "/mcp"

	tmp := t.TempDir()
	secretFile := filepath.Join(tmp, "introspection-secret")
	if err := os.WriteFile(secretFile, []byte("plugboard-introspection-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	agents := map[string]any{
		"agents": []map[string]any{{"id": "orch", "type": "ORCHESTRATOR"}},
		"permissions": map[string]any{
			"ORCHESTRATOR": map[string]any{"add": []string{"echo"}},
		},
		"oauth": map[string]any{
			"issuer":        issuer,
			"resource":      resource,
			"introspection": map[string]any{"client_id": "plugboard", "client_secret_file": secretFile},
			"agent_claim":   "plugboard_agent",
			"role_claim":    "plugboard_role",
			"role_scopes":   map[string]string{"SUPERVISOR": "plugboard:admin", "ORCHESTRATOR": "plugboard:work", "WORKER": "plugboard:work"},
			"clock_skew":    "1s",
		},
	}
	agentsFile := filepath.Join(tmp, "agents.json")
	b, _ := json.MarshalIndent(agents, "", "  ")
	if err := os.WriteFile(agentsFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	pluginDir, _ := buildtest.Plugins(t, "plugins/echo")
	data := filepath.Join(tmp, "data")
	const staticToken = "operator-token-0123456789abcdef0123456789"
	srv := clitest.LaunchHTTP(t, httpEnv(), []string{"serve", "--http", addr, "--plugins", pluginDir, "--data", data,
		"--agents", agentsFile, "--http-token", staticToken})

	t.Run("the TypeScript SDK's OAuth client discovers, obtains a token and calls", func(t *testing.T) {
		for _, c := range []struct{ client, secret, scope string }{
			{"alice-laptop", "alice-secret", "plugboard:admin plugboard:work"},
			{"ci-bot", "ci-secret", "plugboard:work"},
		} {
			run, err := clients.OAuthCall(ctx, nodeDir, srv.URL, c.client, c.secret, c.scope, "echo", map[string]any{"text": "hello " + c.client})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(run.Result), "hello "+c.client) || strings.Contains(string(run.Result), `"isError":true`) {
				t.Errorf("%s: echo result %s", c.client, run.Result)
			}
			if !slices.Contains(run.Tools, "echo") {
				t.Errorf("%s: tools %v lack echo", c.client, run.Tools)
			}
			// The discovery went the way the specification lays out: the
			// 401, the server's metadata, the issuer's, then its token
			// endpoint.
			wantInOrder(t, run.Requests, "POST "+resource, "GET http://"+addr+"/.well-known/oauth-protected-resource/mcp",
				"GET "+issuer+"/.well-known/", "POST "+issuer+"/token", "POST "+resource)
		}
		// The decision log names who called, with the type the claims gave.
		deadline := time.Now().Add(10 * time.Second)
		for {
			out, err := exec.Command(buildtest.Binary(t), "audit", "tail", "--data", data, "--tool", "echo").CombinedOutput()
			if err != nil {
				t.Fatalf("audit tail: %v\n%s", err, out)
			}
			if strings.Contains(string(out), "oauth:alice-laptop(SUPERVISOR) echo ") && strings.Contains(string(out), "orch(ORCHESTRATOR) echo ") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the decision log lacks the OAuth callers:\n%s", out)
			}
			time.Sleep(100 * time.Millisecond)
		}
	})

	t.Run("metadata and challenge", func(t *testing.T) {
		resp := mcpPost(t, srv.URL, "")
		challenge := resp.Header.Get("WWW-Authenticate")
		if resp.StatusCode != http.StatusUnauthorized ||
			!strings.Contains(challenge, `resource_metadata="http://`+addr+`/.well-known/oauth-protected-resource/mcp"`) {
			t.Fatalf("no token: %d %q", resp.StatusCode, challenge)
		}
		r, err := http.Get("http://" + addr + "/.well-known/oauth-protected-resource/mcp")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		var meta struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
			ScopesSupported      []string `json:"scopes_supported"`
		}
		if err := json.NewDecoder(r.Body).Decode(&meta); err != nil || meta.Resource != resource ||
			len(meta.AuthorizationServers) != 1 || meta.AuthorizationServers[0] != issuer || len(meta.ScopesSupported) != 2 {
			t.Fatalf("metadata = %+v, %v", meta, err)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		short := issueToken(t, issuer, "short-lived", "short-secret", resource, "plugboard:admin")
		opaque := issueToken(t, issuer, "opaque-app", "opaque-secret", resource, "plugboard:admin")
		if strings.Count(opaque, ".") == 2 {
			t.Fatalf("the opaque client got a JWT: %s", opaque)
		}
		if got := mcpPost(t, srv.URL, opaque); got.StatusCode != http.StatusOK {
			t.Fatalf("a live opaque token (introspection): %d", got.StatusCode)
		}
		revokeToken(t, issuer, "opaque-app", "opaque-secret", opaque)

		cases := []struct {
			name, token string
			status      int
			challenge   []string
		}{
			{"another audience", issueToken(t, issuer, "alice-laptop", "alice-secret", "https://elsewhere.example/mcp", "plugboard:admin"),
				401, []string{`error="invalid_token"`, "not for this server"}},
			{"another issuer", issueToken(t, otherIssuer, "alice-laptop", "alice-secret", resource, "plugboard:admin"),
				401, []string{`error="invalid_token"`}},
			{"missing scope", issueToken(t, issuer, "alice-laptop", "alice-secret", resource, "plugboard:work"),
				403, []string{`error="insufficient_scope"`, `scope="plugboard:admin"`}},
			{"revoked (introspection)", opaque, 401, []string{`error="invalid_token"`, "not active"}},
			{"not a token at all", "garbage.not.jwt", 401, []string{`error="invalid_token"`}},
		}
		// The short-lived token expires (1s, plus the 1s skew configured).
		time.Sleep(2500 * time.Millisecond)
		cases = append(cases, struct {
			name, token string
			status      int
			challenge   []string
		}{"expired", short, 401, []string{`error="invalid_token"`, "expired"}})
		for _, c := range cases {
			resp := mcpPost(t, srv.URL, c.token)
			ch := resp.Header.Get("WWW-Authenticate")
			if resp.StatusCode != c.status {
				t.Errorf("%s: status %d, want %d (%s)", c.name, resp.StatusCode, c.status, ch)
				continue
			}
			for _, want := range append(c.challenge, `resource_metadata="http://`+addr+`/.well-known/oauth-protected-resource/mcp"`) {
				if !strings.Contains(ch, want) {
					t.Errorf("%s: challenge %q lacks %s", c.name, ch, want)
				}
			}
		}
		if got := mcpPost(t, srv.URL, staticToken); got.StatusCode != http.StatusOK {
			t.Errorf("the operator's static token beside OAuth: %d", got.StatusCode)
		}
	})
}

// mcpPost sends an MCP initialize request with token (none when empty)
// and returns the response, its body read.
func mcpPost(t *testing.T, endpoint, token string) *http.Response {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}`
	req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// issueToken obtains a client-credentials access token from issuer for
// resource with scope.
func issueToken(t *testing.T, issuer, client, secret, resource, scope string) string {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "resource": {resource}, "scope": {scope}}
	req, _ := http.NewRequest(http.MethodPost, issuer+"/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(client, secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &tok); err != nil || tok.AccessToken == "" {
		t.Fatalf("token for %s at %s: %d %s", client, issuer, resp.StatusCode, b)
	}
	return tok.AccessToken
}

// revokeToken revokes token at issuer (RFC 7009).
func revokeToken(t *testing.T, issuer, client, secret, token string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, issuer+"/token/revocation", strings.NewReader(url.Values{"token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(client, secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("revocation: %d", resp.StatusCode)
	}
}

// wantInOrder checks that requests has a request starting with each of
// prefixes, in that order.
func wantInOrder(t *testing.T, requests []string, prefixes ...string) {
	t.Helper()
	i := 0
	for _, r := range requests {
		if i < len(prefixes) && strings.HasPrefix(r, prefixes[i]) {
			i++
		}
	}
	if i < len(prefixes) {
		t.Errorf("the client's requests %q lack %q (in order)", requests, prefixes[i])
	}
}
