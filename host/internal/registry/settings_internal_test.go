package registry

import (
	"slices"
	"testing"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/runtime"
)

// TestServedTool: the settings' prefix, rename and skip as one tool
// definition sees them; descriptions and the rest are unchanged.
func TestServedTool(t *testing.T) {
	def := &abi.Tool{Name: "send", Description: "Use when: mailing.", Aliases: []string{"mcp__mail__send"}}
	for _, c := range []struct {
		settings Settings
		name     string
		aliases  []string
	}{
		{Settings{}, "send", []string{"mcp__mail__send"}},
		{Settings{Prefix: "gh_"}, "gh_send", []string{"mcp__mail__gh_send"}},
		{Settings{Prefix: "gh_", Rename: map[string]string{"send": "post"}}, "post", []string{"mcp__mail__gh_send"}},
		{Settings{Rename: map[string]string{"send": "post"}}, "post", []string{"mcp__mail__send"}},
		{Settings{Prefix: "_x"}, "_xsend", nil}, // mcp__mail___xsend is no alias
		{Settings{Skip: []string{"send"}}, "", nil},
	} {
		p := &Plugin{settings: c.settings}
		got := p.servedTool(def)
		if c.name == "" {
			if got != nil {
				t.Errorf("%+v: served %s, want skipped", c.settings, got.Name)
			}
			continue
		}
		if got.Name != c.name || !slices.Equal(got.Aliases, c.aliases) || got.Description != def.Description {
			t.Errorf("%+v: %s %v %q, want %s %v", c.settings, got.Name, got.Aliases, got.Description, c.name, c.aliases)
		}
		if def.Name != "send" || def.Aliases[0] != "mcp__mail__send" {
			t.Fatalf("the manifest's definition changed: %+v", def)
		}
	}
}

// TestOptions: a plugin is compiled with its settings' options, the
// capabilities granted to it, and stateful when either its settings or its
// manifest ask for it.
func TestOptions(t *testing.T) {
	p := &Plugin{granted: []string{"board.read"}, settings: Settings{Options: runtime.PluginOptions{MaxInstances: 2}}}
	if o := p.options(); o.Stateful || o.MaxInstances != 2 || !slices.Equal(o.Grants, []string{"board.read"}) {
		t.Errorf("options %+v", o)
	}
	p.Manifest.Stateful = true
	if !p.options().Stateful {
		t.Error("the manifest's stateful is not applied")
	}
	p = &Plugin{settings: Settings{Options: runtime.PluginOptions{Stateful: true}}}
	if !p.options().Stateful {
		t.Error("the settings' stateful is not applied")
	}
}
