package dispatch

import (
	"strings"
	"testing"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/registry"
)

// TestFunctionInput: a plain function gets the arguments as JSON, or the
// text of its input field.
func TestFunctionInput(t *testing.T) {
	for _, c := range []struct {
		fn   registry.Function
		args string
		want string
		code string
	}{
		{registry.Function{}, `{"a":1}`, `{"a":1}`, ""},
		{registry.Function{}, ``, `{}`, ""},
		{registry.Function{InputField: "text"}, `{"text":"héllo\n","other":2}`, "héllo\n", ""},
		{registry.Function{InputField: "text"}, `{}`, "", abi.CodeMissingRequired},
		{registry.Function{InputField: "text"}, `{"text":5}`, "", abi.CodeInvalidArgument},
	} {
		got, env := functionInput(c.fn, []byte(c.args))
		switch {
		case c.code != "" && (env == nil || env.Code != c.code || env.Details["field"] != c.fn.InputField):
			t.Errorf("%+v %s: %v, want %s", c.fn, c.args, env, c.code)
		case c.code == "" && (env != nil || string(got) != c.want):
			t.Errorf("%+v %s: %q %v, want %q", c.fn, c.args, got, env, c.want)
		}
	}
}

// TestFunctionResult: a plain function's output as its settings read it,
// and the output they cannot carry as the plugin's failure.
func TestFunctionResult(t *testing.T) {
	tool := registry.Tool{Def: &abi.Tool{Name: "count_vowels"}, Plugin: &registry.Plugin{Manifest: abi.Manifest{Plugin: abi.PluginInfo{Name: "plainfn"}}}}
	schema := []byte(`{"type":"object","properties":{"count":{"type":"integer"}},"required":["count"]}`)
	for _, c := range []struct {
		fn               registry.Function
		out              string
		text, structured string
		failure          string
	}{
		{registry.Function{Output: registry.FunctionText}, "olleh", "olleh", "", ""},
		{registry.Function{Output: registry.FunctionText}, "", "", "", ""},
		{registry.Function{Output: registry.FunctionText}, "\xff\xfe", "", "", "2 bytes that are not UTF-8 text"},
		{registry.Function{Output: registry.FunctionJSON}, `{ "count": 2 }`, `{"count":2}`, `{"count":2}`, ""},
		{registry.Function{Output: registry.FunctionJSON}, `[1, 2]`, `[1,2]`, "", ""},
		{registry.Function{Output: registry.FunctionJSON}, `count: 2`, "", "", "what is not JSON"},
		{registry.Function{Output: registry.FunctionJSON, OutputSchema: schema}, `{"count": 2}`, `{"count":2}`, `{"count":2}`, ""},
		{registry.Function{Output: registry.FunctionJSON, OutputSchema: schema}, `[2]`, "", "", "JSON that is not an object"},
		{registry.Function{Output: registry.FunctionJSON, OutputSchema: schema}, `{"count": "two"}`, "", "", "does not match its output_schema"},
	} {
		c.fn.Export = "count_vowels"
		res := functionResult(tool, c.fn, []byte(c.out))
		if c.failure != "" {
			if !res.IsError() || res.Envelope.Code != abi.CodePluginFailed || !strings.Contains(res.Envelope.Message, c.failure) ||
				!strings.Contains(res.Envelope.Hint, "plugins.settings.plainfn.tools") {
				t.Errorf("%q: %+v, want plugin_failed saying %q", c.out, res.Envelope, c.failure)
			}
			continue
		}
		if res.IsError() || len(res.Content) != 1 || res.Content[0].Text != c.text || string(res.Structured) != c.structured {
			t.Errorf("%q: %+v %s %v, want %q %s", c.out, res.Content, res.Structured, res.Envelope, c.text, c.structured)
		}
	}
}
