package registry

// Plain Extism modules: a module exporting neither describe nor call (an
// MCP plugin's) nor list_tools and call_tool (hyper-mcp's v2 interface) is
// an Extism plugin of the kind most Extism examples are — count_vowels
// takes bytes and writes bytes — and cannot say what tools it has. The
// operator describes them in its settings (plugins.settings.NAME.tools):
// the registry makes the plugin's manifest of those descriptions when it
// binds the plugin to its settings, so a change of the settings serves
// the new tools without the file changing, and it refuses the plugin,
// with the reason, when the settings describe none or name an export the
// module lacks or cannot answer through. The dispatcher calls the named
// export instead of call (Plugin.Function).

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/wasmfile"
)

// Function is one function of a plain Extism module served as a tool: the
// tool's definition, which the module cannot give, the export a call runs,
// what that export receives and how its output is read. Registry users get
// it with defaults applied (Plugin.Function).
type Function struct {
	// Name, Title and Description are the tool's (Name the plugin's own
	// name for it: prefix, skip and rename apply as to any tool's).
	Name        string
	Title       string
	Description string
	// Export is the function a call runs (default Name): () -> i32, 0 for
	// success, as every Extism function.
	Export string
	// InputSchema is the arguments' JSON Schema (an object schema); when
	// InputField is set and it is not, the schema is that one required
	// string.
	InputSchema json.RawMessage
	// InputField names the string argument whose value is the function's
	// input; "" gives it the arguments object as JSON.
	InputField string
	// Output is FunctionText (default) or FunctionJSON.
	Output string
	// OutputSchema, with FunctionJSON only, is the tool's outputSchema.
	OutputSchema json.RawMessage
	Annotations  *abi.Annotations
}

// How a Function's output is read: one text item, or JSON (an object is
// also the result's structuredContent).
const (
	FunctionText = "text"
	FunctionJSON = "json"
)

// extismSignature is every Extism function's: no parameters, an i32
// status.
var extismSignature = wasmfile.FuncType{Results: []byte{0x7f}}

// plainModule is what the registry knows of a plain module — the
// signatures of its exported functions (never nil for a plain module) —
// and, once the plugin is bound to its settings, the functions served by
// tool name, or why it serves none. A plugin that is not a plain module
// but has tools in its settings gets one with exports nil and err set.
type plainModule struct {
	exports map[string]wasmfile.FuncType
	funcs   map[string]Function
	err     error
}

// isPlain reports whether a module speaks neither MCP interface: neither
// describe nor call, and not both of list_tools and call_tool. A module
// with one of describe and call is a broken MCP plugin, refused for the
// export it lacks (as the conformance kit's shapes have it), not a plain
// one.
func isPlain(info *wasmfile.Info) bool {
	has := func(name string) bool {
		e, ok := info.Export(name)
		return ok && e.Kind == wasmfile.KindFunc
	}
	return !has(abi.ExportDescribe) && !has(abi.ExportCall) && !(has(HyperListTools) && has(HyperCallTool))
}

// loadPlain loads a plain module. It is compiled once, as describe would
// have it compiled, so that a module the host cannot link — an import it
// does not provide, such as pre-1.0 Extism's env.extism_* — is refused for
// that reason rather than for the tools its settings lack; the tools come
// with the settings (bindFunctions). A module this host has compiled
// whole before (the engine's signed compile mark, set only once its
// imports checked) is not compiled again: loading the machine code back
// cost each start of `plugboard call` 0.1 s of its 0.5 s for a Go module,
// which has no describe cache to spare it.
func loadPlain(ctx context.Context, p *Plugin, path string, wasm []byte, info *wasmfile.Info, opts Options) (*Plugin, error) {
	name := strings.TrimSuffix(filepath.Base(path), ".wasm")
	if opts.Engine != nil && !opts.Engine.Cached(wasm) {
		rt, err := opts.Engine.Compile(ctx, name, wasm, nil)
		if err != nil {
			return nil, err
		}
		_ = rt.Close(ctx)
	}
	p.plain = newPlainModule(info)
	p.Manifest.Plugin.Name = name
	return p, nil
}

