package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// Foreign plugins write their input schemas by hand, and some are not JSON
// Schema the host can compile: "required" placed inside "properties", a
// "required" that is a string, a draft-04 boolean "exclusiveMinimum", a type
// named "strng". jsonschema-go then fails with a Go type dump (or, for an
// unknown type name, compiles a schema that refuses every value), which made
// such a tool uncallable. Check says what is wrong, where, in words a plugin
// author can act on; the registry reports it when the plugin loads, and the
// Validator leaves the arguments of such a tool to the plugin.

// CompileError is an input schema the host cannot compile. Where is the
// location in the schema (dotted, "[i]" for array items; "" for the root),
// Reason what is wrong there.
type CompileError struct {
	Where  string
	Reason string
}

func (e *CompileError) Error() string {
	if e.Where == "" {
		return e.Reason
	}
	return e.Where + ": " + e.Reason
}

// Check compiles an input schema as Validate does and returns nil, or a
// *CompileError saying why the host cannot use it.
func Check(inputSchema json.RawMessage) error {
	_, _, err := compile(inputSchema)
	return err
}

// compile turns an input schema into what Validate checks arguments with,
// and the names of its top-level properties. Its error is a *CompileError.
func compile(raw json.RawMessage) (*jsonschema.Resolved, []string, error) {
	// The walk first: it finds what jsonschema-go fails on and says where,
	// and what it accepts but should not (unknown type names).
	if err := locate(raw); err != nil {
		return nil, nil, err
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, nil, &CompileError{Reason: sanitize(err)}
	}
	resolved, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: false})
	if err != nil {
		return nil, nil, &CompileError{Reason: sanitize(err)}
	}
	props := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		props = append(props, name)
	}
	return resolved, props, nil
}

// jsonTypes are the type names of JSON Schema.
var jsonTypes = []string{"array", "boolean", "integer", "null", "number", "object", "string"}

// The keywords jsonschema-go decodes, by the kind of value each takes.
var (
	schemaMapKeywords  = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
	schemaKeywords     = []string{"additionalProperties", "additionalItems", "propertyNames", "unevaluatedProperties", "unevaluatedItems", "contains", "not", "if", "then", "else", "contentSchema"}
	schemaListKeywords = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
	stringKeywords     = []string{"$id", "$schema", "$ref", "$comment", "$anchor", "$dynamicAnchor", "$dynamicRef", "title", "description", "pattern", "contentEncoding", "contentMediaType", "format"}
	boolKeywords       = []string{"deprecated", "readOnly", "writeOnly", "uniqueItems"}
	numberKeywords     = []string{"multipleOf", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}
	integerKeywords    = []string{"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties", "minContains", "maxContains"}
	arrayKeywords      = []string{"enum", "examples"}
)

// isKeyword reports whether name is a keyword of a schema (not a property
// name an author would choose by accident).
func isKeyword(name string) bool {
	for _, list := range [][]string{schemaMapKeywords, schemaKeywords, schemaListKeywords, stringKeywords, boolKeywords,
		numberKeywords, integerKeywords, arrayKeywords, {"type", "required", "items", "dependencies", "dependentRequired", "const", "default"}} {
		if slices.Contains(list, name) {
			return true
		}
	}
	return false
}

// locate walks the schema and returns the first value (in key order, so
// the answer is the same on every load) that no JSON Schema allows where it
// stands, as a *CompileError; nil when it finds none.
func locate(raw json.RawMessage) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var root any
	if err := d.Decode(&root); err != nil {
		return &CompileError{Reason: "not valid JSON: " + err.Error()}
	}
	return walkSchema(root, "", "")
}

// walkSchema checks a value that must be a schema. parent is the keyword
// whose map holds it ("properties"), for the hint a misplaced keyword gets.
func walkSchema(v any, where, parent string) error {
	switch s := v.(type) {
	case bool:
		return nil
	case map[string]any:
		return walkObject(s, where)
	}
	e := &CompileError{Where: where, Reason: kindOf(v) + ", not a schema (an object or a boolean)"}
	if name := lastKey(where); parent == "properties" && isKeyword(name) {
		e.Reason += fmt.Sprintf(`: %q is a keyword of the object's schema, so it belongs beside "properties", not inside it`, name)
	}
	return e
}

