package policy_test

import (
	"context"
	"slices"
	"testing"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/policy"
)

// TestAttemptIdentity: an attempt's processes are a WORKER named after
// the attempt, which reaches that attempt and nothing else, whatever the
// agents file grants its agents, and calls what the WORKER rules allow —
// the agents file's when it sets them.
func TestAttemptIdentity(t *testing.T) {
	c := policy.AttemptCaller("a1")
	if c.ID != "attempt:a1" || c.Role != policy.Worker {
		t.Fatalf("AttemptCaller(a1) = %+v", c)
	}
	if id, ok := policy.AttemptOf(c); !ok || id != "a1" {
		t.Fatalf("AttemptOf(%+v) = %q, %v", c, id, ok)
	}
	// Only the host's own minting counts: another role, another form or
	// no caller is no attempt identity.
	for _, other := range []*abi.Caller{nil, {ID: "attempt:a1", Role: policy.Supervisor}, {ID: "attempt:", Role: policy.Worker},
		{ID: "worker1", Role: policy.Worker}, policy.Local()} {
		if id, ok := policy.AttemptOf(other); ok {
			t.Errorf("AttemptOf(%+v) = %q, true", other, id)
		}
	}

	p, err := policy.Parse("agents.json", []byte(`{"agents": [
	  {"id": "w-all", "type": "WORKER", "scope": "all"}
	], "permissions": {"WORKER": {"allow": ["get_context", "echo"], "deny": ["approve_attempt"]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, pol := range []*policy.Policy{policy.Default(), p} {
		sc := pol.Scope(c)
		if sc.All || len(sc.Tasks) > 0 || !slices.Equal(sc.Attempts, []string{"a1"}) {
			t.Errorf("scope of %s = %+v, want exactly attempt a1", c.ID, sc)
		}
		if !sc.HasAttempt("a1") || sc.HasAttempt("a2") || sc.HasTask("t1") {
			t.Errorf("scope %+v reaches more or less than attempt a1", sc)
		}
		if env := pol.Allow(context.Background(), c, policy.Tool{Def: &abi.Tool{Name: "approve_attempt"}}); env == nil || env.Code != abi.CodePermissionDenied {
			t.Errorf("approve_attempt allowed to %s: %v", c.ID, env)
		}
		if env := pol.Allow(context.Background(), c, policy.Tool{Def: &abi.Tool{Name: "get_context"}}); env != nil {
			t.Errorf("get_context refused to %s: %v", c.ID, env)
		}
	}
	// The agents file's WORKER rules are the attempt's: echo is allowed
	// by the file, not by the defaults.
	if env := p.Allow(context.Background(), c, policy.Tool{Def: &abi.Tool{Name: "echo"}}); env != nil {
		t.Errorf("the file's WORKER allow list does not apply to %s: %v", c.ID, env)
	}
	if env := policy.Default().Allow(context.Background(), c, policy.Tool{Def: &abi.Tool{Name: "echo"}}); env == nil {
		t.Errorf("the default WORKER rules let %s call echo", c.ID)
	}
	// The identity is not an agent of the file: no token, no supervisor.
	if _, ok := p.Caller(c.ID); ok {
		t.Errorf("Policy.Caller knows %s: attempt identities come from the host's endpoint only", c.ID)
	}
}
