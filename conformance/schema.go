package conformance

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/plugboard/plugboard/abi/jsonscan"
)

// toolSchema is one input or output schema, decoded as plain JSON values
// (map[string]any, []any, string, float64, bool, nil) for walking and
// instance generation, and resolved by github.com/google/jsonschema-go —
// the library the host validates arguments with — for validation.
type toolSchema struct {
	root     map[string]any
	resolved *jsonschema.Resolved
	// props are the root properties; names sorted for determinism.
	props    map[string]any
	names    []string
	required []string
	// closed: the root refuses unknown fields.
	closed bool

	values map[string]any // minimal value of each root property, memoised
}

// Known JSON Schema draft URIs.
const (
	draft2020 = "https://json-schema.org/draft/2020-12/schema"
	draft07   = "http://json-schema.org/draft-07/schema#"
)

// loadSchema decodes and resolves a schema. The error says what is wrong in
// terms a plugin author can act on.
func loadSchema(raw json.RawMessage) (*toolSchema, error) {
	if len(raw) == 0 {
		return nil, errors.New("missing")
	}
	v, err := jsonscan.Decode(raw)
	if err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	root, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not a JSON object (got %s)", jsonKind(v))
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("not a JSON Schema: %v", err)
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("github.com/google/jsonschema-go cannot resolve it: %v", err)
	}
	ts := &toolSchema{root: root, resolved: resolved, values: map[string]any{}}
	ts.props, _ = root["properties"].(map[string]any)
	for name := range ts.props {
		ts.names = append(ts.names, name)
	}
	sort.Strings(ts.names)
	ts.required = stringList(root["required"])
	ts.closed = isFalseSchema(root["additionalProperties"]) || isFalseSchema(root["unevaluatedProperties"])
	return ts, nil
}

// validate checks an instance (plain JSON values) against the schema.
func (s *toolSchema) validate(inst any) error { return s.resolved.Validate(inst) }

func (s *toolSchema) valid(inst any) bool { return s.validate(inst) == nil }

// ---- plain-JSON schema helpers ----

