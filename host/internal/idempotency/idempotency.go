// Package idempotency owns request_id deduplication: a tool call that
// carries an idempotency key runs at most once per (tool, key, payload),
// and a retry gets the first call's answer back. It reads the key field a
// tool's manifest names and hashes the rest of the arguments; it knows
// nothing else about tools or plugins, and nothing about how a call runs —
// the dispatcher hands it the call as a function. Records live in the board
// store (idempotency_records), reached through the Store interface, so this
// package does not import SQLite.
//
// Decisions, per (tool, key):
//   - held by another caller (Identity): idempotency_conflict, whatever
//     the record holds — a key replays only to the caller whose call made
//     it, so another caller never receives that call's answer (which its
//     own scope may not reach), never waits on it, never takes it over;
//   - free: claim it in_progress, run the call; store its result if it
//     succeeded, release the claim if it failed (a retry runs again rather
//     than replaying a failure);
//   - completed, same payload: replay the stored result, byte for byte;
//   - same key, different payload: idempotency_conflict;
//   - in progress, same payload: request_in_progress (retryable);
//   - in progress for longer than the in-progress TTL, or held by a process
//     that no longer runs (the host was killed mid-call): free — and the
//     board operations the dead call made are found in the journal by the
//     call run again (Scope), so its effects are not made twice.
package idempotency

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"
	"unicode/utf8"

	"github.com/plugboard/plugboard/abi"
)

// Outcomes of Store.ClaimRequestAt; host/internal/store's Claim* constants
// have the same values.
const (
	OutcomeNew        = "new"
	OutcomeReplay     = "replay"
	OutcomeConflict   = "conflict"
	OutcomeInProgress = "in_progress"
	OutcomeForeign    = "foreign"
)

// Store holds idempotency records; *store.Store (host/internal/store)
// implements it.
type Store interface {
	// ClaimRequestBy atomically looks up (tool, requestID): held by a
	// caller other than caller, it answers OutcomeForeign and nothing
	// more; when it is free, its in_progress claim is older than
	// inProgressTTL or its claim's owner is another that dead reports
	// gone, it claims it for caller and payloadHash as owner. It returns
	// one of the Outcome* values, the stored result on OutcomeReplay and a
	// claim token on OutcomeNew.
	ClaimRequestBy(ctx context.Context, now time.Time, tool, caller, requestID, payloadHash string,
		inProgressTTL time.Duration, owner string, dead func(owner string) bool) (outcome string, result []byte, token string, err error)
	// CompleteClaim stores the result of the claim token names; false when
	// that claim no longer holds the key.
	CompleteClaim(ctx context.Context, tool, requestID, token string, result []byte) (bool, error)
	// ReleaseClaim deletes the claim token names, if it still holds the key.
	ReleaseClaim(ctx context.Context, tool, requestID, token string) error
	// PruneRequests deletes completed records older than completedTTL and
	// in_progress ones older than inProgressTTL; a TTL of 0 keeps them.
	PruneRequests(ctx context.Context, now time.Time, completedTTL, inProgressTTL time.Duration) (int64, error)
	// ReleaseDeadClaims deletes the in_progress claims whose owner dead
	// reports gone.
	ReleaseDeadClaims(ctx context.Context, dead func(owner string) bool) (int64, error)
}

// StoreFunc returns the store, waiting while it is still opening (the
// board opens in the background). An error means deduplication is
// unavailable; a done ctx ends the wait with ctx's error.
type StoreFunc func(context.Context) (Store, error)

// StaticStore is a StoreFunc for a store that is already open.
func StaticStore(s Store) StoreFunc {
	return func(context.Context) (Store, error) { return s, nil }
}

// MaxKeyLen is the longest key accepted, in characters.
const MaxKeyLen = 128

// finishTimeout bounds storing or releasing a claim after the call. It runs
// without the call's cancellation: a client that gave up must still leave a
// consistent record behind.
const finishTimeout = 10 * time.Second

