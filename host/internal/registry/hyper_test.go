package registry_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/registry"
	"github.com/plugboard/plugboard/host/internal/runtime"
	"github.com/plugboard/plugboard/host/internal/wasmfile"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// TestHyperV2 loads a hyper-mcp v2 plugin as hyper-mcp's tooling builds it
// (no embedded manifest): the registry recognises it by its exports, lists
// its tools, resources, templates and prompts through its list exports,
// caches the lists like describe, and serves it as a v2 plugin.
func TestHyperV2(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins")
	}
	_, wasm := buildtest.Plugins(t, "testdata/plugins/hyperv2", "testdata/plugins/hyperuser")
	ctx := context.Background()
	b, err := os.ReadFile(wasm["hyperv2"])
	if err != nil {
		t.Fatal(err)
	}
	if b, err = wasmfile.RemoveCustomSection(b, abi.ManifestSection); err != nil {
		t.Fatal(err)
	}
	dir, data := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hyper.wasm"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	engine, err := runtime.New(ctx, runtime.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close(ctx)
	reg, err := registry.Load(ctx, registry.Options{Dirs: []string{dir}, DataDir: data, CacheKey: testKey, Engine: engine})
	if err != nil {
		t.Fatal(err)
	}
	if p := reg.Problems(); len(p) != 0 {
		t.Fatalf("problems: %v", p)
	}
	var names []string
	for _, tool := range reg.Tools() {
		names = append(names, tool.Def.Name)
	}
	if !slices.Equal(names, []string{"v2_echo", "v2_fail", "v2_needs_key"}) {
		t.Errorf("tools %v", names)
	}
	echo, _ := reg.Tool("v2_echo")
	if echo.Plugin.FromSection || echo.Plugin.Name() != "hyper" || echo.Def.Title != "Echo" ||
		echo.Def.Annotations == nil || !echo.Def.Annotations.ReadOnlyHint {
		t.Errorf("v2_echo: %+v from %+v", echo.Def, echo.Plugin)
	}
	if r, ok := reg.Resource("hyper://greeting"); !ok || r.Def.MIMEType != "text/plain" {
		t.Errorf("resource: %+v %v", r, ok)
	}
	if tm, ok := reg.Template("hyper://items/{id}"); !ok || !tm.Def.Completion {
		t.Errorf("template (complete is exported, so it completes): %+v %v", tm, ok)
	}
	if p, ok := reg.Prompt("v2_greet"); !ok || !p.Def.Completion || len(p.Def.Arguments) != 1 || !p.Def.Arguments[0].Required {
		t.Errorf("prompt: %+v %v", p, ok)
	}
	rt, err := echo.Plugin.Runtime(ctx)
	if err != nil || !registry.IsHyperV2(rt) {
		t.Fatalf("runtime %v, v2 %v", err, err == nil && registry.IsHyperV2(rt))
	}

	cached, err := filepath.Glob(filepath.Join(data, "manifests", "*.describe"))
	if err != nil || len(cached) != 1 {
		t.Fatalf("list cache holds %v, want one manifest", cached)
	}
	fromCache := []byte(`{"tools":[{"name":"from_cache","description":"d","inputSchema":{"type":"object"}}]}`)
	if err := os.WriteFile(cached[0], describeEntry(testKey, b, fromCache), 0o600); err != nil {
		t.Fatal(err)
	}
	again, err := registry.Load(ctx, registry.Options{Dirs: []string{dir}, DataDir: data, CacheKey: testKey, Engine: engine})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := again.Tool("from_cache"); !ok {
		t.Error("a second load listed the plugin again instead of reading the cache")
	}

	// Built by plugboard (manifest embedded from the lists): served alike.
	built, err := registry.Load(ctx, registry.Options{Dirs: []string{filepath.Dir(wasm["hyperv2"])}, Engine: engine})
	if err != nil {
		t.Fatal(err)
	}
	if tool, ok := built.Tool("v2_fail"); !ok || !tool.Plugin.FromSection {
		t.Errorf("built v2 plugin: %+v %v; problems %v", tool, ok, built.Problems())
	}
	// A foreign plugin declares the capabilities of the extism:host/user
	// functions it imports, for the grants policy to decide on.
	user, ok := built.Tool("user_ask")
	if !ok || !slices.Equal(slices.Sorted(slices.Values(user.Plugin.Manifest.Capabilities)), []string{abi.CapElicitation, abi.CapSampling}) {
		t.Errorf("hyperuser capabilities: %+v", user.Plugin)
	}
}

