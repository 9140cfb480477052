package shape

import (
	"errors"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/wasmfile"
)

// module is a WebAssembly binary with one function type () -> i32, one
// function of it exported under each name, and custom sections.
func module(exports []string, custom map[string]string) []byte {
	b := []byte("\x00asm\x01\x00\x00\x00")
	section := func(id byte, body []byte) {
		b = append(b, id, byte(len(body)))
		b = append(b, body...)
	}
	section(1, []byte{1, 0x60, 0, 1, 0x7f}) // type: () -> i32
	section(3, []byte{1, 0})                // one function of type 0
	exp := []byte{byte(len(exports))}
	for _, name := range exports {
		exp = append(exp, byte(len(name)))
		exp = append(exp, name...)
		exp = append(exp, 0, 0) // function 0
	}
	section(7, exp)
	section(10, []byte{1, 4, 0, 0x41, 0, 0x0b}) // body: i32.const 0
	for name, content := range custom {
		body := append([]byte{byte(len(name))}, name...)
		section(0, append(body, content...))
	}
	return b
}

func TestOf(t *testing.T) {
	for _, c := range []struct {
		exports   []string
		custom    map[string]string
		iface     string
		command   bool
		toolchain string
		text      string
	}{
		{[]string{"describe", "call", "plugboard_buffer", "plugboard_call", "_initialize"}, map[string]string{"go:buildid": "x"},
			InterfacePlugboard, false, "Go", "plugboard SDK plugin (describe and call, with the plugboard_buffer/plugboard_call pair), reactor, built with Go"},
		{[]string{"describe", "call", "_start"}, map[string]string{"producers": "\x01\x0cprocessed-by\x01\x06TinyGo\x040.33"},
			InterfaceExtismMCP, true, "TinyGo", "Extism MCP servlet (v1: describe and call), command module (_start exported, which the host never runs), built with TinyGo"},
		{[]string{"list_tools", "call_tool"}, map[string]string{"producers": "rustc"}, InterfaceHyperV2, false, "Rust",
			"hyper-mcp v2 plugin (list_tools and call_tool), built with Rust"},
		// describe wins over the v2 exports, as in the registry.
		{[]string{"describe", "call", "list_tools", "call_tool"}, nil, InterfaceExtismMCP, false, "", "Extism MCP servlet (v1: describe and call)"},
		{[]string{"count_vowels", "_initialize"}, nil, InterfacePlain, false, "",
			"plain Extism module (neither describe and call nor list_tools and call_tool), reactor"},
	} {
		info, err := wasmfile.Parse(module(c.exports, c.custom))
		if err != nil {
			t.Fatalf("%v: %v", c.exports, err)
		}
		s := Of(info)
		if s.Interface != c.iface || s.CommandModule != c.command || s.Toolchain != c.toolchain || s.Text != c.text {
			t.Errorf("%v: %+v; want %s, command %v, %q, %q", c.exports, s, c.iface, c.command, c.toolchain, c.text)
		}
	}
}

// TestDiagnose: a failure is explained by the module's shape only when the
// runtime said its exports ran uninitialised.
func TestDiagnose(t *testing.T) {
	env := abi.NewEnvelope(abi.CodePluginFailed, "plugin x failed: wasm error: unreachable", "")
	env.Details = map[string]any{"console_tail": "runtime: wasmexport function called before runtime initialization\n\tcall _start first\n"}
	command := Shape{Interface: InterfaceExtismMCP, CommandModule: true, Toolchain: "Go"}
	why, fix := command.Diagnose(errors.Join(errors.New("describe"), env))
	if !strings.Contains(why, "only by _start") || !strings.Contains(why, `"runtime: wasmexport function called before runtime initialization"`) ||
		!strings.Contains(fix, "go build -buildmode=c-shared") {
		t.Errorf("Go command module: %q / %q", why, fix)
	}
	tiny := Shape{Interface: InterfaceExtismMCP, CommandModule: true, Toolchain: "TinyGo"}
	if _, fix := tiny.Diagnose(env); !strings.Contains(fix, "tinygo build -target wasip1 -buildmode=c-shared") {
		t.Errorf("TinyGo fix: %q", fix)
	}
	reactor := Shape{Interface: InterfaceExtismMCP, Toolchain: "Go"}
	if why, _ := reactor.Diagnose(env); !strings.Contains(why, "exports no _initialize") {
		t.Errorf("no _start nor _initialize: %q", why)
	}
	if why, _ := command.Diagnose(abi.NewEnvelope(abi.CodePluginFailed, "plugin x failed: panic: index out of range", "")); why != "" {
		t.Errorf("a panic explained by the shape: %q", why)
	}
	if why, _ := command.Diagnose(nil); why != "" {
		t.Errorf("no error explained: %q", why)
	}
}
