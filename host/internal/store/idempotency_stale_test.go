package store

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestClaimRequestAtConcurrent: fifty claims of one free key at once give
// exactly one ClaimNew; the rest see it in progress.
func TestClaimRequestAtConcurrent(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func() *Store) {
		ctx := context.Background()
		s := open()
		const workers = 50
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			outcomes = map[string]int{}
			tokens   []string
		)
		now := time.Now()
		for range workers {
			wg.Go(func() {
				outcome, _, token, err := s.ClaimRequestAt(ctx, now, "create_task", "k", "h", time.Hour)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				outcomes[outcome]++
				if token != "" {
					tokens = append(tokens, token)
				}
			})
		}
		wg.Wait()
		if outcomes[ClaimNew] != 1 || outcomes[ClaimInProgress] != workers-1 || len(tokens) != 1 {
			t.Fatalf("outcomes %v, tokens %v", outcomes, tokens)
		}
		if ok, err := s.CompleteClaim(ctx, "create_task", "k", tokens[0], []byte(`{"a":1}`)); !ok || err != nil {
			t.Fatalf("complete = %v, %v", ok, err)
		}
		outcome, result, token, err := s.ClaimRequestAt(ctx, time.Now(), "create_task", "k", "h", time.Hour)
		if err != nil || outcome != ClaimReplay || string(result) != `{"a":1}` || token != "" {
			t.Fatalf("after completion: %q %q %q %v", outcome, result, token, err)
		}
		if outcome, _, _, _ := s.ClaimRequestAt(ctx, time.Now(), "create_task", "k", "other", time.Hour); outcome != ClaimConflict {
			t.Fatalf("other payload: %q", outcome)
		}
	})
}

// TestClaimRequestAtStale: an in_progress record older than its TTL is free
// to claim (same or other payload); a completed one never is; TTL 0 never
// takes a record as stale. The dead claim's token no longer completes or
// releases the key.
func TestClaimRequestAtStale(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func() *Store) {
		ctx := context.Background()
		s := open()
		t0 := time.Now()
		claim := func(at time.Time, key, hash string, ttl time.Duration) (string, string) {
			t.Helper()
			outcome, _, token, err := s.ClaimRequestAt(ctx, at, "tool", key, hash, ttl)
			if err != nil {
				t.Fatal(err)
			}
			return outcome, token
		}
		_, dead := claim(t0, "k", "h1", time.Hour)
		if o, _ := claim(t0.Add(30*time.Minute), "k", "h1", time.Hour); o != ClaimInProgress {
			t.Fatalf("young in-progress claim: %q", o)
		}
		if o, _ := claim(t0.Add(2*time.Hour), "k", "h1", 0); o != ClaimInProgress {
			t.Fatalf("TTL 0 took a claim as stale: %q", o)
		}
		o, fresh := claim(t0.Add(2*time.Hour), "k", "h2", time.Hour)
		if o != ClaimNew || fresh == dead {
			t.Fatalf("stale claim, other payload: %q (token %q, dead %q)", o, fresh, dead)
		}
		// The dead call finishing late touches nothing.
		if ok, err := s.CompleteClaim(ctx, "tool", "k", dead, []byte(`"late"`)); ok || err != nil {
			t.Fatalf("late completion = %v, %v", ok, err)
		}
		if err := s.ReleaseClaim(ctx, "tool", "k", dead); err != nil {
			t.Fatal(err)
		}
		if o, _ := claim(t0.Add(2*time.Hour), "k", "h2", time.Hour); o != ClaimInProgress {
			t.Fatalf("a dead token released its successor's claim: %q", o)
		}
		if ok, err := s.CompleteClaim(ctx, "tool", "k", fresh, []byte(`"fresh"`)); !ok || err != nil {
			t.Fatalf("completion = %v, %v", ok, err)
		}
		// A completed record is never stale to a claim (pruning removes it).
		outcome, result, _, err := s.ClaimRequestAt(ctx, time.Now().Add(48*time.Hour), "tool", "k", "h2", time.Hour)
		if err != nil || outcome != ClaimReplay || string(result) != `"fresh"` {
			t.Fatalf("completed record: %q %q %v", outcome, result, err)
		}
		// Release frees the key for the same payload.
		_, tok := claim(time.Now(), "k2", "h", time.Hour)
		if err := s.ReleaseClaim(ctx, "tool", "k2", tok); err != nil {
			t.Fatal(err)
		}
		if o, _ := claim(time.Now(), "k2", "h", time.Hour); o != ClaimNew {
			t.Fatalf("after release: %q", o)
		}
		// A pruned claim cannot be completed.
		_, tok = claim(t0, "k3", "h", time.Hour)
		if _, err := s.PruneRequests(ctx, t0.Add(2*time.Hour), 0, time.Hour); err != nil {
			t.Fatal(err)
		}
		if ok, _ := s.CompleteClaim(ctx, "tool", "k3", tok, []byte(`1`)); ok {
			t.Fatal("completed a pruned claim")
		}
	})
}

