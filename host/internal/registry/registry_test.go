package registry_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/registry"
	"github.com/plugboard/plugboard/host/internal/runtime"
	"github.com/plugboard/plugboard/host/internal/wasmfile"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins")
	}
	_, wasm := buildtest.Plugins(t, "plugins/echo", "testdata/plugins/rawpdk")
	ctx := context.Background()
	root := t.TempDir()
	first, second := filepath.Join(root, "a"), filepath.Join(root, "b")
	echo, err := os.ReadFile(wasm["echo"])
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(wasm["rawpdk"])
	if err != nil {
		t.Fatal(err)
	}
	// rawpdk without its embedded manifest: the registry must describe it.
	if raw, err = wasmfile.RemoveCustomSection(raw, abi.ManifestSection); err != nil {
		t.Fatal(err)
	}
	write := func(path string, b []byte) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(first, "echo.wasm"), echo)
	write(filepath.Join(second, "nested", "echo-copy.wasm"), echo)
	write(filepath.Join(second, "raw.wasm"), raw)
	write(filepath.Join(second, "broken.wasm"), []byte("definitely not wasm"))

	engine, err := runtime.New(ctx, runtime.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close(ctx)
	data := t.TempDir()
	var logs bytes.Buffer
	load := func() *registry.Registry {
		t.Helper()
		logs.Reset()
		reg, err := registry.Load(ctx, registry.Options{
			Dirs: []string{first, second}, DataDir: data, CacheKey: testKey, Engine: engine,
			Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		})
		if err != nil {
			t.Fatal(err)
		}
		return reg
	}
	reg := load()

	tool, ok := reg.Tool("echo")
	if !ok || tool.Plugin.Path != filepath.Join(first, "echo.wasm") || !tool.Plugin.FromSection {
		t.Fatalf("echo served by %+v, want the first directory's copy, manifest from its section", tool.Plugin)
	}
	rawTool, ok := reg.Tool("raw_upper")
	if !ok || rawTool.Plugin.FromSection {
		t.Fatalf("raw_upper not served from a described manifest: %+v", rawTool)
	}
	if rawTool.Plugin.Name() != "raw" {
		t.Errorf("a plugin without a declared name is named after its file: got %q", rawTool.Plugin.Name())
	}
	problems := map[string]string{}
	for _, p := range reg.Problems() {
		problems[filepath.Base(p.Path)] = p.Err.Error()
	}
	if !strings.Contains(problems["echo-copy.wasm"], "already served") {
		t.Errorf("duplicate tool not refused: %v", problems)
	}
	if problems["broken.wasm"] == "" {
		t.Errorf("broken module not reported: %v", problems)
	}
	line := logs.String()
	if !strings.Contains(line, "plugin not served") || !strings.Contains(line, filepath.Join(first, "echo.wasm")) ||
		!strings.Contains(line, filepath.Join(second, "nested", "echo-copy.wasm")) {
		t.Errorf("the duplicate log line does not name both plugins:\n%s", line)
	}
	if len(reg.Tools()) != 2 {
		t.Errorf("tools = %d, want 2 (echo, raw_upper)", len(reg.Tools()))
	}

	cached, err := filepath.Glob(filepath.Join(data, "manifests", "*.describe"))
	if err != nil || len(cached) != 1 {
		t.Fatalf("describe cache holds %v, want one manifest", cached)
	}
	// A second load reads the cached manifest instead of describing again:
	// an entry signed with the host's key naming another tool proves which
	// one is used.
	fromCache := []byte(`{"tools":[{"name":"from_cache","description":"d","inputSchema":{"type":"object"}}]}`)
	if err := os.WriteFile(cached[0], describeEntry(testKey, raw, fromCache), 0o600); err != nil {
		t.Fatal(err)
	}
	reg = load()
	if _, ok := reg.Tool("from_cache"); !ok {
		t.Error("second load did not use the describe cache")
	}
}

