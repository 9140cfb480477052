package dispatch

import (
	"context"
	"encoding/json"
	"time"

	"github.com/plugboard/plugboard/abi"
)

// Policy decides whether a caller may call a tool; a refusal is the
// envelope the caller gets (permission_denied naming type and tool).
type Policy interface {
	Allow(caller *abi.Caller, tool string) *abi.Envelope
}

// Auditor records every call: Invoked once the tool is resolved and the
// caller allowed, before validation, with the input as sent; Finished with
// the outcome after the last attempt.
type Auditor interface {
	Invoked(ctx context.Context, call AuditCall) (id string)
	Finished(ctx context.Context, id string, outcome AuditOutcome)
}

// AuditCall describes one call for the decision log.
type AuditCall struct {
	Caller    *abi.Caller
	Tool      string
	RequestID string
	Input     json.RawMessage
	// Sensitive lists the top-level input fields the tool's schema marks
	// sensitive ("x-sensitive": true or "writeOnly": true); the auditor
	// stores them masked.
	Sensitive []string
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
}

// Escalator hears of calls that failed for good (after retries), to tell a
// supervisor or a human.
type Escalator interface {
	Failed(ctx context.Context, call AuditCall, env *abi.Envelope)
}