// newPlainModule records the signatures of a plain module's exported
// functions.
func newPlainModule(info *wasmfile.Info) *plainModule {
	pm := &plainModule{exports: map[string]wasmfile.FuncType{}}
	for _, e := range info.Exports {
		if e.Kind != wasmfile.KindFunc {
			continue
		}
		if t, ok := info.FuncType(e.Index); ok {
			pm.exports[e.Name] = t
		}
	}
	return pm
}

// PlainManifest is the manifest serve makes of a module served as the
// plugin name under settings s, when it is a plain module (plain): the
// tools s describes, or err, why serve refuses it. Nothing is compiled:
// the module's imports are for its reader to check (plugboard plugin
// inspect lists them).
func PlainManifest(name string, wasm []byte, s Settings) (m *abi.Manifest, plain bool, err error) {
	info, err := wasmfile.Parse(wasm)
	if err != nil || !isPlain(info) {
		return nil, false, nil
	}
	p := &Plugin{Manifest: abi.Manifest{Plugin: abi.PluginInfo{Name: name}}, plain: newPlainModule(info)}
	b := p.bind(&s)
	if err := b.functionsErr(); err != nil {
		return nil, true, err
	}
	return &b.Manifest, true, nil
}

// Function returns the function of a plain module that serves the tool
// the plugin calls name (Tool.PluginName); false for any other tool.
func (p *Plugin) Function(name string) (Function, bool) {
	if p == nil || p.plain == nil {
		return Function{}, false
	}
	f, ok := p.plain.funcs[name]
	return f, ok
}

// functionsErr is why a bound plugin is not served for its plain-module
// nature: a plain module whose settings describe no tools, or describe
// tools it cannot serve; a plugin with tools of its own whose settings
// describe some. Nil otherwise.
func (p *Plugin) functionsErr() error {
	switch {
	case p.plain == nil:
		return nil
	case p.plain.err != nil:
		return p.plain.err
	case len(p.plain.funcs) == 0:
		return fmt.Errorf("plugin %s is a plain Extism module: it exports neither describe nor call (an MCP plugin's) nor list_tools and call_tool "+
			"(hyper-mcp's), so it cannot say what tools it has. Serve its functions (%s) as tools by describing each in plugins.settings.%s.tools "+
			"(name, description, input_schema or input_field, output)", p.Name(), orNone(p.plain.extism()), p.Name())
	}
	return nil
}

// extism lists the exports with Extism's signature, but the runtime's own
// (_start, _initialize and the like): what a tool can call.
func (pm *plainModule) extism() []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(pm.exports)) {
		if pm.exports[name].Equal(extismSignature) && !strings.HasPrefix(name, "_") {
			out = append(out, name)
		}
	}
	return out
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none with Extism's signature () -> i32"
	}
	if len(names) > 20 {
		names = append(names[:20:20], fmt.Sprintf("… %d more", len(names)-20))
	}
	return strings.Join(names, ", ")
}

// bindFunctions makes q's tools of its settings' functions when q is a
// plain module (plain: the module's, as loaded or last bound), and
// records why q is not served when they cannot be served or q is not a
// plain module but its settings describe tools.
func (q *Plugin) bindFunctions(plain *plainModule) {
	fns := q.settings.Functions
	if plain == nil || plain.exports == nil {
		q.plain = nil
		if len(fns) > 0 {
			q.plain = &plainModule{err: fmt.Errorf("plugin %s describes its own tools (it exports describe, or hyper-mcp's list_tools and call_tool), "+
				"and plugins.settings.%s.tools describes tools for a plain Extism module: remove the setting", q.Name(), q.Name())}
		}
		return
	}
	pm := &plainModule{exports: plain.exports, funcs: map[string]Function{}}
	q.plain = pm
	q.Manifest.Tools = nil
	if len(fns) == 0 {
		return
	}
	var errs []error
	for i, f := range fns {
		where := fmt.Sprintf("plugins.settings.%s.tools[%d] (%s)", q.Name(), i, f.Name)
		f, err := resolveFunction(f, pm)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
			continue
		}
		q.Manifest.Tools = append(q.Manifest.Tools, abi.Tool{Name: f.Name, Title: f.Title, Description: f.Description,
			InputSchema: f.InputSchema, OutputSchema: f.OutputSchema, Annotations: f.Annotations})
		pm.funcs[f.Name] = f
	}
	// The manifest's own checks: names, descriptions, schemas that are
	// objects, no name twice, the caps on counts.
	if len(errs) == 0 {
		if err := q.Manifest.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("plugins.settings.%s.tools: %w", q.Name(), err))
		}
	}
	if len(errs) > 0 {
		pm.err = fmt.Errorf("plugin %s is not loaded: %w", q.Name(), errors.Join(errs...))
		pm.funcs = nil
		q.Manifest.Tools = nil
	}
}