func TestReload(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins")
	}
	_, wasm := buildtest.Plugins(t, "plugins/echo", "conformance/mcpfixture")
	ctx := context.Background()
	dir := t.TempDir()
	copyTo := func(src, name string) {
		t.Helper()
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	copyTo(wasm["echo"], "echo.wasm")
	reg, err := registry.Load(ctx, registry.Options{Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	changes := 0
	reg.OnChange(func() { changes++ })
	echo, ok := reg.Tool("echo")
	if !ok {
		t.Fatalf("echo not served; problems %v", reg.Problems())
	}
	if changed, err := reg.Reload(ctx); changed || err != nil || changes != 0 {
		t.Errorf("reload of an unchanged directory: changed=%v err=%v callbacks=%d", changed, err, changes)
	}

	copyTo(wasm["mcpfixture"], "fixture.wasm")
	if changed, err := reg.Reload(ctx); !changed || err != nil || changes != 1 {
		t.Fatalf("reload after adding a plugin: changed=%v err=%v callbacks=%d", changed, err, changes)
	}
	if again, _ := reg.Tool("echo"); again.Plugin != echo.Plugin {
		t.Error("an unchanged plugin was loaded again")
	}
	if _, ok := reg.Tool("test_simple_text"); !ok {
		t.Error("the added plugin's tools are not served")
	}
	if r, ok := reg.Resource("test://static-text"); !ok || r.Def.MIMEType != "text/plain" {
		t.Errorf("resource test://static-text: %+v %v", r, ok)
	}
	if tm, ok := reg.Template("test://template/{id}/data"); !ok || !tm.Def.Completion {
		t.Errorf("template: %+v %v", tm, ok)
	}
	if p, ok := reg.Prompt("test_prompt_with_arguments"); !ok || !p.Def.Completion || len(p.Def.Arguments) != 2 {
		t.Errorf("prompt: %+v %v", p, ok)
	}
	if n := len(reg.Plugins()); n != 2 {
		t.Errorf("%d plugins, want 2", n)
	}

	// A second copy clashes on every name: refused, and reported.
	copyTo(wasm["mcpfixture"], "fixture-copy.wasm")
	if changed, _ := reg.Reload(ctx); !changed {
		t.Fatal("adding a copy changed nothing")
	}
	if probs := reg.Problems(); len(probs) == 0 || !strings.Contains(probs[0].Err.Error(), "already served") {
		t.Errorf("problems %v, want duplicate refusals", probs)
	}
	if err := os.Remove(filepath.Join(dir, "fixture-copy.wasm")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "fixture.wasm")); err != nil {
		t.Fatal(err)
	}
	if changed, _ := reg.Reload(ctx); !changed {
		t.Fatal("removing plugins changed nothing")
	}
	if _, ok := reg.Tool("test_simple_text"); ok {
		t.Error("a removed plugin's tool is still served")
	}
	if len(reg.Resources()) != 0 || len(reg.Templates()) != 0 || len(reg.Prompts()) != 0 || len(reg.Problems()) != 0 {
		t.Errorf("after removal: %d resources, %d templates, %d prompts, problems %v",
			len(reg.Resources()), len(reg.Templates()), len(reg.Prompts()), reg.Problems())
	}
}

func TestResolveAlias(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins")
	}
	dir, _ := buildtest.Plugins(t, "testdata/plugins/flaky")
	reg, err := registry.Load(context.Background(), registry.Options{Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"flaky_read", "mcp__flaky__read"} {
		if tool, ok := reg.Resolve(name); !ok || tool.Def.Name != "flaky_read" {
			t.Errorf("Resolve(%q) = %v, %v", name, tool.Def, ok)
		}
	}
	if _, ok := reg.Tool("mcp__flaky__read"); ok {
		t.Error("Tool answers an alias; only Resolve should")
	}
	if _, ok := reg.Resolve("mcp__flaky__write"); ok {
		t.Error("an undeclared alias resolved")
	}
}
