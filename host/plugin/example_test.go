package plugin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"testing"

	"github.com/plugboard/plugboard/build/pluginbuild"
	"github.com/plugboard/plugboard/host/plugin"
)

// exampleDir holds the echo plugin, built once for the examples.
var exampleDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "plugboard-plugin-example")
	if err != nil {
		log.Fatal(err)
	}
	exampleDir = dir
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	if _, err := pluginbuild.Plugin(context.Background(), filepath.Join(root, "plugins", "echo"), filepath.Join(dir, "echo.wasm"), pluginbuild.Options{}); err != nil {
		log.Fatalf("build the echo plugin: %v", err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// A folder of plugins served without a board: one engine, the plugins
// loaded as `plugboard serve` loads them, and calls through the same
// pipeline (validation, deadline, the sandboxed plugin). A failure is an
// envelope in the result, never a Go error.
func ExampleLoadDir() {
	ctx := context.Background()
	eng, err := plugin.NewEngine(ctx, plugin.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close(ctx)
	set, err := plugin.LoadDir(ctx, eng, exampleDir, plugin.LoadOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer set.Close(ctx)

	res := set.Call(ctx, plugin.Request{Tool: "echo", Arguments: json.RawMessage(`{"text":"hi"}`)})
	fmt.Println(res.IsError(), string(res.Structured))
	res = set.Call(ctx, plugin.Request{Tool: "echo", Arguments: json.RawMessage(`{}`)})
	fmt.Println(res.IsError(), res.Envelope.Code)
	// Output:
	// false {"text":"hi"}
	// true missing_required
}

// Parse reads a plugin file without running it: its imports, exports and
// custom sections (the embedded manifest among them), and what kind of
// plugin it is.
func ExampleParse() {
	bin, err := os.ReadFile(filepath.Join(exampleDir, "echo.wasm"))
	if err != nil {
		log.Fatal(err)
	}
	info, err := plugin.Parse(bin)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(plugin.ShapeOf(info).Interface)
	// Output: plugboard-sdk
}
