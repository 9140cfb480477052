package conformance

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/plugin"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// TestConformanceSandboxProbeUnderTheHost: under the host's engine every
// probe finds nothing.
func TestConformanceSandboxProbeUnderTheHost(t *testing.T) {
	ctx := context.Background()
	eng, err := plugin.NewEngine(ctx, plugin.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(ctx)
	results, err := runSandboxProbe(ctx, eng)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != len(probeExports) {
		t.Fatalf("%d results for %d probes", len(results), len(probeExports))
	}
	for _, r := range results {
		if r.problem != "" {
			t.Errorf("expected %s, but %s", r.what, r.problem)
		}
	}
}

// TestConformanceSandboxProbeSeesLeaks: the probe is not vacuous — given an
// instance with a preopened directory, an environment and arguments, the
// probes for them report it.
func TestConformanceSandboxProbeSeesLeaks(t *testing.T) {
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "secret"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := wazero.NewModuleConfig().WithName("").
		WithFSConfig(wazero.NewFSConfig().WithDirMount(dir, "/")).
		WithEnv("HOME", "/root").WithArgs("plugin", "--flag")
	mod, err := rt.InstantiateWithConfig(ctx, sandboxProbe(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, pe := range probeExports {
		res, err := mod.ExportedFunction(pe.name).Call(ctx)
		if err != nil {
			t.Fatalf("%s: %v", pe.name, err)
		}
		leaks := res[0] != 0
		wantLeak := pe.name != "probe_sockets" // no socket was given
		if leaks != wantLeak {
			t.Errorf("%s = %d with a preopen, environment and arguments; want a leak reported: %v", pe.name, res[0], wantLeak)
		}
		if leaks {
			t.Logf("%s: %s", pe.name, pe.explain(uint32(res[0])))
		}
	}
}

// TestConformanceSandboxHoldsAgainstSnoop runs the snoop plugin's tool in
// the host runtime, with a secret in the host's environment and a file in
// reach of a careless host, and asserts every attempt to get out failed
// inside the guest.
func TestConformanceSandboxHoldsAgainstSnoop(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins")
	}
	t.Setenv("SNOOP_CANARY", "the guest must never see this")
	_, wasm := buildtest.Plugins(t, "testdata/plugins/snoop")
	bin, err := os.ReadFile(wasm["snoop"])
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	eng, err := plugin.NewEngine(ctx, plugin.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(ctx)
	p, err := eng.Compile(ctx, "snoop", bin, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	out, err := p.Call(ctx, abi.ExportCall, []byte(`{"params":{"name":"snoop","arguments":{}},"context":{}}`), plugin.CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		StructuredContent struct {
			Attempts []struct {
				What    string `json:"what"`
				Reached bool   `json:"reached"`
				Detail  string `json:"detail"`
			} `json:"attempts"`
		} `json:"structuredContent"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(out, &res); err != nil || res.IsError {
		t.Fatalf("snoop answered %s (%v)", out, err)
	}
	attempts := res.StructuredContent.Attempts
	// 9 attempts through the Go library, 4 raw WASI ones (a preopen would
	// add more).
	if len(attempts) < 13 {
		t.Fatalf("only %d attempts reported: %+v", len(attempts), attempts)
	}
	for _, a := range attempts {
		if a.Reached {
			t.Errorf("the sandbox leaked: %s got %q", a.What, a.Detail)
		} else {
			t.Logf("contained: %-45s %s", a.What, a.Detail)
		}
	}
	if _, err := os.Stat("/tmp/snoop-was-here"); err == nil {
		t.Error("/tmp/snoop-was-here exists on the host")
	}
}
