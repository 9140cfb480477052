package idempotency

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/store"
)

// The board store is the Store, and its claim outcomes are ours.
var _ Store = (*store.Store)(nil)

func TestOutcomesMatchStore(t *testing.T) {
	for ours, theirs := range map[string]string{OutcomeNew: store.ClaimNew, OutcomeReplay: store.ClaimReplay,
		OutcomeConflict: store.ClaimConflict, OutcomeInProgress: store.ClaimInProgress, OutcomeForeign: store.ClaimForeign} {
		if ours != theirs {
			t.Errorf("outcome %q, store says %q", ours, theirs)
		}
	}
}

func openStore(t *testing.T) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "board.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestCanonical(t *testing.T) {
	same := [][]string{
		// Key order and insignificant whitespace.
		{`{"a":1,"b":2}`, `{ "b":2, "a":1 }`, "{\n\t\"a\" : 1 ,\r\n \"b\":2}"},
		// Nested objects are sorted too; arrays keep their order.
		{`{"o":{"y":[1,{"q":1,"p":2}],"x":null}}`, `{"o":{"x":null,"y":[1,{"p":2,"q":1}]}}`},
		// The key field is not part of the payload.
		{`{"title":"t","request_id":"k1"}`, `{"request_id":"other","title":"t"}`, `{"title":"t"}`},
		// Strings are compared by value, not by escape.
		{`{"s":"é/<&>"}`, `{"s":"\u00e9\/\u003c\u0026\u003e"}`},
		// Big numbers keep every digit.
		{`{"n":12345678901234567890123}`, `{"n": 12345678901234567890123 }`},
	}
	for _, group := range same {
		want, err := Canonical(json.RawMessage(group[0]), "request_id")
		if err != nil {
			t.Fatalf("%s: %v", group[0], err)
		}
		for _, s := range group[1:] {
			got, err := Canonical(json.RawMessage(s), "request_id")
			if err != nil || string(got) != string(want) {
				t.Errorf("Canonical(%s) = %s, %v; want %s (as for %s)", s, got, err, want, group[0])
			}
		}
	}
	if got, _ := Canonical(json.RawMessage(`{ "b":2, "a":[1, 2.50], "request_id":"k" }`), "request_id"); string(got) != `{"a":[1,2.50],"b":2}` {
		t.Errorf("canonical form %s", got)
	}
	if got, _ := Canonical(json.RawMessage(`{"s":"<&>"}`), "request_id"); string(got) != `{"s":"<&>"}` {
		t.Errorf("HTML characters escaped: %s", got)
	}
	// Numbers count as written: 1, 1.0 and 1e0 are different payloads (the
	// host does not know whether the tool reads an integer or a float).
	// Values and types differ too.
	different := []string{`{"n":1}`, `{"n":1.0}`, `{"n":1e0}`, `{"n":"1"}`, `{"n":true}`, `{"n":null}`, `{}`,
		`{"n":[1]}`, `{"N":1}`, `{"n":-0}`, `{"n":0}`}
	seen := map[string]string{}
	for _, s := range different {
		h, err := PayloadHash(json.RawMessage(s), "request_id")
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if prev, dup := seen[h]; dup {
			t.Errorf("%s and %s hash the same", s, prev)
		}
		seen[h] = s
	}
	for _, bad := range []string{``, `[]`, `null`, `"s"`, `{"a":1} {}`, `{"a":}`} {
		if _, err := Canonical(json.RawMessage(bad), "request_id"); err == nil {
			t.Errorf("Canonical(%q) accepted", bad)
		}
	}
}

func TestPayloadHash(t *testing.T) {
	a, _ := PayloadHash(json.RawMessage(`{"a":1,"b":2,"request_id":"x"}`), "request_id")
	b, _ := PayloadHash(json.RawMessage(`{ "b":2, "a":1 }`), "request_id")
	if a != b || len(a) != 64 {
		t.Fatalf("hashes %q and %q", a, b)
	}
	// Another key field name leaves request_id in the payload.
	c, _ := PayloadHash(json.RawMessage(`{"a":1,"b":2,"request_id":"x"}`), "key")
	if c == a {
		t.Fatal("request_id left out although the key field is key")
	}
}

