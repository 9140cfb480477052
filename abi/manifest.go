package abi

import (
	"encoding/json"
	"slices"
)

// Manifest is what describe returns and what the custom section holds. It is
// a superset of the Extism MCP plugin describe output ({"tools": [...]}).
type Manifest struct {
	// ABI is the lowest ABI version the plugin needs (see MinVersion); 0
	// means an Extism MCP plugin without plugboard fields.
	ABI int `json:"abi,omitempty"`
	// Plugin names and versions the plugin.
	Plugin PluginInfo `json:"plugin,omitzero"`
	// Capabilities lists the host capabilities the plugin needs (see
	// HostFunctions). The host grants at most these.
	Capabilities []string `json:"capabilities,omitempty"`
	// Tools the plugin serves. A manifest serves at least one tool,
	// resource, resource template or prompt.
	Tools []Tool `json:"tools"`
	// Resources, ResourceTemplates and Prompts are what the plugin serves
	// besides tools (ABI version 2): listed by the host from the manifest,
	// answered by the plugin through the call export (see Methods).
	Resources         []Resource         `json:"resources,omitempty"`
	ResourceTemplates []ResourceTemplate `json:"resource_templates,omitempty"`
	Prompts           []Prompt           `json:"prompts,omitempty"`
	// Stateful asks the host to run the plugin as one long-lived instance:
	// its globals and Extism vars then persist from one call to the next,
	// and calls are serialised. Without it the host keeps a pool of
	// instances and a call may run on any of them, so no state can be
	// counted on. The operator can also set it (plugins.settings); either
	// one is enough.
	Stateful bool `json:"stateful,omitempty"`
	// Needs is what the plugin needs the operator to set for it to work:
	// configuration values and hosts (see Needs). It grants nothing.
	Needs Needs `json:"needs,omitzero"`
	// Roles names the agent types the plugin's tools are meant for (see
	// AgentRoles), e.g. ["WORKER"]. It grants nothing: the operator's
	// agents file decides who calls what, and honours the declaration
	// only for a type whose rules name "declared".
	Roles []string `json:"roles,omitempty"`
}

// MinVersion is the lowest ABI version whose host can serve m: 2 when it
// declares resources, resource templates or prompts, else 1. The SDK and
// `plugboard plugin build` write it as Manifest.ABI, so a plugin that only
// serves tools stays loadable by hosts of version 1.
func (m *Manifest) MinVersion() int {
	if len(m.Resources) > 0 || len(m.ResourceTemplates) > 0 || len(m.Prompts) > 0 {
		return 2
	}
	return 1
}

// PluginInfo identifies a plugin.
type PluginInfo struct {
	Name        string `json:"name"`
	Version     string `json:"version,omitempty"`
	Description string `json:"description,omitempty"`
}

// Tool is one tool's agent-facing surface. Name, Description, InputSchema,
// OutputSchema, Title and Annotations follow MCP's Tool; the rest is
// plugboard's.
type Tool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  *Annotations    `json:"annotations,omitempty"`
	// Idempotency, when set, asks the host to deduplicate calls that carry the
	// named key field (request_id).
	Idempotency *Idempotency `json:"idempotency,omitempty"`
	// TimeoutMS overrides the host's default per-call deadline for this tool;
	// the host clamps it to its own maximum.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// When names a condition the host must meet to list and serve the tool
	// (one of Conditions); "" means always.
	When string `json:"when,omitempty"`
	// Rules are mode rules the host checks before the schema, to give a
	// violation its precise code and hint (see Rule).
	Rules []Rule `json:"rules,omitempty"`
	// Aliases are other names the tool answers to outside MCP's tools/list
	// (the REST endpoint, `plugboard call`) and that caller permissions
	// match, each of the form mcp__<namespace>__<tool> (ValidAlias), e.g.
	// mcp__mail__send for mail_send.
	Aliases []string `json:"aliases,omitempty"`
}

// Conditions a tool may name in Tool.When.
const (
	// WhenAttemptContext: the server runs inside a task attempt (serve
	// --attempt, or $PLUGBOARD_ATTEMPT_ID set by the board), so get_context
	// has something to describe.
	WhenAttemptContext = "attempt_context"
)

// Conditions returns every valid Tool.When value, as a copy.
func Conditions() []string { return slices.Clone(conditions) }

var conditions = []string{WhenAttemptContext}

// Annotations are MCP tool annotations (hints to clients, not guarantees).
type Annotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    bool   `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  bool   `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// Idempotency declares request_id deduplication for a tool.
type Idempotency struct {
	// KeyField is the name of the top-level argument holding the key,
	// normally "request_id".
	KeyField string `json:"key_field"`
}
