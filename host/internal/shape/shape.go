// Package shape tells what kind of plugin a WebAssembly module is — which
// interface the host talks to it by (plugboard's SDK, an Extism MCP
// servlet, a hyper-mcp v2 plugin, a plain Extism module), whether it is a
// WASI command or reactor, and what built it — and explains the failures
// its kind accounts for. The registry's load log, `plugboard plugin
// inspect` and the conformance kit all say it in these words, so the
// three agree on every file.
package shape

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/wasmfile"
)

// The exports of hyper-mcp's v2 interface that make a module one: it
// lists its tools with list_tools and calls them with call_tool.
const (
	HyperListTools = "list_tools"
	HyperCallTool  = "call_tool"
)

// Interfaces a module may speak (Shape.Interface).
const (
	InterfacePlugboard = "plugboard-sdk"
	InterfaceExtismMCP = "extism-mcp-v1"
	InterfaceHyperV2   = "hyper-mcp-v2"
	InterfacePlain     = "plain-extism"
)

// Shape is what kind of plugin a module is, read off its exports, imports
// and custom sections as the host's registry tells them apart.
type Shape struct {
	// Interface is how the host talks to it: plugboard-sdk (describe and
	// call, with the plugboard_buffer/plugboard_call pair plugboard's SDK
	// exports), extism-mcp-v1 (an Extism MCP servlet: describe and call),
	// hyper-mcp-v2 (list_tools and call_tool, no describe) or
	// plain-extism (none of these: the module cannot list tools).
	Interface string `json:"interface"`
	// CommandModule: the module exports _start, a WASI command. The host
	// never runs _start (it runs _initialize if exported, then calls the
	// exports), so such a module works exactly when its exports work
	// without it — as TinyGo's //export functions can, and Go's
	// go:wasmexport functions cannot.
	CommandModule bool `json:"command_module"`
	// Reactor: the module exports _initialize, which the host runs once
	// per instance.
	Reactor bool `json:"reactor"`
	// Toolchain is what built it, from the producers section ("Go",
	// "TinyGo", "Rust", "C/C++", "Zig", "AssemblyScript"), else "".
	Toolchain string `json:"toolchain,omitempty"`
	// Text says all of it in words.
	Text string `json:"text"`
}

// Of reads a module's shape.
func Of(info *wasmfile.Info) Shape {
	fn := func(name string) bool {
		e, ok := info.Export(name)
		return ok && e.Kind == wasmfile.KindFunc
	}
	var s Shape
	var what string
	switch {
	// The registry's rule (registry.IsHyperV2): describe wins when both are exported.
	case !fn(abi.ExportDescribe) && fn(HyperListTools) && fn(HyperCallTool):
		s.Interface, what = InterfaceHyperV2, "hyper-mcp v2 plugin (list_tools and call_tool)"
	case fn(abi.ExportDescribe) && fn(abi.ExportCall) && fn(abi.ExportBuffer) && fn(abi.ExportCallDirect):
		s.Interface, what = InterfacePlugboard, "plugboard SDK plugin (describe and call, with the plugboard_buffer/plugboard_call pair)"
	case fn(abi.ExportDescribe) || fn(abi.ExportCall):
		s.Interface, what = InterfaceExtismMCP, "Extism MCP servlet (v1: describe and call)"
	default:
		s.Interface, what = InterfacePlain, "plain Extism module (neither describe and call nor list_tools and call_tool)"
	}
	s.CommandModule, s.Reactor = fn("_start"), fn(abi.ExportInitialize)
	s.Toolchain = toolchain(info.Custom)
	parts := []string{what}
	switch {
	case s.CommandModule && s.Reactor:
		parts = append(parts, "exports both _start and _initialize (the host runs _initialize only)")
	case s.CommandModule:
		parts = append(parts, "command module (_start exported, which the host never runs)")
	case s.Reactor:
		parts = append(parts, "reactor")
	}
	if s.Toolchain != "" {
		parts = append(parts, "built with "+s.Toolchain)
	}
	s.Text = strings.Join(parts, ", ")
	return s
}

// toolchain names the compiler from the producers custom section (the
// tool-conventions format: each field's values are length-prefixed names,
// so a substring search of the raw bytes finds them), or from Go's build
// id section, which every Go build writes.
func toolchain(custom map[string][]byte) string {
	p := custom["producers"]
	for _, c := range []struct{ marker, name string }{
		{"TinyGo", "TinyGo"},
		{"Go cmd/compile", "Go"},
		{"rustc", "Rust"},
		{"AssemblyScript", "AssemblyScript"},
		{"Zig", "Zig"},
		{"zig", "Zig"},
		{"clang", "C/C++"},
	} {
		if bytes.Contains(p, []byte(c.marker)) {
			return c.name
		}
	}
	if _, ok := custom["go:buildid"]; ok {
		return "Go"
	}
	return ""
}

// ---- modules whose runtime is never initialised ----

// uninitialised is what Go's runtime (and TinyGo's, for
// //go:wasmexport) prints when an export runs before _start or
// _initialize set the runtime up.
const uninitialised = "function called before runtime initialization"

// Diagnose explains a failure of a module's exports that its shape
// accounts for — today a command module whose runtime needs _start, which
// no host calling exports runs — as a problem and a fix; "" when its shape
// explains nothing. plugboard plugin inspect gives the same words.
func (s Shape) Diagnose(err error) (problem, fix string) {
	if err == nil {
		return "", ""
	}
	text := err.Error()
	var env *abi.Envelope
	if errors.As(err, &env) {
		if tail, ok := env.Details["console_tail"].(string); ok {
			text += "\n" + tail
		}
	}
	i := strings.Index(text, uninitialised)
	if i < 0 {
		return "", ""
	}
	// Quote the runtime's own line: "runtime: wasmexport function called
	// before runtime initialization".
	start, end := strings.LastIndexByte(text[:i], '\n')+1, len(text)
	if j := strings.IndexByte(text[i:], '\n'); j >= 0 {
		end = i + j
	}
	said := strings.TrimSpace(text[start:end])
	lang, build := "its", "build it as a reactor (-buildmode=c-shared), which exports _initialize"
	switch s.Toolchain {
	case "Go":
		lang, build = "Go's", "build a reactor: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared (or `plugboard plugin build`), which exports _initialize"
	case "TinyGo":
		lang, build = "TinyGo's", "build a reactor: tinygo build -target wasip1 -buildmode=c-shared, which exports _initialize"
	}
	if !s.CommandModule {
		return fmt.Sprintf("its exports trap: %s runtime was never initialised (%q), and the module exports no _initialize "+
			"for the host to run", lang, said), build
	}
	return fmt.Sprintf("a command module whose exports cannot run: %s runtime is initialised only by _start, which runs main and then "+
		"exits, closing the instance; the host (like Extism's) runs _initialize, never _start, and calls the exports directly, so every "+
		"export traps (%q)", lang, said), build
}
