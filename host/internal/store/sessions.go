package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// DashboardSession is a signed-in session of the web dashboard. IDHash and
// TokenHash are SHA-256 hex digests: the store never holds the cookie or
// the bearer token themselves, so reading it (a backup, another host's
// operator) does not sign anyone in. MAC binds the row to the bearer token
// it was made with (the dashboard computes and checks it under a key the
// store does not hold), so writing the store does not sign anyone in
// either: a copied or rewritten row fails the check.
type DashboardSession struct {
	IDHash    string
	Identity  string
	TokenHash string
	CSRF      string
	MAC       string
	CreatedAt string
	SeenAt    string
}

// CreateDashboardSession stores sess after deleting the sessions not seen
// since idleBefore, and then keeps at most keep of sess.Identity's
// sessions, its most recently seen. Only that identity's sessions are
// evicted: however often one identity signs in, it never signs another
// out.
func (s *Store) CreateDashboardSession(ctx context.Context, sess DashboardSession, idleBefore string, keep int) error {
	return s.tx(ctx, func(tx *Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM dashboard_sessions WHERE seen_at < ?`, idleBefore); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO dashboard_sessions (id_hash, identity, token_hash, csrf, mac, created_at, seen_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, sess.IDHash, sess.Identity, sess.TokenHash, sess.CSRF, sess.MAC, sess.CreatedAt, sess.SeenAt); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM dashboard_sessions WHERE identity = ? AND id_hash NOT IN (
			SELECT id_hash FROM dashboard_sessions WHERE identity = ? ORDER BY seen_at DESC, id_hash LIMIT ?)`,
			sess.Identity, sess.Identity, keep)
		return err
	})
}

// GetDashboardSession returns the session whose cookie hashes to idHash,
// or ErrNotFound.
func (s *Store) GetDashboardSession(ctx context.Context, idHash string) (DashboardSession, error) {
	var d DashboardSession
	err := s.db.QueryRowContext(ctx, `SELECT id_hash, identity, token_hash, csrf, mac, created_at, seen_at
		FROM dashboard_sessions WHERE id_hash = ?`, idHash).Scan(&d.IDHash, &d.Identity, &d.TokenHash, &d.CSRF, &d.MAC, &d.CreatedAt, &d.SeenAt)
	if errors.Is(err, sql.ErrNoRows) {
		return d, fmt.Errorf("dashboard session: %w", ErrNotFound)
	}
	return d, err
}

// TouchDashboardSession records that the session was used at seenAt.
func (s *Store) TouchDashboardSession(ctx context.Context, idHash, seenAt string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE dashboard_sessions SET seen_at = ? WHERE id_hash = ? AND seen_at < ?`, seenAt, idHash, seenAt)
	return err
}

// DeleteDashboardSession ends a session (sign-out, or found idle).
func (s *Store) DeleteDashboardSession(ctx context.Context, idHash string) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM dashboard_sessions WHERE id_hash = ?`, idHash)
	return err
}
