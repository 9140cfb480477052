package dispatch_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/caller"
	"github.com/plugboard/plugboard/host/internal/dispatch"
	"github.com/plugboard/plugboard/host/internal/idempotency"
	"github.com/plugboard/plugboard/host/internal/registry"
	"github.com/plugboard/plugboard/host/internal/runtime"
	"github.com/plugboard/plugboard/host/internal/store"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// The idempotency step is exercised with testdata/plugins/nonce: its tool
// declares request_id and answers a fresh random nonce on every run, so the
// same nonce means a replay and a new one a second run.

// countingStore counts the claims that let a call run.
type countingStore struct {
	*store.Store
	mu   sync.Mutex
	runs int
}

func (s *countingStore) ClaimRequestBy(ctx context.Context, now time.Time, tool, caller, requestID, hash string,
	ttl time.Duration, owner string, dead func(string) bool) (string, []byte, string, error) {
	outcome, result, token, err := s.Store.ClaimRequestBy(ctx, now, tool, caller, requestID, hash, ttl, owner, dead)
	if outcome == idempotency.OutcomeNew {
		s.mu.Lock()
		s.runs++
		s.mu.Unlock()
	}
	return outcome, result, token, err
}

func (s *countingStore) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs
}

// compiledCache is shared by the tests (and test runs): compiling a plugin
// under the race detector takes seconds, and wazero's cache is keyed by
// module content.
var compiledCache = filepath.Join(os.TempDir(), "plugboard-test-compiled")

// nonceDispatcher loads the nonce plugin and returns a dispatcher whose
// guard keeps records in a fresh store (no guard when guarded is false).
func nonceDispatcher(t *testing.T, guarded bool) (*dispatch.Dispatcher, *countingStore) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds plugins")
	}
	ctx := context.Background()
	dir, _ := buildtest.Plugins(t, "testdata/plugins/nonce")
	engine, err := runtime.New(ctx, runtime.Config{CacheDir: compiledCache, CacheKey: testCacheKey})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = engine.Close(ctx) })
	reg, err := registry.Load(ctx, registry.Options{Dirs: []string{dir}, DataDir: t.TempDir(), Engine: engine})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close(ctx) })
	if tool, ok := reg.Tool("nonce"); !ok || tool.Def.Idempotency == nil {
		t.Fatalf("nonce tool not loaded with its key field; problems: %v", reg.Problems())
	}
	if !guarded {
		return dispatch.New(reg, dispatch.Options{}), nil
	}
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "board.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cs := &countingStore{Store: st}
	guard := idempotency.NewGuard(idempotency.StaticStore(cs), idempotency.Config{InProgressTTL: time.Hour})
	return dispatch.New(reg, dispatch.Options{Idempotency: guard}), cs
}

type nonceOut struct {
	Nonce     string `json:"nonce"`
	Label     string `json:"label"`
	RequestID string `json:"request_id"`
}

func call(t *testing.T, d *dispatch.Dispatcher, args string) *dispatch.Result {
	t.Helper()
	return d.Call(context.Background(), dispatch.Request{Tool: "nonce", Arguments: json.RawMessage(args)})
}

func nonceOf(t *testing.T, res *dispatch.Result) nonceOut {
	t.Helper()
	if res.IsError() {
		t.Fatalf("unexpected envelope %s", res.Structured)
	}
	var out nonceOut
	if err := json.Unmarshal(res.Structured, &out); err != nil || out.Nonce == "" {
		t.Fatalf("structured %s: %v", res.Structured, err)
	}
	return out
}

func envelopeCode(t *testing.T, res *dispatch.Result) *abi.Envelope {
	t.Helper()
	if !res.IsError() {
		t.Fatalf("expected an envelope, got %s", res.Structured)
	}
	return res.Envelope
}

