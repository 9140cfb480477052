// Package schema checks tool arguments against a tool's input schema before a
// plugin runs. It owns the resolved schemas (each resolved once, on first
// use) and the translation of a validation failure into an envelope whose
// hint names the offending field path. It knows nothing of plugins or MCP.
package schema

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/abi/jsonscan"
)

// MaxDepth is how deeply a call's arguments may nest objects and arrays,
// the arguments object being level 1. Validate refuses deeper arguments
// before anything walks them: decoding, schema validation, the request_id
// hash and the plugin's own parsing all recurse once per level, and a
// guest, whose stack is small, overflowed on 900 levels (plugin_failed,
// seconds of CPU and hundreds of MB for the host) that the go-sdk let
// through. Tool inputs described by a JSON Schema nest a handful of
// levels; 64 leaves room for documents passed whole.
const MaxDepth = 64

// Validator checks arguments of one tool.
type Validator struct {
	tool  string
	raw   json.RawMessage
	rules []abi.Rule

	once     sync.Once
	resolved *jsonschema.Resolved
	props    []string
	err      error
}

// New returns a validator for tool's input schema and mode rules.
// Resolution is deferred to the first Validate so start-up stays
// independent of schema count.
func New(tool string, inputSchema json.RawMessage, rules ...abi.Rule) *Validator {
	return &Validator{tool: tool, raw: inputSchema, rules: rules}
}

func (v *Validator) resolve() {
	v.resolved, v.props, v.err = compile(v.raw)
}

// Unchecked returns why the tool's input schema cannot be compiled (a
// *CompileError), or nil. Such a tool's arguments are left to its plugin.
func (v *Validator) Unchecked() error {
	v.once.Do(v.resolve)
	return v.err
}

// Validate checks args (raw JSON; empty means {}) and returns nil or an
// envelope: invalid_argument or missing_required with details.field set to
// the field path (dotted, "[]" for array items), or invalid_argument with
// details.max_depth for arguments nesting deeper than MaxDepth.
//
// A schema the host cannot compile (Check) checks nothing beyond depth,
// the arguments being an object and the mode rules: the tool is served
// with the rest left to its plugin, which the registry reported when it
// loaded. Failing the call instead made the tool uncallable over a fault
// neither the agent nor a retry can fix, while the plugin, which wrote the
// schema, reads its own arguments whatever the schema says.
func (v *Validator) Validate(args json.RawMessage) *abi.Envelope {
	// First, with a flat scan: every later step recurses over the
	// arguments, and this one must not.
	if jsonscan.Depth(args, MaxDepth) > MaxDepth {
		env := v.envelope(abi.CodeInvalidArgument, "",
			fmt.Sprintf("%s: the arguments nest objects and arrays more than %d levels deep", v.tool, MaxDepth),
			fmt.Sprintf("nest objects and arrays at most %d levels deep in the arguments of %s (the arguments object is level 1): flatten deeper data",
				MaxDepth, v.tool))
		env.Details["max_depth"] = MaxDepth
		return env
	}
	v.once.Do(v.resolve)
	var instance any = map[string]any{}
	if len(args) > 0 && string(args) != "null" {
		var err error
		if instance, err = jsonscan.Decode(args); err != nil {
			return v.envelope(abi.CodeInvalidArgument, "", "arguments are not valid JSON: "+err.Error(),
				"send arguments as a JSON object matching the tool's inputSchema")
		}
	}
	obj, ok := instance.(map[string]any)
	if !ok {
		return v.envelope(abi.CodeInvalidArgument, "", fmt.Sprintf("arguments must be a JSON object, got %s", jsonType(instance)),
			"send arguments as a JSON object matching the tool's inputSchema")
	}
	if env := v.checkRules(obj); env != nil {
		return env
	}
	if v.err != nil {
		return nil
	}
	if err := v.resolved.Validate(instance); err != nil {
		return v.explain(err)
	}
	return nil
}

