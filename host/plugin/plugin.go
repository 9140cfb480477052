// Package plugin is the public face of plugboard's plugin engine, for tools
// that work with plugin files without a board: building a plugin
// (plugboard plugin build), inspecting one (plugboard plugin inspect), the
// conformance kit and the benchmarks. It owns no behaviour of its own: it
// names what those tools need from the host's internal packages — the
// sandboxed engine that compiles and calls modules (host/internal/runtime),
// the reader and editor of the binary format (host/internal/wasmfile), and
// a folder of plugins served through the same registry and call pipeline
// as `plugboard serve` (host/internal/registry and host/internal/dispatch),
// here without a board, caller policy, decision log or deduplication.
//
// Embedding a whole host (board, MCP server, configuration) is package
// host's job, not this one's.
package plugin

import (
	"context"
	"net/url"

	"github.com/plugboard/plugboard/host/internal/registry"
	"github.com/plugboard/plugboard/host/internal/runtime"
	"github.com/plugboard/plugboard/host/internal/shape"
	"github.com/plugboard/plugboard/host/internal/wasmfile"
)

// Engine, Config, Plugin and CallOptions are aliases of the engine's
// (host/internal/runtime): an Engine and a Plugin are handles whose methods
// are the engine's own, and Config and CallOptions are what those methods
// take; a type of this package would have to repeat each method.

// Engine is one sandboxed WebAssembly runtime with the host modules (WASI
// without files, sockets or environment; the Extism kernel;
// plugboard:host/v1) instantiated. Compile turns a module into a Plugin;
// Close releases the engine and every plugin it compiled.
type Engine = runtime.Engine

// Config bounds what one plugin instance and one call may use (memory,
// payload sizes, instances) and where compiled code is cached (CacheDir,
// used only with a 32-byte CacheKey that authenticates what is read back);
// zero fields take the host's defaults, as `plugboard serve` does.
type Config = runtime.Config

// Plugin is one compiled module with its pool of instances: Call runs an
// export, Describe runs describe, Warm readies an instance, Close discards
// it. It is safe for concurrent use.
type Plugin = runtime.Plugin

// CallOptions carries what one Plugin.Call gives the guest besides its
// input (progress and log receivers, configuration, MCP client).
type CallOptions = runtime.CallOptions

// ErrBusy is returned by a Close that gave up waiting for calls still
// running (Plugin.Close, Set.Close): their instances' memory is in use, so
// the Engine must not be closed.
var ErrBusy = runtime.ErrBusy

// NewEngine starts an Engine.
func NewEngine(ctx context.Context, cfg Config) (*Engine, error) {
	return runtime.New(ctx, cfg)
}

// ParseHTTPStandIn reads a stand-in for an HTTP host, "HOST=URL" (e.g.
// "api.example.com=http://127.0.0.1:8080"), for Config.HTTPStandIns: the
// conformance kit's --http-stand-in, which lets a test run a plugin that
// calls a real API against a local server without changing the plugin's
// settings. The plugin's allowed hosts still decide what it may reach; the
// stand-in only changes where an allowed request to HOST (any port, unless
// HOST names one) is sent. host comes back in lower case, target as
// scheme://host[:port]; the error says what is wrong with s.
func ParseHTTPStandIn(s string) (host string, target *url.URL, err error) {
	return runtime.ParseHTTPStandIn(s)
}

// Describe returns a compiled plugin's manifest as JSON, as the host reads
// it from a module without an embedded one: describe's output, or for a
// hyper-mcp v2 plugin (list_tools and call_tool, no describe) a manifest
// made of its lists.
func Describe(ctx context.Context, p *Plugin) ([]byte, error) {
	return registry.Describe(ctx, p)
}

// Exports of hyper-mcp's v2 interface. A module exporting the first two
// and no describe speaks it: the host makes its manifest of its lists and
// calls its exports, one per MCP method, instead of describe and call. The
// others are optional.
const (
	HyperListTools             = registry.HyperListTools
	HyperCallTool              = registry.HyperCallTool
	HyperListResources         = registry.HyperListResources
	HyperListResourceTemplates = registry.HyperListResourceTemplates
	HyperReadResource          = registry.HyperReadResource
	HyperListPrompts           = registry.HyperListPrompts
	HyperGetPrompt             = registry.HyperGetPrompt
	HyperComplete              = registry.HyperComplete
)

