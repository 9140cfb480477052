package abi

import (
	"encoding/json"
	"slices"
)

// This file holds the ABI version 2 additions that let a plugin serve all of
// MCP, not only tools: resources, resource templates, prompts and
// completions declared in the manifest and answered through the call export
// (see Methods), and the host functions that reach the MCP client during a
// call (FuncNotify, FuncSample, FuncElicit).

// Resource is a resource a plugin serves at a fixed URI (MCP's Resource).
// The host lists it from the manifest and sends resources/read for its URI
// to the plugin.
type Resource struct {
	URI         string `json:"uri"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MIMEType    string `json:"mimeType,omitempty"`
	Size        *int64 `json:"size,omitempty"`
}

// ResourceTemplate is a family of resources whose URIs match an RFC 6570 URI
// template (MCP's ResourceTemplate). The host sends resources/read for a
// matching URI to the plugin. Completion, when true, means the plugin
// answers completion/complete for the template's variables.
type ResourceTemplate struct {
	URITemplate string `json:"uriTemplate"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MIMEType    string `json:"mimeType,omitempty"`
	Completion  bool   `json:"completion,omitempty"`
}

// Prompt is a prompt template a plugin renders with prompts/get (MCP's
// Prompt). The host checks that required arguments are present before it
// calls the plugin. Completion, when true, means the plugin answers
// completion/complete for the prompt's arguments.
type Prompt struct {
	Name        string           `json:"name"`
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description,omitempty"`
	Arguments   []PromptArgument `json:"arguments,omitempty"`
	Completion  bool             `json:"completion,omitempty"`
}

// PromptArgument is one argument of a prompt.
type PromptArgument struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

// ReadResourceResult is the result of resources/read.
type ReadResourceResult struct {
	Contents []ResourceContents `json:"contents"`
}

// GetPromptResult is the result of prompts/get.
type GetPromptResult struct {
	Description string          `json:"description,omitempty"`
	Messages    []PromptMessage `json:"messages"`
}

// PromptMessage is one message of a rendered prompt; Role is "user" or
// "assistant".
type PromptMessage struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
}

// Completion reference types (CompletionRef.Type).
const (
	RefPrompt   = "ref/prompt"
	RefResource = "ref/resource"
)

// CompletionRef names what is being completed: a prompt by Name, or a
// resource template by URI (its uriTemplate).
type CompletionRef struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
	URI  string `json:"uri,omitempty"`
}

// CompletionArg is the argument being completed and what was typed so far.
type CompletionArg struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// CompletionContext carries the arguments already resolved.
type CompletionContext struct {
	Arguments map[string]string `json:"arguments,omitempty"`
}

// CompleteResult is the result of completion/complete.
type CompleteResult struct {
	Completion Completion `json:"completion"`
}

// Completion is a list of suggested values (at most 100), with the total
// number of matches when known and whether there are more.
type Completion struct {
	Values  []string `json:"values"`
	Total   int      `json:"total,omitempty"`
	HasMore bool     `json:"hasMore,omitempty"`
}

// Host functions of ABI version 2, in HostModule like the others. Each blocks
// the guest until the MCP client has answered (or the call's deadline or
// cancellation ends the wait, which answers an envelope). Outside an MCP
// session (plugboard call), sample and elicit answer unsupported and notify
// writes to the host log only.
//
// A client at MCP 2026-07-28 cannot be asked during a call: the host ends
// the run at the first question it has no answer for (an input_required
// envelope, which the plugin should return as it is), hands the question
// to the client, and runs the call again from the start once the client
// answers, giving every earlier question its answer at once. A plugin may
// therefore run several times for one call: board operations it made are
// journaled and answered again, not repeated; anything else it did before
// asking (an HTTP request, a plugin var) happens again. Ask before you act,
// or make the act safe to repeat.
const (
	// FuncNotify sends the client an MCP log message
	// (notifications/message): a NotifyRequest. The response is 0. The
	// client's logging/setLevel decides which levels it receives.
	FuncNotify = "notify"
	// FuncSample asks the client's model for a message
	// (sampling/createMessage): a SampleRequest in, a SampleResult out.
	// Needs CapSampling.
	FuncSample = "sample"
	// FuncElicit asks the client's user for input (elicitation/create): an
	// ElicitRequest in, an ElicitResult out. Needs CapElicitation.
	FuncElicit = "elicit"
	// FuncAsk asks the client several questions at once — sampling,
	// elicitation, its roots — each under a key the plugin chooses: an
	// AskRequest in, an AskResult out. Each question needs the capability
	// of its kind (roots need none). A client at MCP 2026-07-28 gets them
	// in one input-required result, under those keys; an older one gets
	// them as requests, sent together.
	FuncAsk = "ask"
)

