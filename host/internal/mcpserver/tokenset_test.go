package mcpserver

import (
	"net/http"
	"regexp"
	"sync"
	"testing"
)

// TestTokenSet: issued tokens are 64 random hex characters, each admitted
// as its identity until revoked; a revoked, unknown, altered or empty
// token is refused, over HTTP with 401. Revoking twice is harmless, and
// revoking one token leaves the others.
func TestTokenSet(t *testing.T) {
	var set TokenSet
	if _, ok := set.Authenticate(""); ok {
		t.Fatal("an empty set admitted the empty token")
	}
	a, revokeA, err := set.Issue("attempt:a")
	if err != nil {
		t.Fatal(err)
	}
	b, revokeB, err := set.Issue("attempt:b")
	if err != nil {
		t.Fatal(err)
	}
	hexToken := regexp.MustCompile(`^[0-9a-f]{64}$`)
	if !hexToken.MatchString(a) || !hexToken.MatchString(b) || a == b {
		t.Fatalf("tokens %q and %q: want two different 32-byte hex tokens", a, b)
	}
	for tok, want := range map[string]string{a: "attempt:a", b: "attempt:b"} {
		if id, ok := set.Authenticate(tok); !ok || id != want {
			t.Errorf("Authenticate(%s…) = %q, %v; want %q", tok[:8], id, ok, want)
		}
	}
	// b with its first character changed (to another hex digit: "0"+b[1:]
	// is b itself one time in sixteen).
	altered := map[byte]string{'0': "1"}[b[0]]
	if altered == "" {
		altered = "0"
	}
	for _, tok := range []string{"", a[:63], a + "0", altered + b[1:], "unknown-token-0123456789abcdef0123456789"} {
		if id, ok := set.Authenticate(tok); ok {
			t.Errorf("Authenticate(%q) admitted %q", tok, id)
		}
	}

	h := NewHTTP(testServer(), HTTPOptions{Loopback: true, Port: "43817", Authenticate: set.Authenticate})
	const host = "127.0.0.1:43817"
	if rec := do(t, h, http.MethodPost, MCPPath, host, "Authorization", "Bearer "+a); rec.Code != http.StatusOK {
		t.Fatalf("live token: status %d: %s", rec.Code, rec.Body)
	}
	wantError(t, do(t, h, http.MethodPost, MCPPath, host), http.StatusUnauthorized, "unauthorized")
	wantError(t, do(t, h, http.MethodPost, MCPPath, host, "Authorization", "Bearer unknown-token-0123456789abcdef0123456789"),
		http.StatusUnauthorized, "unauthorized")

	revokeA()
	revokeA()
	if _, ok := set.Authenticate(a); ok {
		t.Error("a revoked token is still admitted")
	}
	wantError(t, do(t, h, http.MethodPost, MCPPath, host, "Authorization", "Bearer "+a), http.StatusUnauthorized, "unauthorized")
	if id, ok := set.Authenticate(b); !ok || id != "attempt:b" {
		t.Errorf("revoking one token revoked another: %q, %v", id, ok)
	}
	if n := set.Len(); n != 1 {
		t.Errorf("Len = %d after one of two revoked, want 1", n)
	}
	revokeB()
	if n := set.Len(); n != 0 {
		t.Errorf("Len = %d after both revoked, want 0", n)
	}
}

// TestTokenSetConcurrent: issuing, authenticating and revoking at once is
// safe (go test -race) and leaves nothing behind.
func TestTokenSetConcurrent(t *testing.T) {
	var set TokenSet
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 50 {
				tok, revoke, err := set.Issue("attempt:x")
				if err != nil {
					t.Error(err)
					return
				}
				if _, ok := set.Authenticate(tok); !ok {
					t.Error("a live token was refused")
				}
				revoke()
			}
		})
	}
	wg.Wait()
	if n := set.Len(); n != 0 {
		t.Fatalf("%d tokens left live", n)
	}
}
