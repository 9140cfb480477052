package dispatch

import (
	"context"
	"encoding/json"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/policy"
	"github.com/plugboard/plugboard/host/internal/runtime"
)

// Policy decides whether a caller may call a tool (host/internal/policy implements
// it). The tool is the resolved definition, so its aliases can be matched
// as well as its name, with the plugin serving it and the roles that
// plugin's manifest declares (policy.Tool), so rules can name a plugin.
type Policy interface {
	// Allow returns nil when caller may call tool, else the envelope the
	// caller gets (permission_denied naming its type and the tool). ctx
	// carries caller.May, for a hint naming only tools the caller may call.
	Allow(ctx context.Context, caller *abi.Caller, tool policy.Tool) *abi.Envelope
	// Critical reports whether a final failure of tool is escalated as
	// critical.
	Critical(tool policy.Tool) bool
}

// Auditor records every call to a served tool: Invoked once the tool is
// resolved, before the caller policy, with the input as sent (so refusals
// are recorded too); Finished with the outcome of every call so invoked —
// permission_denied and validation failures included — after the last
// attempt. A call to an unknown name (tool_not_found) is not audited.
type Auditor interface {
	Invoked(ctx context.Context, call AuditCall) (id string)
	Finished(ctx context.Context, id string, outcome AuditOutcome)
}

// AuditCall describes one call for the decision log.
type AuditCall struct {
	Caller *abi.Caller
	// Tool is the tool's name (an alias the caller used is resolved).
	Tool string
	// RequestID is the idempotency key the call carries, when its tool
	// declares one.
	RequestID string
	Input     json.RawMessage
	// Sensitive lists the top-level input fields the tool's schema marks
	// sensitive ("x-sensitive": true or "writeOnly": true); the auditor
	// stores them masked.
	Sensitive []string
	// Critical is true when the tool is one of the policy's critical_tools.
	Critical bool
	// Redact, when set, masks the plugin's secrets (its settings' values
	// from the environment and secret files) in text: the auditor stores
	// the input through it.
	Redact func(string) string
}

// AuditOutcome is how a call ended.
type AuditOutcome struct {
	// Result is the structured result of a success.
	Result json.RawMessage
	// Envelope is the failure, if any.
	Envelope *abi.Envelope
	Duration time.Duration
	// Attempts counts runs of the plugin, retries included (0 when the
	// call failed before reaching it).
	Attempts int
	// HTTP are the HTTP requests the plugin made, in every run, in order
	// (their secrets already masked by the runtime).
	HTTP []HTTPRecord
	// Redact is AuditCall.Redact: the result and error are stored
	// through it.
	Redact func(string) string
}

// HTTPRecord is one HTTP request a plugin made during a call.
type HTTPRecord = runtime.HTTPRecord

// Escalator hears of calls that failed for good in the plugin step (after
// retries; not the caller's own permission, validation or idempotency
// errors), to tell a supervisor or a human. call.Critical says whether the
// tool is critical.
type Escalator interface {
	Failed(ctx context.Context, call AuditCall, env *abi.Envelope)
}
