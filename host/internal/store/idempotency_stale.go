package store

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// ClaimRequestAt is ClaimRequest for a host that may have crashed mid-call:
// an in_progress record last updated before now-inProgressTTL is taken as
// free (its call is presumed dead) and replaced by a fresh claim, whatever
// payload it held, so a crashed call does not block its key until the next
// PruneRequests. inProgressTTL 0 never takes a record as stale. The
// look-up and the insert or replacement run in one write transaction, so
// concurrent duplicates see exactly one ClaimNew.
//
// It returns the outcome (ClaimNew, ClaimReplay, ClaimConflict,
// ClaimInProgress, or ClaimForeign for a key another caller holds), the
// stored result on ClaimReplay, and on ClaimNew a token naming this claim
// for CompleteClaim and ReleaseClaim. The token is the claim's creation
// time: a replacement of a stale claim is at least inProgressTTL younger,
// so a call that outlived its claim cannot complete or release its
// successor's.
func (s *Store) ClaimRequestAt(ctx context.Context, now time.Time, tool, requestID, payloadHash string,
	inProgressTTL time.Duration) (outcome string, result []byte, token string, err error) {
	return s.ClaimRequestAs(ctx, now, tool, requestID, payloadHash, inProgressTTL, "", nil)
}

// ClaimRequestAs is ClaimRequestAt for a claim owned by owner (a string
// naming the claiming process): an in_progress record held by another
// owner that dead reports gone is taken over at once, like a stale one —
// its host was killed mid-call and will never finish it. dead is asked
// only about owners other than owner, and never about records without one.
// The claim is made for no caller (ClaimRequestBy with caller "").
func (s *Store) ClaimRequestAs(ctx context.Context, now time.Time, tool, requestID, payloadHash string,
	inProgressTTL time.Duration, owner string, dead func(owner string) bool) (outcome string, result []byte, token string, err error) {
	return s.ClaimRequestBy(ctx, now, tool, "", requestID, payloadHash, inProgressTTL, owner, dead)
}

// ClaimRequestBy is ClaimRequestAs for a call made by caller (an identity,
// host/internal/idempotency's Identity). A key belongs to the caller whose
// call claimed it first: for any other caller the record answers
// ClaimForeign, before anything else is looked at — not its stored result,
// not whether its call still runs, not whether its claim went stale — so a
// request_id never hands one caller another's answer, nor makes it wait on
// another's call, nor lets it take over another's unfinished claim (whose
// journaled effects its owner's retry is to find).
func (s *Store) ClaimRequestBy(ctx context.Context, now time.Time, tool, caller, requestID, payloadHash string,
	inProgressTTL time.Duration, owner string, dead func(owner string) bool) (outcome string, result []byte, token string, err error) {
	err = s.tx(ctx, func(tx *Tx) error {
		outcome, result, token = "", nil, "" // a retry starts afresh
		var (
			hash, state, updated, holder, claimant string
			stored                                 sql.NullString
		)
		err := tx.QueryRowContext(ctx, `SELECT payload_hash, state, result, updated_at, owner, caller FROM idempotency_records
			WHERE tool = ? AND request_id = ?`, tool, requestID).Scan(&hash, &state, &stored, &updated, &holder, &claimant)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			token = FormatTime(now)
			outcome = ClaimNew
			_, err = tx.ExecContext(ctx, `INSERT INTO idempotency_records (tool, request_id, payload_hash, state, created_at, updated_at, owner, caller)
				VALUES (?, ?, ?, 'in_progress', ?, ?, ?, ?)`, tool, requestID, payloadHash, token, token, owner, caller)
			return err
		case err != nil:
			return err
		case claimant != caller:
			// Records written before callers were recorded have caller ''
			// and so belong to no identified caller: refused too, rather
			// than replayed to whoever names their key.
			outcome = ClaimForeign
		case state == "in_progress" && (inProgressTTL > 0 && updated < FormatTime(now.Add(-inProgressTTL)) ||
			holder != "" && holder != owner && dead != nil && dead(holder)):
			token = FormatTime(now)
			outcome = ClaimNew
			_, err = tx.ExecContext(ctx, `UPDATE idempotency_records SET payload_hash = ?, result = NULL, created_at = ?, updated_at = ?, owner = ?
				WHERE tool = ? AND request_id = ?`, payloadHash, token, token, owner, tool, requestID)
			return err
		case hash != payloadHash:
			outcome = ClaimConflict
		case state == "in_progress":
			outcome = ClaimInProgress
		default:
			outcome, result = ClaimReplay, []byte(stored.String)
		}
		return nil
	})
	if err != nil {
		return "", nil, "", err
	}
	return outcome, result, token, nil
}

// CompleteClaim stores the answer of the claim token names and reports
// whether it still held the key; when it did not (the claim was pruned or
// replaced as stale), nothing is written. The call's journaled effects
// are deleted with it: from now on the stored answer replays the call.
func (s *Store) CompleteClaim(ctx context.Context, tool, requestID, token string, result []byte) (bool, error) {
	held := false
	err := s.tx(ctx, func(tx *Tx) error {
		held = false // a retry starts afresh
		res, err := tx.ExecContext(ctx, `UPDATE idempotency_records SET state = 'completed', result = ?, updated_at = ?
			WHERE tool = ? AND request_id = ? AND state = 'in_progress' AND created_at = ?`,
			string(result), Now(), tool, requestID, token)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return err
		}
		held = true
		_, err = tx.ExecContext(ctx, `DELETE FROM idempotency_effects WHERE tool = ? AND request_id = ?`, tool, requestID)
		return err
	})
	return held && err == nil, err
}

// ReleaseClaim forgets the claim token names, if it still holds the key, so
// a retry with the same key runs again instead of replaying a failure. The
// effects the failed call made stay journaled: the retry finds them
// instead of making them again.
func (s *Store) ReleaseClaim(ctx context.Context, tool, requestID, token string) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM idempotency_records
		WHERE tool = ? AND request_id = ? AND state = 'in_progress' AND created_at = ?`, tool, requestID, token)
	return err
}
