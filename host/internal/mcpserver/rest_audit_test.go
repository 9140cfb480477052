package mcpserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/dispatch"
)

// auditRecorder keeps what an auditor hears.
type auditRecorder struct {
	mu       sync.Mutex
	calls    []dispatch.AuditCall
	outcomes []dispatch.AuditOutcome
}

func (r *auditRecorder) Invoked(_ context.Context, c dispatch.AuditCall) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, c)
	return "id"
}

func (r *auditRecorder) Finished(_ context.Context, _ string, o dispatch.AuditOutcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.outcomes = append(r.outcomes, o)
}

func TestRESTMismatchIsAudited(t *testing.T) {
	rec := &auditRecorder{}
	worker := &abi.Caller{ID: "worker1", Role: "WORKER"}
	// The refusal comes before the dispatcher, which is never reached.
	h := REST(nil, Options{Caller: worker, Auditor: rec})
	req := httptest.NewRequest(http.MethodPost, ExecutePath,
		strings.NewReader(`{"agentId":"boss","toolName":"mcp__mail__send","input":{"password":"hunter2"}}`))
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != http.StatusForbidden {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	if len(rec.calls) != 1 || len(rec.outcomes) != 1 {
		t.Fatalf("audited %d calls, %d outcomes; want one each", len(rec.calls), len(rec.outcomes))
	}
	c, o := rec.calls[0], rec.outcomes[0]
	if c.Caller != worker || c.Tool != "mcp__mail__send" || c.Input != nil {
		t.Errorf("audited call %+v: want worker1's, the tool as named, no input", c)
	}
	if o.Envelope == nil || o.Envelope.Code != abi.CodePermissionDenied || o.Envelope.Details["agent_id"] != "boss" {
		t.Errorf("audited outcome %+v", o.Envelope)
	}
	// A matching agentId is not a mismatch: nothing is recorded by REST
	// itself (the dispatcher records the call).
	rec.calls, rec.outcomes = nil, nil
	req = httptest.NewRequest(http.MethodPost, ExecutePath, strings.NewReader(`{"agentId":"worker1"}`))
	req.Header.Set("Content-Type", "application/json")
	h.ServeHTTP(httptest.NewRecorder(), req)
	if len(rec.calls) != 0 {
		t.Errorf("a request refused for a missing field was audited as a mismatch: %+v", rec.calls)
	}
}
