package abi

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
)

// toolName is MCP's tool-name rule: 1-128 of letters, digits, '_', '-', '.'.
var toolName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// ValidToolName reports whether name is a valid MCP tool name.
func ValidToolName(name string) bool { return toolName.MatchString(name) }

// Validate checks what the host needs to serve a manifest: a supported ABI
// version, at least one tool, valid and unique names, descriptions, and input
// schemas that are JSON objects of type "object". Style rules (description
// template, field docs) belong to the conformance kit, not here.
func (m *Manifest) Validate() error {
	var errs []error
	if m.ABI > Version {
		errs = append(errs, fmt.Errorf("manifest declares abi %d; this host supports up to %d", m.ABI, Version))
	}
	if len(m.Tools) == 0 {
		errs = append(errs, errors.New("manifest declares no tools"))
	}
	seen := map[string]bool{}
	for i, t := range m.Tools {
		where := fmt.Sprintf("tool %d (%q)", i, t.Name)
		if !ValidToolName(t.Name) {
			errs = append(errs, fmt.Errorf("%s: name must be 1-128 of [A-Za-z0-9_.-]", where))
		}
		if seen[t.Name] {
			errs = append(errs, fmt.Errorf("%s: name declared twice", where))
		}
		seen[t.Name] = true
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
		if t.When != "" && !slices.Contains(Conditions, t.When) {
			errs = append(errs, fmt.Errorf("%s: when %q is not one of %v", where, t.When, Conditions))
		}
	}
	return errors.Join(errs...)
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