// resolveFunction applies f's defaults and checks it against the module:
// the export exists with Extism's signature, the input and output are
// ones the dispatcher knows. The configuration file's reader checked the
// same fields, placed in the file; settings given in code meet them here.
func resolveFunction(f Function, pm *plainModule) (Function, error) {
	f.Export = cmp.Or(f.Export, f.Name)
	t, ok := pm.exports[f.Export]
	switch {
	case !ok:
		return f, fmt.Errorf("the module exports no function %q (its Extism functions: %s)", f.Export, orNone(pm.extism()))
	case !t.Equal(extismSignature):
		return f, fmt.Errorf("export %q is %s; a tool calls an Extism function, %s", f.Export, signature(t), signature(extismSignature))
	}
	f.Output = cmp.Or(f.Output, FunctionText)
	if f.Output != FunctionText && f.Output != FunctionJSON {
		return f, fmt.Errorf("unknown output %q (%s or %s)", f.Output, FunctionText, FunctionJSON)
	}
	if len(f.OutputSchema) > 0 && f.Output != FunctionJSON {
		return f, fmt.Errorf("an output_schema describes JSON output; set output to %s", FunctionJSON)
	}
	if f.InputField != "" {
		if len(f.InputSchema) == 0 {
			s, err := json.Marshal(map[string]any{"type": "object", "properties": map[string]any{f.InputField: map[string]string{"type": "string"}},
				"required": []string{f.InputField}, "additionalProperties": false})
			if err != nil {
				return f, err
			}
			f.InputSchema = s
		} else if err := declaresString(f.InputSchema, f.InputField); err != nil {
			return f, err
		}
	}
	var err error
	if f.InputSchema, err = compact(f.InputSchema); err != nil {
		return f, fmt.Errorf("input_schema: %w", err)
	}
	if f.OutputSchema, err = compact(f.OutputSchema); err != nil {
		return f, fmt.Errorf("output_schema: %w", err)
	}
	return f, nil
}

// declaresString checks that schema declares field a required string: the
// function's input is that field's text, so a call must carry one.
func declaresString(schema json.RawMessage, field string) error {
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		return fmt.Errorf("input_schema: %w", err)
	}
	p, ok := s.Properties[field]
	if !ok || p.Type != "string" || !slices.Contains(s.Required, field) {
		return fmt.Errorf("input_field %q must be a required string property of input_schema", field)
	}
	return nil
}

// compact writes a schema without insignificant space, as a manifest's
// schemas are served.
func compact(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// signature writes a function type as (i32, i64) -> i32.
func signature(t wasmfile.FuncType) string {
	names := func(types []byte) string {
		var out []string
		for _, v := range types {
			switch v {
			case 0x7f:
				out = append(out, "i32")
			case 0x7e:
				out = append(out, "i64")
			case 0x7d:
				out = append(out, "f32")
			case 0x7c:
				out = append(out, "f64")
			default:
				out = append(out, fmt.Sprintf("0x%02x", v))
			}
		}
		return strings.Join(out, ", ")
	}
	res := names(t.Results)
	if len(t.Results) != 1 {
		res = "(" + res + ")"
	}
	return "(" + names(t.Params) + ") -> " + res
}