// Key reads the key field from a call's arguments (a JSON object that
// passed schema validation). present is false when the field is absent:
// the call runs without deduplication. A key that is not a string, is
// empty or is longer than MaxKeyLen characters is an invalid_argument
// envelope naming the field.
func Key(args json.RawMessage, keyField string) (key string, present bool, env *abi.Envelope) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(args, &obj) != nil {
		return "", false, nil // not an object: nothing to deduplicate by
	}
	raw, ok := obj[keyField]
	if !ok {
		return "", false, nil
	}
	if json.Unmarshal(raw, &key) != nil || raw[0] != '"' {
		return "", false, keyError(keyField, fmt.Sprintf("%s must be a string of 1 to %d characters", keyField, MaxKeyLen))
	}
	switch n := utf8.RuneCountInString(key); {
	case n == 0:
		return "", false, keyError(keyField, keyField+" is empty")
	case n > MaxKeyLen:
		return "", false, keyError(keyField, fmt.Sprintf("%s is %d characters long, over the limit of %d", keyField, n, MaxKeyLen))
	}
	return key, true, nil
}

func keyError(field, msg string) *abi.Envelope {
	env := abi.NewEnvelope(abi.CodeInvalidArgument, msg,
		fmt.Sprintf("pass %s as a string of 1 to %d characters (a UUID is a good choice), or leave it out to call without deduplication", field, MaxKeyLen))
	env.Details = map[string]any{"field": field, "max_length": MaxKeyLen}
	return env
}

// Guard decides, for each keyed call, whether it runs, replays or is
// refused. It is safe for concurrent use.
type Guard struct {
	store StoreFunc
	cfg   Config
	log   *slog.Logger
	now   func() time.Time
}

// NewGuard returns a guard keeping its records in the store that store
// returns; cfg.InProgressTTL says when an unfinished claim is presumed dead.
func NewGuard(store StoreFunc, cfg Config) *Guard {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Guard{store: store, cfg: cfg, log: log, now: time.Now}
}

// Do is Run for a call that makes no board operations of its own to
// journal: run does not need the call's Scope.
func (g *Guard) Do(ctx context.Context, c *abi.Caller, tool, keyField, key string, args json.RawMessage,
	run func() (result []byte, ok bool)) (result []byte, ran bool, env *abi.Envelope) {
	return g.Run(ctx, c, tool, keyField, key, args, func(context.Context) ([]byte, bool) { return run() })
}

// Identity is how a key's record names the caller whose call claimed it:
// the caller's id and role, as the ABI encodes them (so no two callers
// share one), and the fingerprint of its board scope when scope is not "",
// or "" for a call without a caller. The role and the scope are part of it:
// a caller whose role or scope the agents file changed may reach less than
// before, so it does not replay what it got before.
func Identity(c *abi.Caller, scope string) string {
	if c == nil {
		return ""
	}
	b, err := json.Marshal(struct {
		ID    string `json:"id"`
		Role  string `json:"role,omitempty"`
		Scope string `json:"scope,omitempty"`
	}{c.ID, c.Role, scope})
	if err != nil { // strings always encode
		return ""
	}
	return string(b)
}

// journalHash names a keyed call's payload in its effect journal: the
// payload hash and the caller's identity together. Another caller's call
// with the same key and arguments — made once the first released the key
// after a failure — then never finds, and never gets the answers of, the
// board operations the first one journaled.
// JournalHash is the payload hash a Scope journals effects under: the
// caller's identity and the call's payload, so each caller's effects stay
// apart.
func JournalHash(identity, payloadHash string) string { return journalHash(identity, payloadHash) }

func journalHash(identity, payloadHash string) string {
	sum := sha256.Sum256([]byte(identity + "\n" + payloadHash))
	return hex.EncodeToString(sum[:])
}

