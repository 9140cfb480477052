package mail

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/store"
	"github.com/plugboard/plugboard/internal/testing/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Run(m)) }

// notices records MailArrived calls.
type notices struct {
	mu  sync.Mutex
	got []Notice
	to  []string
}

func (n *notices) MailArrived(_ context.Context, to string, m Notice) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.got, n.to = append(n.got, m), append(n.to, to)
}

func (n *notices) ids() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for _, m := range n.got {
		out = append(out, m.MailID)
	}
	return out
}

// TestWatchNotifiesMailOfOtherHosts: two hosts' mail services over one
// store; mail sent through A reaches B's notifier through Watch, once;
// mail that was there before B watched is not announced, nor is B's own
// mail announced twice.
func TestWatchNotifiesMailOfOtherHosts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "board.db")
	open := func() *store.Store {
		st, err := store.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	a := New(Static(open()), Options{})
	heardB := &notices{}
	b := New(Static(open()), Options{Notifier: heardB})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	caller := &abi.Caller{ID: "alice", Role: "WORKER"}

	old, err := a.Send(ctx, caller, SendArgs{ToAgentID: "bob", Subject: "before", Body: "x"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); b.Watch(ctx) }()
	waitRecorded(t, b, old.MailID) // B's first poll records what exists

	sentA, err := a.Send(ctx, caller, SendArgs{ToAgentID: "bob", Subject: "through A", Body: "x"})
	if err != nil {
		t.Fatal(err)
	}
	sentB, err := b.Send(ctx, caller, SendArgs{ToAgentID: "bob", Subject: "through B", Body: "x"})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(heardB.ids()) < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(2 * watchEvery) // a second poll must not announce again
	got := heardB.ids()
	count := map[string]int{}
	for _, id := range got {
		count[id]++
	}
	if count[sentA.MailID] != 1 || count[sentB.MailID] != 1 || count[old.MailID] != 0 || len(got) != 2 {
		t.Errorf("B heard %v; want A's %s and its own %s once each, not the old %s", got, sentA.MailID, sentB.MailID, old.MailID)
	}
	cancel()
	<-done
}

// TestWatchWakesOnSignal: on PostgreSQL, mail another host stores reaches
// this host's sessions through the store's signal, not the poll: with the
// fallback poll an hour away, B still hears A's mail.
func TestWatchWakesOnSignal(t *testing.T) {
	defer func(old time.Duration) { watchFallback = old }(watchFallback)
	watchFallback = time.Hour
	target := pgtest.Shared(t).NewDatabase(t)
	open := func() *store.Store {
		st, err := store.OpenURL(context.Background(), target)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	a := New(Static(open()), Options{})
	heardB := &notices{}
	b := New(Static(open()), Options{Notifier: heardB})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	caller := &abi.Caller{ID: "alice", Role: "WORKER"}
	old, err := a.Send(ctx, caller, SendArgs{ToAgentID: "bob", Subject: "before", Body: "x"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); b.Watch(ctx) }()
	waitRecorded(t, b, old.MailID) // B's first read records what exists
	sent, err := a.Send(ctx, caller, SendArgs{ToAgentID: "bob", Subject: "through A", Body: "x"})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(heardB.ids()) < 1 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := heardB.ids(); len(got) != 1 || got[0] != sent.MailID {
		t.Errorf("B heard %v; want A's %s", got, sent.MailID)
	}
	cancel()
	<-done
}

// waitRecorded waits until s's Watch has recorded mail id as seen: its
// first read is done, and mail stored from now on is new to it.
func waitRecorded(t *testing.T, s *Service, id string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		s.notifiedMu.Lock()
		_, seen := s.notified[id]
		s.notifiedMu.Unlock()
		if seen {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Watch did not read the mail that existed (%s) within 30 s", id)
		}
	}
}
