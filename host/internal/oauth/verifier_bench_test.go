package oauth

import (
	"context"
	"testing"
	"time"
)

// BenchmarkVerify measures Verify of an ES256 access token whose issuer
// keys are already fetched: "signature" checks it as on its first request,
// "cached" as on the next ones (cache.go): the per-request cost of OAuth
// on the HTTP transport.
func BenchmarkVerify(b *testing.B) {
	is := newIssuer(b)
	now := time.Now()
	v := testVerifierTB(b, is, now)
	tok := is.sign(b, map[string]any{"iss": is.srv.URL, "aud": resource, "exp": now.Add(time.Hour).Unix(),
		"sub": "bench", "role": "SUPERVISOR", "scope": "admin"}, "at+jwt")
	ctx := context.Background()
	if _, err := v.Verify(ctx, tok); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		fresh bool
	}{{"signature", true}, {"cached", false}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if c.fresh {
					v.verified.mu.Lock()
					clear(v.verified.m)
					v.verified.mu.Unlock()
				}
				if _, err := v.Verify(ctx, tok); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
