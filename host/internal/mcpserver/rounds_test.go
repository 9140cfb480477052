package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/dispatch"
)

// TestRequestStateSealed: a requestState opens only under the key that
// sealed it, unchanged and within its age.
func TestRequestStateSealed(t *testing.T) {
	s := newSealer([]byte("a key shared by the hosts behind one balancer"))
	st := &roundState{Issued: time.Now().Unix(), Kind: "tools/call", Name: "t", Call: "c1",
		Answers: map[string]storedAnswer{"k": {Question: "q", Result: json.RawMessage(`{"action":"accept"}`)}}}
	sealed, err := s.seal(st)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(sealed, "accept") {
		t.Error("the state is readable by the client")
	}
	got, err := s.open(sealed)
	if err != nil || got.Call != "c1" || string(got.Answers["k"].Result) != `{"action":"accept"}` {
		t.Fatalf("open: %+v, %v", got, err)
	}
	// Another host with the same key opens it; one with another key does not.
	if _, err := newSealer([]byte("a key shared by the hosts behind one balancer")).open(sealed); err != nil {
		t.Errorf("a host sharing the key: %v", err)
	}
	if _, err := newSealer([]byte("another key")).open(sealed); err == nil {
		t.Error("a host with another key opened the state")
	}
	// Every changed byte is caught.
	for _, i := range []int{0, len(sealed) / 2, len(sealed) - 1} {
		b := []byte(sealed)
		b[i] ^= 1
		if b[i] == '-' || b[i] == '_' || (b[i] >= '0' && b[i] <= '9') || (b[i] >= 'A' && b[i] <= 'Z') || (b[i] >= 'a' && b[i] <= 'z') {
			if _, err := s.open(string(b)); err == nil {
				t.Errorf("a state changed at byte %d opened", i)
			}
		}
	}
	// Too old, too big.
	s.now = func() time.Time { return time.Now().Add(RequestStateTTL + time.Minute) }
	if _, err := s.open(sealed); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("an expired state: %v", err)
	}
	s.now = time.Now
	big := &roundState{Issued: time.Now().Unix(), Answers: map[string]storedAnswer{"k": {Result: json.RawMessage(`"` + strings.Repeat("x", MaxRequestStateBytes) + `"`)}}}
	if _, err := s.seal(big); err == nil {
		t.Error("a state over the cap was sealed")
	}
	if _, err := s.open(strings.Repeat("A", MaxRequestStateBytes+1)); err == nil {
		t.Error("a state over the cap was opened")
	}
}

// TestRoundBindsTheState: a state answers only the request it was issued
// for: the same tool, arguments and caller.
func TestRoundBindsTheState(t *testing.T) {
	srv := &server{sealer: newSealer(nil)}
	alice := &abi.Caller{ID: "alice", Role: "WORKER"}
	req := roundRequest{kind: "tools/call", name: "t", args: json.RawMessage(`{"a":1}`), caller: alice,
		caps: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}}
	rd, ctx, err := srv.startRound(context.Background(), nil, req)
	if err != nil {
		t.Fatal(err)
	}
	q := abi.Question{Method: abi.MethodElicit, Params: json.RawMessage(`{"message":"name?","requestedSchema":{"type":"object"}}`)}
	if _, env := rd.Ask(ctx, map[string]abi.Question{"name": q}); env == nil || env.Code != abi.CodeInputRequired {
		t.Fatalf("an unanswered question: %v, want input_required", env)
	}
	if !errors.Is(context.Cause(ctx), errInputRequired) {
		t.Errorf("the run's context was not ended for the question: %v", context.Cause(ctx))
	}
	reqs, state, env := rd.finish(srv)
	if env != nil || len(reqs) != 1 || reqs["name"] == nil || state == "" {
		t.Fatalf("finish: %v %v %q", reqs, env, state)
	}
	answer := mcp.InputResponseMap{"name": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}}

	for what, other := range map[string]roundRequest{
		"another caller":       {kind: "tools/call", name: "t", args: req.args, caller: &abi.Caller{ID: "bob", Role: "WORKER"}},
		"other arguments":      {kind: "tools/call", name: "t", args: json.RawMessage(`{"a":2}`), caller: alice},
		"another tool":         {kind: "tools/call", name: "u", args: req.args, caller: alice},
		"a prompt, not a tool": {kind: "prompts/get", name: "t", args: req.args, caller: alice},
	} {
		other.state, other.responses = state, answer
		var rpc *jsonrpc.Error
		if _, _, err := srv.startRound(context.Background(), nil, other); !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("%s with the state: %v, want invalid params", what, err)
		}
	}

	// The right request gets its answer; answers to keys never asked are
	// ignored.
	req.state, req.responses = state, mcp.InputResponseMap{"name": answer["name"], "other": &mcp.ElicitResult{Action: "accept"}}
	rd, ctx, err = srv.startRound(context.Background(), nil, req)
	if err != nil {
		t.Fatal(err)
	}
	got, env := rd.Ask(ctx, map[string]abi.Question{"name": q})
	if env != nil || !strings.Contains(string(got["name"].Result), "Ada") {
		t.Fatalf("the answered question: %v %v", got, env)
	}
	if _, ok := rd.st.Answers["other"]; ok {
		t.Error("an answer to a question never asked was kept")
	}
	// A client without elicitation gets no question, and the call a
	// missing-capability error when the plugin fails for it.
	rd, ctx, _ = srv.startRound(context.Background(), nil, roundRequest{kind: "tools/call", name: "t", caller: alice, caps: &mcp.ClientCapabilities{}})
	got, env = rd.Ask(ctx, map[string]abi.Question{"name": q})
	if env != nil || got["name"].Error == nil || got["name"].Error.Code != abi.CodeUnsupported {
		t.Fatalf("a question the client cannot answer: %v %v", got, env)
	}
	var rpc *jsonrpc.Error
	if err := rd.missingCapability(failedWith(got["name"].Error)); !errors.As(err, &rpc) || rpc.Code != mcp.CodeMissingRequiredClientCapabilities {
		t.Errorf("missing capability: %v", err)
	}
}

func failedWith(env *abi.Envelope) *dispatch.Result { return dispatch.Failed(env) }
