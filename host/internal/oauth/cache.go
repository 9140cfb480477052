package oauth

import (
	"crypto/sha256"
	"sync"
	"time"
)

// A verified JWT is kept for a short while, by its SHA-256, so that a
// client sending the same token on every request pays the signature check
// (about 90µs for ES256 on a 2-core machine) once a minute instead of
// every time. Only tokens whose signature, issuer and audience checked out
// are kept; expiry and the claims' mapping to an identity are still
// decided on every request, so a changed agents file applies at once.
const (
	// verifiedTTL bounds how long a verified token is trusted without a
	// new signature check, so a key the issuer withdrew stops working
	// within it.
	verifiedTTL = time.Minute
	// maxVerified bounds the cache: a flood of distinct valid tokens
	// cannot grow it further.
	maxVerified = 4096
)

type verifiedToken struct {
	claims  map[string]any
	scopes  []string
	expiry  time.Time
	checked time.Time
}

type verifiedCache struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]verifiedToken
}

func (c *verifiedCache) get(sum [sha256.Size]byte, now time.Time) (verifiedToken, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[sum]
	if !ok || now.Sub(v.checked) > verifiedTTL {
		return verifiedToken{}, false
	}
	return v, true
}

func (c *verifiedCache) put(sum [sha256.Size]byte, v verifiedToken) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[[sha256.Size]byte]verifiedToken{}
	}
	if len(c.m) >= maxVerified {
		for k, e := range c.m {
			if v.checked.Sub(e.checked) > verifiedTTL {
				delete(c.m, k)
			}
		}
		if len(c.m) >= maxVerified {
			clear(c.m)
		}
	}
	c.m[sum] = v
}