func walkObject(s map[string]any, where string) error {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := walkKeyword(k, s[k], join(where, k)); err != nil {
			return err
		}
	}
	return nil
}

func walkKeyword(k string, v any, at string) error {
	bad := func(want string) error {
		return &CompileError{Where: at, Reason: kindOf(v) + ", not " + want}
	}
	if v == nil {
		// jsonschema-go decodes a keyword set to null as the keyword left
		// out, and so does the walk.
		return nil
	}
	switch {
	case slices.Contains(schemaMapKeywords, k):
		m, ok := v.(map[string]any)
		if !ok {
			return bad("an object of schemas")
		}
		for _, name := range sortedKeys(m) {
			if err := walkSchema(m[name], join(at, name), k); err != nil {
				return err
			}
			if k == "patternProperties" {
				if _, err := regexp.Compile(name); err != nil {
					return &CompileError{Where: at, Reason: fmt.Sprintf("%q is not a regular expression: %v", name, reErr(err))}
				}
			}
		}
	case slices.Contains(schemaKeywords, k):
		return walkSchema(v, at, k)
	case slices.Contains(schemaListKeywords, k):
		list, ok := v.([]any)
		if !ok {
			return bad("an array of schemas")
		}
		for i, item := range list {
			if err := walkSchema(item, fmt.Sprintf("%s[%d]", at, i), k); err != nil {
				return err
			}
		}
	case k == "items":
		if list, ok := v.([]any); ok {
			for i, item := range list {
				if err := walkSchema(item, fmt.Sprintf("%s[%d]", at, i), k); err != nil {
					return err
				}
			}
			return nil
		}
		return walkSchema(v, at, k)
	case k == "type":
		return checkType(v, at)
	case k == "required":
		if b, ok := v.(bool); ok {
			return &CompileError{Where: at, Reason: fmt.Sprintf("%t, not an array of property names (the draft-3 form: list the required properties in the \"required\" array of the object that holds them)", b)}
		}
		if !stringArray(v) {
			return bad(`an array of property names (strings), as in "required": ["name"]`)
		}
	case k == "dependentRequired":
		m, ok := v.(map[string]any)
		if !ok {
			return bad("an object of arrays of property names")
		}
		for _, name := range sortedKeys(m) {
			if !stringArray(m[name]) {
				return &CompileError{Where: join(at, name), Reason: kindOf(m[name]) + ", not an array of property names"}
			}
		}
	case k == "dependencies":
		m, ok := v.(map[string]any)
		if !ok {
			return bad("an object of schemas or arrays of property names")
		}
		for _, name := range sortedKeys(m) {
			if _, isList := m[name].([]any); isList {
				if !stringArray(m[name]) {
					return &CompileError{Where: join(at, name), Reason: "an array holding something other than property names"}
				}
				continue
			}
			if err := walkSchema(m[name], join(at, name), k); err != nil {
				return err
			}
		}
	case k == "$vocabulary":
		m, ok := v.(map[string]any)
		if !ok {
			return bad("an object of booleans")
		}
		for _, name := range sortedKeys(m) {
			if _, ok := m[name].(bool); !ok {
				return &CompileError{Where: join(at, name), Reason: kindOf(m[name]) + ", not a boolean"}
			}
		}
	case slices.Contains(stringKeywords, k):
		str, ok := v.(string)
		if !ok {
			return bad("a string")
		}
		if k == "pattern" {
			if _, err := regexp.Compile(str); err != nil {
				return &CompileError{Where: at, Reason: fmt.Sprintf("%q is not a regular expression: %v", str, reErr(err))}
			}
		}
	case slices.Contains(boolKeywords, k):
		if _, ok := v.(bool); !ok {
			return bad("a boolean")
		}
	case slices.Contains(numberKeywords, k):
		if b, ok := v.(bool); ok && (k == "exclusiveMinimum" || k == "exclusiveMaximum") {
			bound := strings.ToLower(strings.TrimPrefix(k, "exclusive"))
			return &CompileError{Where: at, Reason: fmt.Sprintf("%t, not a number (the draft-4 form: write the bound itself, \"%s\": <number>, instead of \"%s\" with %q: true)", b, k, bound, k)}
		}
		if _, ok := v.(json.Number); !ok {
			return bad("a number")
		}
	case slices.Contains(integerKeywords, k):
		n, ok := v.(json.Number)
		if !ok {
			return bad("a non-negative integer")
		}
		if f, err := strconv.ParseFloat(string(n), 64); err != nil || f != float64(int64(f)) || f < 0 || f > 1<<31-1 {
			return &CompileError{Where: at, Reason: fmt.Sprintf("%s, not a non-negative integer", n)}
		}
	case slices.Contains(arrayKeywords, k):
		if _, ok := v.([]any); !ok {
			return bad("an array")
		}
	}
	return nil
}

