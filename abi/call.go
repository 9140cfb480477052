package abi

import "encoding/json"

// CallRequest is the input of the call export.
type CallRequest struct {
	Params  CallParams   `json:"params"`
	Context *CallContext `json:"context,omitempty"`
}

// CallParams mirrors MCP's tools/call params.
type CallParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// CallContext is what the host tells a plugin about the call. Guests must
// tolerate unknown fields: later ABI minor additions arrive here.
type CallContext struct {
	// RequestID is the caller's idempotency key, when the tool declares one.
	RequestID string `json:"request_id,omitempty"`
	// Caller identifies who is calling.
	Caller *Caller `json:"caller,omitempty"`
	// DeadlineUnixMS is when the host will interrupt the call (Unix ms).
	DeadlineUnixMS int64 `json:"deadline_unix_ms,omitempty"`
	// Progress is true when the client asked for progress notifications;
	// progress reported without it is dropped by the host.
	Progress bool `json:"progress,omitempty"`
}

// Caller is the identity behind a call.
type Caller struct {
	ID   string `json:"id"`
	Role string `json:"role,omitempty"`
}

// CallResult is the output of the call export: an MCP CallToolResult.
//
// A plugin may leave Content empty when it sets StructuredContent; the host
// then adds one text item holding the compact JSON of StructuredContent, which
// saves the guest from encoding its answer twice.
type CallResult struct {
	Content           []Content       `json:"content,omitempty"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
}

// Content is one MCP content item. ABI version 1 defines text items only;
// the host refuses a result holding other types with plugin_failed rather
// than silently dropping them.
type Content struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
}
