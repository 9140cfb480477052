package sdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/abi"
)

type greetIn struct {
	Name  string    `json:"name" jsonschema:"who to greet, a non-empty string"`
	Times int       `json:"times,omitempty" jsonschema:"how many greetings; default 1"`
	Opts  greetOpts `json:"opts,omitzero" jsonschema:"formatting options"`
}

type greetOpts struct {
	Mode string `json:"mode,omitempty" jsonschema:"formal or casual"`
}

type greetOut struct {
	Greeting string `json:"greeting" jsonschema:"the greeting text"`
}

func greet(c *Call, in greetIn) (greetOut, error) {
	switch in.Name {
	case "":
		return greetOut{}, InvalidArgument("name", "name is empty", "Pass a non-empty name.")
	case "ghost":
		return greetOut{}, fmt.Errorf("looking up %q: %w", in.Name,
			NotFound("no such person", "Call list_people to see who exists."))
	case "boom":
		return greetOut{}, errors.New("database is on fire")
	case "typed-nil":
		var env *abi.Envelope
		return greetOut{Greeting: "fine"}, env
	}
	return greetOut{Greeting: strings.Repeat("hello "+in.Name, max(in.Times, 1))}, nil
}

var greetSpec = ToolSpec{
	Name:        "greet",
	Title:       "Greet",
	Description: "Use when: you want a greeting.",
	Annotations: &abi.Annotations{ReadOnlyHint: true},
	TimeoutMS:   1500,
}

func newGreetRegistry(t *testing.T) *registry {
	t.Helper()
	r := newRegistry()
	r.plugin("greeter", "1.2.3", "greets people")
	r.require("board.read", "board.read")
	register(r, greetSpec, greet)
	return r
}

// call runs one request and decodes its result.
func call(t *testing.T, r *registry, req string) (abi.CallResult, string) {
	t.Helper()
	out, err := r.call([]byte(req))
	if err != nil {
		t.Fatalf("call(%s): %v", req, err)
	}
	var res abi.CallResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("call output is not a CallResult: %v\n%s", err, out)
	}
	return res, string(out)
}

func envelopeOf(t *testing.T, res abi.CallResult) abi.Envelope {
	t.Helper()
	if !res.IsError {
		t.Fatalf("result is not an error: %s", res.StructuredContent)
	}
	var env abi.Envelope
	if err := json.Unmarshal(res.StructuredContent, &env); err != nil {
		t.Fatalf("structuredContent is not an envelope: %v", err)
	}
	return env
}