func TestKey(t *testing.T) {
	long := strings.Repeat("é", MaxKeyLen) // 128 characters, 256 bytes
	for _, c := range []struct {
		args    string
		key     string
		present bool
		bad     bool
	}{
		{`{"title":"t"}`, "", false, false},
		{`{"request_id":"k-1"}`, "k-1", true, false},
		{`{"request_id":"` + long + `"}`, long, true, false},
		{`{"request_id":"` + long + `x"}`, "", false, true},
		{`{"request_id":""}`, "", false, true},
		{`{"request_id":null}`, "", false, true},
		{`{"request_id":7}`, "", false, true},
		{`{"request_id":["k"]}`, "", false, true},
		{`{"request_id": "k"}`, "k", true, false},
	} {
		key, present, env := Key(json.RawMessage(c.args), "request_id")
		if key != c.key || present != c.present || (env != nil) != c.bad {
			t.Errorf("Key(%.40s) = %q, %v, %v", c.args, key, present, env)
			continue
		}
		if env != nil && (env.Code != abi.CodeInvalidArgument || env.Details["field"] != "request_id") {
			t.Errorf("Key(%.40s) envelope %+v", c.args, env)
		}
	}
}

// fakeClock is a settable now.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newGuard(t *testing.T, s Store) (*Guard, *fakeClock) {
	clock := &fakeClock{t: time.Now()}
	g := NewGuard(StaticStore(s), Config{CompletedTTL: DefaultCompletedTTL, InProgressTTL: time.Hour})
	g.now = clock.now
	return g, clock
}

// runner counts runs and answers a new result each time.
type runner struct{ n atomic.Int32 }

func (r *runner) ok() ([]byte, bool) {
	n := r.n.Add(1)
	return fmt.Appendf(nil, `{"content":[{"type":"text","text":"<&> run %d"}]}`, n), true
}

func (r *runner) fail() ([]byte, bool) { r.n.Add(1); return nil, false }

func TestGuardDecisions(t *testing.T) {
	ctx := context.Background()
	g, _ := newGuard(t, openStore(t))
	var r runner
	args := json.RawMessage(`{"title":"t","n":1,"request_id":"k1"}`)

	first, ran, env := g.Do(ctx, nil, "create_task", "request_id", "k1", args, r.ok)
	if env != nil || !ran || r.n.Load() != 1 {
		t.Fatalf("first call: ran %v, env %v, runs %d", ran, env, r.n.Load())
	}
	// Same payload in another layout: replayed byte for byte, not run.
	again, ran, env := g.Do(ctx, nil, "create_task", "request_id", "k1", json.RawMessage(`{ "request_id":"k1", "n":1, "title":"t" }`), r.ok)
	if env != nil || ran || string(again) != string(first) || r.n.Load() != 1 {
		t.Fatalf("retry: %s (ran %v, env %v, runs %d), want replay of %s", again, ran, env, r.n.Load(), first)
	}
	// Same key, other payload: conflict, not run.
	_, ran, env = g.Do(ctx, nil, "create_task", "request_id", "k1", json.RawMessage(`{"title":"t","n":1.0,"request_id":"k1"}`), r.ok)
	if ran || env == nil || env.Code != abi.CodeIdempotencyConflict || env.Retryable || r.n.Load() != 1 {
		t.Fatalf("conflict: ran %v, env %+v", ran, env)
	}
	if env.Hint != "generate a new request_id for a different request; reuse a request_id only to retry the same arguments" ||
		env.Details["tool"] != "create_task" || env.Details["request_id"] != "k1" {
		t.Fatalf("conflict envelope %+v", env)
	}
	// Same key, other tool: an independent record.
	if _, ran, env = g.Do(ctx, nil, "start_task_attempt", "request_id", "k1", args, r.ok); !ran || env != nil {
		t.Fatalf("other tool: ran %v, env %v", ran, env)
	}
}

func TestGuardInProgress(t *testing.T) {
	ctx := context.Background()
	g, _ := newGuard(t, openStore(t))
	args := json.RawMessage(`{"request_id":"k"}`)
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan []byte)
	go func() {
		out, _, _ := g.Do(ctx, nil, "t", "request_id", "k", args, func() ([]byte, bool) {
			close(started)
			<-release
			return []byte(`{"content":[]}`), true
		})
		done <- out
	}()
	<-started
	var r runner
	_, ran, env := g.Do(ctx, nil, "t", "request_id", "k", args, r.ok)
	if ran || env == nil || env.Code != abi.CodeRequestInProgress || !env.Retryable || r.n.Load() != 0 {
		t.Fatalf("duplicate of a running call: ran %v, env %+v", ran, env)
	}
	if env.Details["request_id"] != "k" || !strings.Contains(env.Hint, "same request_id") {
		t.Fatalf("in-progress envelope %+v", env)
	}
	// Other arguments conflict even while the first runs.
	if _, _, env := g.Do(ctx, nil, "t", "request_id", "k", json.RawMessage(`{"request_id":"k","x":1}`), r.ok); env == nil || env.Code != abi.CodeIdempotencyConflict {
		t.Fatalf("other payload during the run: %+v", env)
	}
	close(release)
	first := <-done
	out, ran, env := g.Do(ctx, nil, "t", "request_id", "k", args, r.ok)
	if ran || env != nil || string(out) != string(first) {
		t.Fatalf("after completion: %s, ran %v, env %v", out, ran, env)
	}
}

