package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestDashboardSessions: on both stores a session is found by its hash
// (its MAC with it) until deleted, touching moves its seen time forward
// only, creating one drops the sessions idle past the cut-off and keeps
// only the creator identity's most recently seen beyond the cap.
func TestDashboardSessions(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func() *Store) {
		s := open()
		ctx := context.Background()
		at := func(d time.Duration) string { return FormatTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(d)) }
		mk := func(id string, seen time.Duration) DashboardSession {
			return DashboardSession{IDHash: id, Identity: "alice", TokenHash: "th", CSRF: "c-" + id, MAC: "m-" + id, CreatedAt: at(seen), SeenAt: at(seen)}
		}
		for i := range 3 {
			if err := s.CreateDashboardSession(ctx, mk(fmt.Sprint("s", i), time.Duration(i)*time.Minute), at(0), 10); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.GetDashboardSession(ctx, "s1")
		if err != nil || got.Identity != "alice" || got.CSRF != "c-s1" || got.MAC != "m-s1" || got.SeenAt != at(time.Minute) {
			t.Fatalf("get s1 = %+v, %v", got, err)
		}
		if err := s.TouchDashboardSession(ctx, "s1", at(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if err := s.TouchDashboardSession(ctx, "s1", at(30*time.Minute)); err != nil { // older: ignored
			t.Fatal(err)
		}
		if got, _ := s.GetDashboardSession(ctx, "s1"); got.SeenAt != at(time.Hour) {
			t.Fatalf("s1 seen %s after touches, want %s", got.SeenAt, at(time.Hour))
		}
		// s0 (seen at 0) is idle past a cut-off of 1 s; of s1, s2 and s3
		// a cap of 2 keeps s1 (touched last) and s3 (new).
		if err := s.CreateDashboardSession(ctx, mk("s3", 3*time.Minute), at(time.Second), 2); err != nil {
			t.Fatal(err)
		}
		for id, want := range map[string]bool{"s0": false, "s1": true, "s2": false, "s3": true} {
			_, err := s.GetDashboardSession(ctx, id)
			if (err == nil) != want || err != nil && !errors.Is(err, ErrNotFound) {
				t.Errorf("session %s: err %v, want kept=%v", id, err, want)
			}
		}
		if err := s.DeleteDashboardSession(ctx, "s1"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetDashboardSession(ctx, "s1"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("deleted session: %v", err)
		}
	})
}

// TestDashboardSessionsCappedPerIdentity: on both stores, one identity
// signing in far beyond the cap evicts only its own least recently seen
// sessions; another identity's session, older than all of them, stays.
func TestDashboardSessionsCappedPerIdentity(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func() *Store) {
		s := open()
		ctx := context.Background()
		at := func(d time.Duration) string { return FormatTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(d)) }
		mk := func(id, identity string, seen time.Duration) DashboardSession {
			return DashboardSession{IDHash: id, Identity: identity, TokenHash: "th-" + identity, CSRF: "c", MAC: "m", CreatedAt: at(seen), SeenAt: at(seen)}
		}
		if err := s.CreateDashboardSession(ctx, mk("boss", "boss", 0), at(0), 3); err != nil {
			t.Fatal(err)
		}
		for i := range 20 {
			if err := s.CreateDashboardSession(ctx, mk(fmt.Sprint("w", i), "worker", time.Duration(i+1)*time.Second), at(0), 3); err != nil {
				t.Fatal(err)
			}
		}
		if got, err := s.GetDashboardSession(ctx, "boss"); err != nil || got.Identity != "boss" {
			t.Fatalf("the other identity's session after the flood: %+v, %v", got, err)
		}
		for i := range 20 {
			_, err := s.GetDashboardSession(ctx, fmt.Sprint("w", i))
			if want := i >= 17; (err == nil) != want {
				t.Errorf("worker session w%d: err %v, want kept=%v", i, err, want)
			}
		}
	})
}
