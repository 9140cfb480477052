package clients

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/plugboard/plugboard/internal/testing/clitest"
)

//go:embed oidc-provider.mjs
var oidcProviderScript []byte

//go:embed oauth-driver.mjs
var oauthDriverScript []byte

// OIDCClient is a client an issuer of OpenIDProvider knows.
type OIDCClient struct {
	ID     string `json:"client_id"`
	Secret string `json:"client_secret"`
	// Format is the access tokens' format: "jwt" (default) or "opaque".
	Format string `json:"format,omitempty"`
	// TTL is the access tokens' lifetime in seconds (default 600).
	TTL int `json:"ttl,omitempty"`
	// Claims are added to the client's access tokens (and to their
	// introspection).
	Claims map[string]any `json:"claims,omitempty"`
}

// OIDCIssuer is one issuer of OpenIDProvider and its clients.
type OIDCIssuer struct {
	Clients []OIDCClient `json:"clients"`
}

// OpenIDProvider is a real OpenID provider (oidc-provider from npm, pinned
// in package-lock.json) in a Node.js child process: one or more issuers on
// loopback that issue client-credentials access tokens for a resource,
// with introspection and revocation.
type OpenIDProvider struct {
	// Issuers are the issuers' URLs, in the order given.
	Issuers []string
	cmd     *exec.Cmd
	stderr  *clitest.SyncBuffer
}

// StartOpenIDProvider starts the provider of the installation at dir
// (Install) with issuers, each offering scopes (space-separated).
func StartOpenIDProvider(ctx context.Context, dir, scopes string, issuers ...OIDCIssuer) (*OpenIDProvider, error) {
	script := filepath.Join(dir, "oidc-provider.mjs")
	if old, err := os.ReadFile(script); err != nil || !bytes.Equal(old, oidcProviderScript) {
		if err := writeDriver(script, oidcProviderScript); err != nil {
			return nil, err
		}
	}
	spec, err := json.Marshal(map[string]any{"scopes": scopes, "issuers": issuers})
	if err != nil {
		return nil, err
	}
	p := &OpenIDProvider{cmd: exec.Command(node(dir), script, string(spec)), stderr: &clitest.SyncBuffer{}}
	p.cmd.Dir = dir
	p.cmd.Stderr = p.stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	ready := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil {
			ready <- fmt.Errorf("no ready line: %v", err)
			return
		}
		var r struct{ Issuers []string }
		if err := json.Unmarshal([]byte(line), &r); err != nil || len(r.Issuers) != len(issuers) {
			ready <- fmt.Errorf("ready line %q: %v", line, err)
			return
		}
		p.Issuers = r.Issuers
		ready <- nil
	}()
	select {
	case err = <-ready:
	case <-ctx.Done():
		err = ctx.Err()
	case <-time.After(60 * time.Second):
		err = fmt.Errorf("not ready after 60s")
	}
	if err != nil {
		p.Close()
		return nil, fmt.Errorf("OpenID provider: %v\n%s", err, p.Stderr())
	}
	return p, nil
}

// Stderr is what the provider wrote to stderr so far.
func (p *OpenIDProvider) Stderr() string { return p.stderr.String() }

// Close stops the provider.
func (p *OpenIDProvider) Close() {
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
}

// OAuthRun is what the TypeScript SDK's OAuth client did.
type OAuthRun struct {
	Tools  []string        `json:"tools"`
	Result json.RawMessage `json:"result"`
	// Requests are the client's HTTP requests in order ("METHOD URL"):
	// the discovery it did.
	Requests []string `json:"requests"`
}

// OAuthCall runs the official TypeScript SDK's client with its
// client-credentials OAuth provider against the MCP endpoint url: it
// connects with no token, discovers the authorization server from the
// 401, obtains a token for scope, lists the tools and calls tool with args.
func OAuthCall(ctx context.Context, dir, url, clientID, clientSecret, scope, tool string, args any) (*OAuthRun, error) {
	script := filepath.Join(dir, "oauth-driver.mjs")
	if old, err := os.ReadFile(script); err != nil || !bytes.Equal(old, oauthDriverScript) {
		if err := writeDriver(script, oauthDriverScript); err != nil {
			return nil, err
		}
	}
	a, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, node(dir), script, url, clientID, clientSecret, scope, tool, string(a))
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("TypeScript OAuth client: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	var run OAuthRun
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &run); err != nil {
		return nil, fmt.Errorf("TypeScript OAuth client: output %q: %v\n%s", stdout.String(), err, strings.TrimSpace(stderr.String()))
	}
	return &run, nil
}
