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
	"fmt"
	"os"
	"slices"

	"github.com/plugboard/plugboard/host/internal/jsonfile"
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
	return Parse(path, data)
}

// Parse reads a grants file's content; name (the file) starts every
// error, which is placed at its line and column and names the field.
func Parse(name string, data []byte) (*Policy, error) {
	doc, err := jsonfile.Parse(name, data)
	if err != nil {
		return nil, err
	}
	return ParseDoc(doc)
}

// ParseDoc reads a grants file's content from a parsed document: a whole
// grants file, or the grants section of plugboard's configuration file
// (host/config), whose errors then carry that file's positions and paths.
func ParseDoc(doc *jsonfile.Doc) (*Policy, error) {
	var p Policy
	filled, err := doc.Decode(&p)
	if !filled {
		return nil, err
	}
	errs := []error{err}
	switch p.Default {
	case "":
		p.Default = DefaultDeclared
	case DefaultDeclared, DefaultNone:
	default:
		errs = append(errs, doc.Errorf(jsonfile.Path{"default"}, "%q is no default; use %q or %q", p.Default, DefaultDeclared, DefaultNone))
	}
	if err := jsonfile.Join(errs...); err != nil {
		return nil, err
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