// TestGuardKeyIsItsCallers: a key replays only to the caller whose call
// claimed it. Another caller — another id, or the same id in another role —
// naming it with the same arguments, other arguments, or while the first
// call still runs, gets idempotency_conflict telling it to use a key of its
// own, with nothing of the first call's answer, and its call does not run;
// the owner's replay is untouched. The effects of the two callers' runs are
// journaled apart.
func TestGuardKeyIsItsCallers(t *testing.T) {
	ctx := context.Background()
	g, _ := newGuard(t, openStore(t))
	w1 := &abi.Caller{ID: "worker1", Role: "WORKER"}
	w2 := &abi.Caller{ID: "worker2", Role: "WORKER"}
	args := json.RawMessage(`{"request_id":"k","attempt_id":"a1"}`)
	var r runner
	var ownScope string
	first, ran, env := g.Run(ctx, w1, "follow_up", "request_id", "k", args, func(ctx context.Context) ([]byte, bool) {
		ownScope = ScopeFrom(ctx).PayloadHash
		return r.ok()
	})
	if !ran || env != nil {
		t.Fatalf("worker1: ran %v, env %v", ran, env)
	}
	foreign := func(what string, c *abi.Caller, args json.RawMessage) {
		t.Helper()
		out, ran, env := g.Do(ctx, c, "follow_up", "request_id", "k", args, r.ok)
		if ran || out != nil || env == nil || env.Code != abi.CodeIdempotencyConflict || env.Retryable ||
			!strings.Contains(env.Hint, "fresh request_id of your own") || env.Details["request_id"] != "k" {
			t.Errorf("%s: out %s, ran %v, env %+v", what, out, ran, env)
		}
		if env != nil && (strings.Contains(env.Message, "worker1") || strings.Contains(env.Message, "different arguments")) {
			t.Errorf("%s: the envelope tells of the other call: %+v", what, env)
		}
	}
	foreign("worker2, same arguments", w2, args)
	foreign("worker2, other arguments", w2, json.RawMessage(`{"request_id":"k","attempt_id":"a2"}`))
	foreign("worker1's id in another role", &abi.Caller{ID: "worker1", Role: "SUPERVISOR"}, args)
	foreign("no caller", nil, args)
	if r.n.Load() != 1 {
		t.Fatalf("another caller's call ran: %d runs", r.n.Load())
	}
	if again, ran, env := g.Do(ctx, &abi.Caller{ID: "worker1", Role: "WORKER"}, "follow_up", "request_id", "k", args, r.ok); ran || env != nil || string(again) != string(first) {
		t.Fatalf("worker1's replay: %s, ran %v, env %v", again, ran, env)
	}

	// While worker1's call runs, worker2 neither waits on it nor gets it.
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan []byte)
	go func() {
		out, _, _ := g.Do(ctx, w1, "t", "request_id", "k2", args, func() ([]byte, bool) {
			close(started)
			<-release
			return []byte(`{"content":[]}`), true
		})
		done <- out
	}()
	<-started
	if _, ran, env := g.Do(ctx, w2, "t", "request_id", "k2", args, r.ok); ran || env == nil || env.Code != abi.CodeIdempotencyConflict {
		t.Fatalf("worker2 during worker1's call: ran %v, env %+v", ran, env)
	}
	close(release)
	<-done

	// A key released by a failure is free to another caller, whose run
	// journals its effects apart from the first's.
	if _, ran, env := g.Do(ctx, w1, "t", "request_id", "k3", args, r.fail); !ran || env != nil {
		t.Fatalf("failing call: ran %v, env %v", ran, env)
	}
	var otherScope string
	if _, ran, env := g.Run(ctx, w2, "follow_up", "request_id", "k3", args, func(ctx context.Context) ([]byte, bool) {
		otherScope = ScopeFrom(ctx).PayloadHash
		return r.ok()
	}); !ran || env != nil {
		t.Fatalf("worker2 after worker1's failure: ran %v, env %v", ran, env)
	}
	if ownScope == "" || ownScope == otherScope || ownScope == mustHash(t, args) {
		t.Fatalf("journal hashes: worker1 %q, worker2 %q", ownScope, otherScope)
	}
}

