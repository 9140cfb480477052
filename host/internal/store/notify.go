package store

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Signals: hosts sharing a PostgreSQL store wake each other through
// LISTEN/NOTIFY instead of polling for what another host wrote. A write
// that another host waits for (a command queued for it, a command's
// answer, a mail) sends a signal in the same transaction, so it is
// delivered when, and only if, the write commits. Each Store keeps one
// listening connection, opened on the first Subscribe, and fans its
// signals out to subscribers by kind.
//
// A signal is a wake-up, not a record: the subscriber reads the store to
// learn what happened. Signals can be missed — the listening connection
// drops, a subscriber's buffer is full — so readers keep a slow poll as a
// fallback, and every (re)connection wakes every subscriber with the key
// "" (check everything). SQLite has no signals: Notifies reports false and
// readers poll as before.

// Kinds of signal, with what their key is.
const (
	// SignalHostCommand: a command was queued; key: the host id it is for.
	SignalHostCommand = "host_command"
	// SignalCommandDone: a command was answered; key: its id.
	SignalCommandDone = "command_done"
	// SignalMail: a mail was stored; key: its id.
	SignalMail = "mail"
)

// notifyChannel is the one PostgreSQL channel signals travel on; the
// payload is "KIND KEY".
const notifyChannel = "plugboard"

// Reconnection backoff of the listening connection.
const (
	listenRetryMin = 100 * time.Millisecond
	listenRetryMax = 5 * time.Second
)

// Notifies reports whether Subscribe delivers signals: true on PostgreSQL.
func (s *Store) Notifies() bool { return s.pg }

// Subscribe returns a channel that receives the key of every signal of
// kind, and "" whenever signals may have been missed; cancel ends the
// subscription. On SQLite the channel never receives. The channel is
// buffered; a subscriber that falls behind loses signals, not the store's
// progress, and finds what it missed at its next poll.
func (s *Store) Subscribe(kind string) (<-chan string, func()) {
	if !s.pg {
		return nil, func() {}
	}
	return s.listen.subscribe(s.target, kind)
}

// signal sends a signal of kind with key when tx commits (PostgreSQL only).
func (t *Tx) signal(ctx context.Context, kind, key string) error {
	if !t.pg {
		return nil
	}
	_, err := t.tx.ExecContext(ctx, `SELECT pg_notify($1, $2)`, notifyChannel, kind+" "+key)
	return err
}

// execSignalled runs one write and, on PostgreSQL, a signal of kind with
// key in the same transaction.
func (s *Store) execSignalled(ctx context.Context, kind, key, query string, args ...any) error {
	if !s.pg {
		_, err := s.db.ExecContext(ctx, query, args...)
		return err
	}
	return s.tx(ctx, func(tx *Tx) error {
		if _, err := tx.ExecContext(ctx, query, args...); err != nil {
			return err
		}
		return tx.signal(ctx, kind, key)
	})
}

// listener owns a Store's listening connection and its subscribers.
type listener struct {
	mu     sync.Mutex
	subs   map[*subscription]struct{}
	cancel context.CancelFunc // stops run; nil until the first subscriber
	done   chan struct{}      // closed when run returns
	closed bool
}

type subscription struct {
	kind string
	ch   chan string
}

func (l *listener) subscribe(target, kind string) (<-chan string, func()) {
	sub := &subscription{kind: kind, ch: make(chan string, 64)}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, func() {}
	}
	if l.subs == nil {
		l.subs = map[*subscription]struct{}{}
	}
	l.subs[sub] = struct{}{}
	if l.cancel == nil {
		ctx, cancel := context.WithCancel(context.Background())
		l.cancel, l.done = cancel, make(chan struct{})
		go l.run(ctx, target)
	}
	return sub.ch, func() {
		l.mu.Lock()
		delete(l.subs, sub)
		l.mu.Unlock()
	}
}

// deliver hands key to every subscriber of kind ("" kind: every
// subscriber), dropping it for those whose buffer is full.
func (l *listener) deliver(kind, key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for sub := range l.subs {
		if kind != "" && sub.kind != kind {
			continue
		}
		select {
		case sub.ch <- key:
		default:
		}
	}
}

// run keeps a connection listening on notifyChannel until ctx ends,
// reconnecting with backoff when it fails.
func (l *listener) run(ctx context.Context, target string) {
	defer close(l.done)
	backoff := listenRetryMin
	for ctx.Err() == nil {
		// A failure is not reported: the next attempt follows, and
		// subscribers poll meanwhile (their fallback).
		_ = l.listenOnce(ctx, target, func() { backoff = listenRetryMin })
		if ctx.Err() != nil {
			return
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, listenRetryMax)
	}
}

// listenOnce connects, listens and delivers until the connection fails;
// listening calls onListening once LISTEN holds.
func (l *listener) listenOnce(ctx context.Context, target string, listening func()) error {
	conn, err := pgx.Connect(ctx, target)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		return err
	}
	listening()
	// Whatever was signalled before LISTEN held is not coming.
	l.deliver("", "")
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		kind, key, _ := strings.Cut(n.Payload, " ")
		if kind != "" {
			l.deliver(kind, key)
		}
	}
}

// close stops the listening connection and waits for it to go.
func (l *listener) close() {
	l.mu.Lock()
	l.closed = true
	cancel, done := l.cancel, l.done
	l.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}
