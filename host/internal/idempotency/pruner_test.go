package idempotency

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestConfigFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	cfg, err := ConfigFromEnv(env(nil))
	if err != nil || cfg.CompletedTTL != 7*24*time.Hour || cfg.InProgressTTL != time.Hour {
		t.Fatalf("defaults: %+v, %v", cfg, err)
	}
	cfg, err = ConfigFromEnv(env(map[string]string{EnvCompletedTTL: "60", EnvInProgressTTL: " 0 "}))
	if err != nil || cfg.CompletedTTL != time.Minute || cfg.InProgressTTL != 0 {
		t.Fatalf("set: %+v, %v", cfg, err)
	}
	for _, name := range []string{EnvCompletedTTL, EnvInProgressTTL} {
		for _, bad := range []string{"-1", "1.5", "1h", "ten", "99999999999999999999", "9223372037"} {
			_, err := ConfigFromEnv(env(map[string]string{name: bad}))
			if err == nil || !strings.Contains(err.Error(), name) {
				t.Errorf("%s=%s: error %v does not name the variable", name, bad, err)
			}
		}
	}
}

func TestPrunerInterval(t *testing.T) {
	for _, c := range []struct {
		completed, inProgress, want time.Duration
	}{
		{DefaultCompletedTTL, DefaultInProgressTTL, 6 * time.Minute},
		{DefaultCompletedTTL, 0, 10 * time.Minute},
		{0, 30 * time.Minute, 3 * time.Minute},
		{0, 0, 0},
		{5 * time.Second, time.Hour, time.Minute},
		{time.Hour, 2 * time.Hour, 6 * time.Minute},
	} {
		p := NewPruner(nil, Config{CompletedTTL: c.completed, InProgressTTL: c.inProgress})
		if got := p.Interval(); got != c.want {
			t.Errorf("Interval(%v, %v) = %v, want %v", c.completed, c.inProgress, got, c.want)
		}
	}
}

// TestPruner: Run prunes at start with the configured TTLs, 0 keeps a kind,
// and it stops with its context.
func TestPruner(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	g, _ := newGuard(t, s)
	var r runner
	for _, key := range []string{"done1", "done2"} {
		if _, _, env := g.Do(ctx, nil, "t", "request_id", key, []byte(`{}`), r.ok); env != nil {
			t.Fatal(env)
		}
	}
	if _, _, _, err := s.ClaimRequestAt(ctx, time.Now(), "t", "running", "h", time.Hour); err != nil {
		t.Fatal(err)
	}
	count := func() (completed, running int) {
		t.Helper()
		for _, key := range []string{"done1", "done2", "running"} {
			outcome, _, token, err := s.ClaimRequestAt(ctx, time.Now(), "t", key, mustHash(t, []byte(`{}`)), 0)
			if err != nil {
				t.Fatal(err)
			}
			switch outcome {
			case OutcomeReplay:
				completed++
			case OutcomeConflict:
				running++ // "running" was claimed with hash "h"
			case OutcomeNew:
				s.ReleaseClaim(ctx, "t", key, token)
			}
		}
		return
	}
	in := func(d time.Duration) func() time.Time { return func() time.Time { return time.Now().Add(d) } }

	// Young records survive; two hours on, the in-progress TTL (1 h) has
	// passed but the completed TTL is disabled.
	p := NewPruner(StaticStore(s), Config{CompletedTTL: 0, InProgressTTL: time.Hour})
	if n, err := p.Prune(ctx); n != 0 || err != nil {
		t.Fatalf("young records: pruned %d, %v", n, err)
	}
	p.now = in(2 * time.Hour)
	if n, err := p.Prune(ctx); n != 1 || err != nil {
		t.Fatalf("stale in-progress: pruned %d, %v", n, err)
	}
	if c, r := count(); c != 2 || r != 0 {
		t.Fatalf("after pruning in-progress: %d completed, %d running", c, r)
	}
	// A week and a day on, Run removes the completed records at once, then
	// returns when its context ends.
	p = NewPruner(StaticStore(s), Config{CompletedTTL: DefaultCompletedTTL, InProgressTTL: 0})
	p.now = in(8 * 24 * time.Hour)
	runCtx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() { p.Run(runCtx); close(stopped) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if c, _ := count(); c == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Run did not prune at start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not stop with its context")
	}
	// Both TTLs 0: nothing to do, Run returns at once.
	done := make(chan struct{})
	go func() { NewPruner(StaticStore(s), Config{}).Run(ctx); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run with both TTLs 0 kept running")
	}
}
