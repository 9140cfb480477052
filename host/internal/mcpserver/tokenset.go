package mcpserver

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"sync"
)

// TokenSet is a set of bearer tokens that changes while the server runs:
// each issued for an identity, each revoked on its own. It keeps only the
// tokens' SHA-256 sums, and Authenticate compares a presented token's sum
// with every live one in constant time, as Tokens does, so timing tells
// neither which token matched nor whether one did. The zero value is an
// empty set; it is safe for concurrent use.
type TokenSet struct {
	mu   sync.RWMutex
	live map[[sha256.Size]byte]string // sum → identity
}

// TokenBytes is the randomness of an issued token: 32 bytes, 64 hex
// characters.
const TokenBytes = 32

// Issue makes a new random token for identity and returns it with the
// function that revokes it; revoking twice does nothing.
func (s *TokenSet) Issue(identity string) (token string, revoke func(), err error) {
	var b [TokenBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", nil, err
	}
	token = hex.EncodeToString(b[:])
	sum := sha256.Sum256([]byte(token))
	s.mu.Lock()
	if s.live == nil {
		s.live = map[[sha256.Size]byte]string{}
	}
	s.live[sum] = identity
	s.mu.Unlock()
	var once sync.Once
	return token, func() {
		once.Do(func() {
			s.mu.Lock()
			delete(s.live, sum)
			s.mu.Unlock()
		})
	}, nil
}

// Len is how many tokens are live.
func (s *TokenSet) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.live)
}

// Authenticate is the set's Authenticator: the identity of a live token.
func (s *TokenSet) Authenticate(token string) (string, bool) {
	got := sha256.Sum256([]byte(token))
	s.mu.RLock()
	defer s.mu.RUnlock()
	id, ok := "", false
	for sum, who := range s.live {
		if subtle.ConstantTimeCompare(got[:], sum[:]) == 1 {
			id, ok = who, true
		}
	}
	return id, ok
}