// UserModule is Extism's namespace for host functions a host defines itself,
// where hyper-mcp offers its plugins the MCP client (create_message,
// list_roots, notify_progress, …); the engine provides the same functions.
const UserModule = runtime.UserModule

// UserCapability returns the capability a function of UserModule needs
// (create_message: sampling, create_elicitation: elicitation), "" for one
// that needs none. A manifest naming no ABI version is granted those of the
// functions its module imports.
func UserCapability(name string) string {
	return registry.UserCapability(name)
}

// Info and Import are aliases of the binary reader's (host/internal/wasmfile):
// Info's lookups (Export, …) are its methods, and Import is an element of
// Info.Imports.

// Info is what Parse learns from a binary: imports, exports, custom
// sections, function types.
type Info = wasmfile.Info

// Import is one entry of a module's import section.
type Import = wasmfile.Import

// KindFunc is the external kind of a function import or export.
const KindFunc = wasmfile.KindFunc

// YieldModule and YieldName name the host function the engine's loop
// instrumentation adds to every module it compiles; a plugin must not
// import it itself.
const (
	YieldModule = wasmfile.YieldModule
	YieldName   = wasmfile.YieldName
)

// Shape is what kind of plugin a module is: the interface the host talks
// to it by, command module or reactor, and the toolchain that built it.
// The registry's load log, `plugboard plugin inspect` and the conformance
// kit say it in the same words. It is this package's type (its JSON is
// what `plugboard plugin inspect --json` prints), converted from
// host/internal/shape's, whose fields it repeats.
type Shape struct {
	// Interface is how the host talks to it: InterfacePlugboard,
	// InterfaceExtismMCP, InterfaceHyperV2 or InterfacePlain (the module
	// cannot list tools).
	Interface string `json:"interface"`
	// CommandModule: the module exports _start, a WASI command, which the
	// host never runs; such a module works exactly when its exports work
	// without it.
	CommandModule bool `json:"command_module"`
	// Reactor: the module exports _initialize, which the host runs once
	// per instance.
	Reactor bool `json:"reactor"`
	// Toolchain is what built it, from the producers section ("Go",
	// "TinyGo", "Rust", …), else "".
	Toolchain string `json:"toolchain,omitempty"`
	// Text says all of it in words.
	Text string `json:"text"`
}

// Diagnose explains a failure of a module's exports that its shape
// accounts for (a command module whose runtime needs _start, which no host
// calling exports runs) as a problem and a fix; "" when its shape explains
// nothing. plugboard plugin inspect gives the same words.
func (s Shape) Diagnose(err error) (problem, fix string) { return shape.Shape(s).Diagnose(err) }

// Interfaces a module may speak (Shape.Interface).
const (
	InterfacePlugboard = shape.InterfacePlugboard
	InterfaceExtismMCP = shape.InterfaceExtismMCP
	InterfaceHyperV2   = shape.InterfaceHyperV2
	InterfacePlain     = shape.InterfacePlain
)

// ShapeOf reads a parsed module's shape.
func ShapeOf(info *Info) Shape {
	// The same fields: the conversion stops compiling when they part.
	return Shape(shape.Of(info))
}

// Parse reads a WebAssembly binary's sections without compiling it.
func Parse(wasm []byte) (*Info, error) {
	return wasmfile.Parse(wasm)
}

// CustomSection returns the content of the custom section of that name (the
// last one when the name repeats), and whether there is one.
func CustomSection(wasm []byte, name string) ([]byte, bool, error) {
	return wasmfile.CustomSection(wasm, name)
}

// RemoveCustomSection returns a copy of wasm without the custom sections of
// that name.
func RemoveCustomSection(wasm []byte, name string) ([]byte, error) {
	return wasmfile.RemoveCustomSection(wasm, name)
}

// SetCustomSection returns a copy of wasm with every custom section of that
// name removed and one holding content appended at the end.
func SetCustomSection(wasm []byte, name string, content []byte) ([]byte, error) {
	return wasmfile.SetCustomSection(wasm, name, content)
}
