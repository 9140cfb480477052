package store

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// Claim outcomes of ClaimRequest.
const (
	// ClaimNew: the key was free and is now held in_progress by the caller.
	ClaimNew = "new"
	// ClaimReplay: a completed call with the same payload exists; Result
	// holds its answer.
	ClaimReplay = "replay"
	// ClaimConflict: the key was used with a different payload.
	ClaimConflict = "conflict"
	// ClaimInProgress: a call with the same key and payload is running.
	ClaimInProgress = "in_progress"
	// ClaimForeign: the key belongs to another caller's call
	// (ClaimRequestBy); nothing of that call is told.
	ClaimForeign = "foreign"
)

// Claim is the outcome of ClaimRequest.
type Claim struct {
	Outcome string
	Result  []byte
}

// ClaimRequest atomically looks up (tool, requestID) and, when it is free,
// records it in_progress with payloadHash. The insert-or-read runs in one
// write transaction, so concurrent duplicates see exactly one ClaimNew. It
// claims for no caller: a key an identified caller holds is ClaimForeign
// (see ClaimRequestBy).
func (s *Store) ClaimRequest(ctx context.Context, tool, requestID, payloadHash string) (Claim, error) {
	var c Claim
	err := s.tx(ctx, func(tx *Tx) error {
		c = Claim{} // a retry starts afresh
		var (
			hash, state, claimant string
			result                sql.NullString
		)
		err := tx.QueryRowContext(ctx, `SELECT payload_hash, state, result, caller FROM idempotency_records WHERE tool = ? AND request_id = ?`,
			tool, requestID).Scan(&hash, &state, &result, &claimant)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			now := Now()
			_, err = tx.ExecContext(ctx, `INSERT INTO idempotency_records (tool, request_id, payload_hash, state, created_at, updated_at)
				VALUES (?, ?, ?, 'in_progress', ?, ?)`, tool, requestID, payloadHash, now, now)
			c.Outcome = ClaimNew
			return err
		case err != nil:
			return err
		case claimant != "":
			c.Outcome = ClaimForeign
		case hash != payloadHash:
			c.Outcome = ClaimConflict
		case state == "in_progress":
			c.Outcome = ClaimInProgress
		default:
			c.Outcome, c.Result = ClaimReplay, []byte(result.String)
		}
		return nil
	})
	return c, err
}

// CompleteRequest stores the answer of a claimed request.
func (s *Store) CompleteRequest(ctx context.Context, tool, requestID string, result []byte) error {
	_, err := s.db.ExecContext(ctx, `UPDATE idempotency_records SET state = 'completed', result = ?, updated_at = ?
		WHERE tool = ? AND request_id = ?`, string(result), Now(), tool, requestID)
	return err
}

// ReleaseRequest forgets a claimed request whose call failed, so a retry
// with the same key runs again instead of replaying a failure.
func (s *Store) ReleaseRequest(ctx context.Context, tool, requestID string) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM idempotency_records WHERE tool = ? AND request_id = ? AND state = 'in_progress'`,
		tool, requestID)
	return err
}

// PruneRequests deletes completed records older than completedTTL and
// in_progress records older than inProgressTTL, and journaled effects
// older than completedTTL (a retry after that runs anew, as it would after
// its completed record expired); a TTL of 0 keeps them.
func (s *Store) PruneRequests(ctx context.Context, now time.Time, completedTTL, inProgressTTL time.Duration) (int64, error) {
	total, err := s.pruneEffects(ctx, now, completedTTL)
	if err != nil {
		return total, err
	}
	for _, p := range []struct {
		state string
		ttl   time.Duration
	}{{"completed", completedTTL}, {"in_progress", inProgressTTL}} {
		if p.ttl <= 0 {
			continue
		}
		res, err := s.db.ExecContext(ctx, `DELETE FROM idempotency_records WHERE state = ? AND updated_at < ?`,
			p.state, FormatTime(now.Add(-p.ttl)))
		if err != nil {
			return total, err
		}
		n, _ := res.RowsAffected()
		total += n
	}
	return total, nil
}
