package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/abi"
	sdk "github.com/plugboard/plugboard/sdk-guest"
)

func TestEcho(t *testing.T) {
	text := `he said "hi" <b> & left` + "\n\t☃"
	args, _ := json.Marshal(Input{Text: text})
	raw, err := sdk.HandleCall([]byte(`{"params":{"name":"echo","arguments":` + string(args) + `},"context":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	var res abi.CallResult
	var out Output
	if err := json.Unmarshal(raw, &res); err != nil || res.IsError || json.Unmarshal(res.StructuredContent, &out) != nil || out.Text != text {
		t.Errorf("echo result = %s", raw)
	}
}

func TestManifest(t *testing.T) {
	raw, err := sdk.Describe()
	if err != nil {
		t.Fatal(err)
	}
	var m abi.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Tools) != 1 || m.Tools[0].Name != "echo" || m.Plugin.Name != "echo" {
		t.Fatalf("manifest = %s", raw)
	}
	lines := strings.Split(m.Tools[0].Description, "\n")
	for i, prefix := range []string{"Use when: ", "Required: text", "Optional: none", "Next: ", "Avoid: "} {
		if len(lines) != 5 || !strings.HasPrefix(lines[i], prefix) {
			t.Fatalf("description does not follow the template:\n%s", m.Tools[0].Description)
		}
	}
	for _, s := range []json.RawMessage{m.Tools[0].InputSchema, m.Tools[0].OutputSchema} {
		var sch struct {
			Properties map[string]struct{ Description string }
		}
		if err := json.Unmarshal(s, &sch); err != nil || sch.Properties["text"].Description == "" {
			t.Errorf("schema without a text description: %s", s)
		}
	}
}