// TestClaimRequestByCaller: a key belongs to the caller whose call claimed
// it. Any other caller gets ClaimForeign and nothing else — not the stored
// result, not in_progress, not a takeover of a stale claim or of one whose
// owner died, not even when its arguments differ — and the key's own
// caller keeps its replay and its takeovers. Records without a caller
// (written before callers were recorded) belong to no identified caller.
func TestClaimRequestByCaller(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func() *Store) {
		ctx := context.Background()
		s := open()
		t0 := time.Now()
		claim := func(at time.Time, caller, key, hash, owner string) (string, []byte, string) {
			t.Helper()
			dead := func(o string) bool { return o == "dead" }
			outcome, result, token, err := s.ClaimRequestBy(ctx, at, "follow_up", caller, key, hash, time.Hour, owner, dead)
			if err != nil {
				t.Fatal(err)
			}
			return outcome, result, token
		}
		_, _, tok := claim(t0, "w1", "k", "h", "live")
		for _, c := range []struct{ caller, hash, owner string }{{"w2", "h", "live"}, {"w2", "other", "live"}, {"", "h", "live"}} {
			if o, res, token := claim(t0, c.caller, "k", c.hash, c.owner); o != ClaimForeign || res != nil || token != "" {
				t.Fatalf("%+v during w1's call: %q %q %q", c, o, res, token)
			}
		}
		if o, _, _ := claim(t0, "w1", "k", "h", "live"); o != ClaimInProgress {
			t.Fatalf("w1's duplicate: %q", o)
		}
		if ok, err := s.CompleteClaim(ctx, "follow_up", "k", tok, []byte(`"w1's answer"`)); !ok || err != nil {
			t.Fatalf("complete = %v, %v", ok, err)
		}
		if o, res, _ := claim(t0, "w2", "k", "h", "live"); o != ClaimForeign || res != nil {
			t.Fatalf("w2 after w1's call: %q %q", o, res)
		}
		if o, res, _ := claim(t0, "w1", "k", "h", "live"); o != ClaimReplay || string(res) != `"w1's answer"` {
			t.Fatalf("w1's replay: %q %q", o, res)
		}
		// The legacy claim (no caller) refuses it too.
		if c, err := s.ClaimRequest(ctx, "follow_up", "k", "h"); err != nil || c.Outcome != ClaimForeign || c.Result != nil {
			t.Fatalf("ClaimRequest of w1's key: %+v %v", c, err)
		}

		// A stale claim, and a claim whose owner died, are taken over by
		// their own caller only.
		claim(t0, "w1", "stale", "h", "live")
		claim(t0, "w1", "dead", "h", "dead")
		for key, at := range map[string]time.Time{"stale": t0.Add(2 * time.Hour), "dead": t0} {
			if o, _, _ := claim(at, "w2", key, "h", "live"); o != ClaimForeign {
				t.Fatalf("w2 took over w1's %s claim: %q", key, o)
			}
			if o, _, _ := claim(at, "w1", key, "h", "live"); o != ClaimNew {
				t.Fatalf("w1 could not take over its own %s claim: %q", key, o)
			}
		}

		// A record without a caller answers only calls without one.
		if o, _, _, err := s.ClaimRequestAs(ctx, t0, "follow_up", "old", "h", time.Hour, "live", nil); err != nil || o != ClaimNew {
			t.Fatalf("claim without a caller: %q %v", o, err)
		}
		if o, _, _ := claim(t0, "w1", "old", "h", "live"); o != ClaimForeign {
			t.Fatalf("w1 on a record without a caller: %q", o)
		}
		if o, _, _ := claim(t0, "", "old", "h", "live"); o != ClaimInProgress {
			t.Fatalf("no caller on its own record: %q", o)
		}
	})
}
