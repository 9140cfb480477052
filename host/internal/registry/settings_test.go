package registry_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plugboard/plugboard/host/internal/registry"
	"github.com/plugboard/plugboard/host/internal/runtime"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// TestSettings: the operator's per-plugin settings decide the names a
// plugin's tools are served under (prefix, rename, skip), sources add
// plugins under their settings' names, a folder plugin a source's name
// claims is refused, and SetSettings + Reload rebind only what changed.
func TestSettings(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins")
	}
	dir, wasm := buildtest.Plugins(t, "plugins/echo", "testdata/plugins/rawpdk")
	ctx := context.Background()
	engine, err := runtime.New(ctx, runtime.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close(ctx)
	// A source's module: echo's bytes, kept elsewhere as the host's cache
	// would keep them.
	echo, _ := os.ReadFile(wasm["echo"])
	pinned := filepath.Join(t.TempDir(), "sources", "0123.wasm")
	os.MkdirAll(filepath.Dir(pinned), 0o755)
	os.WriteFile(pinned, echo, 0o644)

	var logs bytes.Buffer
	reg, err := registry.Load(ctx, registry.Options{Dirs: []string{dir}, DataDir: t.TempDir(), Engine: engine,
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Settings: map[string]registry.Settings{
			"echo":   {Prefix: "my_", CallTimeout: 3 * time.Second},
			"rawpdk": {Skip: []string{"raw_upper"}},
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close(ctx)
	tool, ok := reg.Tool("my_echo")
	if !ok || tool.PluginName != "echo" || tool.Plugin.CallTimeout() != 3*time.Second {
		t.Fatalf("my_echo: %+v", tool)
	}
	if _, ok := reg.Tool("echo"); ok {
		t.Error("echo served under its own name too")
	}
	if _, ok := reg.Tool("raw_upper"); ok {
		t.Error("raw_upper served though skipped")
	}
	first := tool.Plugin

	// New settings: echo renamed, a source added under its settings' name,
	// a source that failed its lock check, a setting naming no plugin.
	reg.SetSettings(map[string]registry.Settings{
		"echo":    {Rename: map[string]string{"echo": "say"}},
		"pinned":  {Prefix: "p_"},
		"twin":    {Prefix: "t_"},
		"nowhere": {Prefix: "n_"},
	}, []registry.Source{
		{Name: "pinned", Origin: "https://example.com/echo.wasm", Path: pinned},
		{Name: "twin", Origin: "oci://example.com/echo:1", Path: pinned}, // the same cached module
		{Name: "bad", Origin: "oci://example.com/bad:1", Err: errors.New("plugin bad does not match plugboard.lock")},
	})
	logs.Reset()
	if changed, err := reg.Reload(ctx); err != nil || !changed {
		t.Fatalf("reload: %v %v", changed, err)
	}
	say, ok := reg.Tool("say")
	if !ok || say.PluginName != "echo" || say.Plugin == first || say.Plugin.CallTimeout() != 0 {
		t.Fatalf("say: %+v", say)
	}
	p, ok := reg.Tool("p_echo")
	if !ok || p.Plugin.Name() != "pinned" || p.Plugin.Origin != "https://example.com/echo.wasm" || p.Plugin.Path != pinned {
		t.Fatalf("p_echo: %+v", p)
	}
	if twin, ok := reg.Tool("t_echo"); !ok || twin.Plugin.Name() != "twin" || twin.Plugin == p.Plugin {
		t.Errorf("t_echo: %+v", twin)
	}
	if _, ok := reg.Tool("raw_upper"); !ok {
		t.Error("raw_upper not served once its settings are gone")
	}
	problems := reg.Problems()
	if len(problems) != 1 || problems[0].Path != "oci://example.com/bad:1" || !strings.Contains(problems[0].Err.Error(), "does not match") {
		t.Errorf("problems %v", problems)
	}
	if !strings.Contains(logs.String(), "plugin settings name no plugin") || !strings.Contains(logs.String(), "plugin=nowhere") {
		t.Errorf("no warning about plugins.settings.nowhere:\n%s", logs.String())
	}

	// Unchanged settings: the same plugins stay bound (nothing recompiles).
	reg.SetSettings(map[string]registry.Settings{"echo": {Rename: map[string]string{"echo": "say"}}, "pinned": {Prefix: "p_"}},
		[]registry.Source{{Name: "pinned", Origin: "https://example.com/echo.wasm", Path: pinned}})
	reg.Reload(ctx)
	if again, _ := reg.Tool("say"); again.Plugin != say.Plugin {
		t.Error("echo rebound though its settings did not change")
	}

	// A source claiming a folder plugin's name: the folder's copy is not
	// served, the source's is.
	reg.SetSettings(map[string]registry.Settings{"echo": {}}, []registry.Source{{Name: "echo", Origin: "https://example.com/echo.wasm", Path: pinned}})
	logs.Reset()
	reg.Reload(ctx)
	e, ok := reg.Tool("echo")
	if !ok || e.Plugin.Path != pinned {
		t.Fatalf("echo: %+v", e)
	}
	problems = reg.Problems()
	if len(problems) != 1 || !strings.Contains(problems[0].Err.Error(), "names its source (https://example.com/echo.wasm)") {
		t.Errorf("problems %v", problems)
	}
	if !strings.Contains(logs.String(), "plugin skipped") {
		t.Errorf("shadowed plugin not logged:\n%s", logs.String())
	}
}
