package registry

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/runtime"
	"github.com/plugboard/plugboard/host/internal/wasmfile"
)

// TestBindFunctions: a plain module's tools are made of its settings when
// it is bound to them — defaults applied, exports checked — and a plugin
// that cannot serve them says why, naming the setting.
func TestBindFunctions(t *testing.T) {
	i32 := byte(0x7f)
	loaded := &Plugin{Manifest: abi.Manifest{Plugin: abi.PluginInfo{Name: "plainfn"}}, plain: &plainModule{exports: map[string]wasmfile.FuncType{
		"count_vowels": extismSignature, "reverse": extismSignature, "_initialize": {},
		"add": {Params: []byte{i32, i32}, Results: []byte{i32}},
	}}}
	if err := loaded.functionsErr(); err == nil || !strings.Contains(err.Error(), "plugin plainfn is a plain Extism module") ||
		!strings.Contains(err.Error(), "Serve its functions (count_vowels, reverse) as tools") ||
		!strings.Contains(err.Error(), "plugins.settings.plainfn.tools") {
		t.Errorf("without settings: %v", err)
	}

	good := &Settings{Functions: []Function{
		{Name: "count_vowels", Description: "Counts vowels.", InputField: "text", Output: FunctionJSON,
			OutputSchema: []byte(`{"type": "object"}`), Annotations: &abi.Annotations{ReadOnlyHint: true}},
		{Name: "reversed", Export: "reverse", Description: "Reverses.", InputSchema: []byte(`{"type":"object","properties":{"s":{"type":"string"}},"required":["s"]}`), InputField: "s"},
	}}
	b := loaded.bind(good)
	if err := b.functionsErr(); err != nil {
		t.Fatal(err)
	}
	if len(b.Manifest.Tools) != 2 || len(loaded.Manifest.Tools) != 0 {
		t.Fatalf("bound tools %+v, loaded %+v", b.Manifest.Tools, loaded.Manifest.Tools)
	}
	cv := b.Manifest.Tools[0]
	if cv.Name != "count_vowels" || string(cv.InputSchema) != `{"additionalProperties":false,"properties":{"text":{"type":"string"}},"required":["text"],"type":"object"}` ||
		string(cv.OutputSchema) != `{"type":"object"}` || !cv.Annotations.ReadOnlyHint {
		t.Errorf("count_vowels %+v", cv)
	}
	f, ok := b.Function("reversed")
	if !ok || f.Export != "reverse" || f.Output != FunctionText || f.InputField != "s" {
		t.Errorf("Function(reversed) = %+v, %v", f, ok)
	}
	if _, ok := b.Function("reverse"); ok {
		t.Error("a function found by its export's name, not its tool's")
	}
	// Unbinding (the settings removed) serves nothing again.
	if u := b.bind(nil); len(u.Manifest.Tools) != 0 || u.functionsErr() == nil {
		t.Errorf("unbound: %+v %v", u.Manifest.Tools, u.functionsErr())
	}

	for _, c := range []struct {
		fn   Function
		want string
	}{
		{Function{Name: "nope", Description: "d", InputField: "t"}, `plugins.settings.plainfn.tools[0] (nope): the module exports no function "nope" (its Extism functions: count_vowels, reverse)`},
		{Function{Name: "add", Description: "d", InputField: "t"}, `export "add" is (i32, i32) -> i32; a tool calls an Extism function, () -> i32`},
		{Function{Name: "init", Export: "_initialize", Description: "d", InputField: "t"}, `export "_initialize" is () -> (); a tool calls an Extism function`},
		{Function{Name: "reverse", Description: "", InputField: "t"}, `description is empty`},
		{Function{Name: "reverse", Description: "d"}, `inputSchema: missing`},
		{Function{Name: "reverse", Description: "d", InputField: "t", Output: "xml"}, `unknown output "xml"`},
		{Function{Name: "reverse", Description: "d", InputField: "t", OutputSchema: []byte(`{"type":"object"}`)}, `set output to json`},
		{Function{Name: "reverse", Description: "d", InputField: "t", InputSchema: []byte(`{"type":"object"}`)}, `input_field "t" must be a required string property`},
	} {
		b := loaded.bind(&Settings{Functions: []Function{c.fn}})
		err := b.functionsErr()
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "plugin plainfn is not loaded: ") {
			t.Errorf("%+v: %v\nwant %s", c.fn, err, c.want)
		}
		if len(b.Manifest.Tools) != 0 {
			t.Errorf("%+v: serves %+v", c.fn, b.Manifest.Tools)
		}
	}

	// A plugin with tools of its own is refused with the setting.
	mcp := &Plugin{Manifest: abi.Manifest{Plugin: abi.PluginInfo{Name: "echo"}, Tools: []abi.Tool{{Name: "echo"}}}}
	if err := mcp.bind(good).functionsErr(); err == nil || !strings.Contains(err.Error(), "plugins.settings.echo.tools describes tools for a plain Extism module: remove the setting") {
		t.Errorf("an MCP plugin with tools settings: %v", err)
	}
	if err := mcp.bind(&Settings{Prefix: "x_"}).functionsErr(); err != nil {
		t.Errorf("an MCP plugin without them: %v", err)
	}
}

