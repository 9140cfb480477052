package clients

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/conformance/scenario"
	"github.com/plugboard/plugboard/host/plugin"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// TestForeignPluginsTypeScript: foreign plugins the host serves as they
// are answer through the official TypeScript SDK's Client — a strict
// parser of the Extism MCP call input (testdata/plugins/strictparse), and
// tools whose input schemas the host cannot compile, served with their
// arguments left to the plugin (testdata/plugins/badschema) — and the
// SDK's tools/list, which checks every tool's schema and fails whole over
// one it refuses, still lists them all.
func TestForeignPluginsTypeScript(t *testing.T) {
	if testing.Short() {
		t.Skip("installs Node.js clients, builds the binary and the plugins, runs a server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir, err := Install(ctx, buildtest.Root(t))
	if err != nil {
		t.Fatal(err)
	}
	bin := buildtest.Binary(t)
	// The modules as foreign plugins come: without the manifest section
	// `plugboard plugin build` embeds (its abi field would make them
	// plugboard's), so the host describes them.
	_, built := buildtest.Plugins(t, "testdata/plugins/strictparse", "testdata/plugins/badschema")
	plugins := t.TempDir()
	for name, path := range built {
		b, err := os.ReadFile(path)
		if err == nil {
			b, err = plugin.RemoveCustomSection(b, abi.ManifestSection)
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(plugins, name+".wasm"), b, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	work := t.TempDir()
	log := &clitest.SyncBuffer{}
	c, err := ConnectTypeScript(ctx, dir, scenario.Endpoint{Binary: bin, Args: []string{"serve", "--plugins", plugins, "--data", filepath.Join(work, "data")},
		Dir: work, Env: os.Environ(), Stderr: log})
	if err != nil {
		t.Fatalf("connect: %v\nserver log:\n%s", err, log.String())
	}
	defer c.Close()
	tools, err := c.ListTools(ctx)
	if err != nil {
		t.Fatalf("tools/list: %v\nserver log (last lines):\n%s", err, lastLines(log.String(), 15))
	}
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if want := []string{"bad_required_inside", "bad_type", "strict_echo"}; !slices.Equal(names, want) {
		t.Errorf("tools/list %v, want %v", names, want)
	}
	for tool, want := range map[string]string{
		"strict_echo":         "strict: hi",
		"bad_required_inside": "bad_required_inside: hi",
		"bad_type":            "bad_type: hi",
	} {
		res, err := c.CallTool(ctx, tool, map[string]any{"text": "hi"})
		if err != nil || res.IsError || len(res.Content) != 1 {
			t.Errorf("%s: %v %+v\nserver log (last lines):\n%s", tool, err, res, lastLines(log.String(), 15))
			continue
		}
		if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != want {
			t.Errorf("%s: %+v, want %q", tool, res.Content[0], want)
		}
	}
}
