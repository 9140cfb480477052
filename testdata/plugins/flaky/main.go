// Command flaky is a test plugin for the host's retries, escalation and
// caller policy. Its two tools answer as their mode argument says: "ok"
// (the caller the host passed in the call context), "retryable" (an
// unavailable envelope, every time) or "fatal" (a conflict envelope).
// flaky_read is read-only and has the alias mcp__flaky__read; flaky_write
// is not read-only and declares request_id. Both mark the secret field
// writeOnly and the token field x-sensitive. Plugins keep no state across
// instances, so the host counts runs (the auditor's Attempts).
package main

import (
	"encoding/json"

	"github.com/plugboard/plugboard/abi"
	sdk "github.com/plugboard/plugboard/sdk-guest"
)

// Input is the arguments of both tools.
type Input struct {
	Mode      string `json:"mode"`
	Secret    string `json:"secret,omitempty"`
	Token     string `json:"token,omitempty"`
	RequestID string `json:"request_id,omitempty"`
}

// Output is the answer of mode ok.
type Output struct {
	CallerID   string `json:"caller_id"`
	CallerRole string `json:"caller_role"`
	RequestID  string `json:"request_id"`
}

const inputSchema = `{"type":"object","additionalProperties":false,"required":["mode"],"properties":{
"mode":{"type":"string","enum":["ok","retryable","fatal"],"description":"how to answer"},
"secret":{"type":"string","writeOnly":true,"description":"a sensitive value (writeOnly)"},
"token":{"type":"string","x-sensitive":true,"description":"a sensitive value (x-sensitive)"},
"request_id":{"type":"string","description":"idempotency key"}}}`

const outputSchema = `{"type":"object","properties":{"caller_id":{"type":"string"},"caller_role":{"type":"string"},"request_id":{"type":"string"}}}`

func handle(c *sdk.Call, in Input) (Output, error) {
	switch in.Mode {
	case "retryable":
		return Output{}, sdk.Fail(abi.CodeUnavailable, "flaky is unavailable, as asked", "retry later")
	case "fatal":
		return Output{}, sdk.Fail(abi.CodeConflict, "flaky conflicts, as asked", "do not retry")
	}
	out := Output{RequestID: c.Context().RequestID}
	if cl := c.Context().Caller; cl != nil {
		out.CallerID, out.CallerRole = cl.ID, cl.Role
	}
	return out, nil
}

func init() {
	sdk.Plugin("flaky", "1.0.0", "Test plugin: tools that fail as asked.")
	sdk.Tool(sdk.ToolSpec{
		Name: "flaky_read",
		Description: `Use when: testing host retries of a read-only tool.
Required: mode
Optional: secret, token
Next: count the runs the host made.
Avoid: calling it outside tests.`,
		Annotations:  &abi.Annotations{ReadOnlyHint: true},
		Aliases:      []string{"mcp__flaky__read"},
		InputSchema:  json.RawMessage(inputSchema),
		OutputSchema: json.RawMessage(outputSchema),
	}, handle)
	sdk.Tool(sdk.ToolSpec{
		Name: "flaky_write",
		Description: `Use when: testing host retries of a write.
Required: mode
Optional: secret, token, request_id
Next: count the runs the host made.
Avoid: calling it outside tests.`,
		Idempotency:  &abi.Idempotency{KeyField: "request_id"},
		InputSchema:  json.RawMessage(inputSchema),
		OutputSchema: json.RawMessage(outputSchema),
	}, handle)
}

func main() {}
