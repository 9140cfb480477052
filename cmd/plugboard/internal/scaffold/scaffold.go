// Package scaffold writes a new plugboard plugin: a Go module of its own
// with go.mod, main.go (one typed tool whose description follows the
// agent-facing template), main_test.go (the tool tested natively and
// through plugboard with sdktest), a Makefile (build, test, serve) and a
// .gitignore. It owns the templates and the naming rules of
// `plugboard plugin new`; the command decides the versions, the checkout
// and the plugboard command, and runs go mod tidy.
package scaffold

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"go/format"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"text/template"

	"github.com/plugboard/plugboard/abi"
)

// Modules the scaffold requires.
const (
	SDKModule = "github.com/plugboard/plugboard/sdk-guest"
	ABIModule = "github.com/plugboard/plugboard/abi"
)

// Plugin is what to scaffold.
type Plugin struct {
	// Name is the plugin's name (CheckName).
	Name string
	// Module is the module path; "" means Name.
	Module string
	// SDKVersion is the version of sdk-guest and abi go.mod requires.
	SDKVersion string
	// Checkout is the plugboard checkout whose sdk-guest and abi the
	// replace lines point at (absolute); "" writes none.
	Checkout string
	// Plugboard is the plugboard command the Makefile runs: a name on PATH
	// or an absolute path.
	Plugboard string
}

// Tool is the name of the scaffold's tool: the plugin's name in snake case,
// then _greet.
func (p Plugin) Tool() string {
	return strings.NewReplacer("-", "_", ".", "_").Replace(p.Name) + "_greet"
}

// maxToolName is the longest tool name every client accepts (the
// Anthropic API's limit), which the scaffold's tool keeps to.
const maxToolName = 64

var nameStart = regexp.MustCompile(`^[A-Za-z]`)

// CheckName checks a plugin name: the tool-name rules (1-128 of
// [A-Za-z0-9_.-], abi.ValidToolName), starting with a letter, since it
// also names the folder, the module and the .wasm file, and short enough
// for the tool name derived from it.
func CheckName(name string) error {
	if !abi.ValidToolName(name) {
		return fmt.Errorf("plugin name %q: use 1-128 letters, digits, '_', '-' and '.' (the tool-name rules)", name)
	}
	if !nameStart.MatchString(name) {
		return fmt.Errorf("plugin name %q: start it with a letter (it also names the folder, the module and the .wasm file)", name)
	}
	if tool := (Plugin{Name: name}).Tool(); len(tool) > maxToolName {
		return fmt.Errorf("plugin name %q is too long: its tool %q would be over %d characters, more than some clients accept",
			name, tool, maxToolName)
	}
	return nil
}

var modulePath = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._~/-]*$`)

// CheckModule checks a module path roughly as go mod does: letters, digits
// and ._~-, slash-separated elements; go mod tidy has the last word.
func CheckModule(path string) error {
	if !modulePath.MatchString(path) || strings.Contains(path, "//") || strings.HasSuffix(path, "/") ||
		strings.Contains(path, "/.") || strings.Contains(path, "./") {
		return fmt.Errorf("module path %q: use slash-separated elements of letters, digits and ._~- (example.com/me/%s)", path, filepath.Base(path))
	}
	return nil
}

//go:embed templates
var templates embed.FS

// files are what Write writes: the file's name, its template.
var files = []struct{ name, tmpl string }{
	{"go.mod", "go.mod.tmpl"},
	{"main.go", "main.go.tmpl"},
	{"main_test.go", "main_test.go.tmpl"},
	{"Makefile", "Makefile.tmpl"},
	{".gitignore", "gitignore.tmpl"},
}

// ErrNotEmpty is Write's error for a folder that holds something.
var ErrNotEmpty = errors.New("is not empty")

// Write writes the plugin into dir, which it creates; an existing dir must
// be an empty folder. It returns the names of the files written, in order.
// On an error it removes what it wrote.
func Write(dir string, p Plugin) ([]string, error) {
	if err := CheckName(p.Name); err != nil {
		return nil, err
	}
	if p.Module == "" {
		p.Module = p.Name
	}
	if err := CheckModule(p.Module); err != nil {
		return nil, err
	}
	if p.SDKVersion == "" || p.Plugboard == "" {
		return nil, errors.New("scaffold: SDKVersion and Plugboard are required")
	}
	rendered := make([][]byte, len(files))
	for i, f := range files {
		b, err := render(f.tmpl, p)
		if err != nil {
			return nil, err
		}
		rendered[i] = b
	}

	created := false
	switch entries, err := os.ReadDir(dir); {
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		created = true
	case err != nil:
		return nil, err
	case len(entries) > 0:
		return nil, fmt.Errorf("%s %w: plugin new writes only into a new or empty folder", dir, ErrNotEmpty)
	}
	names := make([]string, 0, len(files))
	for i, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.name), rendered[i], 0o644); err != nil {
			for _, n := range names {
				os.Remove(filepath.Join(dir, n))
			}
			if created {
				os.Remove(dir)
			}
			return nil, err
		}
		names = append(names, f.name)
	}
	return names, nil
}

// render executes one template for p; Go files come out gofmt-ed.
func render(name string, p Plugin) ([]byte, error) {
	t, err := template.New(name).Funcs(template.FuncMap{"modPath": modPath}).ParseFS(templates, "templates/"+name)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	data := struct {
		Plugin
		Tool string
	}{p, p.Tool()}
	if err := t.Execute(&buf, data); err != nil {
		return nil, err
	}
	if !strings.HasSuffix(name, ".go.tmpl") {
		return buf.Bytes(), nil
	}
	src, err := format.Source(buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("scaffold: %s does not format: %w", name, err)
	}
	return src, nil
}

// modPath is the directory elem of checkout as go.mod writes a path:
// quoted when it holds a space or a quote.
func modPath(checkout, elem string) string {
	p := filepath.ToSlash(filepath.Join(checkout, elem))
	if strings.ContainsAny(p, " \t\"'`") {
		return strconv.Quote(p)
	}
	return p
}
