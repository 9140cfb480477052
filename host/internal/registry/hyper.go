package registry

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/plugboard/plugboard/host/internal/shape"
	"slices"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/runtime"
)

// Plugins of other hosts load unchanged. A module with a describe export is
// a plugboard plugin or an Extism MCP plugin (hyper-mcp's first interface):
// describe gives the manifest and call serves. A module without one that
// exports list_tools and call_tool speaks hyper-mcp's current interface
// (v2), where every MCP method is an export of its own taking
// {"request": <the MCP params>, "context": {"id", "_meta"}} (the lists take
// only the context) and answering the MCP result as it is:
//
//	list_tools, call_tool                   tools/list, tools/call
//	list_resources, list_resource_templates resources/list, resources/templates/list
//	read_resource                           resources/read
//	list_prompts, get_prompt                prompts/list, prompts/get
//	complete                                completion/complete (ref.type "prompt" or "resource")
//
// The registry makes such a module's manifest from its lists (cached by
// sha256 like describe); the dispatcher calls its exports (IsHyperV2).

// Exports of hyper-mcp's v2 plugin interface.
const (
	HyperListTools             = shape.HyperListTools
	HyperCallTool              = shape.HyperCallTool
	HyperListResources         = "list_resources"
	HyperListResourceTemplates = "list_resource_templates"
	HyperReadResource          = "read_resource"
	HyperListPrompts           = "list_prompts"
	HyperGetPrompt             = "get_prompt"
	HyperComplete              = "complete"
)

// IsHyperV2 reports whether a compiled plugin speaks hyper-mcp's v2
// interface: list_tools and call_tool, and no describe.
func IsHyperV2(rt *runtime.Plugin) bool {
	return !rt.HasExport(abi.ExportDescribe) && rt.HasExport(HyperListTools) && rt.HasExport(HyperCallTool)
}

// HyperContext is the request context a v2 export receives beside the
// request: MCP's request id and _meta.
type HyperContext struct {
	ID   string         `json:"id"`
	Meta map[string]any `json:"_meta"`
}

// HyperInput is the input of a v2 export.
type HyperInput struct {
	Request any          `json:"request,omitempty"`
	Context HyperContext `json:"context"`
}

// userCapabilities are the capabilities a foreign plugin declares by
// importing these functions of runtime.UserModule.
var userCapabilities = map[string]string{
	"create_message":     abi.CapSampling,
	"create_elicitation": abi.CapElicitation,
}

// Describe returns the manifest of a compiled plugin as JSON: its describe
// output, or a manifest made of a v2 plugin's lists. A plugin that predates
// plugboard (its manifest names no ABI version) declares the capabilities
// of the runtime.UserModule functions it imports — sampling, elicitation —
// so the grants policy decides on them as on declared ones.
func Describe(ctx context.Context, rt *runtime.Plugin) ([]byte, error) {
	if IsHyperV2(rt) {
		return describeHyper(ctx, rt)
	}
	out, err := rt.Describe(ctx)
	if err != nil {
		return nil, err
	}
	if err := abi.CheckManifestSize(out); err != nil {
		return nil, err
	}
	caps := importedCapabilities(rt)
	if len(caps) == 0 {
		return out, nil
	}
	var m abi.Manifest
	if json.Unmarshal(out, &m) != nil || m.ABI != 0 {
		return out, nil // plugboard's own (or unreadable: the caller says why)
	}
	m.Capabilities = mergeCapabilities(m.Capabilities, caps)
	return json.Marshal(m)
}

// UserCapability returns the capability a function of runtime.UserModule
// needs, "" for one that needs none.
func UserCapability(name string) string { return userCapabilities[name] }

func importedCapabilities(rt *runtime.Plugin) []string {
	var caps []string
	for _, name := range rt.UserImports() {
		if c, ok := userCapabilities[name]; ok && !slices.Contains(caps, c) {
			caps = append(caps, c)
		}
	}
	return caps
}

func mergeCapabilities(have, add []string) []string {
	for _, c := range add {
		if !slices.Contains(have, c) {
			have = append(have, c)
		}
	}
	return have
}

