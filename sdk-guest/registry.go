package sdk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/abi/jsonscan"
)

// ToolSpec is the agent-facing surface of one tool, minus the schemas that
// are inferred from the handler's input and output types.
type ToolSpec struct {
	// Name is the tool name agents call: 1-128 characters from
	// [A-Za-z0-9_.-], unique within the plugin.
	Name string
	// Title is an optional human-readable name.
	Title string
	// Description tells an agent when and how to use the tool; required.
	Description string
	// Annotations are MCP hints (readOnlyHint, destructiveHint, ...).
	Annotations *abi.Annotations
	// Idempotency asks the host to deduplicate calls by a key argument.
	Idempotency *abi.Idempotency
	// TimeoutMS overrides the host's default deadline for this tool.
	TimeoutMS int64
	// When names a host condition for listing the tool (abi.Conditions);
	// "" means always.
	When string
	// Rules are mode rules the host checks before the schema (abi.Rule),
	// giving agents precise codes; the schema must express them too.
	Rules []abi.Rule
	// InputSchema, when set, replaces the schema inferred from the input
	// type (for shapes a Go struct cannot express, such as oneOf). Its
	// top-level type must be "object".
	InputSchema json.RawMessage
	// OutputSchema, when set, replaces the schema inferred from the output
	// type. Its top-level type must be "object".
	OutputSchema json.RawMessage
	// Aliases are other names of the tool, each mcp__<namespace>__<tool>
	// (abi.ValidAlias): the REST endpoint accepts them, and caller
	// permissions match them as well as Name.
	Aliases []string
}

// tool is one registered tool.
type tool struct {
	spec ToolSpec
	// invoke decodes the arguments, runs the handler and returns its output
	// value and error (an *abi.Envelope or any other).
	invoke func(c *Call, args json.RawMessage) (any, error)
	// outPlan encodes the output type, or is nil for encoding/json.
	outPlan *encPlan
	// result is true when the handler returns a *Result (content items,
	// no inferred output schema).
	result bool
	// schemas builds the input and output schemas; only describe calls it.
	// It is nil in a WebAssembly build without the plugboard_describe tag,
	// which serves the manifest plugboard plugin build embedded instead
	// (schema_embedded.go).
	schemas func() (in, out json.RawMessage, err error)
	// typedReason says why this tool needs encoding/json ("" when a build
	// with the plugboard_typed tag serves it; typed.go).
	typedReason string
}

// registry holds a plugin's identity and tools. The package-level std
// registry backs the exports; tests build their own.
type registry struct {
	info    abi.PluginInfo
	infoSet bool
	caps    []string
	needs   abi.Needs // NeedsConfig, NeedsHTTP (needs.go)
	tools   []*tool
	byName  map[string]*tool

	resources []*resource
	templates []*resourceTemplate
	prompts   []*prompt
}

func newRegistry() *registry { return &registry{byName: map[string]*tool{}} }

// std is the registry of this plugin. It is global because the exports it
// backs are: a WebAssembly module is one plugin.
var std = newRegistry()

// Plugin sets the plugin's identity in the manifest. Call it once, from init.
func Plugin(name, version, description string) { std.plugin(name, version, description) }

// Require declares host capabilities the plugin needs (see
// abi.HostFunctions); the host grants at most these. Call it from init.
func Require(capabilities ...string) { std.require(capabilities...) }

// Tool registers a tool whose arguments decode into In and whose answer is
// Out, both JSON objects (structs, unless ToolSpec supplies schemas). Out
// may instead be *Result (or Result): the answer is then MCP content items
// (text, image, audio, embedded resources, resource links) and no output
// schema is inferred. Call it
// from init. It panics on a programming error — an invalid or duplicate
// name, an empty description, an input or output that is not an object —
// so `plugboard plugin build` catches it.
func Tool[In, Out any](spec ToolSpec, handler func(c *Call, in In) (Out, error)) {
	register(std, spec, handler)
}

// Describe returns the manifest JSON that the describe export outputs. It
// lets tests and tools inspect a plugin natively, without WebAssembly.
func Describe() ([]byte, error) { return std.describe() }