func obj(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// isFalseSchema reports the schema that accepts nothing: false, or {"not": {}}.
func isFalseSchema(v any) bool {
	switch x := v.(type) {
	case bool:
		return !x
	case map[string]any:
		if len(x) != 1 {
			return false
		}
		n, ok := x["not"].(map[string]any)
		return ok && len(n) == 0
	}
	return false
}

func stringList(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, x := range list {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	}
	return fmt.Sprintf("%T", v)
}

// deref follows a local $ref ("#/$defs/x", any JSON pointer into the root).
// It returns v unchanged when there is none or it cannot be followed.
func deref(root map[string]any, v any) any {
	for range 16 {
		m := obj(v)
		ref, ok := m["$ref"].(string)
		if !ok || !strings.HasPrefix(ref, "#") {
			return v
		}
		target := any(root)
		for _, part := range strings.Split(strings.TrimPrefix(ref, "#"), "/") {
			if part == "" {
				continue
			}
			part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
			next, ok := obj(target)[part]
			if !ok {
				return v
			}
			target = next
		}
		v = target
	}
	return v
}

var jsonTypes = []string{"string", "number", "integer", "boolean", "object", "array", "null"}

// typesOf returns the JSON types a schema allows: its "type", else what its
// keywords imply; nil means unconstrained.
func typesOf(m map[string]any) []string {
	switch t := m["type"].(type) {
	case string:
		return []string{t}
	case []any:
		return stringList(t)
	}
	if c, ok := m["const"]; ok {
		return []string{jsonKind(c)}
	}
	if e, ok := m["enum"].([]any); ok {
		var out []string
		for _, v := range e {
			if k := jsonKind(v); !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
		return out
	}
	for _, k := range []string{"properties", "required", "additionalProperties", "patternProperties"} {
		if _, ok := m[k]; ok {
			return []string{"object"}
		}
	}
	for _, k := range []string{"items", "prefixItems", "minItems", "maxItems"} {
		if _, ok := m[k]; ok {
			return []string{"array"}
		}
	}
	for _, k := range []string{"minLength", "maxLength", "pattern", "format"} {
		if _, ok := m[k]; ok {
			return []string{"string"}
		}
	}
	for _, k := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"} {
		if _, ok := m[k]; ok {
			return []string{"number"}
		}
	}
	return nil
}

// Keywords whose value is one schema, an array of schemas, or a map of
// schemas; walkSchema descends through them.
var (
	schemaKeys = []string{"additionalProperties", "contains", "not", "if", "then", "else", "propertyNames",
		"unevaluatedItems", "unevaluatedProperties", "additionalItems", "contentSchema"}
	schemaListKeys = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
	schemaMapKeys  = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)

// walkSchema calls fn on v and every subschema, with a JSON pointer.
func walkSchema(v any, ptr string, fn func(m map[string]any, ptr string)) {
	m := obj(v)
	if m == nil {
		return
	}
	fn(m, ptr)
	for _, k := range schemaKeys {
		if sub, ok := m[k]; ok {
			walkSchema(sub, ptr+"/"+k, fn)
		}
	}
	switch items := m["items"].(type) {
	case map[string]any:
		walkSchema(items, ptr+"/items", fn)
	case []any:
		for i, sub := range items {
			walkSchema(sub, fmt.Sprintf("%s/items/%d", ptr, i), fn)
		}
	}
	for _, k := range schemaListKeys {
		for i, sub := range asList(m[k]) {
			walkSchema(sub, fmt.Sprintf("%s/%s/%d", ptr, k, i), fn)
		}
	}
	for _, k := range schemaMapKeys {
		for _, name := range sortedKeys(obj(m[k])) {
			walkSchema(obj(m[k])[name], ptr+"/"+k+"/"+name, fn)
		}
	}
	for _, name := range sortedKeys(obj(m["dependencies"])) {
		walkSchema(obj(m["dependencies"])[name], ptr+"/dependencies/"+name, fn)
	}
}

func asList(v any) []any { l, _ := v.([]any); return l }

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func ptrOrRoot(ptr string) string {
	if ptr == "" {
		return "the root"
	}
	return ptr
}

// schemaProblems finds what makes a schema unusable beyond what the library
// refuses: unknown type names, and required fields that a closed object can
// never hold.
func schemaProblems(root map[string]any) []string {
	var out []string
	walkSchema(root, "", func(m map[string]any, ptr string) {
		var names []string
		switch t := m["type"].(type) {
		case string:
			names = []string{t}
		case []any:
			names = stringList(t)
		}
		for _, n := range names {
			if !slices.Contains(jsonTypes, n) {
				out = append(out, fmt.Sprintf("%s: type %q is not a JSON Schema type (%s)", ptrOrRoot(ptr), n, strings.Join(jsonTypes, ", ")))
			}
		}
		if !isFalseSchema(m["additionalProperties"]) || len(obj(m["patternProperties"])) > 0 {
			return
		}
		props := obj(m["properties"])
		req := stringList(m["required"])
		// Branches of this object add requirements on the same instance.
		for _, k := range []string{"then", "else"} {
			req = append(req, stringList(obj(m[k])["required"])...)
		}
		for _, k := range []string{"allOf", "anyOf", "oneOf"} {
			for _, b := range asList(m[k]) {
				req = append(req, stringList(obj(b)["required"])...)
			}
		}
		for _, k := range []string{"then", "else"} {
			for _, b := range asList(obj(m[k])["anyOf"]) {
				req = append(req, stringList(obj(b)["required"])...)
			}
		}
		seen := map[string]bool{}
		for _, r := range req {
			if _, ok := props[r]; !ok && !seen[r] {
				seen[r] = true
				out = append(out, fmt.Sprintf("%s: %q is required but is not a property, and additionalProperties is false: no instance can satisfy it",
					ptrOrRoot(ptr), r))
			}
		}
	})
	return out
}

// knownKeywords are the keywords of JSON Schema 2020-12 (core, applicator,
// unevaluated, validation, meta-data, format, content) and the draft-07
// ones jsonschema-go also understands.
var knownKeywords = map[string]bool{}

func init() {
	for _, k := range strings.Fields(`$schema $id $ref $anchor $dynamicRef $dynamicAnchor $vocabulary $comment $defs
		allOf anyOf oneOf not if then else dependentSchemas prefixItems items contains properties patternProperties
		additionalProperties propertyNames unevaluatedItems unevaluatedProperties
		type enum const multipleOf maximum exclusiveMaximum minimum exclusiveMinimum maxLength minLength pattern
		maxItems minItems uniqueItems maxContains minContains maxProperties minProperties required dependentRequired
		title description default deprecated readOnly writeOnly examples format
		contentEncoding contentMediaType contentSchema
		definitions dependencies additionalItems`) {
		knownKeywords[k] = true
	}
}

// unknownKeywords lists keywords no validator acts on, by pointer. Keys
// starting with "x-" are vendor extensions and are left alone.
func unknownKeywords(root map[string]any) []string {
	var out []string
	walkSchema(root, "", func(m map[string]any, ptr string) {
		for _, k := range sortedKeys(m) {
			if !knownKeywords[k] && !strings.HasPrefix(k, "x-") {
				out = append(out, fmt.Sprintf("%s: %q", ptrOrRoot(ptr), k))
			}
		}
	})
	return out
}

// undescribedFields returns the instance paths ("a", "a.b", "list[].c",
// "map{}.d") of fields declared without a description. A field is described
// when any of its declarations at that path has a description (directly or
// on the schema its $ref names): a constraint repeating a field inside
// if/then/else or a branch need not repeat the description.
func undescribedFields(root map[string]any) []string {
	described := map[string]bool{}
	var order []string
	seen := map[string]bool{}
	var walk func(v any, path string, depth int)
	walk = func(v any, path string, depth int) {
		m := obj(v)
		if m == nil || depth > 24 {
			return
		}
		if _, ok := m["$ref"]; ok {
			walk(deref(root, m), path, depth+1)
		}
		props := obj(m["properties"])
		for _, name := range sortedKeys(props) {
			ps := props[name]
			if _, isBool := ps.(bool); isBool {
				continue // true/false constrain a field, they do not declare one
			}
			p := name
			if path != "" {
				p = path + "." + name
			}
			if !seen[p] {
				seen[p] = true
				order = append(order, p)
			}
			if hasDescription(root, ps) {
				described[p] = true
			}
			walk(ps, p, depth+1)
		}
		switch items := m["items"].(type) {
		case map[string]any:
			walk(items, path+"[]", depth+1)
		case []any:
			for _, it := range items {
				walk(it, path+"[]", depth+1)
			}
		}
		for _, it := range asList(m["prefixItems"]) {
			walk(it, path+"[]", depth+1)
		}
		walk(m["additionalProperties"], path+"{}", depth+1)
		for _, name := range sortedKeys(obj(m["patternProperties"])) {
			walk(obj(m["patternProperties"])[name], path+"{}", depth+1)
		}
		for _, k := range []string{"allOf", "anyOf", "oneOf"} {
			for _, b := range asList(m[k]) {
				walk(b, path, depth+1)
			}
		}
		for _, k := range []string{"not", "if", "then", "else"} {
			walk(m[k], path, depth+1)
		}
		for _, name := range sortedKeys(obj(m["dependentSchemas"])) {
			walk(obj(m["dependentSchemas"])[name], path, depth+1)
		}
	}
	walk(root, "", 0)
	var out []string
	for _, p := range order {
		if !described[p] {
			out = append(out, p)
		}
	}
	return out
}

func hasDescription(root map[string]any, v any) bool {
	described := func(m map[string]any) bool {
		d, _ := m["description"].(string)
		return strings.TrimSpace(d) != ""
	}
	m := obj(v)
	if described(m) {
		return true
	}
	_, isRef := m["$ref"]
	return isRef && described(obj(deref(root, m)))
}
