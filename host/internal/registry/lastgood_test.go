package registry_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/registry"
	"github.com/plugboard/plugboard/host/internal/runtime"
	"github.com/plugboard/plugboard/host/internal/wasmfile"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// lockedBuffer is a log the registry's goroutines write while the test
// reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestLastGoodVersion: while Watch runs, a plugin file replaced by one that
// does not load keeps the version before it served — listed, callable, and
// compiled from the registry's copy when a settings change binds it anew —
// with one log line and a problem naming the version still served; the
// fixed file is served anew and the deleted one withdrawn. A plugin whose
// version was never read whole, and a file that never loaded, are refused
// as before.
func TestLastGoodVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins")
	}
	_, wasm := buildtest.Plugins(t, "plugins/echo", "conformance/mcpfixture")
	good, err := os.ReadFile(wasm["echo"])
	if err != nil {
		t.Fatal(err)
	}
	fixture, err := os.ReadFile(wasm["mcpfixture"])
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	dir, data := t.TempDir(), t.TempDir()
	echoPath, fixturePath := filepath.Join(dir, "echo.wasm"), filepath.Join(dir, "fixture.wasm")
	// write replaces a file in place, as cp does: a poll may see it half
	// written, and the test waits for the state the whole file makes.
	write := func(path string, b []byte) {
		t.Helper()
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// replace replaces a file whole (a new file renamed over it), so a
	// poll sees the old file or the new one.
	replace := func(path string, b []byte) {
		t.Helper()
		write(path+".tmp", b)
		if err := os.Rename(path+".tmp", path); err != nil {
			t.Fatal(err)
		}
	}
	write(fixturePath, fixture)
	engine, err := runtime.New(ctx, runtime.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close(ctx)
	var logs lockedBuffer
	reg, err := registry.Load(ctx, registry.Options{Dirs: []string{dir}, DataDir: data, CacheKey: testKey, Engine: engine,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close(ctx)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go reg.Watch(wctx, 20*time.Millisecond)
	waitFor := func(what string, done func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !done(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not seen; problems %v", what, reg.Problems())
			}
		}
	}
	call := func(p *registry.Plugin) error {
		t.Helper()
		rt, err := p.Runtime(ctx)
		if err != nil {
			return err
		}
		out, err := rt.Call(ctx, abi.ExportCall, []byte(`{"params":{"name":"echo","arguments":{"text":"kept"}},"context":{}}`), runtime.CallOptions{})
		if err == nil && !strings.Contains(string(out), "kept") {
			err = errors.New("echo answered " + string(out))
		}
		return err
	}
	problemOf := func(path string) error {
		for _, p := range reg.Problems() {
			if p.Path == path {
				return p.Err
			}
		}
		return nil
	}

	// Added while watching: the reload's warm-up reads it whole.
	write(echoPath, good)
	waitFor("echo added", func() bool { _, ok := reg.Tool("echo"); return ok })
	first, ok := reg.Tool("echo")
	if !ok {
		t.Fatalf("echo not served; problems %v", reg.Problems())
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if compiled, _, _ := first.Plugin.State(); compiled {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the warm-up did not compile the added plugin")
		}
	}

	// Truncated: still served, by the same plugin, and said so once.
	replace(echoPath, good[:len(good)/2])
	waitFor("echo truncated", func() bool { return problemOf(echoPath) != nil })
	kept, ok := reg.Tool("echo")
	if !ok || kept.Plugin != first.Plugin {
		t.Fatalf("after a truncated copy: echo served %v by %p, want the previous version (%p)", ok, kept.Plugin, first.Plugin)
	}
	sum := sha256.Sum256(good)
	var ke *registry.KeptError
	if err := problemOf(echoPath); !errors.As(err, &ke) || ke.SHA256 != hex.EncodeToString(sum[:]) ||
		!strings.Contains(err.Error(), "new file refused, still serving the previous version (sha256 "+ke.SHA256+")") ||
		!strings.Contains(err.Error(), "not a loadable WebAssembly module") {
		t.Errorf("problem of the truncated file: %v, want the kept version's sha256 %x and why the file was refused", err, sum)
	}
	if err := call(kept.Plugin); err != nil {
		t.Errorf("a call to the kept version: %v", err)
	}
	// A settings change binds the kept version anew: it compiles from the
	// registry's copy, the file being truncated.
	reg.SetSettings(map[string]registry.Settings{"echo": {CallTimeout: 7 * time.Second}}, nil)
	if _, err := reg.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	rebound, ok := reg.Tool("echo")
	if !ok || rebound.Plugin == first.Plugin || rebound.Plugin.CallTimeout() != 7*time.Second {
		t.Fatalf("after a settings change: echo %v, bound anew %v", ok, rebound.Plugin != first.Plugin)
	}
	if err := call(rebound.Plugin); err != nil {
		t.Errorf("the kept version bound anew does not compile from its copy: %v", err)
	}
	time.Sleep(200 * time.Millisecond) // ten polls
	if n := strings.Count(logs.String(), "still serving its previous version"); n != 1 {
		t.Errorf("%d log lines about the refused file, want 1:\n%s", n, logs.String())
	}
	if line := logLine(logs.String(), "still serving its previous version"); !strings.Contains(line, "path="+echoPath) ||
		!strings.Contains(line, "sha256="+ke.SHA256) || !strings.Contains(line, "not a loadable WebAssembly module") {
		t.Errorf("the log line does not name the file, the version kept and the reason: %s", line)
	}

	// Never read whole (no call, no warm-up): no copy, so refused as any
	// broken file is.
	if _, ok := reg.Tool("test_simple_text"); !ok {
		t.Fatal("the fixture is not served")
	}
	replace(fixturePath, fixture[:len(fixture)/2])
	waitFor("fixture truncated", func() bool { return problemOf(fixturePath) != nil })
	if _, ok := reg.Tool("test_simple_text"); ok {
		t.Error("a plugin whose version was never read whole was kept")
	}
	if err := problemOf(fixturePath); err == nil || errors.As(err, &ke) {
		t.Errorf("problem of the fixture: %v, want a refusal without a kept version", err)
	}

	// Fixed, as a new version: served anew.
	v2 := newEchoVersion(t, good)
	write(echoPath, v2)
	waitFor("echo fixed", func() bool { t, ok := reg.Tool("echo"); return ok && strings.HasSuffix(t.Def.Description, "(v2)") })
	fixed, ok := reg.Tool("echo")
	if !ok || fixed.Plugin == first.Plugin || fixed.Plugin == rebound.Plugin || !strings.HasSuffix(fixed.Def.Description, "(v2)") {
		t.Fatalf("after the fix: echo %v, a new plugin %v, description %q; problems %v", ok, fixed.Plugin != rebound.Plugin, fixed.Def.Description, reg.Problems())
	}
	if err := problemOf(echoPath); err != nil {
		t.Errorf("the fixed file is still a problem: %v", err)
	}
	if err := call(fixed.Plugin); err != nil {
		t.Errorf("a call to the new version: %v", err)
	}

	// A file that never loaded is refused; one deleted goes.
	write(filepath.Join(dir, "never.wasm"), []byte("\x00asm but not really"))
	waitFor("broken file added", func() bool { return problemOf(filepath.Join(dir, "never.wasm")) != nil })
	if err := problemOf(filepath.Join(dir, "never.wasm")); err == nil || errors.As(err, &ke) {
		t.Errorf("a file that never loaded: %v, want a plain refusal", err)
	}
	if err := os.Remove(echoPath); err != nil {
		t.Fatal(err)
	}
	waitFor("echo deleted", func() bool { _, ok := reg.Tool("echo"); return !ok })
	if _, ok := reg.Tool("echo"); ok {
		t.Error("a deleted plugin is still served")
	}
}

// newEchoVersion is echo with its tool's description ending "(v2)": a
// version that loads, and that a client can tell from the first.
func newEchoVersion(t *testing.T, good []byte) []byte {
	t.Helper()
	raw, ok, err := wasmfile.CustomSection(good, abi.ManifestSection)
	if err != nil || !ok {
		t.Fatalf("echo's manifest section: %v %v", ok, err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	tool := m["tools"].([]any)[0].(map[string]any)
	tool["description"] = tool["description"].(string) + " (v2)"
	raw, err = json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	v2, err := wasmfile.SetCustomSection(good, abi.ManifestSection, raw)
	if err != nil {
		t.Fatal(err)
	}
	return v2
}

// logLine is the first line of log containing msg.
func logLine(log, msg string) string {
	for l := range strings.Lines(log) {
		if strings.Contains(l, msg) {
			return l
		}
	}
	return ""
}