// TestIdempotentConcurrentCalls: fifty goroutines send the same keyed call
// at once. The plugin runs exactly once; every goroutine gets that run's
// answer, either at once or, after request_in_progress, as a replay — the
// same bytes.
func TestIdempotentConcurrentCalls(t *testing.T) {
	d, cs := nonceDispatcher(t, true)
	// Compile first (seconds under the race detector, when not cached):
	// the calls below would spend it answering request_in_progress.
	nonceOf(t, call(t, d, `{"label":"warm-up"}`))
	const workers = 50
	args := `{"label":"<ünïcode & html>","sleep_ms":300,"request_id":"req-50"}`
	var (
		wg         sync.WaitGroup
		mu         sync.Mutex
		answers    = map[string]int{}
		inProgress int
	)
	for range workers {
		wg.Go(func() {
			deadline := time.Now().Add(60 * time.Second)
			for time.Now().Before(deadline) {
				res := call(t, d, args)
				if res.IsError() {
					if res.Envelope.Code != abi.CodeRequestInProgress || !res.Envelope.Retryable {
						t.Errorf("envelope %s", res.Structured)
						return
					}
					mu.Lock()
					inProgress++
					mu.Unlock()
					time.Sleep(20 * time.Millisecond)
					continue
				}
				mu.Lock()
				answers[string(res.Structured)+"\x00"+res.Content[0].Text]++
				mu.Unlock()
				return
			}
			t.Error("still in progress after 60 s")
		})
	}
	wg.Wait()
	if cs.count() != 1 {
		t.Fatalf("the plugin ran %d times", cs.count())
	}
	if len(answers) != 1 || inProgress == 0 {
		t.Fatalf("%d distinct answers %v, %d in-progress answers", len(answers), answers, inProgress)
	}
	for a, n := range answers {
		if n != workers {
			t.Fatalf("%d of %d answers are %s", n, workers, a)
		}
		var out nonceOut
		json.Unmarshal([]byte(strings.Split(a, "\x00")[0]), &out)
		if out.RequestID != "req-50" || out.Label != "<ünïcode & html>" {
			t.Fatalf("answer %s: the plugin did not see request_id in its call context", a)
		}
	}
	// A retry long after completion is a replay too.
	if got := nonceOf(t, call(t, d, `{ "request_id":"req-50", "sleep_ms":300, "label":"<ünïcode & html>" }`)); cs.count() != 1 || !strings.Contains(firstKey(answers), got.Nonce) {
		t.Fatalf("late retry ran again (%d runs) or answered %+v", cs.count(), got)
	}
}

func firstKey(m map[string]int) string {
	for k := range m {
		return k
	}
	return ""
}

// TestIdempotencyConflictAndReplay: replay is byte-identical; the same key
// with other arguments is refused without reaching the plugin.
func TestIdempotencyConflictAndReplay(t *testing.T) {
	d, cs := nonceDispatcher(t, true)
	first := call(t, d, `{"label":"a","request_id":"k"}`)
	nonceOf(t, first)
	replay := call(t, d, `{"request_id":"k","label":"a"}`)
	if string(replay.Structured) != string(first.Structured) || replay.Content[0].Text != first.Content[0].Text {
		t.Fatalf("replay %s, first %s", replay.Structured, first.Structured)
	}
	env := envelopeCode(t, call(t, d, `{"label":"b","request_id":"k"}`))
	if env.Code != abi.CodeIdempotencyConflict || env.Retryable || env.Details["request_id"] != "k" || env.Details["tool"] != "nonce" ||
		!strings.Contains(env.Hint, "new request_id") {
		t.Fatalf("conflict envelope %+v", env)
	}
	if cs.count() != 1 {
		t.Fatalf("plugin ran %d times", cs.count())
	}
	// Without a key, every call runs.
	a, b := nonceOf(t, call(t, d, `{"label":"a"}`)), nonceOf(t, call(t, d, `{"label":"a"}`))
	if a.Nonce == b.Nonce || a.RequestID != "" {
		t.Fatalf("unkeyed calls: %+v, %+v", a, b)
	}
}

