package sdk

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/abi"
)

// newMCPRegistry is a plugin using every ABI version 2 feature.
func newMCPRegistry(t *testing.T) *registry {
	t.Helper()
	r := newRegistry()
	r.plugin("full", "1.0.0", "everything")
	register(r, ToolSpec{Name: "pic", Description: "Use when: you want a picture."}, func(c *Call, _ struct{}) (*Result, error) {
		return &Result{Content: []abi.Content{Text("a dot"), Image([]byte{1, 2, 3}, "image/png")}}, nil
	})
	register(r, ToolSpec{Name: "both", Description: "Use when: testing.", OutputSchema: json.RawMessage(`{"type":"object"}`)},
		func(c *Call, _ struct{}) (Result, error) {
			return Result{Structured: map[string]int{"n": 1}}, nil
		})
	r.resource(ResourceSpec{URI: "test://a", Name: "a", MIMEType: "text/plain"}, func(c *Call, uri string) ([]abi.ResourceContents, error) {
		return []abi.ResourceContents{{Text: "A"}}, nil
	})
	r.resourceTemplate(ResourceTemplateSpec{URITemplate: "test://items/{id}/{+rest}", Name: "items",
		Complete: func(c *Call, arg abi.CompletionArg, resolved map[string]string) (abi.Completion, error) {
			return abi.Completion{Values: []string{arg.Name + "=" + arg.Value + resolved["x"]}}, nil
		}}, func(c *Call, uri string, vars map[string]string) ([]abi.ResourceContents, error) {
		return []abi.ResourceContents{TextResource(uri, "text/plain", vars["id"]+"|"+vars["rest"])}, nil
	})
	r.prompt(PromptSpec{Name: "greet", Arguments: []abi.PromptArgument{{Name: "who", Required: true}}},
		func(c *Call, args map[string]string) (*abi.GetPromptResult, error) {
			if args["who"] == "nobody" {
				return nil, NotFound("nobody is there", "")
			}
			return &abi.GetPromptResult{Messages: []abi.PromptMessage{Message("user", Text("hello "+args["who"]))}}, nil
		})
	return r
}

func TestManifestV2(t *testing.T) {
	r := newMCPRegistry(t)
	m, err := r.manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.ABI != 2 {
		t.Errorf("abi %d, want 2 for a plugin serving resources and prompts", m.ABI)
	}
	if err := m.Validate(); err != nil {
		t.Errorf("manifest does not validate: %v", err)
	}
	if m.Tools[0].OutputSchema != nil {
		t.Errorf("a *Result tool has an output schema: %s", m.Tools[0].OutputSchema)
	}
	if string(m.Tools[1].OutputSchema) != `{"type":"object"}` {
		t.Errorf("declared output schema lost: %s", m.Tools[1].OutputSchema)
	}
	if len(m.Resources) != 1 || len(m.ResourceTemplates) != 1 || !m.ResourceTemplates[0].Completion ||
		len(m.Prompts) != 1 || m.Prompts[0].Completion || !m.Prompts[0].Arguments[0].Required {
		t.Errorf("manifest v2 parts: %+v %+v %+v", m.Resources, m.ResourceTemplates, m.Prompts)
	}
}

func TestResultContent(t *testing.T) {
	r := newMCPRegistry(t)
	res, raw := call(t, r, `{"params":{"name":"pic"},"context":{}}`)
	if res.IsError || len(res.Content) != 2 || res.Content[1].Type != "image" || string(res.Content[1].Data) != "\x01\x02\x03" || res.StructuredContent != nil {
		t.Errorf("content result %s", raw)
	}
	if !strings.Contains(raw, `"data":"AQID"`) {
		t.Errorf("image data not base64 in %s", raw)
	}
	res, raw = call(t, r, `{"params":{"name":"both"},"context":{}}`)
	if res.IsError || len(res.Content) != 0 || string(res.StructuredContent) != `{"n":1}` {
		t.Errorf("structured result %s", raw)
	}
	// A plain Extism host (no context) gets the text item too.
	res, raw = call(t, r, `{"params":{"name":"both"}}`)
	if len(res.Content) != 1 || res.Content[0].Text != `{"n":1}` {
		t.Errorf("structured result for a plain host %s", raw)
	}
}

