package host

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/plugboard/plugboard/host/internal/policy"
)

const (
	liveTokenW1  = "live-w1-token-0123456789abcdef0123456789"
	liveTokenW1b = "live-w1-token-b-0123456789abcdef012345678"
	liveTokenOp  = "live-operator-token-0123456789abcdef01234"
)

func liveAgents(t *testing.T, body string) *Policy {
	t.Helper()
	p, err := policy.Parse("agents.json", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// serveLive runs ServeHTTP with tokens until the test ends and returns
// its MCP URL.
func serveLive(t *testing.T, h *Host, tokens map[string]string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = h.ServeHTTP(ctx, ln, HTTPOptions{Tokens: tokens, NoDashboard: true}) }()
	t.Cleanup(func() { cancel(); <-done })
	url := "http://" + ln.Addr().String() + MCPPath
	deadline := time.Now().Add(10 * time.Second)
	for {
		h.tokens.mu.Lock()
		n := len(h.tokens.routes) + h.tokens.open
		h.tokens.mu.Unlock()
		if n > 0 && status(t, url, "") != 0 {
			return url
		}
		if time.Now().After(deadline) {
			t.Fatal("ServeHTTP did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// status is the HTTP status of an MCP initialize with token, 0 when the
// server does not answer.
func status(t *testing.T, url, token string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestSetPolicy: a new agents configuration takes effect for token checks
// and agent lookups; one that drops the host's --agent, reuses the
// operator's token, or gives tokens to a transport that runs without
// authentication is refused, and the one in force stays.
func TestSetPolicy(t *testing.T) {
	ctx := context.Background()
	first := liveAgents(t, `{"agents":[{"id":"boss","type":"SUPERVISOR"},{"id":"w1","type":"WORKER","token":"`+liveTokenW1+`"}]}`)
	h, err := Open(ctx, Config{DataDir: t.TempDir(), PluginDirs: []string{t.TempDir()}, Policy: first, Agent: "boss"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.WithoutCancel(ctx)) })
	url := serveLive(t, h, map[string]string{liveTokenW1: "w1", liveTokenOp: LocalID})
	if status(t, url, liveTokenW1) == http.StatusUnauthorized || status(t, url, liveTokenW1b) != http.StatusUnauthorized {
		t.Fatal("the first tokens are not the ones in force")
	}

	for _, bad := range []struct{ body, want string }{
		{`{"agents":[{"id":"w1","type":"WORKER"}]}`, `agent "boss", the identity this server runs as`},
		{`{"agents":[{"id":"boss","type":"SUPERVISOR","token":"` + liveTokenOp + `"}]}`, `agent "boss"'s token is the server's own bearer token`},
	} {
		err := h.SetPolicy(liveAgents(t, bad.body))
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("SetPolicy(%s) = %v, want %q", bad.body, err, bad.want)
		}
		if h.Policy() != first || status(t, url, liveTokenW1) == http.StatusUnauthorized {
			t.Errorf("a refused configuration changed the one in force")
		}
	}

	second := liveAgents(t, `{"agents":[{"id":"boss","type":"SUPERVISOR"},{"id":"w1","type":"WORKER","token":"`+liveTokenW1b+`"},{"id":"w2","type":"WORKER"}]}`)
	if err := h.SetPolicy(second); err != nil {
		t.Fatal(err)
	}
	if h.Policy() != second {
		t.Fatal("the new configuration is not in force")
	}
	if got := status(t, url, liveTokenW1); got != http.StatusUnauthorized {
		t.Errorf("w1's old token after the change: HTTP %d, want 401", got)
	}
	for _, tok := range []string{liveTokenW1b, liveTokenOp} {
		if got := status(t, url, tok); got == http.StatusUnauthorized || got == 0 {
			t.Errorf("token %s… after the change: HTTP %d", tok[:8], got)
		}
	}
	if c, ok := h.policy.Caller("w2"); !ok || c.Role != "WORKER" {
		t.Errorf("w2 is not known after the change: %v", c)
	}

	// A transport without authentication: tokens cannot be added.
	serveLive(t, h, nil)
	err = h.SetPolicy(liveAgents(t, `{"agents":[{"id":"boss","type":"SUPERVISOR"},{"id":"w3","type":"WORKER","token":"`+liveTokenW1+`"}]}`))
	if err == nil || !strings.Contains(err.Error(), "started without any") || h.Policy() != second {
		t.Errorf("tokens given to an open transport: %v", err)
	}
}
