package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/abi"
	sdk "github.com/plugboard/plugboard/sdk-guest"
)

func call(t *testing.T, args map[string]any) (Output, *abi.Envelope) {
	t.Helper()
	a, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := sdk.HandleCall([]byte(`{"params":{"name":"text_diff","arguments":` + string(a) + `},"context":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	var res abi.CallResult
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		var env abi.Envelope
		if err := json.Unmarshal(res.StructuredContent, &env); err != nil {
			t.Fatal(err)
		}
		return Output{}, &env
	}
	var out Output
	if err := json.Unmarshal(res.StructuredContent, &out); err != nil {
		t.Fatal(err)
	}
	return out, nil
}

func TestTextDiff(t *testing.T) {
	out, env := call(t, map[string]any{"old_text": "one\ntwo\nthree\n", "new_text": "one\n2\nthree\nfour"})
	if env != nil {
		t.Fatal(env)
	}
	want := Output{
		Diff:    "--- a\n+++ b\n@@ -1,3 +1,4 @@\n one\n-two\n+2\n three\n+four\n\\ No newline at end of file\n",
		Added:   2,
		Removed: 1,
		Hunks:   1,
	}
	if out != want {
		t.Errorf("got %+v\nwant %+v", out, want)
	}

	out, _ = call(t, map[string]any{"old_text": "x\n", "new_text": "y\n", "context_lines": 0, "old_label": "old/f.go", "new_label": "new/f.go"})
	if out.Diff != "--- old/f.go\n+++ new/f.go\n@@ -1 +1 @@\n-x\n+y\n" {
		t.Errorf("labels and context: %q", out.Diff)
	}

	out, _ = call(t, map[string]any{"old_text": "same\n", "new_text": "same\n"})
	if out != (Output{Identical: true}) {
		t.Errorf("identical: %+v", out)
	}
}

func TestTextDiffInvalidArguments(t *testing.T) {
	big := strings.Repeat("x", maxTextBytes+1)
	cases := []struct {
		args  map[string]any
		field string
	}{
		{map[string]any{"old_text": big, "new_text": ""}, "old_text"},
		{map[string]any{"old_text": "", "new_text": big}, "new_text"},
		{map[string]any{"old_text": "a", "new_text": "b", "context_lines": -1}, "context_lines"},
		{map[string]any{"old_text": "a", "new_text": "b", "context_lines": 10001}, "context_lines"},
		{map[string]any{"old_text": "a", "new_text": "b", "old_label": "x\ny"}, "old_label"},
		{map[string]any{"old_text": "a", "new_text": "b", "new_label": "x\r"}, "new_label"},
		{map[string]any{"old_text": "a", "new_text": "b", "context": 3}, "context"},
		{map[string]any{"old_text": 5, "new_text": "b"}, "old_text"},
	}
	for _, tc := range cases {
		_, env := call(t, tc.args)
		if env == nil || env.Code != abi.CodeInvalidArgument || env.Details["field"] != tc.field || env.Hint == "" {
			t.Errorf("field %s: envelope %+v", tc.field, env)
		}
	}
}

// TestManifest checks the agent-facing surface: the description template
// and a description on every input and output field.
func TestManifest(t *testing.T) {
	raw, err := sdk.Describe()
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Tools []struct {
			Name         string
			Description  string
			InputSchema  schema
			OutputSchema schema
			Annotations  abi.Annotations
		}
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Tools) != 1 || m.Tools[0].Name != "text_diff" || !m.Tools[0].Annotations.ReadOnlyHint {
		t.Fatalf("tools = %+v", m.Tools)
	}
	lines := strings.Split(m.Tools[0].Description, "\n")
	for i, prefix := range []string{"Use when: ", "Required: ", "Optional: ", "Next: ", "Avoid: "} {
		if len(lines) != 5 || !strings.HasPrefix(lines[i], prefix) {
			t.Fatalf("description does not follow the template:\n%s", m.Tools[0].Description)
		}
	}
	in, out := m.Tools[0].InputSchema, m.Tools[0].OutputSchema
	if strings.Join(in.Required, ",") != "old_text,new_text" {
		t.Errorf("required = %v", in.Required)
	}
	for name, s := range in.Properties {
		if s.Description == "" {
			t.Errorf("input %s has no description", name)
		}
	}
	for name, s := range out.Properties {
		if s.Description == "" {
			t.Errorf("output %s has no description", name)
		}
	}
	if len(in.Properties) != 5 || len(out.Properties) != 5 {
		t.Errorf("%d input and %d output properties", len(in.Properties), len(out.Properties))
	}
}

type schema struct {
	Description string
	Required    []string
	Properties  map[string]schema
}