// checkType accepts a type name or a non-empty array of them.
func checkType(v any, at string) error {
	valid := func(name any) bool {
		s, ok := name.(string)
		return ok && slices.Contains(jsonTypes, s)
	}
	names := "one of " + strings.Join(jsonTypes, ", ")
	switch t := v.(type) {
	case string:
		if !valid(t) {
			return &CompileError{Where: at, Reason: fmt.Sprintf("%q is not a JSON Schema type (%s)", t, names)}
		}
		return nil
	case []any:
		if len(t) == 0 {
			return &CompileError{Where: at, Reason: "an empty array, not a type name or an array of them"}
		}
		for i, name := range t {
			if !valid(name) {
				return &CompileError{Where: fmt.Sprintf("%s[%d]", at, i), Reason: fmt.Sprintf("%s is not a JSON Schema type (%s)", quoted(name), names)}
			}
		}
		return nil
	}
	return &CompileError{Where: at, Reason: kindOf(v) + ", not a type name (" + names + ") or an array of them"}
}

func stringArray(v any) bool {
	list, ok := v.([]any)
	if !ok {
		return false
	}
	for _, s := range list {
		if _, ok := s.(string); !ok {
			return false
		}
	}
	return true
}

// kindOf names a decoded JSON value's kind, with the value when it is short.
func kindOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return fmt.Sprintf("a boolean (%t)", x)
	case json.Number:
		return "a number (" + string(x) + ")"
	case string:
		if len(x) > 40 {
			return "a string"
		}
		return fmt.Sprintf("a string (%q)", x)
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%v", v)
}

func quoted(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return kindOf(v)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func lastKey(where string) string {
	if i := strings.LastIndexByte(where, '.'); i >= 0 {
		return where[i+1:]
	}
	return where
}

// reErr is a regexp error without the pattern it repeats.
func reErr(err error) string {
	var se *syntax.Error
	if errors.As(err, &se) {
		return se.Code.String()
	}
	return err.Error()
}

// sanitize words an error of jsonschema-go that the walk did not foresee
// without the Go types it names: those say nothing to a plugin's author.
func sanitize(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := strings.ReplaceAll(te.Field, "schemaWithoutMethods.", "")
		field = strings.Trim(strings.ReplaceAll(field, ".schemaWithoutMethods", ""), ".")
		if field == "" {
			return fmt.Sprintf("a JSON %s where the schema needs another kind of value", te.Value)
		}
		return fmt.Sprintf("%s: a JSON %s where the schema needs another kind of value", field, te.Value)
	}
	msg := err.Error()
	for _, p := range []string{"jsonschema.Schema: ", "jsonschema: ", "<anonymous schema>: "} {
		msg = strings.ReplaceAll(msg, p, "")
	}
	return msg
}
