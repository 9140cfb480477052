package abi

import (
	"encoding/json"
	"slices"
)

// Host functions in HostModule, each (i64 request offset) -> (i64 response
// offset). The host also provides "yield" in this module, which only its
// own loop instrumentation may import (see host/internal/wasmfile).
const (
	// FuncProgress reports progress of the current call: a ProgressRequest.
	// The response is 0.
	FuncProgress = "progress"
	// FuncLog writes a structured log line: a LogRequest. The response is 0.
	FuncLog = "log"
)

// HostFunction describes one function in HostModule.
type HostFunction struct {
	Name string
	// Capability the plugin's manifest must list to call it; "" means every
	// plugin may call it.
	Capability string
	Doc        string
}

// HostFunctions returns every function of HostModule with the capability
// that gates it, as a copy. FuncBoard is gated per operation instead (see
// BoardOps): one function serves several capabilities.
func HostFunctions() []HostFunction { return slices.Clone(hostFunctions) }

var hostFunctions = []HostFunction{
	{FuncProgress, "", "report progress of the current call (ProgressRequest)"},
	{FuncLog, "", "write a structured log line (LogRequest)"},
	{FuncBoard, "", "call a task-board operation (BoardRequest); each operation needs the capability BoardOps names"},
	{FuncNotify, "", "send the MCP client a log message, notifications/message (NotifyRequest); ABI 2"},
	{FuncSample, CapSampling, "ask the MCP client's model for a message, sampling/createMessage (SampleRequest → SampleResult); ABI 2"},
	{FuncElicit, CapElicitation, "ask the MCP client's user for input, elicitation/create (ElicitRequest → ElicitResult); ABI 2"},
	{FuncAsk, "", "ask the MCP client several questions at once, each by key: sampling, elicitation, roots (AskRequest → AskResult); each question needs its kind's capability; ABI 2"},
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
