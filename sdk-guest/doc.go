// Package sdk is the guest side of the plugboard ABI (package abi): the Go
// library a plugin author imports to serve tools from a WebAssembly module
// built with the standard toolchain
// (GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared).
//
// It owns the exports describe and call (declared with //go:wasmexport in
// this package, so a plugin's main package holds no ABI code), the manifest
// built from the registered tools, the decoding of call requests into typed
// inputs, the encoding of results and envelope errors, and the guest stubs of
// the plugboard host functions (progress, log). It must not know anything
// about the host beyond package abi, and it never recovers a panic: a
// panicking handler crashes its instance, which the host discards.
//
// It is a Go module of its own, github.com/plugboard/plugboard/sdk-guest
// (Go 1.24 or later), which requires only the abi module, go-pdk and
// jsonschema-go: a plugin's module lists nothing of the host.
//
// A plugin registers its tools in init and has an empty main:
//
//	type EchoIn struct {
//		Text string `json:"text" jsonschema:"the text to return unchanged"`
//	}
//	type EchoOut struct {
//		Text string `json:"text" jsonschema:"the text that was sent"`
//	}
//
//	func init() {
//		sdk.Plugin("echo", "1.0.0", "returns its input")
//		sdk.Tool(sdk.ToolSpec{Name: "echo", Description: "..."},
//			func(c *sdk.Call, in EchoIn) (EchoOut, error) {
//				return EchoOut{Text: in.Text}, nil
//			})
//	}
//
//	func main() {}
//
// Input and output schemas are inferred from the In and Out types with
// github.com/google/jsonschema-go (descriptions come from the jsonschema
// struct tag; fields without omitempty/omitzero are required; unknown input
// fields are refused, while output objects stay open so results may gain
// fields), unless ToolSpec supplies hand-written ones. Schemas are built only
// when describe runs, and inference is linked only natively and in a
// WebAssembly build with the plugboard_describe tag: `plugboard plugin
// build` builds the module with the tag to run describe, then without it,
// embedding describe's answer (the plugboard.manifest section, which hosts
// read, and the answer of the module's describe). A module built with go
// build alone therefore links neither jsonschema-go nor its dependencies,
// and its describe fails, saying to use plugboard plugin build.
//
// The call path decodes the request, decodes the arguments, runs the
// handler and encodes the answer, nothing more. Because encoding/json is
// slow in WebAssembly (its byte-at-a-time scanner makes an indirect call per
// byte), the request is parsed by a small validating parser, and arguments
// and results of the common shapes (structs of strings, integers, booleans,
// pointers to them and nested such structs) are decoded and encoded by
// per-type plans built at registration; everything else, and every error,
// goes through encoding/json, so the observable behaviour is exactly
// encoding/json's (fuzz tests hold the two paths equal).
//
// A handler fails by returning an [abi.Envelope] (see [Fail],
// [InvalidArgument], [NotFound]); any other error becomes a tool_error
// envelope carrying its text. Envelopes are answers: call still returns
// status 0, with isError set in the result.
//
// The pure logic (registry, schemas, request parsing, result encoding) builds
// on every platform so it is tested natively; only the pdk, wasmimport and
// wasmexport glue is behind the wasip1 build constraint. [Describe] and
// [HandleCall] expose the two exports to native tests of a plugin.
//
// Beyond typed tools (ABI version 2): a handler returning *[Result] answers
// with MCP content items ([Text], [Image], [Audio], [Embedded],
// [ResourceLink]) instead of a structured answer; [Resource],
// [ResourceTemplate] and [Prompt] register what the plugin serves besides
// tools, with optional completions; and during a call [Call.Notify] sends
// the client a log message, [Call.Sample] asks its model for a message and
// [Call.Elicit] asks its user for input (the last two need
// Require(abi.CapSampling) and Require(abi.CapElicitation)).
//
// What the operator gives a plugin, per plugin under plugins.settings in
// plugboard's configuration, [Config], [HTTP] and [OpenDir] read:
// configuration values (Extism's config_get), HTTP requests sent by the
// host to the hosts it allows (Extism's http_request), and directories
// mounted into the plugin's WASI filesystem, opened as an *os.Root. In
// native tests they read what [SetTestEnv] installs; package sdktest wraps
// it, and also builds a plugin and calls it through plugboard.
// [NeedsConfig] and [NeedsHTTP] declare the values and hosts the plugin
// needs in its manifest, so the operator sees what to set (plugboard
// plugin inspect, config check, the dashboard); they grant nothing.
//
// Each plugboard host function is imported only by the Call method that
// uses it, so a plugin that never calls Progress or Log imports nothing
// from plugboard:host/v1 and stays loadable by any Extism host.
package sdk