// plainWasm assembles the smallest plain Extism module: count, () -> i32,
// answering 0; with pre10, it also imports env.extism_input, as Extism
// plugins built before 1.0 do.
func plainWasm(pre10 bool) []byte {
	b := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
		0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7f} // type 0: () -> i32
	fn := byte(0)
	if pre10 {
		b = append(b, 0x02, 0x14, 0x01, 0x03, 'e', 'n', 'v', 0x0c)
		b = append(b, "extism_input"...)
		b = append(b, 0x00, 0x00)
		fn = 1
	}
	b = append(b, 0x03, 0x02, 0x01, 0x00, // one function of type 0
		0x07, 0x09, 0x01, 0x05, 'c', 'o', 'u', 'n', 't', 0x00, fn, // export "count"
		0x0a, 0x06, 0x01, 0x04, 0x00, 0x41, 0x00, 0x0b) // i32.const 0
	return b
}

// TestLoadPlain: the registry serves a plain module's functions as its
// settings describe them, says what to set when they describe none, and
// refuses a module it cannot link for that reason, not for its settings.
func TestLoadPlain(t *testing.T) {
	ctx := context.Background()
	engine, err := runtime.New(ctx, runtime.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close(ctx)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tiny.wasm"), plainWasm(false), 0o644); err != nil {
		t.Fatal(err)
	}
	reg, err := Load(ctx, Options{Dirs: []string{dir}, Engine: engine})
	if err != nil {
		t.Fatal(err)
	}
	if p := reg.Problems(); len(reg.Tools()) != 0 || len(p) != 1 || !strings.Contains(p[0].Err.Error(), "Serve its functions (count) as tools by describing each in plugins.settings.tiny.tools") {
		t.Fatalf("without settings: %d tools, problems %v", len(reg.Tools()), p)
	}
	reg.SetSettings(map[string]Settings{"tiny": {Prefix: "t_", Functions: []Function{{Name: "count", Description: "Counts.", InputField: "text"}}}}, nil)
	if _, err := reg.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	tool, ok := reg.Resolve("t_count")
	if !ok || len(reg.Problems()) != 0 || tool.PluginName != "count" {
		t.Fatalf("with settings: %+v %v, problems %v", tool, ok, reg.Problems())
	}
	if f, ok := tool.Plugin.Function(tool.PluginName); !ok || f.Export != "count" {
		t.Errorf("Function(%s) = %+v, %v", tool.PluginName, f, ok)
	}
	rt, err := tool.Plugin.Runtime(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := rt.Call(ctx, "count", []byte("hello"), runtime.CallOptions{}); err != nil || len(out) != 0 {
		t.Errorf("count: %q %v", out, err)
	}

	pre := t.TempDir()
	if err := os.WriteFile(filepath.Join(pre, "old.wasm"), plainWasm(true), 0o644); err != nil {
		t.Fatal(err)
	}
	reg, err = Load(ctx, Options{Dirs: []string{pre}, Engine: engine,
		Settings: map[string]Settings{"old": {Functions: []Function{{Name: "count", Description: "Counts.", InputField: "text"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if p := reg.Problems(); len(p) != 1 || !strings.Contains(p[0].Err.Error(), "env.extism_input") || strings.Contains(p[0].Err.Error(), "plain Extism") {
		t.Errorf("a pre-1.0 module: problems %v", p)
	}
}
