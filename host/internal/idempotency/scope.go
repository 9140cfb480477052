package idempotency

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sync"
)

// Scope is a keyed call as the operations it makes see it: the host passes
// it down in the call's context, and the board API journals each
// operation with an effect under it (store.RunEffect), so that the call
// run again — by the dispatcher's retries, or by a retry after a crash —
// gets the answers of the effects already made instead of making them
// twice.
//
// A rerun is the same call with the same payload, so a deterministic
// plugin makes the same operations in the same order; an operation is
// named by what it is (op, arguments) and how many identical ones the run
// made before it, not by its position, so a plugin that makes an extra
// read or reorders independent writes still finds its effects.
type Scope struct {
	Tool, RequestID string
	// PayloadHash names the call's payload as its caller sent it: Guard.Run
	// hashes the caller's identity in with the arguments (journalHash), so
	// the journal keeps each caller's effects apart.
	PayloadHash string

	mu   sync.Mutex
	seen map[string]int // op + args hash → operations made so far this run
}

type scopeKey struct{}

// WithScope returns ctx carrying the scope of the keyed call (tool, key,
// payload hash).
func WithScope(ctx context.Context, tool, key, payloadHash string) context.Context {
	return context.WithValue(ctx, scopeKey{}, &Scope{Tool: tool, RequestID: key, PayloadHash: payloadHash})
}

// ScopeFrom returns the scope ctx carries, or nil outside a keyed call.
func ScopeFrom(ctx context.Context) *Scope {
	s, _ := ctx.Value(scopeKey{}).(*Scope)
	return s
}

// NewRun returns ctx with a fresh count of operations for one run of the
// call: each run of the plugin starts again from its first operation, so
// its first create_task is the first one journaled. ctx without a scope is
// returned as it is.
func NewRun(ctx context.Context) context.Context {
	s := ScopeFrom(ctx)
	if s == nil {
		return ctx
	}
	return context.WithValue(ctx, scopeKey{}, &Scope{Tool: s.Tool, RequestID: s.RequestID, PayloadHash: s.PayloadHash})
}

// Next counts one more operation op with arguments args in this run and
// returns the hash of its arguments and how many identical operations came
// before it.
func (s *Scope) Next(op string, args json.RawMessage) (argsHash string, seq int) {
	argsHash = ArgsHash(args)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen == nil {
		s.seen = map[string]int{}
	}
	k := op + "\x00" + argsHash
	seq = s.seen[k]
	s.seen[k]++
	return argsHash, seq
}

// ArgsHash is the hex SHA-256 of an operation's arguments in canonical
// form (Canonical, nothing left out), or of their bytes when they are not
// an object.
func ArgsHash(args json.RawMessage) string {
	b, err := Canonical(args, "")
	if err != nil {
		b = args
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
