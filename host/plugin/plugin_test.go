package plugin_test

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/plugin"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// TestEcho reads the echo plugin's file and serves it: the manifest
// section and exports as Parse sees them, a call through the pipeline, one
// below it, and an unknown tool.
func TestEcho(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins")
	}
	dir, wasm := buildtest.Plugins(t, "plugins/echo")
	bin, err := os.ReadFile(wasm["echo"])
	if err != nil {
		t.Fatal(err)
	}
	info, err := plugin.Parse(bin)
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := info.Export(abi.ExportCall); !ok || e.Kind != plugin.KindFunc {
		t.Errorf("no function export %q: %+v", abi.ExportCall, info.Exports)
	}
	section, ok, err := plugin.CustomSection(bin, abi.ManifestSection)
	if err != nil || !ok || string(section) != string(info.Custom[abi.ManifestSection]) {
		t.Fatalf("manifest section: ok %v, err %v", ok, err)
	}

	ctx := context.Background()
	eng, err := plugin.NewEngine(ctx, plugin.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(ctx)
	set, err := plugin.LoadDir(ctx, eng, dir, plugin.LoadOptions{NoRetry: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := set.Close(ctx); err != nil {
			t.Error(err)
		}
	}()
	if tools := set.Tools(); !slices.Contains(tools, "echo") {
		t.Fatalf("tools %v, want echo", tools)
	}
	res := set.Call(ctx, plugin.Request{Tool: "echo", Arguments: json.RawMessage(`{"text":"hi"}`)})
	if res.IsError() || string(res.Structured) != `{"text":"hi"}` {
		t.Errorf("echo answered %s (envelope %v)", res.Structured, res.Envelope)
	}
	res = set.Call(ctx, plugin.Request{Tool: "echo", Arguments: json.RawMessage(`{}`)})
	if !res.IsError() || res.Envelope.Code != abi.CodeMissingRequired {
		t.Errorf("echo without text answered %s", res.Structured)
	}

	p, err := set.Plugin(ctx, "echo")
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Call(ctx, abi.ExportCall, []byte(`{"params":{"name":"echo","arguments":{"text":"hi"}},"context":{}}`), plugin.CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var direct struct {
		StructuredContent struct{ Text string } `json:"structuredContent"`
	}
	if err := json.Unmarshal(out, &direct); err != nil || direct.StructuredContent.Text != "hi" {
		t.Errorf("direct call answered %s (%v)", out, err)
	}
	if _, err := set.Plugin(ctx, "nope"); err == nil {
		t.Error("Plugin found a tool no plugin serves")
	}
}
