package abi

import "encoding/json"

// Host functions in HostModule. Unless noted, each is (i64 request offset)
// -> (i64 response offset).
const (
	// FuncProgress reports progress of the current call: a ProgressRequest.
	// The response is 0.
	FuncProgress = "progress"
	// FuncLog writes a structured log line: a LogRequest. The response is 0.
	FuncLog = "log"

	// FuncInputRead and FuncOutputWrite are the bulk-copy fast path for the
	// call's input and output. Unlike the JSON functions above they take guest
	// linear-memory pointers:
	//
	//	input_read(dst i32, len i32) -> i32   copies min(len, input length)
	//	                                     bytes of the input to dst and
	//	                                     returns the count
	//	output_write(src i32, len i32)        sets the output to len bytes at src
	//
	// They replace go-pdk's byte-wise kernel transfer (one host call per 8
	// bytes) with one host call each way; plugins that use only
	// extism:host/env keep working, just slower.
	FuncInputRead   = "input_read"
	FuncOutputWrite = "output_write"
)

// HostFunction describes one function in HostModule.
type HostFunction struct {
	Name string
	// Capability the plugin's manifest must list to call it; "" means every
	// plugin may call it.
	Capability string
	Doc        string
}

// HostFunctions lists every function of HostModule with the capability that
// gates it. Later ABI additions (board, workspace) add gated entries here.
var HostFunctions = []HostFunction{
	{FuncProgress, "", "report progress of the current call (ProgressRequest)"},
	{FuncLog, "", "write a structured log line (LogRequest)"},
	{FuncInputRead, "", "copy the call input into guest memory (dst i32, len i32) -> i32"},
	{FuncOutputWrite, "", "set the call output from guest memory (src i32, len i32)"},
}

// ProgressRequest is the payload of FuncProgress. It becomes an MCP
// notifications/progress when the client asked for progress.
type ProgressRequest struct {
	Progress float64 `json:"progress"`
	Total    float64 `json:"total,omitempty"`
	Message  string  `json:"message,omitempty"`
}

// LogRequest is the payload of FuncLog.
type LogRequest struct {
	Level   string         `json:"level"` // debug | info | warn | error
	Message string         `json:"message"`
	Attrs   map[string]any `json:"attrs,omitempty"`
}

// HostResponse is the answer of a host function that returns one.
type HostResponse struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  *Envelope       `json:"error,omitempty"`
}