// TestIdempotencyKeyIsTheCallers: a key replays only to the caller that
// made the call, whether the caller comes in the request or in the
// context; another caller naming it, with the same arguments or while the
// call runs, gets idempotency_conflict without the answer and without
// reaching the plugin.
func TestIdempotencyKeyIsTheCallers(t *testing.T) {
	d, cs := nonceDispatcher(t, true)
	w1 := &abi.Caller{ID: "worker1", Role: "WORKER"}
	as := func(c *abi.Caller, args string) *dispatch.Result {
		return d.Call(context.Background(), dispatch.Request{Tool: "nonce", Arguments: json.RawMessage(args), Caller: c})
	}
	args := `{"label":"mine","request_id":"k"}`
	first := nonceOf(t, as(w1, args))
	for _, c := range []*abi.Caller{{ID: "worker2", Role: "WORKER"}, {ID: "worker1", Role: "SUPERVISOR"}, nil} {
		res := as(c, args)
		env := envelopeCode(t, res)
		if env.Code != abi.CodeIdempotencyConflict || !strings.Contains(env.Hint, "of your own") || strings.Contains(string(res.Structured), first.Nonce) {
			t.Errorf("caller %+v: %s", c, res.Structured)
		}
	}
	ctx := caller.With(context.Background(), &abi.Caller{ID: "worker1", Role: "WORKER"})
	if again := nonceOf(t, d.Call(ctx, dispatch.Request{Tool: "nonce", Arguments: json.RawMessage(args)})); again.Nonce != first.Nonce {
		t.Fatalf("worker1's replay ran again: %s, first %s", again.Nonce, first.Nonce)
	}
	if cs.count() != 1 {
		t.Fatalf("plugin ran %d times", cs.count())
	}
}

// TestIdempotencyFailureReleases: a failed call is not stored, so a retry
// with the same key runs again, and may then succeed with other arguments.
func TestIdempotencyFailureReleases(t *testing.T) {
	d, cs := nonceDispatcher(t, true)
	nonces := map[any]bool{}
	for range 2 {
		env := envelopeCode(t, call(t, d, `{"fail":true,"request_id":"k"}`))
		if env.Code != abi.CodeConflict {
			t.Fatalf("tool failure %+v", env)
		}
		nonces[env.Details["nonce"]] = true
	}
	if len(nonces) != 2 || cs.count() != 2 {
		t.Fatalf("failed call replayed: nonces %v, runs %d", nonces, cs.count())
	}
	ok := nonceOf(t, call(t, d, `{"label":"fixed","request_id":"k"}`))
	if again := nonceOf(t, call(t, d, `{"label":"fixed","request_id":"k"}`)); again.Nonce != ok.Nonce {
		t.Fatalf("success after failures not replayed: %s then %s", ok.Nonce, again.Nonce)
	}
}

// TestIdempotencyKeyValidation: a key that is empty, too long or not a
// string is invalid_argument naming the key field, guard or no guard.
func TestIdempotencyKeyValidation(t *testing.T) {
	for _, guarded := range []bool{true, false} {
		d, _ := nonceDispatcher(t, guarded)
		for _, args := range []string{
			`{"request_id":""}`,
			`{"request_id":"` + strings.Repeat("k", 129) + `"}`,
			`{"request_id":12}`,
		} {
			env := envelopeCode(t, call(t, d, args))
			if env.Code != abi.CodeInvalidArgument || env.Details["field"] != "request_id" {
				t.Errorf("guarded %v, %.30s: %+v", guarded, args, env)
			}
		}
		if got := nonceOf(t, call(t, d, `{"request_id":"`+strings.Repeat("k", 128)+`"}`)); got.RequestID != strings.Repeat("k", 128) {
			t.Errorf("128-character key: %+v", got)
		}
	}
}

// TestIdempotencyOff: without a guard (no board) keyed calls run every
// time, and the plugin still sees the key.
func TestIdempotencyOff(t *testing.T) {
	d, _ := nonceDispatcher(t, false)
	a, b := nonceOf(t, call(t, d, `{"request_id":"k"}`)), nonceOf(t, call(t, d, `{"request_id":"k"}`))
	if a.Nonce == b.Nonce || a.RequestID != "k" {
		t.Fatalf("without a guard: %+v, %+v", a, b)
	}
}