var (
	schemaPathRe = regexp.MustCompile(`validating (/[^:\s]*)`)
	quotedRe     = regexp.MustCompile(`"([^"]*)"`)
)

// explain maps a jsonschema-go error onto an envelope. The library reports
// schema locations ("validating /properties/a/items: ..."); the deepest one
// is turned into the instance field path an agent can act on.
func (v *Validator) explain(err error) *abi.Envelope {
	msg := err.Error()
	path := ""
	if m := schemaPathRe.FindAllStringSubmatch(msg, -1); len(m) > 0 {
		path = fieldPath(m[len(m)-1][1])
	}
	reason := lastClause(msg)
	switch {
	case strings.Contains(reason, "required: missing properties"):
		missing := quotedRe.FindAllStringSubmatch(reason, -1)
		field := join(path, firstMatch(missing))
		return v.envelope(abi.CodeMissingRequired, field,
			fmt.Sprintf("%s: required field %q is missing", v.tool, field),
			fmt.Sprintf("call %s again with %q set (see its inputSchema)", v.tool, field))
	case strings.Contains(reason, "unexpected additional properties"):
		extra := quotedRe.FindAllStringSubmatch(reason, -1)
		field := join(path, firstMatch(extra))
		hint := fmt.Sprintf("remove %q from the arguments of %s", field, v.tool)
		if path == "" && len(v.props) > 0 {
			hint += "; allowed fields: " + strings.Join(slices.Sorted(slices.Values(v.props)), ", ")
		}
		return v.envelope(abi.CodeInvalidArgument, field,
			fmt.Sprintf("%s: unknown field %q", v.tool, field), hint)
	case strings.HasPrefix(reason, "oneOf:") || strings.HasPrefix(reason, "anyOf:"):
		return v.envelope(abi.CodeInvalidArgument, path,
			fmt.Sprintf("%s: arguments match none (or more than one) of the allowed forms%s", v.tool, at(path)),
			fmt.Sprintf("send exactly one of the forms in the oneOf of %s's inputSchema", v.tool))
	}
	return v.envelope(abi.CodeInvalidArgument, path,
		fmt.Sprintf("%s: invalid value%s: %s", v.tool, at(path), reason),
		fmt.Sprintf("fix %s per the inputSchema of %s", orArgs(path), v.tool))
}

func (v *Validator) envelope(code, field, message, hint string) *abi.Envelope {
	env := abi.NewEnvelope(code, message, hint)
	env.Details = map[string]any{"tool": v.tool}
	if field != "" {
		env.Details["field"] = field
	}
	return env
}

// fieldPath turns "/properties/a/items/properties/b" into "a[].b".
func fieldPath(schemaPath string) string {
	parts := strings.Split(strings.Trim(schemaPath, "/"), "/")
	var b strings.Builder
	for i := 0; i < len(parts); i++ {
		switch parts[i] {
		case "properties":
			if i+1 < len(parts) {
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(parts[i+1])
				i++
			}
		case "items", "prefixItems", "additionalProperties":
			b.WriteString("[]")
		case "oneOf", "anyOf", "allOf":
			i++ // skip the branch index
		}
	}
	return b.String()
}

func lastClause(msg string) string {
	// "validating root: validating /properties/x: type: ..." -> "type: ..."
	for {
		i := strings.Index(msg, "validating ")
		if i != 0 {
			break
		}
		j := strings.Index(msg, ": ")
		if j < 0 {
			break
		}
		msg = msg[j+2:]
	}
	return msg
}

func firstMatch(m [][]string) string {
	if len(m) > 0 {
		return m[0][1]
	}
	return ""
}

func join(path, field string) string {
	switch {
	case path == "":
		return field
	case field == "":
		return path
	}
	return path + "." + field
}

func at(path string) string {
	if path == "" {
		return ""
	}
	return " at " + path
}

func orArgs(path string) string {
	if path == "" {
		return "the arguments"
	}
	return fmt.Sprintf("%q", path)
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%T", v)
}
