package idempotency

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestOwnerDead(t *testing.T) {
	me := ProcessOwner()
	f := strings.Fields(me)
	if len(f) != 3 || f[1] != strconv.Itoa(os.Getpid()) {
		t.Skipf("no process identity here: %q", me)
	}
	if OwnerDead(me) {
		t.Fatal("this process is judged dead")
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		owner string
		dead  bool
	}{
		{f[0] + " " + strconv.Itoa(cmd.Process.Pid) + " " + f[2], true}, // exited (and reaped)
		{f[0] + " " + f[1] + " " + f[2] + "0", true},                    // the pid now names another process
		{"another-host " + f[1] + " x", false},                          // another host's: not ours to judge
		{"", false}, {"garbage", false}, {f[0] + " -1 x", false},
	} {
		if got := OwnerDead(c.owner); got != c.dead {
			t.Errorf("OwnerDead(%q) = %v, want %v", c.owner, got, c.dead)
		}
	}
}

// TestGuardTakesOverDeadClaims: a key held by a dead owner runs again at
// once instead of answering request_in_progress until the TTL; a live
// owner's stays in progress; the pruner releases dead owners' claims.
func TestGuardTakesOverDeadClaims(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	args := json.RawMessage(`{"request_id":"k","title":"t"}`)
	hash := mustHash(t, args)
	for _, key := range []string{"k", "k2"} {
		if _, _, _, err := s.ClaimRequestAs(ctx, time.Now(), "t", key, hash, time.Hour, "host 1 killed", nil); err != nil {
			t.Fatal(err)
		}
	}
	dead := func(o string) bool { return o == "host 1 killed" }
	var r runner
	live := NewGuard(StaticStore(s), Config{InProgressTTL: time.Hour, Owner: "host 2 me", Dead: func(string) bool { return false }})
	if _, _, env := live.Do(ctx, nil, "t", "request_id", "k", args, r.ok); env == nil || env.Code != "request_in_progress" {
		t.Fatalf("a live owner's claim: %+v", env)
	}
	g := NewGuard(StaticStore(s), Config{InProgressTTL: time.Hour, Owner: "host 2 me", Dead: dead})
	if _, ran, env := g.Do(ctx, nil, "t", "request_id", "k", args, r.ok); !ran || env != nil {
		t.Fatalf("a dead owner's claim: ran %v, %+v", ran, env)
	}
	p := NewPruner(StaticStore(s), Config{Dead: dead})
	if n, err := p.Prune(ctx); err != nil || n != 1 {
		t.Fatalf("prune: %d, %v", n, err)
	}
	if _, ran, env := live.Do(ctx, nil, "t", "request_id", "k2", args, r.ok); !ran || env != nil {
		t.Fatalf("after pruning: ran %v, %+v", ran, env)
	}
}

func TestScope(t *testing.T) {
	ctx := context.Background()
	if ScopeFrom(ctx) != nil || NewRun(ctx) != ctx {
		t.Fatal("a scope without a keyed call")
	}
	ctx = WithScope(ctx, "create_task", "k", "h")
	sc := ScopeFrom(ctx)
	a1, n1 := sc.Next("create_task", json.RawMessage(`{"title":"t","project_id":"p"}`))
	a2, n2 := sc.Next("create_task", json.RawMessage(`{ "project_id":"p", "title":"t" }`))
	_, n3 := sc.Next("create_task", json.RawMessage(`{"title":"u","project_id":"p"}`))
	if a1 != a2 || n1 != 0 || n2 != 1 || n3 != 0 {
		t.Fatalf("Next: %s %d, %s %d, %d", a1, n1, a2, n2, n3)
	}
	// A new run counts from the first operation again.
	run := ScopeFrom(NewRun(ctx))
	if _, n := run.Next("create_task", json.RawMessage(`{"title":"t","project_id":"p"}`)); n != 0 || run.Tool != "create_task" || run.RequestID != "k" || run.PayloadHash != "h" {
		t.Fatalf("new run: %d %+v", n, run)
	}
}
