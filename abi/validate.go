package abi

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// The name rules are written out rather than as regular expressions so that
// plugins, which link this package, do not link package regexp (issue 15).

// ValidToolName reports whether name is a valid MCP tool name: 1-128 of
// letters, digits, '_', '-', '.'.
func ValidToolName(name string) bool {
	if name == "" || len(name) > 128 {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !nameByte(name[i]) && name[i] != '_' {
			return false
		}
	}
	return true
}

// nameByte reports whether c is a letter, digit, '-' or '.'.
func nameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.'
}

// ValidAlias reports whether name is a valid tool alias: a valid tool name
// of the form mcp__<namespace>__<tool> (mcp__mail__send), the namespace
// letters, digits and '-' in words joined by single '_', the tool not
// starting with '_' (the regular expression
// ^mcp__[A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*__[A-Za-z0-9.-][A-Za-z0-9_.-]*$).
func ValidAlias(name string) bool {
	rest, ok := strings.CutPrefix(name, "mcp__")
	if !ok || !ValidToolName(name) {
		return false
	}
	// The namespace has no "__", so it ends at the first one.
	ns, tool, ok := strings.Cut(rest, "__")
	if !ok || ns == "" || tool == "" || ns[0] == '_' || ns[len(ns)-1] == '_' || tool[0] == '_' {
		return false
	}
	for i := 0; i < len(ns); i++ {
		if ns[i] == '.' || ns[i] == '_' && ns[i-1] == '_' {
			return false
		}
	}
	return true
}

// Caps on what one manifest may declare. Every client's tools/list carries
// what the host serves, so a manifest that declares without bound makes
// every client pay for it; the caps are far above what a real tool surface
// needs (the largest first-party manifest, tasks-read's, is 30 KiB).
const (
	// MaxManifestBytes caps a manifest's JSON, from the custom section or
	// from describe.
	MaxManifestBytes = 1 << 20
	// MaxManifestEntries caps the tools, resources, resource templates and
	// prompts of one manifest, each.
	MaxManifestEntries = 256
	// MaxNameBytes caps the plugin's name and every tool, prompt, resource
	// and argument name (MCP's tool names stop at 128).
	MaxNameBytes = 128
)

// CheckManifestSize refuses a manifest's raw JSON over MaxManifestBytes,
// before anything parses it.
func CheckManifestSize(raw []byte) error {
	if len(raw) > MaxManifestBytes {
		return fmt.Errorf("manifest is %d bytes; the cap is %d (%d KiB) per plugin", len(raw), MaxManifestBytes, MaxManifestBytes>>10)
	}
	return nil
}

// checkCounts refuses a manifest declaring more entries of a kind than
// MaxManifestEntries. It runs before the per-entry checks, so a manifest
// of 30,000 tools costs one error, not 30,000.
func (m *Manifest) checkCounts() error {
	var errs []error
	for _, c := range []struct {
		kind string
		n    int
	}{{"tools", len(m.Tools)}, {"resources", len(m.Resources)}, {"resource templates", len(m.ResourceTemplates)}, {"prompts", len(m.Prompts)}} {
		if c.n > MaxManifestEntries {
			errs = append(errs, fmt.Errorf("manifest declares %d %s; the cap is %d per plugin", c.n, c.kind, MaxManifestEntries))
		}
	}
	if len(m.Plugin.Name) > MaxNameBytes {
		errs = append(errs, fmt.Errorf("plugin name is %d bytes; the cap is %d", len(m.Plugin.Name), MaxNameBytes))
	}
	return errors.Join(errs...)
}

// Validate checks what the host needs to serve a manifest: a supported ABI
// version, at least one tool, no more entries than MaxManifestEntries,
// valid and unique names, descriptions, and input schemas that are JSON
// objects of type "object". Style rules (description template, field docs)
// belong to the conformance kit, not here.
func (m *Manifest) Validate() error {
	if err := m.checkCounts(); err != nil {
		return err
	}
	var errs []error
	if m.ABI > Version {
		errs = append(errs, fmt.Errorf("manifest declares abi %d; this host supports up to %d", m.ABI, Version))
	}
	if len(m.Tools) == 0 && len(m.Resources) == 0 && len(m.ResourceTemplates) == 0 && len(m.Prompts) == 0 {
		errs = append(errs, errors.New("manifest declares no tools"))
	}
	seen := map[string]bool{}
	for _, t := range m.Tools {
		seen[t.Name] = false
	}
	for i, t := range m.Tools {
		where := fmt.Sprintf("tool %d (%q)", i, t.Name)
		if !ValidToolName(t.Name) {
			errs = append(errs, fmt.Errorf("%s: name must be 1-128 of [A-Za-z0-9_.-]", where))
		}
		if seen[t.Name] {
			errs = append(errs, fmt.Errorf("%s: name declared twice", where))
		}
		seen[t.Name] = true
		for _, a := range t.Aliases {
			if !ValidAlias(a) {
				errs = append(errs, fmt.Errorf("%s: alias %q must have the form mcp__<namespace>__<tool> (letters, digits, '-', '_', '.')", where, a))
				continue
			}
			if _, taken := seen[a]; taken {
				errs = append(errs, fmt.Errorf("%s: alias %q is already a tool name or alias", where, a))
			}
			seen[a] = true
		}
		if t.Description == "" {
			errs = append(errs, fmt.Errorf("%s: description is empty", where))
		}
		if err := objectSchema(t.InputSchema, true); err != nil {
			errs = append(errs, fmt.Errorf("%s: inputSchema: %w", where, err))
		}
		if len(t.OutputSchema) > 0 {
			if err := objectSchema(t.OutputSchema, false); err != nil {
				errs = append(errs, fmt.Errorf("%s: outputSchema: %w", where, err))
			}
		}
		if t.Idempotency != nil && t.Idempotency.KeyField == "" {
			errs = append(errs, fmt.Errorf("%s: idempotency.key_field is empty", where))
		}
		if t.TimeoutMS < 0 {
			errs = append(errs, fmt.Errorf("%s: timeout_ms is negative", where))
		}
		for j, r := range t.Rules {
			if err := r.Validate(); err != nil {
				errs = append(errs, fmt.Errorf("%s: rules[%d]: %w", where, j, err))
			}
		}
		if t.When != "" && !slices.Contains(conditions, t.When) {
			errs = append(errs, fmt.Errorf("%s: when %q is not one of %v", where, t.When, conditions))
		}
	}
	errs = append(errs, m.validateV2()...)
	errs = append(errs, m.Needs.validate()...)
	errs = append(errs, m.validateRoles()...)
	return errors.Join(errs...)
}

