package abi

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

func TestCodeRegistry(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range Codes() {
		if seen[c.Code] {
			t.Errorf("code %s registered twice", c.Code)
		}
		seen[c.Code] = true
		if c.Meaning == "" || (c.Origin != "spec" && c.Origin != "host") {
			t.Errorf("code %s: meaning %q, origin %q", c.Code, c.Meaning, c.Origin)
		}
		if strings.ToLower(c.Code) != c.Code || strings.ContainsAny(c.Code, " -") {
			t.Errorf("code %s is not snake_case", c.Code)
		}
	}
	for _, want := range []string{CodePluginTimeout, CodeRequestInProgress, CodeNoSessionYet} {
		if info, _ := Lookup(want); !info.Retryable {
			t.Errorf("%s must be retryable", want)
		}
	}
	env := NewEnvelope(CodePluginTimeout, "m", "h")
	if !env.Retryable || env.Code != CodePluginTimeout {
		t.Errorf("NewEnvelope did not take retryable from the registry: %+v", env)
	}
	defer func() {
		if recover() == nil {
			t.Error("NewEnvelope accepted an unregistered code")
		}
	}()
	NewEnvelope("made_up", "m", "h")
}

func TestManifestValidate(t *testing.T) {
	good := Manifest{ABI: Version, Plugin: PluginInfo{Name: "p"}, Tools: []Tool{{
		Name: "t", Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`),
	}}}
	if err := good.Validate(); err != nil {
		t.Fatalf("valid manifest refused: %v", err)
	}
	bad := []struct {
		name   string
		mutate func(*Manifest)
		want   string
	}{
		{"future abi", func(m *Manifest) { m.ABI = Version + 1 }, "abi"},
		{"no tools", func(m *Manifest) { m.Tools = nil }, "no tools"},
		{"bad name", func(m *Manifest) { m.Tools[0].Name = "has space" }, "name"},
		{"duplicate", func(m *Manifest) { m.Tools = append(m.Tools, m.Tools[0]) }, "twice"},
		{"no description", func(m *Manifest) { m.Tools[0].Description = "" }, "description"},
		{"array schema", func(m *Manifest) { m.Tools[0].InputSchema = json.RawMessage(`{"type":"array"}`) }, "object"},
		{"broken schema", func(m *Manifest) { m.Tools[0].InputSchema = json.RawMessage(`{`) }, "inputSchema"},
		{"empty key field", func(m *Manifest) { m.Tools[0].Idempotency = &Idempotency{} }, "key_field"},
		{"too many tools", func(m *Manifest) {
			for i := 0; i < MaxManifestEntries; i++ {
				m.Tools = append(m.Tools, Tool{Name: fmt.Sprintf("t%d", i), Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`)})
			}
		}, "257 tools; the cap is 256"},
		{"too many prompts", func(m *Manifest) { m.Prompts = make([]Prompt, MaxManifestEntries+1) }, "prompts; the cap"},
		{"long plugin name", func(m *Manifest) { m.Plugin.Name = strings.Repeat("p", MaxNameBytes+1) }, "plugin name is 129 bytes"},
		{"long prompt name", func(m *Manifest) { m.Prompts = []Prompt{{Name: strings.Repeat("p", MaxNameBytes+1)}} }, "name must be 1-128"},
	}
	for _, c := range bad {
		m := good
		m.Tools = append([]Tool(nil), good.Tools...)
		c.mutate(&m)
		err := m.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Validate() = %v, want an error mentioning %q", c.name, err, c.want)
		}
	}
}

