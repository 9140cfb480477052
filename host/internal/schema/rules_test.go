package schema

import (
	"testing"

	"github.com/plugboard/plugboard/abi"
)

// followUpSchema mirrors the shape of a mode-dependent tool: the rules give
// the codes, the schema the same constraints for clients that read it.
const followUpSchema = `{
  "type": "object",
  "properties": {
    "action": {"type": "string", "enum": ["send", "queue", "cancel"]},
    "attempt_id": {"type": "string"},
    "session_id": {"type": "string"},
    "prompt": {"type": "string"},
    "cursor": {"type": "integer"},
    "after_entry_index": {"type": "integer"}
  },
  "required": ["action"],
  "additionalProperties": false,
  "oneOf": [{"required": ["attempt_id"]}, {"required": ["session_id"]}],
  "not": {"required": ["cursor", "after_entry_index"]}
}`

var followUpRules = []abi.Rule{
	{ExactlyOne: []string{"attempt_id", "session_id"}, Code: abi.CodeAmbiguousTarget, Hint: "pass exactly one of attempt_id or session_id"},
	{When: &abi.RuleWhen{Field: "action", Values: []string{"send", "queue"}}, Require: []string{"prompt"}, Hint: "pass prompt"},
	{When: &abi.RuleWhen{Field: "action", Values: []string{"cancel"}}, Forbid: []string{"prompt"}, Hint: "drop prompt"},
	{AtMostOne: []string{"cursor", "after_entry_index"}, Code: abi.CodeMixedPagination, Hint: "use cursor or after_entry_index"},
}

func TestRules(t *testing.T) {
	v := New("follow_up", []byte(followUpSchema), followUpRules...)
	cases := []struct {
		name, args, code, field string
	}{
		{"both targets", `{"action":"send","attempt_id":"a","session_id":"s","prompt":"p"}`, abi.CodeAmbiguousTarget, "session_id"},
		{"no target", `{"action":"send","prompt":"p"}`, abi.CodeMissingRequired, "attempt_id"},
		{"send without prompt", `{"action":"send","attempt_id":"a"}`, abi.CodeMissingRequired, "prompt"},
		{"null prompt is absent", `{"action":"queue","attempt_id":"a","prompt":null}`, abi.CodeMissingRequired, "prompt"},
		{"cancel with prompt", `{"action":"cancel","attempt_id":"a","prompt":"p"}`, abi.CodeInvalidArgument, "prompt"},
		{"mixed pagination", `{"action":"cancel","attempt_id":"a","cursor":1,"after_entry_index":2}`, abi.CodeMixedPagination, "after_entry_index"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := v.Validate([]byte(c.args))
			if env == nil || env.Code != c.code || env.Details["field"] != c.field || env.Hint == "" {
				t.Fatalf("Validate(%s) = %+v; want %s on %s", c.args, env, c.code, c.field)
			}
		})
	}
	for _, ok := range []string{`{"action":"send","attempt_id":"a","prompt":"p"}`, `{"action":"cancel","session_id":"s"}`} {
		if env := v.Validate([]byte(ok)); env != nil {
			t.Errorf("Validate(%s) = %+v", ok, env)
		}
	}
}

func TestRuleValidate(t *testing.T) {
	for _, r := range followUpRules {
		if err := r.Validate(); err != nil {
			t.Errorf("%+v: %v", r, err)
		}
	}
	bad := []abi.Rule{
		{Hint: "h"},
		{ExactlyOne: []string{"a"}, Hint: "h"},
		{Require: []string{"a"}, Forbid: []string{"b"}, Hint: "h"},
		{Require: []string{"a"}},
		{Require: []string{"a"}, Code: "made_up", Hint: "h"},
		{Require: []string{"a"}, When: &abi.RuleWhen{Field: "x"}, Hint: "h"},
	}
	for _, r := range bad {
		if r.Validate() == nil {
			t.Errorf("accepted %+v", r)
		}
	}
}