// HandleCall serves one call request (an abi.CallRequest as JSON) exactly as
// the call export does and returns the abi.CallResult JSON (an
// abi.MethodResult for the methods other than tools/call). It lets tests
// drive a plugin's tools natively through the same decoding and encoding;
// the error is non-nil only when the request is not a JSON call request.
func HandleCall(request []byte) ([]byte, error) { return std.call(request) }

func (r *registry) plugin(name, version, description string) {
	if r.infoSet {
		panic(fmt.Sprintf("sdk: Plugin called twice (%q, then %q)", r.info.Name, name))
	}
	if err := checkName(name); err != nil {
		panic("sdk: Plugin: plugin " + err.Error())
	}
	r.info = abi.PluginInfo{Name: name, Version: version, Description: description}
	r.infoSet = true
}

func (r *registry) require(capabilities ...string) {
	for _, c := range capabilities {
		if strings.TrimSpace(c) == "" {
			panic("sdk: Require: empty capability name")
		}
		if !contains(r.caps, c) {
			r.caps = append(r.caps, c)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func register[In, Out any](r *registry, spec ToolSpec, handler func(c *Call, in In) (Out, error)) {
	fail := func(format string, args ...any) {
		panic(fmt.Sprintf("sdk: tool %q: ", spec.Name) + fmt.Sprintf(format, args...))
	}
	if err := checkName(spec.Name); err != nil {
		fail("tool %v", err)
	}
	if _, dup := r.byName[spec.Name]; dup {
		fail("registered twice")
	}
	if strings.TrimSpace(spec.Description) == "" {
		fail("empty description; say when to use the tool, its fields and the next call")
	}
	if handler == nil {
		fail("nil handler")
	}
	if spec.TimeoutMS < 0 {
		fail("negative TimeoutMS %d", spec.TimeoutMS)
	}
	if spec.Idempotency != nil && spec.Idempotency.KeyField == "" {
		fail("Idempotency.KeyField is empty")
	}
	for _, a := range spec.Aliases {
		if !abi.ValidAlias(a) {
			fail("alias %q must have the form mcp__<namespace>__<tool>", a)
		}
	}
	inType, outType := reflect.TypeFor[In](), reflect.TypeFor[Out]()
	if spec.InputSchema != nil {
		if err := checkObjectSchema(spec.InputSchema); err != nil {
			fail("InputSchema: %v", err)
		}
	} else if inType.Kind() != reflect.Struct {
		fail("input type %v is not a struct; tool arguments are a JSON object (use a struct, or set ToolSpec.InputSchema)", inType)
	}
	isResult := outType == resultType || outType == reflect.PointerTo(resultType)
	if spec.OutputSchema != nil {
		if err := checkObjectSchema(spec.OutputSchema); err != nil {
			fail("OutputSchema: %v", err)
		}
	} else if !isObjectType(outType) {
		fail("output type %v is not a struct or string-keyed map; structuredContent is a JSON object (use a struct, or set ToolSpec.OutputSchema)", outType)
	}

	t := &tool{spec: spec, result: isResult}
	if !isResult {
		t.outPlan = newEncPlan(outType)
	}
	fast := newPlan(inType, false)
	if typedBuild || describeBuild { // the only builds that ask (a served module links none of it)
		t.typedReason = toolTypedReason(fast, inType, outType, isResult)
	}
	if typedBuild && t.typedReason != "" {
		fail("this module is built with the plugboard_typed tag, which links no encoding/json, but %s; "+
			"build it with `plugboard plugin build`, which leaves the tag out for such a plugin", t.typedReason)
	}
	t.invoke = func(c *Call, args json.RawMessage) (any, error) {
		var in In
		if typedBuild {
			if err := decodeArgumentsTyped(fast, args, reflect.ValueOf(&in).Elem()); err != nil {
				return nil, argumentError(spec.Name, inType, err)
			}
			return handler(c, in)
		}
		if fast == nil || len(args) == 0 || !fast.decodeFast(args, reflect.ValueOf(&in).Elem()) {
			var zero In
			in = zero
			if err := decodeArguments(args, &in); err != nil {
				return nil, argumentError(spec.Name, inType, err)
			}
		}
		// The output travels even with an error, for a typed-nil
		// *abi.Envelope (which means no error).
		return handler(c, in)
	}
	t.schemas = toolSchemas(spec, inType, outType, isResult)
	r.tools = append(r.tools, t)
	r.byName[spec.Name] = t
}

// checkName enforces MCP's tool-name rule: 1-128 characters of
// [A-Za-z0-9_.-].
func checkName(name string) error {
	if name == "" || len(name) > 128 {
		return fmt.Errorf("name %q must be 1-128 characters", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-') {
			return fmt.Errorf("name %q has %q; use only letters, digits, '_', '.' and '-'", name, c)
		}
	}
	return nil
}

// isObjectType reports whether values of t encode as a JSON object.
func isObjectType(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind() == reflect.Struct || t.Kind() == reflect.Map && t.Key().Kind() == reflect.String
}

// checkObjectSchema checks that a hand-written schema is a JSON object whose
// type is "object" (its key matched as encoding/json would, in any case).
// It runs at every registration, so it does not use encoding/json: a build
// with the plugboard_typed tag links none.
func checkObjectSchema(schema json.RawMessage) error {
	p := jsonscan.Parser{B: schema, UnquoteKeys: true}
	p.WS()
	if p.I >= len(p.B) || p.B[p.I] != '{' {
		return fmt.Errorf("not a JSON object")
	}
	typ := "<nil>" // the type: a string's value, other JSON as written
	if _, err := p.Object(func(key []byte) (bool, error) {
		start := p.I
		err := p.Skip()
		if err == nil && bytes.EqualFold(key, []byte("type")) {
			typ = string(schema[start:p.I])
			if schema[start] == '"' {
				if s, ok := jsonscan.Unquote(schema[start+1 : p.I-1]); ok {
					typ = string(s)
				}
			}
		}
		return true, err
	}); err != nil {
		return fmt.Errorf("not a JSON object: %w", err)
	}
	if p.WS(); p.I != len(p.B) {
		return fmt.Errorf("not a JSON object: %w", p.Fail())
	}
	if typ != "object" {
		return fmt.Errorf(`top-level "type" is %s, want "object"`, typ)
	}
	return nil
}

// manifest builds the manifest of the registered plugin and tools.
func (r *registry) manifest() (*abi.Manifest, error) {
	if !r.infoSet {
		return nil, fmt.Errorf("sdk: no plugin identity; call sdk.Plugin(name, version, description) in init")
	}
	if len(r.tools) == 0 && len(r.resources) == 0 && len(r.templates) == 0 && len(r.prompts) == 0 {
		return nil, fmt.Errorf("sdk: plugin %q registers no tools; call sdk.Tool in init", r.info.Name)
	}
	m := &abi.Manifest{
		Plugin:       r.info,
		Capabilities: r.caps,
		Needs:        r.needs,
		Tools:        make([]abi.Tool, 0, len(r.tools)),
	}
	for _, t := range r.tools {
		if t.schemas == nil {
			return nil, errNoManifest
		}
		in, out, err := t.schemas()
		if err != nil {
			return nil, fmt.Errorf("sdk: %w", err)
		}
		m.Tools = append(m.Tools, abi.Tool{
			Name:         t.spec.Name,
			Title:        t.spec.Title,
			Description:  t.spec.Description,
			InputSchema:  in,
			OutputSchema: out,
			Annotations:  t.spec.Annotations,
			Idempotency:  t.spec.Idempotency,
			TimeoutMS:    t.spec.TimeoutMS,
			When:         t.spec.When,
			Rules:        t.spec.Rules,
			Aliases:      t.spec.Aliases,
		})
	}
	r.manifestV2(m)
	m.ABI = m.MinVersion()
	return m, nil
}

// manifestJSON returns the manifest as JSON: the output of the describe
// export where schemas are inferred (describe, in schema_infer.go).
func (r *registry) manifestJSON() ([]byte, error) {
	m, err := r.manifest()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, fmt.Errorf("sdk: encoding manifest: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
