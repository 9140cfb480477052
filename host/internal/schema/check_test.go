package schema

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/plugboard/plugboard/abi"
)

// TestCheckLocatesTheFault: every schema jsonschema-go cannot compile, or
// compiles into one refusing every value, gets a CompileError placing the
// fault and saying what it is, in words and never in Go types.
func TestCheckLocatesTheFault(t *testing.T) {
	cases := []struct {
		name, schema, where, reason string
	}{
		{"required inside properties", `{"type":"object","properties":{"a":{"type":"string"},"required":["a"]}}`,
			"properties.required", `an array, not a schema (an object or a boolean): "required" is a keyword of the object's schema, so it belongs beside "properties", not inside it`},
		{"nested required inside properties", `{"type":"object","properties":{"o":{"type":"object","properties":{"b":{"type":"integer"},"required":["b"]}}}}`,
			"properties.o.properties.required", `belongs beside "properties"`},
		{"required a string", `{"type":"object","properties":{"a":{"type":"string"}},"required":"a"}`,
			"required", `a string ("a"), not an array of property names`},
		{"required of numbers", `{"type":"object","required":[1]}`, "required", "not an array of property names"},
		{"draft-3 required", `{"type":"object","properties":{"a":{"type":"string","required":true}}}`,
			"properties.a.required", "the draft-3 form"},
		{"unknown type", `{"type":"object","properties":{"a":{"type":"strng"}}}`,
			"properties.a.type", `"strng" is not a JSON Schema type (one of array, boolean, integer, null, number, object, string)`},
		{"unknown type in a list", `{"type":"object","properties":{"a":{"type":["string","int"]}}}`,
			"properties.a.type[1]", `"int" is not a JSON Schema type`},
		{"type a number", `{"type":"object","properties":{"a":{"type":5}}}`, "properties.a.type", "a number (5), not a type name"},
		{"draft-4 exclusiveMinimum", `{"type":"object","properties":{"a":{"type":"number","minimum":3,"exclusiveMinimum":true}}}`,
			"properties.a.exclusiveMinimum", "the draft-4 form"},
		{"minLength a string", `{"type":"object","properties":{"a":{"minLength":"3"}}}`, "properties.a.minLength", `a string ("3"), not a non-negative integer`},
		{"minLength a fraction", `{"type":"object","properties":{"a":{"minLength":1.5}}}`, "properties.a.minLength", "1.5, not a non-negative integer"},
		{"enum a string", `{"type":"object","properties":{"a":{"enum":"x"}}}`, "properties.a.enum", "not an array"},
		{"bad pattern", `{"type":"object","properties":{"a":{"type":"string","pattern":"(("}}}`, "properties.a.pattern", "is not a regular expression: missing closing )"},
		{"bad pattern property", `{"type":"object","patternProperties":{"((":{}}}`, "patternProperties", "is not a regular expression"},
		{"a property that is a string", `{"type":"object","properties":{"a":"string"}}`, "properties.a", `a string ("string"), not a schema`},
		{"items a string", `{"type":"object","properties":{"a":{"type":"array","items":"string"}}}`, "properties.a.items", "not a schema"},
		{"anyOf an object", `{"type":"object","anyOf":{"required":["a"]}}`, "anyOf", "an object, not an array of schemas"},
		{"unresolvable ref", `{"type":"object","properties":{"a":{"$ref":"#/defs/x"}}}`, "", `JSON Pointer "/defs/x"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Check(json.RawMessage(c.schema))
			var ce *CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("Check = %v, want a CompileError", err)
			}
			if ce.Where != c.where || !strings.Contains(ce.Reason, c.reason) {
				t.Errorf("Check = %q at %q, want %q at %q", ce.Reason, ce.Where, c.reason, c.where)
			}
			if strings.Contains(err.Error(), "Go struct") || strings.Contains(err.Error(), "jsonschema.") || strings.Contains(err.Error(), "json.RawMessage") {
				t.Errorf("the message names Go types: %s", err)
			}
			// The host's compiler refuses each of them too, or (an
			// unknown type) accepts it and then refuses every value.
			var s jsonschema.Schema
			if json.Unmarshal([]byte(c.schema), &s) == nil {
				if r, err := s.Resolve(nil); err == nil && r.Validate(map[string]any{"a": "x"}) == nil && !strings.Contains(c.name, "type") {
					t.Errorf("jsonschema-go compiles and accepts %s; Check should too", c.schema)
				}
			}
		})
	}
}

// TestCheckAcceptsWhatCompiles: what jsonschema-go compiles and uses as
// written passes, in every form the walk knows (boolean schemas, nulls,
// array items, dependencies, both bounds forms of the drafts it supports).
func TestCheckAcceptsWhatCompiles(t *testing.T) {
	for _, s := range []string{
		testSchema,
		`{"type":"object"}`,
		`{"type":"object","properties":{"a":true,"b":false,"c":{}}}`,
		`{"type":"object","properties":{"a":{"type":["string","null"],"description":null}}}`,
		`{"type":"object","properties":{"a":{"type":"array","items":[{"type":"string"}],"minItems":1.0}}}`,
		`{"type":"object","dependencies":{"a":["b"],"c":{"required":["d"]}},"dependentRequired":{"x":["y"]}}`,
		`{"type":"object","properties":{"n":{"type":"number","exclusiveMinimum":0,"multipleOf":0.5}}}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","definitions":{"x":{"type":"string"}},"properties":{"a":{"$ref":"#/definitions/x"}}}`,
		`{"type":"object","properties":{"a":{"type":"string","format":"uri","x-sensitive":true,"pattern":"^a+$"}},"additionalProperties":false}`,
		`{"type":"object","properties":{"required":{"type":"array","items":{"type":"string"}}}}`,
	} {
		if err := Check(json.RawMessage(s)); err != nil {
			t.Errorf("Check(%s) = %v", s, err)
		}
	}
}

// TestValidateLeavesAnUncompilableSchemaToThePlugin: a tool whose schema
// cannot be compiled stays callable — no internal, retryable envelope —
// while the checks that need no schema still apply.
func TestValidateLeavesAnUncompilableSchemaToThePlugin(t *testing.T) {
	v := New("bad", json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"},"required":["text"]}}`),
		abi.Rule{Forbid: []string{"both"}})
	if err := v.Unchecked(); err == nil || !strings.Contains(err.Error(), "properties.required") {
		t.Fatalf("Unchecked = %v", err)
	}
	for _, args := range []string{`{"text":"hi"}`, `{}`, `{"text":5}`, ``} {
		if env := v.Validate(json.RawMessage(args)); env != nil {
			t.Errorf("Validate(%s) = %+v, want the arguments left to the plugin", args, env)
		}
	}
	if env := v.Validate(json.RawMessage(`[1]`)); env == nil || env.Code != abi.CodeInvalidArgument {
		t.Errorf("an array: %+v", env)
	}
	if env := v.Validate(json.RawMessage(`{"both":1}`)); env == nil || env.Details["field"] != "both" {
		t.Errorf("the mode rules: %+v", env)
	}
	deep := strings.Repeat(`{"a":`, MaxDepth+1) + "1" + strings.Repeat("}", MaxDepth+1)
	if env := v.Validate(json.RawMessage(deep)); env == nil || env.Details["max_depth"] != MaxDepth {
		t.Errorf("depth: %+v", env)
	}
	if err := New("good", json.RawMessage(testSchema)).Unchecked(); err != nil {
		t.Errorf("a good schema: %v", err)
	}
}
