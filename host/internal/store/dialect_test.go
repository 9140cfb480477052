package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/plugboard/plugboard/internal/testing/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Run(m)) }

// forEachTarget runs f as subtest "sqlite", with a fresh database file
// path, and "postgres", with a fresh PostgreSQL database's URL (skipped
// when no server is installed, unless PLUGBOARD_REQUIRE_POSTGRES is set).
func forEachTarget(t *testing.T, f func(t *testing.T, target string)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) { f(t, filepath.Join(t.TempDir(), "sub", "board.db")) })
	t.Run("postgres", func(t *testing.T) { f(t, pgtest.Shared(t).NewDatabase(t)) })
}

// forEachStore runs f against each store (see forEachTarget); open opens
// the subtest's store, closed when the subtest ends.
func forEachStore(t *testing.T, f func(t *testing.T, open func() *Store)) {
	t.Helper()
	forEachTarget(t, func(t *testing.T, target string) {
		f(t, func() *Store { return openTarget(t, target) })
	})
}

func openTarget(t testing.TB, target string) *Store {
	t.Helper()
	s, err := OpenURL(context.Background(), target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// openTest opens a fresh SQLite store.
func openTest(t testing.TB) *Store {
	t.Helper()
	return openTarget(t, filepath.Join(t.TempDir(), "board.db"))
}

func hasTable(t *testing.T, s *Store, table string) bool {
	t.Helper()
	q := `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?`
	if s.Postgres() {
		q = `SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = ?`
	}
	var n int
	if err := s.db.QueryRowContext(context.Background(), q, table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

func hasIndex(t *testing.T, s *Store, index string) bool {
	t.Helper()
	q := `SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = ?`
	if s.Postgres() {
		q = `SELECT COUNT(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexname = ?`
	}
	var n int
	if err := s.db.QueryRowContext(context.Background(), q, index).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

func TestRebind(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`SELECT 1`, `SELECT 1`},
		{`SELECT a FROM t WHERE x = ? AND y = ?`, `SELECT a FROM t WHERE x = $1 AND y = $2`},
		{`SELECT '?', "a?b", ? -- what?
			/* and? */ FROM t WHERE z = ?`, `SELECT '?', "a?b", $1 -- what?
			/* and? */ FROM t WHERE z = $2`},
		{`SELECT 'it''s ?' || ?`, `SELECT 'it''s ?' || $1`},
		{`VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, `VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`},
		{`SELECT 'unterminated ?`, `SELECT 'unterminated ?`},
	} {
		if got := rebind(c.in); got != c.want {
			t.Errorf("rebind(%q) = %q, want %q", c.in, got, c.want)
		}
		if got := rebind(c.in); got != c.want { // cached
			t.Errorf("cached rebind(%q) = %q", c.in, got)
		}
	}
}

func TestPgDDL(t *testing.T) {
	in := `CREATE TABLE e (
	seq INTEGER PRIMARY KEY AUTOINCREMENT,
	n   INTEGER NOT NULL DEFAULT 0,
	s   TEXT NOT NULL,
	PRIMARY KEY (n)
) WITHOUT ROWID;
ALTER TABLE e ADD COLUMN http TEXT;`
	want := `CREATE TABLE e (
	seq BIGSERIAL PRIMARY KEY,
	n   BIGINT NOT NULL DEFAULT 0,
	s   TEXT COLLATE "C" NOT NULL,
	PRIMARY KEY (n)
);
ALTER TABLE e ADD COLUMN http TEXT COLLATE "C";`
	if got := pgDDL(in); got != want {
		t.Fatalf("pgDDL =\n%s\nwant\n%s", got, want)
	}
	// The migrations use no other SQLite-only form the rewrites miss.
	for i, m := range migrations {
		d := pgDDL(m)
		for _, bad := range []string{"AUTOINCREMENT", "WITHOUT ROWID", "INTEGER", "OR IGNORE", "OR REPLACE", "rowid"} {
			if strings.Contains(d, bad) {
				t.Errorf("migration %d: PostgreSQL DDL still holds %s", i+1, bad)
			}
		}
	}
}

func TestRedactURL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`postgres://u:secret@h:5432/db?sslmode=disable`, `postgres://u:***@h:5432/db?sslmode=disable`},
		{`postgresql://u@h/db`, `postgresql://u@h/db`},
		{`postgres://h/db?user=u&password=secret`, `postgres://h/db?user=u&password=***`},
		{`postgres://u:se%40cret@h/db`, `postgres://u:***@h/db`},
		{"postgres://u:secret@h/db\x7f", `postgres://***`},
	} {
		if got := redactURL(c.in); got != c.want {
			t.Errorf("redactURL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if !isPostgresURL("PostgreSQL://h/db") || isPostgresURL("/var/lib/postgres://x") || isPostgresURL("board.db") {
		t.Fatal("isPostgresURL")
	}
}

// TestPostgresPathRedacted: the store names a PostgreSQL database by its URL
// without the password, also in errors.
func TestPostgresPathRedacted(t *testing.T) {
	target := pgtest.Shared(t).NewDatabase(t)
	withPW := strings.Replace(target, "@", ":hunter2@", 1) // the test cluster trusts any password
	s := openTarget(t, withPW)
	if !s.Postgres() || strings.Contains(s.Path(), "hunter2") || !strings.Contains(s.Path(), ":***@") {
		t.Fatalf("Path() = %q", s.Path())
	}
	if _, err := s.db.ExecContext(context.Background(), `INSERT INTO schema_migrations VALUES (999, ?)`, Now()); err != nil {
		t.Fatal(err)
	}
	_, err := OpenURL(context.Background(), withPW)
	if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), ":***@") {
		t.Fatalf("open newer schema: %v", err)
	}
	bad := strings.Replace(withPW, fmt.Sprintf(":%d/", pgtest.Shared(t).Port()), ":1/", 1)
	if _, err := OpenURL(context.Background(), bad); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("open of a closed port: %v", err)
	}
}

// TestSchemaParity: both dialects build the same tables with the same
// columns (by name, in order, and nullability).
func TestSchemaParity(t *testing.T) {
	lite := openTest(t)
	pg := openTarget(t, pgtest.Shared(t).NewDatabase(t))
	ctx := context.Background()
	columns := func(s *Store, q string) map[string][]string {
		rows, err := s.db.QueryContext(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string][]string{}
		for rows.Next() {
			var table, col string
			var notNull bool
			if err := rows.Scan(&table, &col, &notNull); err != nil {
				t.Fatal(err)
			}
			out[table] = append(out[table], fmt.Sprintf("%s notnull=%v", col, notNull))
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	// A primary key's columns are NOT NULL on PostgreSQL; SQLite enforces
	// it for WITHOUT ROWID and INTEGER PRIMARY KEY tables only, but the
	// store never writes a NULL key, so pk counts as not null.
	l := columns(lite, `SELECT m.name, c.name, c."notnull" OR c.pk > 0 FROM sqlite_master m, pragma_table_info(m.name) c
		WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY m.name, c.cid`)
	p := columns(pg, `SELECT table_name, column_name, is_nullable = 'NO' FROM information_schema.columns
		WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position`)
	if len(l) == 0 || fmt.Sprint(l) != fmt.Sprint(p) {
		t.Fatalf("schemas differ:\nsqlite   %v\npostgres %v", l, p)
	}
	var lv, pv int
	lite.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations`).Scan(&lv)
	pg.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations`).Scan(&pv)
	if lv != len(migrations) || pv != len(migrations) {
		t.Fatalf("schema_migrations rows: sqlite %d, postgres %d, want %d", lv, pv, len(migrations))
	}
}

// TestClaimRequestTwoHosts: twenty claims of one key at once through two
// stores on one PostgreSQL database (two hosts) give exactly one ClaimNew.
func TestClaimRequestTwoHosts(t *testing.T) {
	target := pgtest.Shared(t).NewDatabase(t)
	hosts := []*Store{openTarget(t, target), openTarget(t, target)}
	ctx := context.Background()
	const workers = 20
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		outcomes = map[string]int{}
	)
	for i := range workers {
		wg.Go(func() {
			c, err := hosts[i%2].ClaimRequest(ctx, "create_task", "k", "h")
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			outcomes[c.Outcome]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if outcomes[ClaimNew] != 1 || outcomes[ClaimInProgress] != workers-1 {
		t.Fatalf("outcomes %v", outcomes)
	}
	// Also the stale-aware claim, from both hosts, on a fresh key.
	outcomes = map[string]int{}
	now := time.Now()
	for i := range workers {
		wg.Go(func() {
			o, _, _, err := hosts[i%2].ClaimRequestAs(ctx, now, "create_task", "k2", "h", time.Hour, fmt.Sprint("host", i%2), nil)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			outcomes[o]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if outcomes[ClaimNew] != 1 || outcomes[ClaimInProgress] != workers-1 {
		t.Fatalf("ClaimRequestAs outcomes %v", outcomes)
	}
}

// TestTurnsTwoHosts: concurrent AddTurn on one session from two hosts
// gives dense, distinct indexes (the SELECT MAX then INSERT is retried on
// PostgreSQL, serialised on SQLite).
func TestTurnsTwoHosts(t *testing.T) {
	forEachTarget(t, func(t *testing.T, target string) {
		hosts := []*Store{openTarget(t, target), openTarget(t, target)}
		ctx := context.Background()
		_, task := board(t, hosts[0])
		a := addAttempt(t, hosts[0], task.ID, Now())
		se, err := hosts[0].CreateSession(ctx, a.ID, "SHELL", "DEFAULT")
		if err != nil {
			t.Fatal(err)
		}
		const n = 10
		procs := make([]string, n)
		for i := range procs {
			p := &Process{AttemptID: a.ID, SessionID: &se.ID, RunReason: ReasonCodingAgent, Command: "x"}
			if err := hosts[0].CreateProcess(ctx, p); err != nil {
				t.Fatal(err)
			}
			procs[i] = p.ID
		}
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				if _, err := hosts[i%2].AddTurn(ctx, se.ID, procs[i], "p"); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		page, err := hosts[1].TurnAfter(ctx, se.ID, -1, 100)
		if err != nil || len(page.Turns) != n {
			t.Fatalf("turns = %d, %v", len(page.Turns), err)
		}
		var idx []int
		for _, tr := range page.Turns {
			idx = append(idx, int(tr.Index))
		}
		sort.Ints(idx)
		for i, x := range idx {
			if x != i {
				t.Fatalf("indexes %v", idx)
			}
		}
	})
}

func TestErrorClasses(t *testing.T) {
	wrap := func(code string) error { return fmt.Errorf("x: %w", &pgconn.PgError{Code: code}) }
	if !isUnique(wrap("23505")) || !isForeignKey(wrap("23503")) || isUnique(wrap("23503")) ||
		!isUnique(errors.New("constraint failed: UNIQUE constraint failed: projects.name (2067)")) {
		t.Fatal("constraint errors misclassified")
	}
	for code, want := range map[string]bool{"40001": true, "40P01": true, "23505": true, "23503": false, "": false} {
		if retryable(wrap(code)) != want {
			t.Errorf("retryable(%q) = %v", code, !want)
		}
	}
}

// TestPortableQueries: the queries whose SQL had a SQLite-only form
// (rowid, LIMIT -1, SUM's type, text order) behave alike on both stores.
func TestPortableQueries(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func() *Store) {
		s := open()
		ctx := context.Background()
		// Text orders bytewise, as SQLite's BINARY: "B" < "a" < "b".
		for _, name := range []string{"b", "a", "B"} {
			if _, err := s.CreateProject(ctx, name); err != nil {
				t.Fatal(err)
			}
		}
		ps, err := s.ListProjects(ctx)
		if err != nil || len(ps) != 3 || ps[0].Name != "B" || ps[1].Name != "a" || ps[2].Name != "b" {
			t.Fatalf("projects by name: %+v, %v", ps, err)
		}
		for i := range 3 {
			if _, err := s.CreateTask(ctx, ps[0].ID, fmt.Sprint("t", i), ""); err != nil {
				t.Fatal(err)
			}
		}
		if ts, err := s.ListTasks(ctx, ps[0].ID, "", 0); err != nil || len(ts) != 3 {
			t.Fatalf("ListTasks without limit: %d, %v", len(ts), err)
		}
		if ts, err := s.ListTasks(ctx, ps[0].ID, "", 2); err != nil || len(ts) != 2 {
			t.Fatalf("ListTasks limit 2: %d, %v", len(ts), err)
		}
		if ts, err := s.ReviewQueue(ctx, "", 0); err != nil || len(ts) != 0 {
			t.Fatalf("ReviewQueue: %d, %v", len(ts), err)
		}
		// Decision-log retention by size: newest kept first.
		var ids []string
		for i := range 4 {
			d := Decision{ID: fmt.Sprint("d", i), Kind: DecisionKindDecision, Title: strings.Repeat("x", 100), Status: DecisionOK,
				CreatedAt: FormatTime(time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC))}
			if err := s.WriteDecisions(ctx, []DecisionWrite{{Insert: &d}}); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, d.ID)
		}
		rows, bytes, err := s.DecisionLogSize(ctx)
		if err != nil || rows != 4 || bytes != 4*(DecisionRowOverhead+100) {
			t.Fatalf("DecisionLogSize = %d, %d, %v", rows, bytes, err)
		}
		if n, err := s.PruneDecisions(ctx, "", 2*(DecisionRowOverhead+100)+1); err != nil || n != 2 {
			t.Fatalf("PruneDecisions by size = %d, %v", n, err)
		}
		left, _ := s.ListDecisions(ctx, DecisionFilter{})
		if len(left) != 2 || left[0].ID != ids[3] || left[1].ID != ids[2] {
			t.Fatalf("kept %+v", left)
		}
		if n, err := s.PruneDecisions(ctx, FormatTime(time.Date(2026, 1, 1, 0, 0, 3, 0, time.UTC)), 0); err != nil || n != 1 {
			t.Fatalf("PruneDecisions by age = %d, %v", n, err)
		}
		if err := s.Checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
		if d, err := s.RunningProcesses(ctx, ""); err != nil || len(d) != 0 {
			t.Fatalf("RunningProcesses = %v, %v", d, err)
		}
		if at, err := s.LastActivity(ctx, NewID()); err != nil || at != nil {
			t.Fatalf("LastActivity of nothing = %v, %v", at, err)
		}
	})
}
