package audit_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/audit"
	"github.com/plugboard/plugboard/host/internal/dispatch"
	"github.com/plugboard/plugboard/host/internal/store"
)

// TestAuditLeaveOut: a call of the tool LeaveOut names, made through the
// dispatcher under the marked context, writes no row, whether it succeeds
// or fails; a call of another tool under the same context, and a call of
// that tool without the mark, are recorded as before.
func TestAuditLeaveOut(t *testing.T) {
	reg := loadPlugins(t)
	st := openStore(t)
	log := audit.New(audit.Static(st), nil)
	defer log.Close()
	d := dispatch.New(reg, dispatch.Options{Auditor: log, Retry: dispatch.Retry{Max: -1}})
	c := &abi.Caller{ID: "local", Role: "SUPERVISOR"}
	quiet := audit.LeaveOut(context.Background(), "echo")

	call := func(ctx context.Context, tool, args string) {
		t.Helper()
		d.Call(ctx, dispatch.Request{Tool: tool, Arguments: json.RawMessage(args), Caller: c})
	}
	call(quiet, "echo", `{"text":"left out"}`)
	call(quiet, "echo", `{"text":5}`) // refused by validation: left out too
	call(quiet, "crash", `{}`)
	call(context.Background(), "echo", `{"text":"recorded"}`)
	if err := log.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	rows, err := st.ListDecisions(context.Background(), store.DecisionFilter{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range rows {
		got[r.Tool] += string(r.Input)
	}
	if len(rows) != 2 || got["crash"] != `{}` || got["echo"] != `{"text":"recorded"}` {
		t.Fatalf("rows %v, want the crash call and the unmarked echo call only", got)
	}
}