// TestGuardReplayNeedsTheSameScope: a caller's answer is replayed only
// while its scope is the one the board checked when it made the answer; a
// caller whose agents-file scope changed since (a restart with a narrower
// agents file) gets idempotency_conflict for its own earlier key.
func TestGuardReplayNeedsTheSameScope(t *testing.T) {
	ctx := context.Background()
	store := openStore(t)
	scope := "tasks=t1,t2;attempts="
	g := NewGuard(StaticStore(store), Config{CompletedTTL: DefaultCompletedTTL, InProgressTTL: time.Hour,
		ScopeOf: func(*abi.Caller) string { return scope }})
	w1 := &abi.Caller{ID: "worker1", Role: "WORKER"}
	args := json.RawMessage(`{"request_id":"k","task_id":"t2"}`)
	var r runner
	first, ran, env := g.Do(ctx, w1, "get_task", "request_id", "k", args, r.ok)
	if !ran || env != nil {
		t.Fatalf("first call: ran %v, env %v", ran, env)
	}
	if again, ran, env := g.Do(ctx, w1, "get_task", "request_id", "k", args, r.ok); ran || env != nil || string(again) != string(first) {
		t.Fatalf("replay under the same scope: %s, ran %v, env %v", again, ran, env)
	}
	scope = "tasks=t1;attempts=" // t2 taken away
	if out, ran, env := g.Do(ctx, w1, "get_task", "request_id", "k", args, r.ok); ran || out != nil || env == nil || env.Code != abi.CodeIdempotencyConflict {
		t.Fatalf("replay after the scope narrowed: %s, ran %v, env %+v", out, ran, env)
	}
}

// TestGuardFailureReleases: a failed call, or one that panicked, leaves no
// record: the retry runs again, with the same or other arguments.
func TestGuardFailureReleases(t *testing.T) {
	ctx := context.Background()
	g, _ := newGuard(t, openStore(t))
	var r runner
	args := json.RawMessage(`{"request_id":"k"}`)
	for i := 1; i <= 2; i++ {
		if _, ran, env := g.Do(ctx, nil, "t", "request_id", "k", args, r.fail); !ran || env != nil || r.n.Load() != int32(i) {
			t.Fatalf("failing call %d: ran %v, env %v, runs %d", i, ran, env, r.n.Load())
		}
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("panic swallowed")
			}
		}()
		g.Do(ctx, nil, "t", "request_id", "k", args, func() ([]byte, bool) { panic("boom") })
	}()
	if _, ran, env := g.Do(ctx, nil, "t", "request_id", "k", json.RawMessage(`{"request_id":"k","other":true}`), r.ok); !ran || env != nil {
		t.Fatalf("after failures, other payload: ran %v, env %v", ran, env)
	}
}

// TestGuardCancelledCallReleases: the release runs even when the caller's
// context is already done.
func TestGuardCancelledCallReleases(t *testing.T) {
	g, _ := newGuard(t, openStore(t))
	ctx, cancel := context.WithCancel(context.Background())
	args := json.RawMessage(`{"request_id":"k"}`)
	g.Do(ctx, nil, "t", "request_id", "k", args, func() ([]byte, bool) { cancel(); return nil, false })
	var r runner
	if _, ran, env := g.Do(context.Background(), nil, "t", "request_id", "k", args, r.ok); !ran || env != nil {
		t.Fatalf("after a cancelled failure: ran %v, env %v", ran, env)
	}
}