// TestRefresh: a plugin's lists are listed again on request; lists that
// came back different replace the served definitions and run OnChange,
// lists that came back the same change nothing and tell no one.
func TestRefresh(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins")
	}
	dir, _ := buildtest.Plugins(t, "testdata/plugins/hyperv2", "testdata/plugins/hyperuser")
	ctx := context.Background()
	engine, err := runtime.New(ctx, runtime.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close(ctx)
	reg, err := registry.Load(ctx, registry.Options{Dirs: []string{dir}, Engine: engine})
	if err != nil {
		t.Fatal(err)
	}
	changes := 0
	reg.OnChange(func() { changes++ })

	// hyperv2 lists the same tools every time.
	before, _ := reg.Tool("v2_echo")
	if ok, err := reg.Refresh(ctx, before.Plugin); !ok || err != nil || changes != 0 {
		t.Fatalf("Refresh of unchanged lists = %v, %v; %d OnChange calls, want 0", ok, err, changes)
	}
	if after, _ := reg.Tool("v2_echo"); after.Def != before.Def {
		t.Error("unchanged lists replaced the served definitions")
	}

	// hyperuser's listing says when it was made: every listing differs.
	notify, _ := reg.Tool("user_notify_tools")
	if ok, err := reg.Refresh(ctx, notify.Plugin); !ok || err != nil || changes != 1 {
		t.Fatalf("Refresh of changed lists = %v, %v; %d OnChange calls, want 1", ok, err, changes)
	}
	after, ok := reg.Tool("user_notify_tools")
	if !ok || after.Def == notify.Def || after.Def.Title == notify.Def.Title || after.Plugin != notify.Plugin {
		t.Errorf("after refresh: %+v (before %+v)", after.Def, notify.Def)
	}
	if p, ok := reg.Prompt("v2_greet"); !ok || !p.Def.Completion {
		t.Errorf("prompt after refresh: %+v %v", p, ok)
	}
}

// TestClashOneLine: a plugin whose names another plugin already serves is
// reported once — one log line and one problem naming every clashing name,
// the plugin kept and the setting that resolves it.
func TestClashOneLine(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins")
	}
	_, wasm := buildtest.Plugins(t, "testdata/plugins/hyperv2")
	b, err := os.ReadFile(wasm["hyperv2"])
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"a.wasm", "b.wasm"} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var logs bytes.Buffer
	reg, err := registry.Load(context.Background(), registry.Options{Dirs: []string{dir}, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for line := range strings.Lines(logs.String()) {
		if strings.Contains(line, "level=ERROR") {
			lines = append(lines, line)
		}
	}
	if len(lines) != 1 {
		t.Fatalf("%d error lines, want 1:\n%s", len(lines), logs.String())
	}
	line := lines[0]
	for _, want := range []string{"plugin=hyperv2", filepath.Join(dir, "b.wasm"), filepath.Join(dir, "a.wasm"),
		"tool v2_echo", "tool v2_fail", "tool v2_needs_key", "prompt v2_greet", "resource hyper://greeting",
		"remove one of the two files"} {
		if !strings.Contains(line, want) {
			t.Errorf("the clash line does not name %q:\n%s", want, line)
		}
	}
	probs := reg.Problems()
	if len(probs) != 1 || probs[0].Path != filepath.Join(dir, "b.wasm") || !strings.Contains(probs[0].Err.Error(), "already served") {
		t.Errorf("problems %v, want one for b.wasm", probs)
	}
	if len(reg.Plugins()) != 1 || len(reg.Tools()) != 3 {
		t.Errorf("%d plugins, %d tools served", len(reg.Plugins()), len(reg.Tools()))
	}
}