func TestToolAliases(t *testing.T) {
	for alias, ok := range map[string]bool{
		"mcp__mail__send": true, "mcp__system__log_decision": true, "mcp__my-ns__x.y": true, "mcp__a_b__c": true,
		"mail_send": false, "mcp__mail": false, "mcp____send": false, "mcp__mail__": false, "mcp__ma__il__send": true,
		"MCP__mail__send": false, "mcp__mail__se nd": false,
	} {
		if ValidAlias(alias) != ok {
			t.Errorf("ValidAlias(%q) = %v, want %v", alias, !ok, ok)
		}
	}
	schema := json.RawMessage(`{"type":"object"}`)
	m := Manifest{Tools: []Tool{
		{Name: "mail_send", Description: "d", InputSchema: schema, Aliases: []string{"mcp__mail__send"}},
		{Name: "mail_read", Description: "d", InputSchema: schema, Aliases: []string{"mcp__mail__send", "bad"}},
	}}
	err := m.Validate()
	if err == nil || !strings.Contains(err.Error(), `alias "mcp__mail__send" is already`) || !strings.Contains(err.Error(), `alias "bad" must have the form`) {
		t.Fatalf("Validate: %v", err)
	}
	m.Tools[1].Aliases = []string{"mcp__mail__read"}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
}

// The registries are handed out as copies: a caller that changes what it
// got changes neither the next copy nor Lookup.
func TestRegistriesAreCopies(t *testing.T) {
	c := Codes()
	c[0].Retryable = !c[0].Retryable
	c[0].Code = "changed"
	if Codes()[0].Code == "changed" {
		t.Error("Codes() shares its backing array")
	}
	if info, ok := Lookup(CodeInvalidArgument); !ok || info.Retryable {
		t.Errorf("Lookup(%s) = %+v, %v after changing a copy", CodeInvalidArgument, info, ok)
	}
	ops := BoardOps()
	ops[OpListTasks] = CapMail
	delete(ops, OpCreateTask)
	if capability, ok := BoardOpCapability(OpListTasks); !ok || capability != CapBoardRead {
		t.Errorf("BoardOpCapability(%s) = %q, %v after changing a copy", OpListTasks, capability, ok)
	}
	if _, ok := BoardOps()[OpCreateTask]; !ok {
		t.Error("BoardOps() shares its map")
	}
	for op, capability := range BoardOps() {
		if got, ok := BoardOpCapability(op); !ok || got != capability {
			t.Errorf("BoardOpCapability(%s) = %q, %v; BoardOps says %q", op, got, ok, capability)
		}
	}
	if _, ok := BoardOpCapability("made_up"); ok {
		t.Error("BoardOpCapability accepted an unknown operation")
	}
	h := HostFunctions()
	h[0].Capability = "changed"
	if HostFunctions()[0].Capability == "changed" {
		t.Error("HostFunctions() shares its backing array")
	}
	for _, list := range []func() []string{Methods, Conditions, LogLevels} {
		l := list()
		l[0] = "changed"
		if list()[0] == "changed" {
			t.Error("a registry of names shares its backing array")
		}
	}
	m := Manifest{Plugin: PluginInfo{Name: "p", Version: "1"}, Tools: []Tool{{Name: "t", Description: "Use when: testing.", InputSchema: json.RawMessage(`{"type":"object"}`), When: WhenAttemptContext}}}
	if err := m.Validate(); err != nil {
		t.Errorf("a tool with when %q: %v", WhenAttemptContext, err)
	}
}

func TestSchemeURI(t *testing.T) {
	for _, s := range []string{
		"", "x", ":", ":x", "1a:b", "a1:b", "a+.-:b", "-a:b", "file:///a/b", "mem://x/y?z=1#f",
		"https://example.com/a%20b", "https://example.com/a%2", "https://example.com/a%zz",
		"x:a?b=%zz", "x:a?b=%zz#%zz", "x:a#f?%zz", "x:a#%41", "a b:c", "x:a\x7fb", "x:a\nb",
		"plugin://tasks/{id}", "tasks/x", "/abs/path", "urn:isbn:0451450523", "HTTP://X",
	} {
		u, err := url.Parse(s)
		if want := err == nil && u.Scheme != ""; schemeURI(s) != want {
			t.Errorf("schemeURI(%q) = %v, net/url says %v (%v)", s, !want, want, err)
		}
	}
}