func method(t *testing.T, r *registry, req string, out any) *abi.Envelope {
	t.Helper()
	b, err := r.call([]byte(req))
	if err != nil {
		t.Fatal(err)
	}
	var mr abi.MethodResult
	if err := json.Unmarshal(b, &mr); err != nil {
		t.Fatalf("not a method result: %s", b)
	}
	if mr.Error != nil {
		return mr.Error
	}
	if err := json.Unmarshal(mr.Result, out); err != nil {
		t.Fatalf("result %s: %v", mr.Result, err)
	}
	return nil
}

func TestMethods(t *testing.T) {
	r := newMCPRegistry(t)
	var rr abi.ReadResourceResult
	if env := method(t, r, `{"method":"resources/read","params":{"uri":"test://a"}}`, &rr); env != nil || rr.Contents[0].URI != "test://a" || rr.Contents[0].Text != "A" {
		t.Errorf("read resource: %+v %v", rr, env)
	}
	if env := method(t, r, `{"method":"resources/read","params":{"uri":"test://items/7/x/y?z"}}`, &rr); env != nil || rr.Contents[0].Text != "7|x/y?z" {
		t.Errorf("read template: %+v %v", rr, env)
	}
	if env := method(t, r, `{"method":"resources/read","params":{"uri":"test://b"}}`, &rr); env == nil || env.Code != abi.CodeNotFound {
		t.Errorf("read unknown resource: %v", env)
	}
	var gp abi.GetPromptResult
	if env := method(t, r, `{"method":"prompts/get","params":{"name":"greet","arguments":{"who":"ada"}}}`, &gp); env != nil ||
		!reflect.DeepEqual(gp.Messages, []abi.PromptMessage{{Role: "user", Content: abi.Content{Type: "text", Text: "hello ada"}}}) {
		t.Errorf("get prompt: %+v %v", gp, env)
	}
	if env := method(t, r, `{"method":"prompts/get","params":{"name":"greet","arguments":{"who":"nobody"}}}`, &gp); env == nil || env.Code != abi.CodeNotFound {
		t.Errorf("prompt failing: %v", env)
	}
	var cr abi.CompleteResult
	if env := method(t, r, `{"method":"completion/complete","params":{"ref":{"type":"ref/resource","uri":"test://items/{id}/{+rest}"},"argument":{"name":"id","value":"4"},"context":{"arguments":{"x":"!"}}}}`, &cr); env != nil ||
		!reflect.DeepEqual(cr.Completion.Values, []string{"id=4!"}) {
		t.Errorf("complete: %+v %v", cr, env)
	}
	if env := method(t, r, `{"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"who","value":""}}}`, &cr); env != nil ||
		cr.Completion.Values == nil || len(cr.Completion.Values) != 0 {
		t.Errorf("complete without a completer: %+v %v", cr, env)
	}
	if env := method(t, r, `{"method":"sampling/createMessage","params":{}}`, &cr); env == nil || env.Code != abi.CodeInvalidArgument {
		t.Errorf("unknown method: %v", env)
	}
}

func TestTemplatePattern(t *testing.T) {
	for _, tc := range []struct {
		tmpl, uri string
		vars      map[string]string
	}{
		{"file:///logs/{day}", "file:///logs/mon", map[string]string{"day": "mon"}},
		{"file:///logs/{day}", "file:///logs/mon/x", nil},
		{"x://{a}/{+b}", "x://1/2/3", map[string]string{"a": "1", "b": "2/3"}},
		{"x://{?q}", "x://?q=1", nil}, // other operators are not matched
		{"x://{+a}/{b}", "x://1/2/3", map[string]string{"a": "1/2", "b": "3"}},
		{"x://{a}.txt", "x://f.b.txt", map[string]string{"a": "f.b"}},
		{"x://{a}{b}", "x://ab", map[string]string{"a": "ab", "b": ""}},
		{"x://a.b/{c}", "x://aXb/1", nil}, // literals are literal
		{"x://{a}?v=1", "x://q?v=1", map[string]string{"a": "q"}},
		{"x://{a}", "y://q", nil},
		{"x://{a", "x://q", nil},
	} {
		parts, ok := templatePattern(tc.tmpl)
		tt := &resourceTemplate{parts: parts, matchable: ok}
		vars, ok := tt.vars(tc.uri)
		if tc.vars == nil {
			if ok {
				t.Errorf("%s matched %s: %v", tc.tmpl, tc.uri, vars)
			}
			continue
		}
		if !ok || !reflect.DeepEqual(vars, tc.vars) {
			t.Errorf("%s on %s: %v %v, want %v", tc.tmpl, tc.uri, vars, ok, tc.vars)
		}
	}
}
