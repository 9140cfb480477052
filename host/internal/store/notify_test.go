package store

import (
	"context"
	"testing"
	"time"

	"github.com/plugboard/plugboard/internal/testing/pgtest"
)

// nextKey returns the next key sub delivers other than "" (a resync), or
// fails after a generous wait: signals are asynchronous, but nothing here
// measures how fast they are.
func nextKey(t *testing.T, sub <-chan string) string {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case key := <-sub:
			if key != "" {
				return key
			}
		case <-deadline:
			t.Fatal("no signal within 30 s")
		}
	}
}

// TestSignalsBetweenHosts: on PostgreSQL, what one store writes for
// another host — a queued command, its answer, a mail — wakes a
// subscriber of another store on the same database (another host), with
// the right key, and only once the write commits: a write that fails
// signals nothing.
func TestSignalsBetweenHosts(t *testing.T) {
	target := pgtest.Shared(t).NewDatabase(t)
	a, b := openTarget(t, target), openTarget(t, target)
	if !b.Notifies() {
		t.Fatal("a PostgreSQL store reports no signals")
	}
	ctx := context.Background()
	commands, stop1 := b.Subscribe(SignalHostCommand)
	defer stop1()
	answers, stop2 := b.Subscribe(SignalCommandDone)
	defer stop2()
	mails, stop3 := b.Subscribe(SignalMail)
	defer stop3()
	// The listening connection is open once it has woken its subscribers.
	if key := <-commands; key != "" {
		t.Fatalf("first delivery %q, want the resync \"\"", key)
	}

	cmd := HostCommand{ID: NewID(), HostID: "host-b", From: "host-a", Op: "stop_attempt", Args: "{}"}
	if err := a.EnqueueHostCommand(ctx, cmd); err != nil {
		t.Fatal(err)
	}
	// The same id again fails (primary key): no signal may come of it.
	if err := a.EnqueueHostCommand(ctx, HostCommand{ID: cmd.ID, HostID: "host-failed", Op: "x", Args: "{}"}); err == nil {
		t.Fatal("a duplicate command id was accepted")
	}
	if err := a.EnqueueHostCommand(ctx, HostCommand{ID: NewID(), HostID: "host-c", Op: "x", Args: "{}"}); err != nil {
		t.Fatal(err)
	}
	if got := nextKey(t, commands); got != "host-b" {
		t.Fatalf("command signal for %q, want host-b", got)
	}
	if got := nextKey(t, commands); got != "host-c" {
		t.Fatalf("second command signal for %q, want host-c (the failed write must not signal)", got)
	}
	if err := a.FinishHostCommand(ctx, cmd.ID, `{"ok":true}`, ""); err != nil {
		t.Fatal(err)
	}
	if got := nextKey(t, answers); got != cmd.ID {
		t.Fatalf("answer signal for %q, want %s", got, cmd.ID)
	}
	m := Mail{ID: NewID(), FromAgentID: "alice", FromAgentType: "agent", ToAgentID: "bob", Subject: "s", Body: "b", CreatedAt: Now()}
	m.ThreadID = m.ID
	if err := a.InsertMail(ctx, m); err != nil {
		t.Fatal(err)
	}
	if got := nextKey(t, mails); got != m.ID {
		t.Fatalf("mail signal for %q, want %s", got, m.ID)
	}
}

// TestSignalsSurviveLostConnection: when the server ends the listening
// connection (a restart, a failover, an administrator), the store
// reconnects, wakes its subscribers to look for what they missed, and
// later signals arrive again.
func TestSignalsSurviveLostConnection(t *testing.T) {
	target := pgtest.Shared(t).NewDatabase(t)
	a, b := openTarget(t, target), openTarget(t, target)
	ctx := context.Background()
	commands, stop := b.Subscribe(SignalHostCommand)
	defer stop()
	<-commands // listening

	res, err := a.db.ExecContext(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND query = 'LISTEN plugboard' AND pid <> pg_backend_pid()`)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("terminated %d listening connections, want 1", n)
	}
	select {
	case key := <-commands:
		if key != "" {
			t.Fatalf("after the lost connection got %q, want the resync \"\"", key)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("subscribers not woken after the listening connection was lost")
	}
	if err := a.EnqueueHostCommand(ctx, HostCommand{ID: NewID(), HostID: "host-b", Op: "x", Args: "{}"}); err != nil {
		t.Fatal(err)
	}
	if got := nextKey(t, commands); got != "host-b" {
		t.Fatalf("signal after reconnecting for %q, want host-b", got)
	}
}

// TestNoSignalsOnSQLite: SQLite has no signals; its subscribers poll, and
// a subscription or Close does not start or hang anything.
func TestNoSignalsOnSQLite(t *testing.T) {
	s := openTest(t)
	if s.Notifies() {
		t.Fatal("SQLite store reports signals")
	}
	ch, cancel := s.Subscribe(SignalMail)
	defer cancel()
	if err := s.EnqueueHostCommand(context.Background(), HostCommand{ID: NewID(), HostID: "h", Op: "x", Args: "{}"}); err != nil {
		t.Fatal(err)
	}
	select {
	case key := <-ch:
		t.Fatalf("SQLite delivered a signal %q", key)
	default:
	}
}