// Run runs a keyed call made by caller c at most once. args are the call's
// arguments (the key field included; it is left out of the payload hash).
// run executes the call under a context carrying its Scope (which the
// board API journals the call's effects under) and returns its result as
// it should be replayed, and whether it succeeded; only a success is
// stored, a failure releases the key.
//
// The key is c's: a stored answer replays only to the caller whose call
// claimed the key (Identity), the caller that passed the policy and the
// board's scope checks for that very call when it ran; any other caller
// naming the key gets idempotency_conflict, before anything about the
// record — its answer, whether its call still runs — is looked at.
//
// It returns run's result when run ran, the stored bytes when the call is a
// replay (ran reports which), or an envelope: idempotency_conflict,
// request_in_progress, or a failure to reach the store (unavailable,
// cancelled, internal) — in which case run did not run.
func (g *Guard) Run(ctx context.Context, c *abi.Caller, tool, keyField, key string, args json.RawMessage,
	run func(ctx context.Context) (result []byte, ok bool)) (result []byte, ran bool, env *abi.Envelope) {
	hash, err := PayloadHash(args, keyField)
	if err != nil {
		env := abi.NewEnvelope(abi.CodeInvalidArgument, err.Error(), "pass the arguments as one JSON object")
		env.Details = map[string]any{"tool": tool}
		return nil, false, env
	}
	st, err := g.store(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, abi.NewEnvelope(abi.CodeCancelled, "the call ended while the request_id store was opening",
				"retry the call with the same "+keyField)
		}
		env := abi.NewEnvelope(abi.CodeUnavailable, "calls with "+keyField+" cannot be deduplicated: "+err.Error(),
			"retry later with the same "+keyField+"; the operator must check the server log")
		env.Details = map[string]any{"tool": tool}
		return nil, false, env
	}
	scope := ""
	if g.cfg.ScopeOf != nil && c != nil {
		scope = g.cfg.ScopeOf(c)
	}
	who := Identity(c, scope)
	outcome, stored, token, err := st.ClaimRequestBy(ctx, g.now(), tool, who, key, hash, g.cfg.InProgressTTL, g.cfg.owner(), g.cfg.ownerDead())
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, abi.NewEnvelope(abi.CodeCancelled, "the call ended before its "+keyField+" was recorded",
				"retry the call with the same "+keyField)
		}
		g.log.Error("idempotency claim failed", "tool", tool, "err", err)
		code, hint := abi.CodeInternal, "retry the call with the same "+keyField
		// The store says when its server is the trouble (out of disk, down):
		// the operator must act, and the call may be retried once they have.
		var u interface{ Unavailable() bool }
		if errors.As(err, &u) && u.Unavailable() {
			code, hint = abi.CodeUnavailable, "retry later with the same "+keyField+"; the operator must fix the store as the message says"
		}
		env := abi.NewEnvelope(code, "recording "+keyField+" failed: "+err.Error(), hint)
		env.Details = map[string]any{"tool": tool}
		return nil, false, env
	}
	switch outcome {
	case OutcomeForeign:
		// Nothing of the other call is told: not its arguments, not its
		// state, not whose it is.
		env := abi.NewEnvelope(abi.CodeIdempotencyConflict,
			fmt.Sprintf("%s %q belongs to a %s call another caller made", keyField, key, tool),
			fmt.Sprintf("generate a fresh %s of your own (a UUID) for this call; a %s replays only calls you made yourself", keyField, keyField))
		env.Details = map[string]any{"tool": tool, "request_id": key}
		return nil, false, env
	case OutcomeReplay:
		g.log.Debug("idempotent replay", "tool", tool, "request_id", key)
		return stored, false, nil
	case OutcomeConflict:
		env := abi.NewEnvelope(abi.CodeIdempotencyConflict,
			fmt.Sprintf("%s %q was already used for a %s call with different arguments", keyField, key, tool),
			fmt.Sprintf("generate a new %s for a different request; reuse a %s only to retry the same arguments", keyField, keyField))
		env.Details = map[string]any{"tool": tool, "request_id": key}
		return nil, false, env
	case OutcomeInProgress:
		env := abi.NewEnvelope(abi.CodeRequestInProgress,
			fmt.Sprintf("a %s call with %s %q is still running", tool, keyField, key),
			fmt.Sprintf("retry shortly with the same %s and arguments; once the first call finishes, the retry returns its result", keyField))
		env.Details = map[string]any{"tool": tool, "request_id": key}
		return nil, false, env
	case OutcomeNew:
	default:
		env := abi.NewEnvelope(abi.CodeInternal, fmt.Sprintf("the request_id store answered %q", outcome), "retry the call")
		return nil, false, env
	}

	ok := false
	defer func() {
		// Also on a panic in run: an unfinished claim would block the key
		// until it went stale.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
		defer cancel()
		if ok {
			held, err := st.CompleteClaim(fctx, tool, key, token, result)
			switch {
			case err != nil:
				g.log.Warn("storing an idempotent result failed; the key stays in progress until it goes stale",
					"tool", tool, "request_id", key, "err", err)
			case !held:
				g.log.Warn("an idempotent call outlived its claim (pruned or reclaimed as stale); its result is not stored",
					"tool", tool, "request_id", key, "in_progress_ttl", g.cfg.InProgressTTL)
			}
			return
		}
		if err := st.ReleaseClaim(fctx, tool, key, token); err != nil {
			g.log.Warn("releasing a failed idempotent call failed; the key stays in progress until it goes stale",
				"tool", tool, "request_id", key, "err", err)
		}
	}()
	result, ok = run(WithScope(ctx, tool, key, journalHash(who, hash)))
	return result, true, nil
}
