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

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
	_ "modernc.org/sqlite"             // registers the "sqlite" driver

	"github.com/plugboard/plugboard/host/internal/datadir"
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

// Store is the board database: a SQLite file or a PostgreSQL database. It
// is safe for concurrent use, also by several processes on one file (WAL,
// busy timeout) or one PostgreSQL database.
type Store struct {
	db     *sqlDB
	path   string // the SQLite file, or the PostgreSQL URL without its password
	pg     bool
	target string   // the PostgreSQL URL as given, password included: never shown
	listen listener // signals (notify.go)
}

// OpenURL opens the store target names: a postgres:// or postgresql://
// URL opens that PostgreSQL database, a URL of another scheme is refused
// (CheckTarget), anything else is a SQLite file path (Open). Pending
// migrations are applied.
func OpenURL(ctx context.Context, target string) (*Store, error) {
	if err := CheckTarget(target); err != nil {
		return nil, err
	}
	if !isPostgresURL(target) {
		return Open(ctx, target)
	}
	name := redactURL(target)
	db, err := sql.Open("pgx", target)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", name, err)
	}
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(8)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: open %s: %w", name, err)
	}
	s := &Store{db: &sqlDB{db: db, pg: true}, path: name, pg: true, target: target}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// Open opens (creating if needed) the database file at path and applies
// pending migrations.
func Open(ctx context.Context, path string) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("store: create directory for %s: %w", path, err)
	}
	// The database holds the decision log, mail and prompts: the host's
	// user's alone. SQLite gives its -wal and -shm files the database
	// file's mode, so the file is made 0600 before SQLite creates it, and
	// files an older host made readable are narrowed.
	if f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600); err == nil {
		f.Close()
	}
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		if err := datadir.PrivateFile(f); err != nil {
			return nil, fmt.Errorf("store: %s: %w", f, err)
		}
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
	s := &Store{db: &sqlDB{db: db}, path: path}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// Path is the database file; for PostgreSQL, the URL with any password
// replaced by ***.
func (s *Store) Path() string { return s.path }

// Postgres reports a PostgreSQL store.
func (s *Store) Postgres() bool { return s.pg }

// Close stops the listening connection of signals and closes the database.
func (s *Store) Close() error {
	s.listen.close()
	return s.db.Close()
}

// Version returns the number of applied migrations.
func (s *Store) Version(ctx context.Context) (int, error) {
	var v int
	err := s.db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v)
	return v, err
}

// migrationLock is the PostgreSQL advisory lock key that serialises the
// migrations of hosts starting at once on one database.
const migrationLock = 0x706c7567626f6172 // "plugboar"

func (s *Store) migrate(ctx context.Context) error {
	if s.pg {
		// Hosts starting together would race on CREATE TABLE IF NOT EXISTS.
		c, err := s.db.db.Conn(ctx)
		if err != nil {
			return fmt.Errorf("store: %s: %w", s.path, err)
		}
		defer c.Close()
		if _, err := c.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, int64(migrationLock)); err != nil {
			return fmt.Errorf("store: %s: lock for migrations: %w", s.path, err)
		}
		defer c.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(migrationLock))
	}
	if _, err := s.db.ExecContext(ctx, s.ddl(`CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)`)); err != nil {
		return fmt.Errorf("store: %s: create schema_migrations: %w", s.path, err)
	}
	for i, m := range migrations {
		version := i + 1
		err := s.tx(ctx, func(tx *Tx) error {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations WHERE version = ?`, version).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return nil
			}
			// No arguments: pgx runs a multi-statement string as one
			// simple-protocol query.
			if _, err := tx.ExecContext(ctx, s.ddl(m)); err != nil {
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

// ddl returns the SQLite DDL ddl in the store's dialect.
func (s *Store) ddl(ddl string) string {
	if s.pg {
		return pgDDL(ddl)
	}
	return ddl
}

func notFound(kind, id string) error { return fmt.Errorf("%s %s: %w", kind, id, ErrNotFound) }

func nullString(s sql.NullString) *string {
	if !s.Valid {
		return nil
	}
	return &s.String
}