// Methods of a Question: the MCP request each kind of question is.
const (
	MethodSample = "sampling/createMessage"
	MethodElicit = "elicitation/create"
	MethodRoots  = "roots/list"
)

// AskRequest is the payload of FuncAsk: the questions by key. Keys are
// the plugin's names for its questions (1–64 of [A-Za-z0-9_.-]); a client
// at MCP 2026-07-28 answers under them.
type AskRequest struct {
	Questions map[string]Question `json:"questions"`
}

// Question is one question of an AskRequest, shaped like an MCP input
// request: Method is MethodSample (Params a SampleRequest), MethodElicit
// (an ElicitRequest) or MethodRoots (no params).
type Question struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// AskResult is the answer of FuncAsk: one Answer per question, by key.
type AskResult struct {
	Answers map[string]Answer `json:"answers"`
}

// Answer is the client's answer to one Question: Result (a SampleResult,
// an ElicitResult, or a RootsResult) or Error (unsupported when the
// client lacks the capability the question needs).
type Answer struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  *Envelope       `json:"error,omitempty"`
}

// RootsResult is the answer to a MethodRoots question (MCP's
// ListRootsResult).
type RootsResult struct {
	Roots []Root `json:"roots"`
}

// Root is one of the client's roots: a file:// URI and an optional name.
type Root struct {
	URI  string `json:"uri"`
	Name string `json:"name,omitempty"`
}

// Capabilities of ABI version 2. Both reach a person or a model the plugin
// does not own, so the operator grants them like the board capabilities.
const (
	// CapSampling lets a plugin ask the client's model for completions
	// (FuncSample), which the client's user pays for.
	CapSampling = "mcp.sampling"
	// CapElicitation lets a plugin ask the client's user questions
	// (FuncElicit).
	CapElicitation = "mcp.elicitation"
)

// LogLevels returns the levels of NotifyRequest.Level (MCP's LoggingLevel),
// least severe first, as a copy.
func LogLevels() []string { return slices.Clone(logLevels) }

var logLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// NotifyRequest is the payload of FuncNotify: an MCP log message.
type NotifyRequest struct {
	// Level is one of LogLevels; anything else is sent as "info".
	Level string `json:"level"`
	// Logger optionally names the source of the message.
	Logger string `json:"logger,omitempty"`
	// Data is the message: a string or any JSON value.
	Data json.RawMessage `json:"data"`
}

// SampleRequest is the payload of FuncSample (MCP's CreateMessageParams).
type SampleRequest struct {
	Messages         []SamplingMessage `json:"messages"`
	MaxTokens        int64             `json:"maxTokens"`
	SystemPrompt     string            `json:"systemPrompt,omitempty"`
	Temperature      float64           `json:"temperature,omitempty"`
	StopSequences    []string          `json:"stopSequences,omitempty"`
	ModelPreferences json.RawMessage   `json:"modelPreferences,omitempty"`
	Metadata         json.RawMessage   `json:"metadata,omitempty"`
}

// SamplingMessage is one message of a sampling conversation; Content is a
// text, image or audio item.
type SamplingMessage struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
}

// SampleResult is the result of FuncSample (MCP's CreateMessageResult).
type SampleResult struct {
	Role       string  `json:"role"`
	Content    Content `json:"content"`
	Model      string  `json:"model"`
	StopReason string  `json:"stopReason,omitempty"`
}

// ElicitRequest is the payload of FuncElicit (MCP's ElicitParams, form
// mode): a message for the user and a flat JSON Schema object of the
// fields to ask for (strings, numbers, integers, booleans, enums).
type ElicitRequest struct {
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema"`
}

// ElicitResult is the result of FuncElicit: Action is "accept" (Content
// holds the answers, checked by the host against the requested schema),
// "decline" or "cancel".
type ElicitResult struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}
