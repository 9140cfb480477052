// Command badsurface is a test plugin whose tools break the agent-UX rules
// the conformance kit checks, one rule per tool, so its tests can assert the
// exact check ids that fail:
//
//   - no_headings: a description without the Use when/Required/Optional/
//     Next/Avoid template (surface.description);
//   - undescribed: input and output fields without descriptions, nested
//     ones included (surface.input_fields_described,
//     surface.output_fields_described);
//   - root_oneof: a hand-written input schema with oneOf at its root
//     (surface.root_combinator, a warning);
//   - bad_output: answers structuredContent its outputSchema refuses
//     (behaviour.output);
//   - rule_not_in_schema: declares an at_most_one rule its schema does not
//     express (surface.rules).
package main

import (
	"encoding/json"

	"github.com/plugboard/plugboard/abi"
	sdk "github.com/plugboard/plugboard/sdk-guest"
)

// Empty is the input of tools without arguments.
type Empty struct{}

// Done is a minimal output.
type Done struct {
	OK bool `json:"ok" jsonschema:"always true"`
}

// Inner is a nested object with an undescribed field.
type Inner struct {
	Described string `json:"described" jsonschema:"a described nested field"`
	Bare      string `json:"bare"`
}

// UndescribedIn has an undescribed field and a nested undescribed one.
type UndescribedIn struct {
	Name  string `json:"name"`
	Inner *Inner `json:"inner,omitempty" jsonschema:"an object whose field bare has no description"`
}

// UndescribedOut has an output field without a description.
type UndescribedOut struct {
	Count int `json:"count"`
}

// ModeIn is the input of root_oneof.
type ModeIn struct {
	ByID   string `json:"by_id,omitempty"`
	ByName string `json:"by_name,omitempty"`
}

// BadOut is what bad_output really returns: count as a string, though its
// outputSchema says integer.
type BadOut struct {
	Count string `json:"count"`
}

// PairIn has two fields a rule says are exclusive.
type PairIn struct {
	Cursor int `json:"cursor,omitempty" jsonschema:"page older entries before this index"`
	After  int `json:"after,omitempty" jsonschema:"only entries after this index"`
}

const rootOneOf = `{
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "by_id": {"type": "string", "description": "the object's id"},
    "by_name": {"type": "string", "description": "the object's name"}
  },
  "oneOf": [{"required": ["by_id"]}, {"required": ["by_name"]}]
}`

const countOutput = `{
  "type": "object",
  "properties": {"count": {"type": "integer", "description": "how many"}},
  "required": ["count"]
}`

func init() {
	sdk.Plugin("badsurface", "1.0.0", "Test plugin: tools that break the agent-UX rules.")
	sdk.Tool(sdk.ToolSpec{
		Name:        "no_headings",
		Description: "Does a thing when asked. Call it whenever.",
	}, func(_ *sdk.Call, _ Empty) (Done, error) { return Done{OK: true}, nil })
	sdk.Tool(sdk.ToolSpec{
		Name: "undescribed",
		Description: `Use when: testing field descriptions.
Required: name
Optional: inner
Next: nothing.
Avoid: describing fields.`,
	}, func(_ *sdk.Call, in UndescribedIn) (UndescribedOut, error) {
		return UndescribedOut{Count: len(in.Name)}, nil
	})
	sdk.Tool(sdk.ToolSpec{
		Name: "root_oneof",
		Description: `Use when: testing a root oneOf.
Required: by_id or by_name (exactly one)
Optional: none
Next: nothing.
Avoid: both by_id and by_name.`,
		InputSchema: json.RawMessage(rootOneOf),
		Rules: []abi.Rule{{ExactlyOne: []string{"by_id", "by_name"}, Code: abi.CodeAmbiguousTarget,
			Hint: "pass exactly one of by_id and by_name"}},
	}, func(_ *sdk.Call, _ ModeIn) (Done, error) { return Done{OK: true}, nil })
	sdk.Tool(sdk.ToolSpec{
		Name: "bad_output",
		Description: `Use when: testing output validation.
Required: none
Optional: none
Next: nothing.
Avoid: trusting count.`,
		OutputSchema: json.RawMessage(countOutput),
	}, func(_ *sdk.Call, _ Empty) (BadOut, error) { return BadOut{Count: "many"}, nil })
	sdk.Tool(sdk.ToolSpec{
		Name: "rule_not_in_schema",
		Description: `Use when: testing rules the schema lacks.
Required: none
Optional: cursor, after
Next: nothing.
Avoid: cursor with after.`,
		Rules: []abi.Rule{{AtMostOne: []string{"cursor", "after"}, Code: abi.CodeMixedPagination,
			Hint: "pass cursor or after, not both"}},
	}, func(_ *sdk.Call, _ PairIn) (Done, error) { return Done{OK: true}, nil })
}

func main() {}
