package store

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// Exactly-once across a crash. A keyed call (a tool call carrying its
// request_id) holds an in_progress claim while it runs and stores its
// answer when it ends; a host killed in between leaves the claim behind,
// and whatever the call had already done to the board. Two things make
// that recoverable:
//
//   - a claim names its owner (the process that holds it), so a host that
//     finds the claim of a dead owner takes it over at once instead of
//     answering request_in_progress until the in-progress TTL runs out
//     (ClaimRequestAs, ReleaseDeadClaims);
//   - every board operation with an effect that a keyed call makes is
//     journaled with its answer (idempotency_effects), in the same
//     transaction as the effect for operations whose writes all go through
//     the context's transaction (RunEffect), so the call run again finds
//     the effect already made and gets its answer back instead of making
//     it twice.

// querier is what sqlDB and Tx share.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

type txKey struct{}

// ctxTx is a transaction RunEffect opened, carried by the context of the
// operation it runs.
type ctxTx struct {
	s  *Store
	tx *Tx
}

// conn returns the transaction ctx carries for this store, else the
// database. A store method whose writes go through conn joins the effect
// journal's transaction, so its effect and its journal row commit together
// or not at all. A method that opens its own transaction (s.tx) must not
// run under one: SQLite has one writer, and it would wait for the
// transaction that waits for it.
func (s *Store) conn(ctx context.Context) querier {
	if c, ok := ctx.Value(txKey{}).(*ctxTx); ok && c.s == s {
		return c.tx
	}
	return s.db
}

// EffectKey names one board operation of a keyed call: the call (tool,
// request_id, payload hash), the operation and a hash of its arguments,
// and Seq, how many identical operations the call made before it (a call
// creating two equal tasks makes two effects).
type EffectKey struct {
	Tool, RequestID, PayloadHash string
	Op, ArgsHash                 string
	Seq                          int
}

// RunEffect runs fn, the operation k names, unless the journal holds its
// answer already: then it returns that answer (replayed true) without
// running fn. After fn succeeds its answer is journaled.
//
// atomic runs fn inside the journal's write transaction, handing it a
// context whose store writes join it (see conn): the effect and its
// journal row commit together, so a crash leaves both or neither. fn may
// then use only store methods that write through conn. Without atomic, fn
// runs on its own and its answer is journaled after it: a crash between
// the two can still leave an effect without its row, which a rerun makes
// again (operations whose effects are not all in the store — processes,
// worktrees — cannot do better).
func (s *Store) RunEffect(ctx context.Context, k EffectKey, atomic bool, fn func(context.Context) ([]byte, error)) (result []byte, replayed bool, err error) {
	if !atomic {
		if prev, ok, err := s.effect(ctx, s.db, k); err != nil || ok {
			return prev, ok, err
		}
		out, err := fn(ctx)
		if err != nil {
			return nil, false, err
		}
		// The effect is made: failing to journal it must not fail the call.
		_ = s.insertEffect(context.WithoutCancel(ctx), s.db, k, out)
		return out, false, nil
	}
	// On PostgreSQL s.tx may run this again after a serialization failure:
	// fn writes only through the transaction, which was rolled back.
	err = s.tx(ctx, func(tx *Tx) error {
		result, replayed = nil, false
		prev, ok, err := s.effect(ctx, tx, k)
		if err != nil {
			return err
		}
		if ok {
			result, replayed = prev, true
			return nil
		}
		out, err := fn(context.WithValue(ctx, txKey{}, &ctxTx{s: s, tx: tx}))
		if err != nil {
			return err
		}
		if err := s.insertEffect(ctx, tx, k, out); err != nil {
			return err
		}
		result = out
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return result, replayed, nil
}

func (s *Store) effect(ctx context.Context, q querier, k EffectKey) ([]byte, bool, error) {
	var result string
	err := q.QueryRowContext(ctx, `SELECT result FROM idempotency_effects
		WHERE tool = ? AND request_id = ? AND payload_hash = ? AND op = ? AND args_hash = ? AND seq = ?`,
		k.Tool, k.RequestID, k.PayloadHash, k.Op, k.ArgsHash, k.Seq).Scan(&result)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return []byte(result), true, nil
}

func (s *Store) insertEffect(ctx context.Context, q querier, k EffectKey, result []byte) error {
	_, err := q.ExecContext(ctx, `INSERT INTO idempotency_effects
		(tool, request_id, payload_hash, op, args_hash, seq, result, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT DO NOTHING`,
		k.Tool, k.RequestID, k.PayloadHash, k.Op, k.ArgsHash, k.Seq, string(result), Now())
	return err
}

// ReleaseDeadClaims deletes the in_progress claims whose owner dead
// reports gone (a host killed mid-call), so their keys are free at once;
// their journaled effects stay, for the retry to find. Claims without an
// owner (written before owners were recorded) are left to the in-progress
// TTL.
func (s *Store) ReleaseDeadClaims(ctx context.Context, dead func(owner string) bool) (int64, error) {
	if dead == nil {
		return 0, nil
	}
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT owner FROM idempotency_records WHERE state = 'in_progress' AND owner <> ''`)
	if err != nil {
		return 0, err
	}
	var owners []string
	for rows.Next() {
		var o string
		if err := rows.Scan(&o); err != nil {
			rows.Close()
			return 0, err
		}
		owners = append(owners, o)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	var total int64
	for _, o := range owners {
		if !dead(o) {
			continue
		}
		res, err := s.db.ExecContext(ctx, `DELETE FROM idempotency_records WHERE state = 'in_progress' AND owner = ?`, o)
		if err != nil {
			return total, err
		}
		n, _ := res.RowsAffected()
		total += n
	}
	return total, nil
}

// pruneEffects deletes journaled effects older than ttl (0 keeps them):
// those of calls that never completed and were not retried.
func (s *Store) pruneEffects(ctx context.Context, now time.Time, ttl time.Duration) (int64, error) {
	if ttl <= 0 {
		return 0, nil
	}
	res, err := s.db.ExecContext(ctx, `DELETE FROM idempotency_effects WHERE created_at < ?`, FormatTime(now.Add(-ttl)))
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