// TestGuardStaleInProgress: a claim left by a call that never finished (a
// crash) frees its key after the in-progress TTL, without a prune; the dead
// call, should it finish after all, stores nothing.
func TestGuardStaleInProgress(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	g, clock := newGuard(t, s)
	args := json.RawMessage(`{"request_id":"k"}`)
	// A crash: claimed, never completed nor released.
	if outcome, _, _, err := s.ClaimRequestAt(ctx, clock.now(), "t", "k", mustHash(t, args), time.Hour); err != nil || outcome != OutcomeNew {
		t.Fatalf("claim: %q %v", outcome, err)
	}
	var r runner
	clock.add(59 * time.Minute)
	if _, _, env := g.Do(ctx, nil, "t", "request_id", "k", args, r.ok); env == nil || env.Code != abi.CodeRequestInProgress {
		t.Fatalf("young claim: %+v", env)
	}
	clock.add(2 * time.Minute)
	out, ran, env := g.Do(ctx, nil, "t", "request_id", "k", args, r.ok)
	if !ran || env != nil {
		t.Fatalf("stale claim not reclaimed: ran %v, env %v", ran, env)
	}
	if again, ran, _ := g.Do(ctx, nil, "t", "request_id", "k", args, r.ok); ran || string(again) != string(out) {
		t.Fatalf("reclaimed call not replayed: %s", again)
	}
	// In-progress TTL 0: a claim never goes stale.
	g0 := NewGuard(StaticStore(s), Config{})
	g0.now = func() time.Time { return clock.now().Add(1000 * time.Hour) }
	if _, _, _, err := s.ClaimRequestAt(ctx, clock.now(), "t", "k0", mustHash(t, args), 0); err != nil {
		t.Fatal(err)
	}
	if _, _, env := g0.Do(ctx, nil, "t", "request_id", "k0", args, r.ok); env == nil || env.Code != abi.CodeRequestInProgress {
		t.Fatalf("TTL 0 took a claim as stale: %+v", env)
	}
}

func mustHash(t *testing.T, args json.RawMessage) string {
	t.Helper()
	h, err := PayloadHash(args, "request_id")
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestGuardConcurrent: fifty identical calls at once run once; the others
// are told it is in progress, and each retries until it gets the replay.
func TestGuardConcurrent(t *testing.T) {
	ctx := context.Background()
	g, _ := newGuard(t, openStore(t))
	var r runner
	args := json.RawMessage(`{"title":"t","request_id":"k"}`)
	var (
		wg         sync.WaitGroup
		mu         sync.Mutex
		results    = map[string]int{}
		inProgress int
	)
	for range 50 {
		wg.Go(func() {
			for {
				out, _, env := g.Do(ctx, nil, "t", "request_id", "k", args, func() ([]byte, bool) {
					time.Sleep(20 * time.Millisecond)
					return r.ok()
				})
				mu.Lock()
				if env != nil {
					if env.Code != abi.CodeRequestInProgress {
						t.Errorf("envelope %+v", env)
						mu.Unlock()
						return
					}
					inProgress++
					mu.Unlock()
					time.Sleep(5 * time.Millisecond)
					continue
				}
				results[string(out)]++
				mu.Unlock()
				return
			}
		})
	}
	wg.Wait()
	if r.n.Load() != 1 || len(results) != 1 || inProgress == 0 {
		t.Fatalf("runs %d, distinct results %v, in-progress answers %d", r.n.Load(), results, inProgress)
	}
}

type brokenStore struct{ Store }

func (brokenStore) ClaimRequestBy(context.Context, time.Time, string, string, string, string, time.Duration, string, func(string) bool) (string, []byte, string, error) {
	return "", nil, "", errors.New("disk on fire")
}

func TestGuardStoreFailures(t *testing.T) {
	args := json.RawMessage(`{"request_id":"k"}`)
	var r runner
	unavailable := NewGuard(func(context.Context) (Store, error) { return nil, errors.New("board did not open") }, Config{})
	if _, ran, env := unavailable.Do(context.Background(), nil, "t", "request_id", "k", args, r.ok); ran || env == nil || env.Code != abi.CodeUnavailable {
		t.Fatalf("no store: ran %v, env %+v", ran, env)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	waiting := NewGuard(func(ctx context.Context) (Store, error) { <-ctx.Done(); return nil, ctx.Err() }, Config{})
	if _, ran, env := waiting.Do(ctx, nil, "t", "request_id", "k", args, r.ok); ran || env == nil || env.Code != abi.CodeCancelled {
		t.Fatalf("cancelled while the store opens: ran %v, env %+v", ran, env)
	}
	broken := NewGuard(StaticStore(brokenStore{}), Config{})
	if _, ran, env := broken.Do(context.Background(), nil, "t", "request_id", "k", args, r.ok); ran || env == nil || env.Code != abi.CodeInternal {
		t.Fatalf("claim error: ran %v, env %+v", ran, env)
	}
	if r.n.Load() != 0 {
		t.Fatalf("%d runs without a claim", r.n.Load())
	}
}
