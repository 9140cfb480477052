// Package grants owns the operator's decision of which host capabilities
// each plugin receives. A plugin never receives a capability it did not
// declare; the operator's grants file can only narrow what it declared.
// Without a file every plugin receives what it declares, which is right
// for the first-party plugins a host ships with.
//
// It must not know what a capability unlocks: the runtime and boardapi
// enforce them.
package grants

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
)

// Default policies for plugins the file does not name.
const (
	// DefaultDeclared grants an unnamed plugin what it declares.
	DefaultDeclared = "declared"
	// DefaultNone grants an unnamed plugin nothing gated.
	DefaultNone = "none"
)

// Policy maps plugin names to the capabilities the operator allows them.
type Policy struct {
	// Default applies to plugins not in Plugins: "declared" or "none".
	Default string `json:"default"`
	// Plugins lists, per plugin name, the capabilities it may receive.
	Plugins map[string][]string `json:"plugins"`
}

// Declared is the policy without a grants file.
func Declared() *Policy { return &Policy{Default: DefaultDeclared} }

// Load reads a grants file:
//
//	{"default": "none", "plugins": {"tasks-read": ["board.read"]}}
//
// "" returns Declared().
func Load(path string) (*Policy, error) {
	if path == "" {
		return Declared(), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("grants file: %w", err)
	}
	var p Policy
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("grants file %s: %w", path, err)
	}
	switch p.Default {
	case "":
		p.Default = DefaultDeclared
	case DefaultDeclared, DefaultNone:
	default:
		return nil, fmt.Errorf("grants file %s: default is %q; use %q or %q", path, p.Default, DefaultDeclared, DefaultNone)
	}
	return &p, nil
}

// For returns the capabilities plugin receives out of declared, and those
// it declared but does not receive.
func (p *Policy) For(plugin string, declared []string) (granted, withheld []string) {
	allowed, named := p.Plugins[plugin]
	for _, c := range declared {
		if (!named && p.Default == DefaultDeclared) || slices.Contains(allowed, c) {
			granted = append(granted, c)
		} else {
			withheld = append(withheld, c)
		}
	}
	return granted, withheld
}