func TestManifest(t *testing.T) {
	r := newGreetRegistry(t)
	raw, err := r.describe()
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		ABI          int            `json:"abi"`
		Plugin       abi.PluginInfo `json:"plugin"`
		Capabilities []string       `json:"capabilities"`
		Tools        []struct {
			abi.Tool
			InputSchema  schema `json:"inputSchema"`
			OutputSchema schema `json:"outputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%v\n%s", err, raw)
	}
	if m.ABI != 1 || m.Plugin != (abi.PluginInfo{Name: "greeter", Version: "1.2.3", Description: "greets people"}) {
		t.Errorf("identity = abi %d %+v", m.ABI, m.Plugin)
	}
	if !reflect.DeepEqual(m.Capabilities, []string{"board.read"}) {
		t.Errorf("capabilities = %q, want one board.read", m.Capabilities)
	}
	if len(m.Tools) != 1 {
		t.Fatalf("%d tools", len(m.Tools))
	}
	tl := m.Tools[0]
	if tl.Name != "greet" || tl.Title != "Greet" || tl.Description != greetSpec.Description ||
		tl.TimeoutMS != 1500 || tl.Annotations == nil || !tl.Annotations.ReadOnlyHint {
		t.Errorf("tool = %+v", tl.Tool)
	}
	in := tl.InputSchema
	if in.Type != "object" || in.AdditionalProperties == nil || *in.AdditionalProperties {
		t.Errorf("input schema type %q additionalProperties %v; want object, false", in.Type, in.AdditionalProperties)
	}
	if !reflect.DeepEqual(in.Required, []string{"name"}) {
		t.Errorf("required = %q, want [name]", in.Required)
	}
	for field, want := range map[string]string{
		"name":  "who to greet, a non-empty string",
		"times": "how many greetings; default 1",
		"opts":  "formatting options",
	} {
		if got := in.Properties[field].Description; got != want {
			t.Errorf("input %s description = %q, want %q", field, got, want)
		}
	}
	if in.Properties["times"].Type != "integer" {
		t.Errorf("times type = %q", in.Properties["times"].Type)
	}
	if got := in.Properties["opts"].Properties["mode"].Description; got != "formal or casual" {
		t.Errorf("nested description = %q", got)
	}
	// Properties keep the struct's field order.
	if i, j := strings.Index(string(raw), `"name":{`), strings.Index(string(raw), `"times":{`); i < 0 || j < i {
		t.Errorf("properties out of field order:\n%s", raw)
	}
	out := tl.OutputSchema
	if out.Type != "object" || out.Properties["greeting"].Description != "the greeting text" ||
		!reflect.DeepEqual(out.Required, []string{"greeting"}) {
		t.Errorf("output schema = %+v", out)
	}
	// Outputs are open: a result may gain fields (docs/DECISIONS.md).
	if out.AdditionalProperties != nil {
		t.Errorf("output schema additionalProperties = %v; want absent", *out.AdditionalProperties)
	}
}

// schema is the part of a JSON schema the tests look at.
type schema struct {
	Type                 string            `json:"type"`
	Description          string            `json:"description"`
	Properties           map[string]schema `json:"properties"`
	Required             []string          `json:"required"`
	AdditionalProperties *bool             `json:"additionalProperties"`
}

func TestManifestSchemaOverrides(t *testing.T) {
	r := newRegistry()
	r.plugin("p", "", "")
	in := `{"type":"object","oneOf":[{"required":["a"]},{"required":["b"]}]}`
	out := `{"type":"object"}`
	register(r, ToolSpec{Name: "either", Description: "d", InputSchema: json.RawMessage(in), OutputSchema: json.RawMessage(out)},
		func(c *Call, in map[string]any) (json.RawMessage, error) { return json.RawMessage(`{}`), nil })
	m, err := r.manifest()
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Tools[0].InputSchema) != in || string(m.Tools[0].OutputSchema) != out {
		t.Errorf("schemas = %s, %s; want the overrides", m.Tools[0].InputSchema, m.Tools[0].OutputSchema)
	}
}

func TestManifestIncomplete(t *testing.T) {
	r := newRegistry()
	register(r, greetSpec, greet)
	if _, err := r.describe(); err == nil || !strings.Contains(err.Error(), "sdk.Plugin") {
		t.Errorf("describe without Plugin: %v", err)
	}
	r = newRegistry()
	r.plugin("empty", "", "")
	if _, err := r.describe(); err == nil || !strings.Contains(err.Error(), "no tools") {
		t.Errorf("describe without tools: %v", err)
	}
	r = newRegistry()
	r.plugin("p", "", "")
	register(r, ToolSpec{Name: "t", Description: "d", Idempotency: &abi.Idempotency{KeyField: "request_id"}}, greet)
	if _, err := r.describe(); err == nil || !strings.Contains(err.Error(), `"request_id" is not a field`) {
		t.Errorf("describe with a missing key field: %v", err)
	}
}

func TestRegisterPanics(t *testing.T) {
	ok := func(c *Call, in greetIn) (greetOut, error) { return greetOut{}, nil }
	cases := []struct {
		name, want string
		reg        func(r *registry)
	}{
		{"non-struct input", "input type int is not a struct", func(r *registry) {
			register(r, ToolSpec{Name: "t", Description: "d"}, func(c *Call, in int) (greetOut, error) { return greetOut{}, nil })
		}},
		{"pointer input", "input type *sdk.greetIn is not a struct", func(r *registry) {
			register(r, ToolSpec{Name: "t", Description: "d"}, func(c *Call, in *greetIn) (greetOut, error) { return greetOut{}, nil })
		}},
		{"non-object output", "output type []string is not a struct", func(r *registry) {
			register(r, ToolSpec{Name: "t", Description: "d"}, func(c *Call, in greetIn) ([]string, error) { return nil, nil })
		}},
		{"empty description", "empty description", func(r *registry) {
			register(r, ToolSpec{Name: "t", Description: "  "}, ok)
		}},
		{"empty name", "must be 1-128 characters", func(r *registry) {
			register(r, ToolSpec{Description: "d"}, ok)
		}},
		{"bad name", `has ' '`, func(r *registry) {
			register(r, ToolSpec{Name: "two words", Description: "d"}, ok)
		}},
		{"duplicate", `tool "t": registered twice`, func(r *registry) {
			register(r, ToolSpec{Name: "t", Description: "d"}, ok)
			register(r, ToolSpec{Name: "t", Description: "d"}, ok)
		}},
		{"nil handler", "nil handler", func(r *registry) {
			register[greetIn, greetOut](r, ToolSpec{Name: "t", Description: "d"}, nil)
		}},
		{"array schema override", `top-level "type" is array`, func(r *registry) {
			register(r, ToolSpec{Name: "t", Description: "d", InputSchema: json.RawMessage(`{"type":"array"}`)},
				func(c *Call, in []int) (greetOut, error) { return greetOut{}, nil })
		}},
		{"plugin twice", "Plugin called twice", func(r *registry) {
			r.plugin("a", "", "")
			r.plugin("b", "", "")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				got := fmt.Sprint(recover())
				if !strings.Contains(got, tc.want) {
					t.Errorf("panic = %q, want it to contain %q", got, tc.want)
				}
			}()
			tc.reg(newRegistry())
		})
	}
}

func TestCallWithContext(t *testing.T) {
	r := newGreetRegistry(t)
	_, raw := call(t, r, `{"params":{"name":"greet","arguments":{"name":"Ada"}},"context":{"request_id":"r1"}}`)
	if want := `{"structuredContent":{"greeting":"hello Ada"}}`; raw != want {
		t.Errorf("output = %s, want %s (no content: the host adds the text)", raw, want)
	}
}

func TestCallWithoutContextAddsText(t *testing.T) {
	r := newGreetRegistry(t)
	for _, name := range []string{"Ada", `Q "the" <q> & \ é` + "\n\t\x01"} {
		args, _ := json.Marshal(map[string]any{"name": name})
		res, raw := call(t, r, `{"params":{"name":"greet","arguments":`+string(args)+`}}`)
		if res.IsError || len(res.Content) != 1 || res.Content[0].Type != "text" {
			t.Fatalf("result = %s", raw)
		}
		if res.Content[0].Text != string(res.StructuredContent) {
			t.Errorf("text %q differs from structuredContent %s", res.Content[0].Text, res.StructuredContent)
		}
		var out greetOut
		if err := json.Unmarshal(res.StructuredContent, &out); err != nil || out.Greeting != "hello "+name {
			t.Errorf("structuredContent = %s (%v)", res.StructuredContent, err)
		}
	}
	// Characters HTML-escaped by json.Marshal travel as they are.
	_, raw := call(t, r, `{"params":{"name":"greet","arguments":{"name":"<&>"}},"context":{}}`)
	if !strings.Contains(raw, `"hello <&>"`) {
		t.Errorf("output = %s, want <&> unescaped", raw)
	}
}

func TestCallEnvelopes(t *testing.T) {
	r := newGreetRegistry(t)
	cases := []struct {
		req, code, message, hint, field string
		retryable                       bool
	}{
		{req: `{"params":{"name":"greet","arguments":{"name":"ghost"}},"context":{}}`,
			code: "not_found", message: "no such person", hint: "Call list_people to see who exists."},
		{req: `{"params":{"name":"greet","arguments":{"name":""}},"context":{}}`,
			code: "invalid_argument", message: "name is empty", hint: "Pass a non-empty name.", field: "name"},
		{req: `{"params":{"name":"greet","arguments":{"name":"boom"}},"context":{}}`,
			code: "tool_error", message: "database is on fire"},
		{req: `{"params":{"name":"nope","arguments":{}},"context":{}}`,
			code: "tool_not_found", message: `plugin "greeter" has no tool "nope"`, hint: "Call tools/list and use one of the names it returns."},
		{req: `{"params":{"name":"greet","arguments":{"name":"x","bogus":1}},"context":{}}`,
			code: "invalid_argument", message: `unknown argument "bogus"`,
			hint: `Remove "bogus"; greet accepts only: name, times, opts.`, field: "bogus"},
		{req: `{"params":{"name":"greet","arguments":{"name":"x","times":"2"}},"context":{}}`,
			code: "invalid_argument", message: `argument "times" must be an integer, got string`,
			hint: `Send "times" as an integer and call greet again.`, field: "times"},
		{req: `{"params":{"name":"greet","arguments":{"name":"x","times":1.5}},"context":{}}`,
			code: "invalid_argument", message: `argument "times" must be an integer, got number 1.5`,
			hint: `Send "times" as an integer and call greet again.`, field: "times"},
		{req: `{"params":{"name":"greet","arguments":{"name":"x","opts":{"mode":7}}},"context":{}}`,
			code: "invalid_argument", message: `argument "opts.mode" must be a string, got number`,
			hint: `Send "opts.mode" as a string and call greet again.`, field: "opts.mode"},
		{req: `{"params":{"name":"greet","arguments":[1]},"context":{}}`,
			code: "invalid_argument", message: "arguments must be a JSON object, got array",
			hint: "Send the arguments of greet as an object of named fields."},
	}
	for _, tc := range cases {
		res, raw := call(t, r, tc.req)
		env := envelopeOf(t, res)
		if env.Code != tc.code || env.Message != tc.message || env.Hint != tc.hint || env.Retryable != tc.retryable {
			t.Errorf("%s\n got %s\nwant code %q message %q hint %q", tc.req, raw, tc.code, tc.message, tc.hint)
		}
		if got, _ := env.Details["field"].(string); got != tc.field {
			t.Errorf("%s: details.field = %q, want %q", tc.req, got, tc.field)
		}
		if len(res.Content) != 0 {
			t.Errorf("%s: content present despite a context: %s", tc.req, raw)
		}
	}
	// Without a context, an envelope also travels as text.
	res, _ := call(t, r, `{"params":{"name":"greet","arguments":{"name":"ghost"}}}`)
	if env := envelopeOf(t, res); len(res.Content) != 1 || res.Content[0].Text != string(res.StructuredContent) || env.Code != "not_found" {
		t.Errorf("no-context envelope result = %+v", res)
	}
}

func TestCallEdgeCases(t *testing.T) {
	r := newGreetRegistry(t)
	// Absent and null arguments decode to the zero input.
	for _, req := range []string{`{"params":{"name":"greet"},"context":{}}`, `{"params":{"name":"greet","arguments":null},"context":{}}`} {
		res, raw := call(t, r, req)
		if env := envelopeOf(t, res); env.Code != "invalid_argument" || env.Details["field"] != "name" {
			t.Errorf("%s → %s, want the handler's empty-name envelope", req, raw)
		}
	}
	// A typed nil *abi.Envelope is no error.
	if _, raw := call(t, r, `{"params":{"name":"greet","arguments":{"name":"typed-nil"}},"context":{}}`); raw != `{"structuredContent":{"greeting":"fine"}}` {
		t.Errorf("typed nil envelope → %s", raw)
	}
	// A request that is not JSON is the only failure of the export itself.
	if _, err := r.call([]byte(`{"params":`)); err == nil {
		t.Error("malformed request: no error")
	}

	register(r, ToolSpec{Name: "nil_out", Description: "d"}, func(c *Call, in struct{}) (*greetOut, error) { return nil, nil })
	if _, raw := call(t, r, `{"params":{"name":"nil_out"},"context":{}}`); raw != `{"structuredContent":{}}` {
		t.Errorf("nil output → %s, want {}", raw)
	}
	register(r, ToolSpec{Name: "nan", Description: "d"}, func(c *Call, in struct{}) (map[string]float64, error) {
		return map[string]float64{"x": math.NaN()}, nil
	})
	res, raw := call(t, r, `{"params":{"name":"nan"},"context":{}}`)
	if env := envelopeOf(t, res); env.Code != "tool_error" || !strings.Contains(env.Message, "could not be encoded") {
		t.Errorf("unencodable output → %s", raw)
	}
	register(r, ToolSpec{Name: "bad_details", Description: "d"}, func(c *Call, in struct{}) (struct{}, error) {
		return struct{}{}, Fail("conflict", "busy", "wait").WithDetail("f", func() {})
	})
	res, raw = call(t, r, `{"params":{"name":"bad_details"},"context":{}}`)
	if env := envelopeOf(t, res); env.Code != "conflict" || env.Details["details_error"] == nil {
		t.Errorf("unencodable details → %s", raw)
	}
}

func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "plain", `"q" \ /`, "nl\nCR\rtab\t\x00\x1f\x7f", "é ☃ 😀 \u2028"} {
		got := appendString(nil, s)
		var back string
		if err := json.Unmarshal(got, &back); err != nil || back != s {
			t.Errorf("appendString(%q) = %s, decodes to %q (%v)", s, got, back, err)
		}
	}
}

type echoIn struct {
	Text string `json:"text"`
}

func BenchmarkCallEcho1KiB(b *testing.B) {
	r := newRegistry()
	r.plugin("echo", "", "")
	register(r, ToolSpec{Name: "echo", Description: "d"}, func(c *Call, in echoIn) (echoIn, error) { return in, nil })
	req := []byte(`{"params":{"name":"echo","arguments":{"text":"` + strings.Repeat("x", 1024) + `"}},"context":{"request_id":"r"}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.call(req); err != nil {
			b.Fatal(err)
		}
	}
}

func TestCheckObjectSchema(t *testing.T) {
	for schema, ok := range map[string]bool{
		`{"type":"object"}`: true, ` {"TYPE" : "\u006fbject", "properties": {}} `: true, `{"type":1}`: false,
		`{"type":"array"}`: false, `{}`: false, `[]`: false, `{"type":"object"} x`: false, `{"type":`: false, `"x"`: false,
	} {
		if err := checkObjectSchema([]byte(schema)); (err == nil) != ok {
			t.Errorf("checkObjectSchema(%s) = %v", schema, err)
		}
	}
}
