package abi

import (
	"strings"
	"testing"
)

func TestManifestV2Validate(t *testing.T) {
	good := func() Manifest {
		return Manifest{ABI: 2, Plugin: PluginInfo{Name: "p"},
			Resources:         []Resource{{URI: "test://a", Name: "a"}},
			ResourceTemplates: []ResourceTemplate{{URITemplate: "test://t/{id}", Name: "t"}},
			Prompts:           []Prompt{{Name: "p", Arguments: []PromptArgument{{Name: "x", Required: true}}}},
		}
	}
	m := good()
	if err := m.Validate(); err != nil {
		t.Fatalf("a manifest without tools but with resources and prompts: %v", err)
	}
	if m.MinVersion() != 2 {
		t.Errorf("MinVersion %d, want 2", m.MinVersion())
	}
	if v := (&Manifest{Tools: []Tool{{Name: "x"}}}).MinVersion(); v != 1 {
		t.Errorf("MinVersion of a tools-only manifest %d, want 1", v)
	}
	for _, tc := range []struct {
		name   string
		mutate func(*Manifest)
		want   string
	}{
		{"relative uri", func(m *Manifest) { m.Resources[0].URI = "a/b" }, "absolute"},
		{"duplicate uri", func(m *Manifest) { m.Resources = append(m.Resources, m.Resources[0]) }, "twice"},
		{"unnamed resource", func(m *Manifest) { m.Resources[0].Name = "" }, "name"},
		{"open brace", func(m *Manifest) { m.ResourceTemplates[0].URITemplate = "test://{id" }, "unclosed"},
		{"empty expression", func(m *Manifest) { m.ResourceTemplates[0].URITemplate = "test://{}" }, "empty"},
		{"relative template", func(m *Manifest) { m.ResourceTemplates[0].URITemplate = "{id}/x" }, "absolute"},
		{"prompt name", func(m *Manifest) { m.Prompts[0].Name = "a b" }, "name"},
		{"duplicate argument", func(m *Manifest) { m.Prompts[0].Arguments = append(m.Prompts[0].Arguments, PromptArgument{Name: "x"}) }, "argument"},
		{"nothing served", func(m *Manifest) { m.Resources, m.ResourceTemplates, m.Prompts = nil, nil, nil }, "no tools"},
	} {
		m := good()
		tc.mutate(&m)
		err := m.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error about %q", tc.name, err, tc.want)
		}
	}
}

func TestContentCheck(t *testing.T) {
	ok := []Content{
		{Type: "text"},
		{Type: "image", Data: []byte{1}, MIMEType: "image/png"},
		{Type: "audio", Data: []byte{1}, MIMEType: "audio/wav"},
		{Type: "resource", Resource: &ResourceContents{URI: "x://a", Text: "t"}},
		{Type: "resource_link", URI: "x://a", Name: "a"},
	}
	for _, c := range ok {
		if err := c.Check(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
	bad := []Content{
		{Type: "video"},
		{Type: "image", MIMEType: "image/png"},
		{Type: "audio", Data: []byte{1}},
		{Type: "resource"},
		{Type: "resource", Resource: &ResourceContents{Text: "t"}},
		{Type: "resource", Resource: &ResourceContents{URI: "x://a", Text: "t", Blob: []byte{1}}},
		{Type: "resource_link", URI: "x://a"},
	}
	for _, c := range bad {
		if err := c.Check(); err == nil {
			t.Errorf("%+v passed the check", c)
		}
	}
}
