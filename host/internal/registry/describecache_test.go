package registry_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/hostkey"
	"github.com/plugboard/plugboard/host/internal/registry"
	"github.com/plugboard/plugboard/host/internal/runtime"
	"github.com/plugboard/plugboard/host/internal/wasmfile"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// testKey is the tests' host key.
var testKey = bytes.Repeat([]byte{7}, hostkey.Size)

// describeEntry is a describe cache entry for module holding out, signed
// with key as the registry signs it.
func describeEntry(key, module, out []byte) []byte {
	sum := sha256.Sum256(module)
	mac := hostkey.MAC(key, []byte("plugboard describe cache"), sum[:], out)
	return append(append([]byte("plugboard-describe-hmac\x00"), mac...), out...)
}

// withCapability returns the manifest out with capability added.
func withCapability(t *testing.T, out []byte, capability string) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	m["capabilities"] = []string{capability}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDescribeCacheCapabilities reproduces the red team's finding (4): an
// agent edited the describe cache entry of a plain Extism plugin (no
// embedded manifest) to declare a capability, and after a restart the
// plugin was granted it. Entries are now signed with the host's key, and
// capabilities never come from the cache: an edited entry (in the old
// place and format, or the new one), and even a properly signed entry that
// declares a capability, is not used; the plugin is described again and
// loads with what it declares itself (none).
func TestDescribeCacheCapabilities(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins")
	}
	_, wasm := buildtest.Plugins(t, "testdata/plugins/rawpdk", "testdata/plugins/hyperuser")
	ctx := context.Background()
	raw := withoutSection(t, wasm["rawpdk"])
	dir, data := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "raw.wasm"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	engine, err := runtime.New(ctx, runtime.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close(ctx)
	load := func() *registry.Plugin {
		t.Helper()
		reg, err := registry.Load(ctx, registry.Options{Dirs: []string{dir}, DataDir: data, CacheKey: testKey, Engine: engine})
		if err != nil {
			t.Fatal(err)
		}
		tool, ok := reg.Tool("raw_upper")
		if !ok {
			t.Fatalf("raw_upper not served: %v", reg.Problems())
		}
		return tool.Plugin
	}
	if p := load(); len(p.Granted()) != 0 {
		t.Fatalf("rawpdk granted %v before any tampering", p.Granted())
	}
	sum := sha256.Sum256(raw)
	entry := filepath.Join(data, "manifests", hex.EncodeToString(sum[:])+".describe")
	good, err := os.ReadFile(entry)
	if err != nil {
		t.Fatalf("describe output not cached: %v", err)
	}
	out := good[len("plugboard-describe-hmac\x00")+sha256.Size:]
	forged := withCapability(t, out, abi.CapBoardWrite)

	for name, plant := range map[string]func(){
		"old cache file edited": func() {
			os.WriteFile(filepath.Join(data, "manifests", hex.EncodeToString(sum[:])+".json"), forged, 0o644)
		},
		"entry edited, MAC kept": func() {
			os.WriteFile(entry, append(slices.Clone(good[:len(good)-len(out)]), forged...), 0o644)
		},
		"entry signed with another key": func() {
			os.WriteFile(entry, describeEntry(bytes.Repeat([]byte{8}, hostkey.Size), raw, forged), 0o644)
		},
		"entry signed with the host's key": func() {
			os.WriteFile(entry, describeEntry(testKey, raw, forged), 0o644)
		},
	} {
		t.Run(name, func(t *testing.T) {
			plant()
			p := load()
			if len(p.Granted()) != 0 || len(p.Manifest.Capabilities) != 0 {
				t.Fatalf("the plugin was granted %v (declares %v) from an edited cache", p.Granted(), p.Manifest.Capabilities)
			}
			if now, _ := os.ReadFile(entry); !bytes.Equal(now, good) {
				t.Error("the forged entry was not rewritten from a new describe")
			}
		})
	}

	// A plugin that declares capabilities is described at every load: its
	// output is never cached.
	user := withoutSection(t, wasm["hyperuser"])
	if err := os.WriteFile(filepath.Join(dir, "user.wasm"), user, 0o644); err != nil {
		t.Fatal(err)
	}
	reg, err := registry.Load(ctx, registry.Options{Dirs: []string{dir}, DataDir: data, CacheKey: testKey, Engine: engine})
	if err != nil {
		t.Fatal(err)
	}
	if tool, ok := reg.Tool("user_ask"); !ok || len(tool.Plugin.Granted()) == 0 {
		t.Fatalf("hyperuser not served with its capabilities: %+v, %v", tool, reg.Problems())
	}
	userSum := sha256.Sum256(user)
	if _, err := os.Stat(filepath.Join(data, "manifests", hex.EncodeToString(userSum[:])+".describe")); err == nil {
		t.Error("the describe output of a plugin declaring capabilities was cached")
	}
}

// TestDescribeCacheNeedsKey: without a key nothing is cached.
func TestDescribeCacheNeedsKey(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins")
	}
	_, wasm := buildtest.Plugins(t, "testdata/plugins/rawpdk")
	ctx := context.Background()
	dir, data := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "raw.wasm"), withoutSection(t, wasm["rawpdk"]), 0o644); err != nil {
		t.Fatal(err)
	}
	engine, err := runtime.New(ctx, runtime.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close(ctx)
	if _, err := registry.Load(ctx, registry.Options{Dirs: []string{dir}, DataDir: data, Engine: engine}); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(data); len(entries) != 0 {
		t.Errorf("a registry without a key wrote %d entries into its data directory", len(entries))
	}
}

func withoutSection(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if b, err = wasmfile.RemoveCustomSection(b, abi.ManifestSection); err != nil {
		t.Fatal(err)
	}
	return b
}
