// Package abi is the contract between the plugboard host and its WebAssembly
// guests. It owns the export names, the host-function modules and their
// signatures, the JSON shapes that cross the boundary (manifest, call request,
// call result, error envelope), the custom-section name of the embedded
// manifest, the registry of error codes and the ABI version. It is a Go
// module of its own (github.com/plugboard/plugboard/abi) with no dependencies
// outside the standard library, imported by the host, the guest SDK and the
// conformance kit alike; it must never import either side. Its registries are
// handed out as copies (Codes, HostFunctions, BoardOps, ...): no importer can
// change what Lookup and the host read.
//
// # Exports
//
// A plugin is a WASI preview 1 reactor (it may export _initialize, which the
// host runs once per instance) that exports two functions, each taking no
// parameters and returning an i32 status (0 = ok, non-zero = failed):
//
//   - describe: reads nothing, outputs a [Manifest] as JSON. The outer shape is
//     the one existing Extism MCP plugins use ({"tools":[{name, description,
//     inputSchema}]}); plugboard adds abi, plugin, capabilities and per-tool
//     fields. A plugin that outputs only the Extism shape is accepted.
//   - call: reads a [CallRequest] ({"params":{"name","arguments"},"context":{…}})
//     and outputs a [CallResult], which is an MCP CallToolResult. An envelope
//     error is a result with isError=true and the [Envelope] as
//     structuredContent. A non-zero status with an Extism error string set
//     (error_set) becomes a plugin_failed envelope.
//
// A plugin may also export the direct-call pair, which the host then prefers
// for call because it needs no host calls at all:
//
//   - plugboard_buffer(size i32) -> i32: returns a pointer to size bytes of
//     guest memory the host may fill with the CallRequest;
//   - plugboard_call(size i32) -> i64: handles the request in that buffer and
//     returns ptr<<32 | len of the CallResult in guest memory, valid until the
//     next call into the instance.
//
// Otherwise input and output travel through the Extism kernel functions in module
// [ExtismModule] (input_length, input_load_u8/u64, output_set, error_set,
// alloc, free, length, length_unsafe, load_u8/u64, store_u8/u64, config_get,
// var_get, var_set, log_*, get_log_level), exactly as github.com/extism/go-pdk
// emits them; the plugboard host implements them natively.
//
// # Host functions
//
// plugboard's own capabilities live in module [HostModule]. Every function in
// it has the signature (i64) -> i64: the parameter is the offset of an Extism
// memory block (allocated with alloc) holding the JSON request, and the result
// is the offset of a block holding a JSON [HostResponse], or 0 when the
// function answers nothing. A function is callable only when the plugin's
// manifest lists its capability (see [HostFunctions]); a refused call returns
// a permission_denied envelope in the response, never a trap.
//
// [FuncBoard] serves the task board: the request is a [BoardRequest]
// {"op", "args"}, and each operation in [BoardOps] needs its own capability
// ([CapBoardRead], [CapBoardWrite], [CapBoardControl], [CapWorkspaceRead],
// [CapMail]), granted by the operator out of what the manifest declares.
// The [CapMail] operations act for the call's caller, which the host knows
// and the plugin cannot choose.
//
// # All of MCP (ABI version 2)
//
// Besides tools, a manifest may declare Resources (fixed URIs),
// ResourceTemplates (RFC 6570 URI templates) and Prompts, each with its MCP
// metadata, so the host lists them without running the plugin. The host
// sends the plugin the matching requests through the same call export (and
// direct-call pair): a [CallRequest] whose Method is one of [Methods] —
// resources/read (params.uri), prompts/get (params.name and
// params.arguments, an object of strings; the host has checked required
// arguments), completion/complete (params.ref, params.argument,
// params.context; only for prompts and templates that declare completion).
// The answer is a [MethodResult]: {"result": ReadResourceResult |
// GetPromptResult | CompleteResult} or {"error": Envelope}. A tools/call
// request carries no method, so a version-1 plugin never sees the change.
//
// Tool results may hold [Content] of type image and audio (base64 data and
// mimeType), resource (embedded [ResourceContents]) and resource_link, as
// may prompt messages.
//
// During any call a plugin may reach the MCP client through three host
// functions: [FuncNotify] sends a log message (notifications/message,
// filtered by the level the client set with logging/setLevel); [FuncSample]
// (capability [CapSampling]) sends sampling/createMessage and [FuncElicit]
// (capability [CapElicitation]) sends elicitation/create, both blocking the
// guest until the client answers, the call's deadline passes or the call is
// cancelled. A client that did not declare the capability, or a call
// without an MCP session (plugboard call), answers an unsupported envelope;
// an elicitation the user declines is an [ElicitResult], not an error.
// Progress ([FuncProgress]) is unchanged.
//
// A manifest's abi field is the lowest version that serves it
// ([Manifest.MinVersion]): 2 only when it declares resources, templates or
// prompts, so a plugin that only serves tools keeps loading in version-1
// hosts.
//
// # Tool fields beyond MCP
//
// A manifest [Tool] may add: outputSchema; annotations; idempotency (the host
// deduplicates calls by the named key field); timeout_ms; when (a condition
// from [Conditions] the host must meet to list the tool, e.g. get_context only
// inside an attempt); and rules ([Rule]: exactly_one, at_most_one, require,
// forbid, optionally limited to a mode) that the host checks before the
// schema, so a violation gets its precise code (ambiguous_target,
// mixed_pagination, missing_required) and hint even from clients that ignore
// the schema's oneOf.
//
// # Manifest section
//
// `plugboard plugin build` runs describe once and embeds the manifest JSON in
// a custom section named [ManifestSection], so the host lists tools without
// compiling the module. A module without the section is described at load time
// and the result is cached by the module's sha256.
//
// # Errors
//
// Every failure an agent sees is an [Envelope]. Codes are stable snake_case
// strings registered in [Codes]; [Lookup] gives each code's meaning and
// whether retrying the same call unchanged can succeed.
package abi

// Version is the ABI version this package describes. A manifest declaring a
// higher version is refused by the host; 0 (absent) means an Extism MCP plugin
// that predates plugboard and is treated as version 1. Version 2 added
// resources, resource templates, prompts and completions, the notify,
// sample and elicit host functions, and image, audio, resource and
// resource_link content; every version-1 plugin is a valid version-2 plugin.
const Version = 2

// Export names every plugin provides.
const (
	ExportDescribe   = "describe"
	ExportCall       = "call"
	ExportInitialize = "_initialize"
	// ExportBuffer and ExportCallDirect are the optional direct-call pair.
	ExportBuffer     = "plugboard_buffer"
	ExportCallDirect = "plugboard_call"
)

// Import modules a plugin may use. Imports from any other module make the
// plugin unloadable.
const (
	ExtismModule = "extism:host/env"
	WASIModule   = "wasi_snapshot_preview1"
	HostModule   = "plugboard:host/v1"
)

// ManifestSection is the name of the custom section holding the manifest JSON.
const ManifestSection = "plugboard.manifest"
