package store

import (
	"context"
	"database/sql"
	"errors"
	"math/rand/v2"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/plugboard/plugboard/host/internal/metrics"
	"github.com/plugboard/plugboard/host/internal/tracing"
)

// One store, two dialects. The store's SQL is written once, with ?
// placeholders, in the subset SQLite and PostgreSQL share; sqlDB and Tx
// wrap *sql.DB and *sql.Tx and, on PostgreSQL, rewrite the placeholders to
// $1, $2… (rebind). Migrations are written for SQLite and derived for
// PostgreSQL by pgDDL. Write transactions (Store.tx) are serialised by
// SQLite's immediate locking; on PostgreSQL they run SERIALIZABLE and are
// retried on serialization failures (see Store.tx).

// sqlDB is the database, with the dialect's placeholder rewriting.
type sqlDB struct {
	db *sql.DB
	pg bool
	// metrics times the operations (metrics.go); nil: not timed.
	metrics atomic.Pointer[metrics.Store]
}

func (d *sqlDB) q(query string) string {
	if !d.pg {
		return query
	}
	return rebind(query)
}

func (d *sqlDB) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	defer d.time(metrics.StoreExec)()
	ctx, span := tracing.StartStore(ctx, dbSystem(d.pg), query)
	res, err := d.db.ExecContext(ctx, d.q(query), args...)
	err = d.classify(err)
	tracing.EndErr(span, err)
	return res, err
}

func (d *sqlDB) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	defer d.time(metrics.StoreQuery)()
	ctx, span := tracing.StartStore(ctx, dbSystem(d.pg), query)
	rows, err := d.db.QueryContext(ctx, d.q(query), args...)
	err = d.classify(err)
	tracing.EndErr(span, err)
	return rows, err
}

// classify turns a PostgreSQL server's condition (a full disk, a
// restart) into an ErrUnavailable error naming it (pgerrors.go); SQLite's
// errors are left as they are.
func (d *sqlDB) classify(err error) error {
	if !d.pg {
		return err
	}
	return pgUnavailable(err)
}

func (d *sqlDB) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	defer d.time(metrics.StoreQuery)()
	ctx, span := tracing.StartStore(ctx, dbSystem(d.pg), query)
	row := d.db.QueryRowContext(ctx, d.q(query), args...)
	tracing.EndErr(span, row.Err())
	return row
}

func (d *sqlDB) Close() error { return d.db.Close() }

// Tx is a write transaction of the store (see Store.tx), with the
// dialect's placeholder rewriting.
type Tx struct {
	tx *sql.Tx
	pg bool
}

func (t *Tx) q(query string) string {
	if !t.pg {
		return query
	}
	return rebind(query)
}

// ExecContext is sql.Tx's, with ? placeholders.
func (t *Tx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	ctx, span := tracing.StartStore(ctx, dbSystem(t.pg), query)
	res, err := t.tx.ExecContext(ctx, t.q(query), args...)
	err = t.classify(err)
	tracing.EndErr(span, err)
	return res, err
}

// QueryContext is sql.Tx's, with ? placeholders.
func (t *Tx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	ctx, span := tracing.StartStore(ctx, dbSystem(t.pg), query)
	rows, err := t.tx.QueryContext(ctx, t.q(query), args...)
	err = t.classify(err)
	tracing.EndErr(span, err)
	return rows, err
}

// classify is sqlDB.classify's, for a statement of the transaction.
func (t *Tx) classify(err error) error {
	if !t.pg {
		return err
	}
	return pgUnavailable(err)
}

// QueryRowContext is sql.Tx's, with ? placeholders.
func (t *Tx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	ctx, span := tracing.StartStore(ctx, dbSystem(t.pg), query)
	row := t.tx.QueryRowContext(ctx, t.q(query), args...)
	tracing.EndErr(span, row.Err())
	return row
}

// PrepareContext is sql.Tx's, with ? placeholders.
func (t *Tx) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	stmt, err := t.tx.PrepareContext(ctx, t.q(query))
	return stmt, t.classify(err)
}

// rebound caches rebind's rewrites: the store's queries are few and fixed.
var rebound sync.Map // string -> string

// rebind rewrites the ? placeholders of query to PostgreSQL's $1, $2…,
// leaving alone a ? inside a string literal ('…'), a quoted identifier
// ("…") or a comment (-- … and /* … */).
func rebind(query string) string {
	if v, ok := rebound.Load(query); ok {
		return v.(string)
	}
	out := rebindUncached(query)
	rebound.Store(query, out)
	return out
}