// validateV2 checks resources, resource templates and prompts: absolute
// URIs, well-formed templates, names, and no duplicates.
func (m *Manifest) validateV2() []error {
	var errs []error
	uris := map[string]bool{}
	for i, r := range m.Resources {
		where := fmt.Sprintf("resource %d (%q)", i, r.URI)
		if !absoluteURI(r.URI) {
			errs = append(errs, fmt.Errorf("%s: uri must be an absolute URI", where))
		}
		if r.Name == "" || len(r.Name) > MaxNameBytes {
			errs = append(errs, fmt.Errorf("%s: name must be 1-%d bytes", where, MaxNameBytes))
		}
		if uris[r.URI] {
			errs = append(errs, fmt.Errorf("%s: uri declared twice", where))
		}
		uris[r.URI] = true
	}
	templates := map[string]bool{}
	for i, t := range m.ResourceTemplates {
		where := fmt.Sprintf("resource template %d (%q)", i, t.URITemplate)
		if err := checkURITemplate(t.URITemplate); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
		}
		if t.Name == "" || len(t.Name) > MaxNameBytes {
			errs = append(errs, fmt.Errorf("%s: name must be 1-%d bytes", where, MaxNameBytes))
		}
		if templates[t.URITemplate] {
			errs = append(errs, fmt.Errorf("%s: uriTemplate declared twice", where))
		}
		templates[t.URITemplate] = true
	}
	prompts := map[string]bool{}
	for i, p := range m.Prompts {
		where := fmt.Sprintf("prompt %d (%q)", i, p.Name)
		if !ValidToolName(p.Name) {
			errs = append(errs, fmt.Errorf("%s: name must be 1-128 of [A-Za-z0-9_.-]", where))
		}
		if prompts[p.Name] {
			errs = append(errs, fmt.Errorf("%s: name declared twice", where))
		}
		prompts[p.Name] = true
		args := map[string]bool{}
		for _, a := range p.Arguments {
			if a.Name == "" || len(a.Name) > MaxNameBytes || args[a.Name] {
				errs = append(errs, fmt.Errorf("%s: argument names must be 1-%d bytes and unique, got %q", where, MaxNameBytes, a.Name))
			}
			args[a.Name] = true
		}
	}
	return errs
}

// checkURITemplate checks what the host needs of an RFC 6570 template: an
// absolute URI once its expressions are removed, and balanced, non-empty,
// non-nested braces.
func checkURITemplate(t string) error {
	var literal strings.Builder
	open := false
	start := 0
	for i := 0; i < len(t); i++ {
		switch t[i] {
		case '{':
			if open {
				return errors.New("uriTemplate has nested braces")
			}
			open, start = true, i
		case '}':
			if !open || i == start+1 {
				return errors.New("uriTemplate has an unmatched or empty brace")
			}
			open = false
			literal.WriteString("x")
		default:
			if !open {
				literal.WriteByte(t[i])
			}
		}
	}
	if open {
		return errors.New("uriTemplate has an unclosed brace")
	}
	if !absoluteURI(literal.String()) {
		return errors.New("uriTemplate must be an absolute URI template")
	}
	return nil
}

func objectSchema(raw json.RawMessage, mustBeObjectType bool) error {
	if len(raw) == 0 {
		return errors.New("missing")
	}
	var s map[string]any
	if err := json.Unmarshal(raw, &s); err != nil {
		return fmt.Errorf("not a JSON object: %w", err)
	}
	if mustBeObjectType && s["type"] != "object" {
		return fmt.Errorf(`top-level "type" must be "object", got %v`, s["type"])
	}
	return nil
}
