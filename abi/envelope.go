package abi

import (
	"fmt"
	"slices"
)

// Envelope is the one shape of every failure an agent can see.
type Envelope struct {
	// Code is a stable snake_case string registered in Codes.
	Code string `json:"code"`
	// Message says what went wrong, for a person or an agent.
	Message string `json:"message"`
	// Retryable is true when the same call, unchanged, may succeed later.
	Retryable bool `json:"retryable"`
	// Hint is the next action, naming a tool and a field where it can.
	Hint string `json:"hint,omitempty"`
	// Details is small structured data (field path, limits, ids).
	Details map[string]any `json:"details,omitempty"`
}

// Error makes an Envelope usable as a Go error.
func (e *Envelope) Error() string { return e.Code + ": " + e.Message }

// NewEnvelope builds an envelope for a registered code, taking retryable
// from the registry. An unregistered code panics: it is a programming error
// that would hand agents a code no document explains.
func NewEnvelope(code, message, hint string) *Envelope {
	info, ok := Lookup(code)
	if !ok {
		panic(fmt.Sprintf("abi: unregistered error code %q", code))
	}
	return &Envelope{Code: code, Message: message, Retryable: info.Retryable, Hint: hint}
}

// WithDetail returns e with one detail added.
func (e *Envelope) WithDetail(key string, value any) *Envelope {
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	e.Details[key] = value
	return e
}

// CodeInfo documents one error code.
type CodeInfo struct {
	Code      string
	Retryable bool
	// Origin is "spec" for codes the task-tool specification defines and
	// "host" for codes the host itself produces.
	Origin  string
	Meaning string
}

// Error codes. Plugins may only use registered codes; the conformance kit
// checks it.
const (
	CodeInvalidArgument     = "invalid_argument"
	CodeMissingRequired     = "missing_required"
	CodeNotFound            = "not_found"
	CodeAmbiguousTarget     = "ambiguous_target"
	CodeMixedPagination     = "mixed_pagination"
	CodeNoSessionYet        = "no_session_yet"
	CodeBlockedGuardrails   = "blocked_guardrails"
	CodeProcessRunning      = "process_running"
	CodeConflict            = "conflict"
	CodePermissionDenied    = "permission_denied"
	CodeToolNotFound        = "tool_not_found"
	CodeIdempotencyConflict = "idempotency_conflict"
	CodeRequestInProgress   = "request_in_progress"
	CodePluginTimeout       = "plugin_timeout"
	CodePluginFailed        = "plugin_failed"
	CodeToolError           = "tool_error"
	CodeResourceExhausted   = "resource_exhausted"
	CodeCancelled           = "cancelled"
	CodeUnavailable         = "unavailable"
	CodeUnsupported         = "unsupported"
	CodeInternal            = "internal"
	CodeInputRequired       = "input_required"
)

// Codes returns the registry of every error code, in a stable order. It is
// a copy: changing it changes neither the registry nor Lookup.
func Codes() []CodeInfo { return slices.Clone(codes) }

var codes = []CodeInfo{
	{CodeInvalidArgument, false, "spec", "an argument has the wrong type, format or value, or an unknown field was sent; details.field names it"},
	{CodeMissingRequired, false, "spec", "a required argument is absent; details.field names it"},
	{CodeNotFound, false, "spec", "the identified object does not exist"},
	{CodeAmbiguousTarget, false, "spec", "more than one of a set of exclusive target ids was given (e.g. attempt_id and session_id)"},
	{CodeMixedPagination, false, "spec", "cursor (page older) and after_* (only newer) were given together"},
	{CodeNoSessionYet, true, "spec", "the attempt has no session yet; retry once get_attempt_status shows latest_session_id"},
	{CodeBlockedGuardrails, false, "spec", "the answer would exceed a guardrail; narrow the request or pass force=true"},
	{CodeProcessRunning, false, "spec", "a process is already running in the session; queue the message or stop the attempt"},
	{CodeConflict, false, "spec", "the request conflicts with the current state of the object"},
	{CodePermissionDenied, false, "host", "the caller's role, or the plugin's grants, do not allow this"},
	{CodeToolNotFound, false, "host", "no tool of that name is served; call tools/list"},
	{CodeIdempotencyConflict, false, "host", "the request_id was used before with a different payload; use a new request_id"},
	{CodeRequestInProgress, true, "host", "a call with the same request_id is still running; retry shortly"},
	{CodePluginTimeout, true, "host", "the plugin did not finish before its deadline and was interrupted"},
	{CodePluginFailed, false, "host", "the plugin trapped, panicked, exited or returned output the host could not read"},
	{CodeToolError, false, "host", "the tool reported a failure without an envelope (plain-text isError result); message carries its text"},
	{CodeResourceExhausted, false, "host", "a limit was hit: the plugin's memory cap, or an input, output or host-call size cap"},
	{CodeCancelled, false, "host", "the client cancelled the call"},
	{CodeUnavailable, true, "host", "the plugin cannot serve right now (failed to load or compile); retry later"},
	{CodeUnsupported, false, "host", "the MCP client (or the host) does not offer what was asked: sampling or elicitation from a client without that capability, or outside an MCP session"},
	{CodeInternal, true, "host", "an unexpected host failure; the host logged it"},
	{CodeInputRequired, false, "host", "the call needs the MCP client's answer (MCP 2026-07-28): this run ends here and the call runs again with it; return the envelope as it is"},
}

var codeIndex = func() map[string]CodeInfo {
	m := make(map[string]CodeInfo, len(codes))
	for _, c := range codes {
		m[c.Code] = c
	}
	return m
}()

// Lookup returns the registry entry of a code.
func Lookup(code string) (CodeInfo, bool) {
	c, ok := codeIndex[code]
	return c, ok
}