func rebindUncached(query string) string {
	if !strings.Contains(query, "?") {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 16)
	n := 0
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case c == '\'' || c == '"':
			// A doubled quote inside ends this literal and starts the next:
			// the same text either way.
			j := strings.IndexByte(query[i+1:], c)
			if j < 0 {
				b.WriteString(query[i:])
				return b.String()
			}
			b.WriteString(query[i : i+j+2])
			i += j + 1
		case c == '-' && i+1 < len(query) && query[i+1] == '-':
			j := strings.IndexByte(query[i:], '\n')
			if j < 0 {
				b.WriteString(query[i:])
				return b.String()
			}
			b.WriteString(query[i : i+j+1])
			i += j
		case c == '/' && i+1 < len(query) && query[i+1] == '*':
			j := strings.Index(query[i+2:], "*/")
			if j < 0 {
				b.WriteString(query[i:])
				return b.String()
			}
			b.WriteString(query[i : i+j+4])
			i += j + 3
		case c == '?':
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// Write transactions on PostgreSQL: SERIALIZABLE, retried this many times
// in all when they fail for a reason another try may not meet.
const (
	pgTxAttempts = 12
	pgTxBackoff  = 2 * time.Millisecond
)

// tx runs fn in a write transaction, committing when it returns nil.
//
// On SQLite the transaction takes the write lock at BEGIN (_txlock=
// immediate): writers are serialised, so a SELECT-then-INSERT in fn is
// atomic. On PostgreSQL it runs SERIALIZABLE, which gives the same
// guarantee by failing one of two transactions that could not have run
// one after the other; fn is then run again, in a new transaction, after
// a short jittered pause. fn must therefore be safe to re-run: it must
// (re)set, not accumulate into, whatever it leaves outside.
func (s *Store) tx(ctx context.Context, fn func(*Tx) error) error {
	defer s.db.time(metrics.StoreTx)()
	if !s.pg {
		return s.runTx(ctx, nil, fn)
	}
	opts := &sql.TxOptions{Isolation: sql.LevelSerializable}
	for attempt := 1; ; attempt++ {
		err := s.runTx(ctx, opts, fn)
		if err == nil || attempt >= pgTxAttempts || !retryable(err) {
			// BEGIN, COMMIT and statements of fn through other
			// handles are not classified on the way: the server's
			// condition is named whatever step met it. A full disk is
			// not retried here: it lasts until the operator acts.
			return pgUnavailable(err)
		}
		d := pgTxBackoff*time.Duration(attempt) + rand.N(pgTxBackoff*time.Duration(attempt)*2)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

func (s *Store) runTx(ctx context.Context, opts *sql.TxOptions, fn func(*Tx) error) error {
	tx, err := s.db.db.BeginTx(ctx, opts)
	if err != nil {
		return err
	}
	if err := fn(&Tx{tx: tx, pg: s.pg}); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// pgCode returns the SQLSTATE of a PostgreSQL error, "" for any other.
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// retryable reports a PostgreSQL error that running the transaction again
// may not meet: a serialization failure, a deadlock, or a unique violation
// (a concurrent transaction inserted the key fn looked for and did not
// find; run again, fn finds it).
func retryable(err error) bool {
	switch pgCode(err) {
	case "40001", "40P01", "23505":
		return true
	}
	return false
}

func isUnique(err error) bool {
	return err != nil && (pgCode(err) == "23505" || strings.Contains(err.Error(), "UNIQUE constraint failed"))
}

func isForeignKey(err error) bool {
	return err != nil && (pgCode(err) == "23503" || strings.Contains(err.Error(), "FOREIGN KEY constraint failed"))
}

// isPostgresURL reports a postgres:// or postgresql:// target.
func isPostgresURL(target string) bool {
	l := strings.ToLower(target)
	return strings.HasPrefix(l, "postgres://") || strings.HasPrefix(l, "postgresql://")
}

// redactURL returns a PostgreSQL URL with its password, in the userinfo or
// a password parameter, replaced by ***.
func redactURL(target string) string {
	u, err := url.Parse(target)
	if err != nil {
		// Unparseable: keep only the scheme rather than risk a password.
		scheme, _, _ := strings.Cut(target, "://")
		return scheme + "://***"
	}
	var b strings.Builder
	b.WriteString(u.Scheme + "://")
	if u.User != nil {
		b.WriteString(url.PathEscape(u.User.Username()))
		if _, ok := u.User.Password(); ok {
			b.WriteString(":***")
		}
		b.WriteByte('@')
	}
	b.WriteString(u.Host)
	b.WriteString(u.EscapedPath())
	if u.RawQuery != "" {
		parts := strings.Split(u.RawQuery, "&")
		for i, p := range parts {
			k, _, _ := strings.Cut(p, "=")
			if uk, err := url.QueryUnescape(k); err == nil && strings.EqualFold(uk, "password") {
				parts[i] = k + "=***"
			}
		}
		b.WriteString("?" + strings.Join(parts, "&"))
	}
	return b.String()
}

// The rewrites that derive a migration's PostgreSQL DDL from its SQLite
// DDL (pgDDL), in order. The migrations use only these SQLite-only forms.
var pgRewrites = []struct {
	re   *regexp.Regexp
	repl string
}{
	// A rowid table's alias with never-reused values: a sequence.
	{regexp.MustCompile(`\bINTEGER PRIMARY KEY AUTOINCREMENT\b`), `BIGSERIAL PRIMARY KEY`},
	// SQLite integers are 64-bit.
	{regexp.MustCompile(`\bINTEGER\b`), `BIGINT`},
	// SQLite compares text bytewise (BINARY): so does the C collation,
	// whatever the database's default, so ORDER BY and < agree.
	{regexp.MustCompile(`\bTEXT\b`), `TEXT COLLATE "C"`},
	// A storage option of SQLite's alone.
	{regexp.MustCompile(`\s+WITHOUT ROWID\b`), ``},
}

// pgDDL derives PostgreSQL DDL from the SQLite DDL of a migration.
func pgDDL(ddl string) string {
	for _, r := range pgRewrites {
		ddl = r.re.ReplaceAllString(ddl, r.repl)
	}
	return ddl
}
