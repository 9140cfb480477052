package schema

import (
	"strings"
	"testing"

	"github.com/plugboard/plugboard/abi"
)

const testSchema = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["text", "opts"],
  "properties": {
    "text": {"type": "string"},
    "count": {"type": "integer", "minimum": 1},
    "opts": {
      "type": "object",
      "additionalProperties": false,
      "required": ["mode"],
      "properties": {
        "mode": {"type": "string", "enum": ["fast", "slow"]},
        "tags": {"type": "array", "items": {"type": "string"}}
      }
    }
  }
}`

func TestValidateNamesTheField(t *testing.T) {
	v := New("demo", []byte(testSchema))
	cases := []struct {
		name, args, code, field string
	}{
		{"missing top-level", `{"opts":{"mode":"fast"}}`, abi.CodeMissingRequired, "text"},
		{"missing nested", `{"text":"x","opts":{}}`, abi.CodeMissingRequired, "opts.mode"},
		{"wrong type", `{"text":5,"opts":{"mode":"fast"}}`, abi.CodeInvalidArgument, "text"},
		{"enum", `{"text":"x","opts":{"mode":"medium"}}`, abi.CodeInvalidArgument, "opts.mode"},
		{"array item", `{"text":"x","opts":{"mode":"fast","tags":["a",3]}}`, abi.CodeInvalidArgument, "opts.tags[]"},
		{"minimum", `{"text":"x","count":0,"opts":{"mode":"fast"}}`, abi.CodeInvalidArgument, "count"},
		{"unknown field", `{"text":"x","opts":{"mode":"fast"},"colour":"red"}`, abi.CodeInvalidArgument, "colour"},
		{"unknown nested", `{"text":"x","opts":{"mode":"fast","speed":1}}`, abi.CodeInvalidArgument, "opts.speed"},
		{"not an object", `[1,2]`, abi.CodeInvalidArgument, ""},
		{"not JSON", `{"text":`, abi.CodeInvalidArgument, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := v.Validate([]byte(c.args))
			if env == nil {
				t.Fatalf("%s accepted", c.args)
			}
			if env.Code != c.code {
				t.Errorf("code = %s, want %s (%s)", env.Code, c.code, env.Message)
			}
			got, _ := env.Details["field"].(string)
			if got != c.field {
				t.Errorf("field = %q, want %q (message %q)", got, c.field, env.Message)
			}
			if env.Hint == "" {
				t.Error("empty hint")
			}
			if c.field != "" && !strings.Contains(env.Hint, c.field) {
				t.Errorf("hint %q does not name %q", env.Hint, c.field)
			}
		})
	}
	if env := v.Validate([]byte(`{"text":"x","opts":{"mode":"slow","tags":["a"]}}`)); env != nil {
		t.Fatalf("valid arguments refused: %+v", env)
	}
}

func TestEmptyArgumentsAreAnEmptyObject(t *testing.T) {
	v := New("demo", []byte(`{"type":"object","properties":{"a":{"type":"string"}}}`))
	for _, args := range []string{"", "null", "{}"} {
		if env := v.Validate([]byte(args)); env != nil {
			t.Errorf("%q refused: %v", args, env)
		}
	}
}

// TestValidateRefusesDeepNesting: arguments nesting deeper than MaxDepth
// are invalid_argument naming the limit, found by a flat scan before any
// decoding — a million levels take no stack — whatever the schema allows
// and wherever the depth is (an unconstrained field, an unknown one, a
// string-typed one); MaxDepth levels pass.
func TestValidateRefusesDeepNesting(t *testing.T) {
	nest := func(levels int, open, end string) string {
		return strings.Repeat(open, levels) + "1" + strings.Repeat(end, levels)
	}
	open := New("open", []byte(`{"type":"object","properties":{"doc":{},"s":{"type":"string"}}}`))
	closed := New("closed", []byte(`{"type":"object","additionalProperties":false,"properties":{"s":{"type":"string"}}}`))
	for _, c := range []struct {
		v    *Validator
		args string
	}{
		{open, `{"doc":` + nest(MaxDepth, "[", "]") + `}`},
		{open, `{"doc":` + nest(1_000_000, `{"a":`, "}") + `}`},
		{open, `{"s":` + nest(5_000, "[", "]") + `}`},
		{closed, `{"other":` + nest(MaxDepth, "[", "]") + `}`},
		{closed, nest(100_000, "[", "]")},
	} {
		env := c.v.Validate([]byte(c.args))
		if env == nil || env.Code != abi.CodeInvalidArgument || env.Details["max_depth"] != MaxDepth ||
			!strings.Contains(env.Hint, "64 levels") || !strings.Contains(env.Message, "64 levels") || len(env.Message) > 200 {
			t.Errorf("%.40s…: %+v", c.args, env)
		}
	}
	// MaxDepth levels, the arguments object included, are accepted.
	if env := open.Validate([]byte(`{"doc":` + nest(MaxDepth-1, "[", "]") + `}`)); env != nil {
		t.Errorf("%d levels refused: %+v", MaxDepth, env)
	}
}