// describeHyper lists a v2 plugin's tools, and its resources, resource
// templates and prompts where it exports those lists, into a manifest.
func describeHyper(ctx context.Context, rt *runtime.Plugin) ([]byte, error) {
	list := func(export string, into any) error {
		in, err := json.Marshal(HyperInput{Context: HyperContext{ID: "plugboard-" + export, Meta: map[string]any{}}})
		if err != nil {
			return err
		}
		out, err := rt.Call(ctx, export, in, runtime.CallOptions{})
		if err != nil {
			return fmt.Errorf("%s: %w", export, err)
		}
		if err := abi.CheckManifestSize(out); err != nil {
			return fmt.Errorf("%s: %w", export, err)
		}
		if err := json.Unmarshal(out, into); err != nil {
			return fmt.Errorf("%s answered what is not its MCP result: %w", export, err)
		}
		return nil
	}
	var m abi.Manifest
	var tools struct {
		Tools []abi.Tool `json:"tools"`
	}
	if err := list(HyperListTools, &tools); err != nil {
		return nil, err
	}
	for i := range tools.Tools {
		t := &tools.Tools[i]
		if t.Description == "" { // optional in MCP, required to serve here
			t.Description = cmp.Or(t.Title, t.Name)
		}
	}
	m.Tools = tools.Tools
	// The other lists are optional: a plugin that fails one still serves
	// its tools.
	var errs []error
	if rt.HasExport(HyperListResources) {
		var r struct {
			Resources []abi.Resource `json:"resources"`
		}
		errs = append(errs, list(HyperListResources, &r))
		m.Resources = r.Resources
	}
	completes := rt.HasExport(HyperComplete)
	if rt.HasExport(HyperListResourceTemplates) {
		var r struct {
			Templates []abi.ResourceTemplate `json:"resourceTemplates"`
		}
		errs = append(errs, list(HyperListResourceTemplates, &r))
		for i := range r.Templates {
			r.Templates[i].Completion = completes
		}
		m.ResourceTemplates = r.Templates
	}
	if rt.HasExport(HyperListPrompts) {
		var r struct {
			Prompts []abi.Prompt `json:"prompts"`
		}
		errs = append(errs, list(HyperListPrompts, &r))
		for i := range r.Prompts {
			r.Prompts[i].Completion = completes
		}
		m.Prompts = r.Prompts
	}
	if !rt.HasExport(HyperReadResource) {
		m.Resources, m.ResourceTemplates = nil, nil
	}
	if !rt.HasExport(HyperGetPrompt) {
		m.Prompts = nil
	}
	if err := errors.Join(errs...); err != nil && len(m.Tools) == 0 {
		return nil, err
	}
	m.Capabilities = importedCapabilities(rt)
	return json.Marshal(m)
}

// Refresh lists what plugin p serves again — its describe, or a v2
// plugin's lists — because the plugin said it changed (the list-changed
// functions of runtime.UserModule). Lists that came back different are
// served: a new snapshot is built and OnChange callbacks run (the
// transport re-adds the plugin's entries, and clients get list_changed).
// Lists that came back the same change nothing and tell no client: a
// plugin saying "changed" on every call must not make every connected
// client list everything again. It reports whether p is still served (a
// plugin reloaded or removed meanwhile is left alone). The plugin's name
// and capabilities stay as loaded.
func (r *Registry) Refresh(ctx context.Context, p *Plugin) (bool, error) {
	rt, err := p.Runtime(ctx)
	if err != nil {
		return false, err
	}
	raw, err := Describe(ctx, rt)
	if err != nil {
		return false, fmt.Errorf("listing plugin %s again: %w", p.Name(), err)
	}
	var m abi.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return false, fmt.Errorf("listing plugin %s again: manifest is not valid JSON: %w", p.Name(), err)
	}
	if err := m.Validate(); err != nil {
		return false, fmt.Errorf("listing plugin %s again: invalid manifest: %w", p.Name(), err)
	}
	r.mu.Lock()
	current := false
	for _, e := range r.files {
		current = current || e.plugin == p
	}
	if current && sameLists(&p.Manifest, &m) {
		r.mu.Unlock()
		return true, nil
	}
	if current {
		// Snapshots are built under r.mu, the only readers of these lists;
		// entries of older snapshots keep pointing into the old slices.
		p.Manifest.Tools, p.Manifest.Resources = m.Tools, m.Resources
		p.Manifest.ResourceTemplates, p.Manifest.Prompts = m.ResourceTemplates, m.Prompts
		r.relisted = true
	}
	r.mu.Unlock()
	if !current {
		return false, nil
	}
	if _, err := r.Reload(ctx); err != nil {
		return true, err
	}
	return true, nil
}

// sameLists reports whether two manifests list the same tools, resources,
// resource templates and prompts, field for field.
func sameLists(a, b *abi.Manifest) bool {
	lists := func(m *abi.Manifest) []byte {
		out, err := json.Marshal([]any{m.Tools, m.Resources, m.ResourceTemplates, m.Prompts})
		if err != nil {
			return nil // never equal to another: the lists are served again
		}
		return out
	}
	x, y := lists(a), lists(b)
	return x != nil && y != nil && bytes.Equal(x, y)
}
