package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// TimeFormat is RFC3339 in UTC with a fixed six-digit fraction: fixed width
// keeps text order equal to time order.
const TimeFormat = "2006-01-02T15:04:05.000000Z07:00"

// Now returns the current time formatted with TimeFormat.
func Now() string { return FormatTime(time.Now()) }

// FormatTime formats t in UTC with TimeFormat.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeFormat) }

// NewID returns a random UUIDv4 string.
func NewID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// ErrNotFound is returned (wrapped) when a row does not exist.
var ErrNotFound = errors.New("not found")

// Store is the board database. It is safe for concurrent use, also by
// several processes on one file (WAL, busy timeout).
type Store struct {
	db   *sql.DB
	path string
}

// Open opens (creating if needed) the database file at path and applies
// pending migrations.
func Open(ctx context.Context, path string) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("store: create directory for %s: %w", path, err)
	}
	q := url.Values{}
	for _, p := range []string{"foreign_keys(1)", "journal_mode(WAL)", "busy_timeout(10000)", "synchronous(NORMAL)"} {
		q.Add("_pragma", p)
	}
	// Write transactions take the lock at BEGIN: a deferred transaction
	// that upgrades from read to write can fail with SQLITE_BUSY at once,
	// without waiting for the busy timeout.
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(8)
	s := &Store{db: db, path: path}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// Path is the database file.
func (s *Store) Path() string { return s.path }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Version returns the number of applied migrations.
func (s *Store) Version(ctx context.Context) (int, error) {
	var v int
	err := s.db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v)
	return v, err
}

func (s *Store) migrate(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)`); err != nil {
		return fmt.Errorf("store: %s: create schema_migrations: %w", s.path, err)
	}
	for i, m := range migrations {
		version := i + 1
		err := s.tx(ctx, func(tx *sql.Tx) error {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations WHERE version = ?`, version).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return nil
			}
			if _, err := tx.ExecContext(ctx, m); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`, version, Now())
			return err
		})
		if err != nil {
			return fmt.Errorf("store: %s: migration %d: %w", s.path, version, err)
		}
	}
	v, err := s.Version(ctx)
	if err != nil {
		return fmt.Errorf("store: %s: read version: %w", s.path, err)
	}
	if v > len(migrations) {
		return fmt.Errorf("store: %s has schema version %d, newer than this binary knows (%d): upgrade plugboard", s.path, v, len(migrations))
	}
	return nil
}

// tx runs fn in a write transaction, committing when it returns nil.
func (s *Store) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

func notFound(kind, id string) error { return fmt.Errorf("%s %s: %w", kind, id, ErrNotFound) }

func nullString(s sql.NullString) *string {
	if !s.Valid {
		return nil
	}
	return &s.String
}
