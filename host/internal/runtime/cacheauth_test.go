package runtime_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/hostkey"
	"github.com/plugboard/plugboard/host/internal/runtime"
	"github.com/plugboard/plugboard/host/internal/wasmfile"
)

// testKey is the cache key of the tests' engines.
var testKey = bytes.Repeat([]byte{7}, hostkey.Size)

// The plugin and the module an attacker plants in its place: same shape,
// another answer.
var (
	genuine = tinyModule([2]string{abi.ExportCall, "genuine"})
	planted = tinyModule([2]string{abi.ExportCall, "planted"})
)

// answer compiles wasm in a new engine on dir (as a restarted host does)
// and returns what its call export outputs.
func answer(t *testing.T, dir string, wasm []byte) string {
	t.Helper()
	ctx := context.Background()
	e, err := runtime.New(ctx, runtime.Config{CacheDir: dir, CacheKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	p, err := e.Compile(ctx, "genuine", wasm, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	out, err := p.Call(ctx, abi.ExportCall, nil, runtime.CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// instrumentedEntry is the instrumented-module cache file of wasm.
func instrumentedEntry(dir string, wasm []byte) string {
	sum := sha256.Sum256(wasm)
	return filepath.Join(keyDir(dir, testKey), "instrumented", hex.EncodeToString(sum[:])+"-v1.wasm")
}

// keyDir is where an engine with key caches under dir.
func keyDir(dir string, key []byte) string {
	id := hostkey.MAC(key, []byte("plugboard cache directory"))
	return filepath.Join(dir, "key-"+hex.EncodeToString(id[:8]))
}

// TestInstrumentCacheForged reproduces the red team's finding (2): an
// agent overwrote the instrumented module cached for a plugin with its own
// module, under the checksum that guarded the entry (a CRC-32C it could
// recompute), and the host ran it under the plugin's name after a restart
// or an idle unload. The entry now carries an HMAC under the host's key:
// the planted entry — in the old format with a correct CRC, or in the new
// one with a MAC under another key — is never run; the module is
// instrumented again and the entry rewritten.
func TestInstrumentCacheForged(t *testing.T) {
	instrumented, err := wasmfile.Instrument(planted)
	if err != nil {
		t.Fatal(err)
	}
	otherKey := bytes.Repeat([]byte{8}, hostkey.Size)
	forgeries := map[string][]byte{
		"old format, CRC recomputed": append(binary.BigEndian.AppendUint32([]byte("plugboard-instrumented\x00"),
			crc32.Checksum(instrumented, crc32.MakeTable(crc32.Castagnoli))), instrumented...),
		"MAC under another key": append(append([]byte("plugboard-instrumented-hmac\x00"),
			hostkey.MAC(otherKey, []byte("plugboard instrumented module"), sha(genuine), []byte("1"), instrumented)...), instrumented...),
		"bare module": instrumented,
	}
	for name, forged := range forgeries {
		t.Run(name+", restart", func(t *testing.T) {
			dir := t.TempDir()
			if got := answer(t, dir, genuine); got != "genuine" {
				t.Fatalf("first run answered %q", got)
			}
			entry := instrumentedEntry(dir, genuine)
			good, err := os.ReadFile(entry)
			if err != nil {
				t.Fatal(err)
			}
			plant(t, entry, forged)
			if got := answer(t, dir, genuine); got != "genuine" {
				t.Fatalf("after the entry was replaced the plugin answered %q: the planted module ran", got)
			}
			if now, _ := os.ReadFile(entry); !bytes.Equal(now, good) {
				t.Error("the forged entry was not rewritten from a fresh instrumentation")
			}
		})
	}
	t.Run("idle unload", func(t *testing.T) {
		dir := t.TempDir()
		ctx := context.Background()
		e, err := runtime.New(ctx, runtime.Config{CacheDir: dir, CacheKey: testKey, CodeIdleTimeout: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close(ctx)
		p, err := e.CompileWith(ctx, "genuine", genuine, runtime.PluginOptions{Reload: func() ([]byte, error) { return genuine, nil }})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close(ctx)
		if !p.ReleaseUnused() {
			t.Fatal("not released")
		}
		plant(t, instrumentedEntry(dir, genuine), forgeries["old format, CRC recomputed"])
		out, err := p.Call(ctx, abi.ExportCall, nil, runtime.CallOptions{})
		if err != nil || string(out) != "genuine" {
			t.Fatalf("after an idle unload the plugin answered %q, %v: the planted module ran", out, err)
		}
	})
}

func sha(b []byte) []byte { s := sha256.Sum256(b); return s[:] }

// plant replaces path with content as another process would: a new file
// renamed over it.
func plant(t *testing.T, path string, content []byte) {
	t.Helper()
	tmp := path + ".planted"
	if err := os.WriteFile(tmp, content, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// codeFiles lists wazero's cache files under dir (names of 64 hex digits).
func codeFiles(t *testing.T, dir string) []string {
	t.Helper()
	subdirs, _ := filepath.Glob(filepath.Join(dir, "key-*", "wazero-*"))
	if len(subdirs) != 1 {
		t.Fatalf("wazero cache directories: %v", subdirs)
	}
	entries, err := os.ReadDir(subdirs[0])
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		if len(e.Name()) == 64 {
			files = append(files, filepath.Join(subdirs[0], e.Name()))
		}
	}
	return files
}

// compiledFiles compiles each module in one engine on a new cache
// directory and returns the directory and the cache file each added.
func compiledFiles(t *testing.T, modules ...[]byte) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	ctx := context.Background()
	e, err := runtime.New(ctx, runtime.Config{CacheDir: dir, CacheKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	var files []string
	for _, m := range modules {
		before := codeFiles(t, dir)
		p, err := e.Compile(ctx, "m", m, nil)
		if err != nil {
			t.Fatal(err)
		}
		p.Close(ctx)
		var added []string
		for _, f := range codeFiles(t, dir) {
			if !slices.Contains(before, f) {
				added = append(added, f)
			}
		}
		if len(added) != 1 {
			t.Fatalf("compiling added cache files %v, want one", added)
		}
		if _, err := os.Stat(added[0] + ".mac"); err != nil {
			t.Fatalf("cache file not signed: %v", err)
		}
		files = append(files, added[0])
	}
	return dir, files
}

// TestCodeCacheTampered reproduces the red team's finding (3): an agent
// rewrote an entry of wazero's machine-code cache and the host mapped what
// it wrote as executable code at the next load. Every cache file is now
// checked against its signature before wazero may read it; one that fails
// is deleted, and the module compiled again answers as it should.
func TestCodeCacheTampered(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tamper func(t *testing.T, victim, other string)
	}{
		{"replaced by another plugin's file and sidecar", func(t *testing.T, victim, other string) {
			plant(t, victim, read(t, other))
			plant(t, victim+".mac", read(t, other+".mac"))
		}},
		{"rewritten in place, sidecar kept", func(t *testing.T, victim, other string) {
			if err := os.WriteFile(victim, read(t, other), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"bytes flipped in place", func(t *testing.T, victim, _ string) {
			b := read(t, victim)
			for i := len(b) / 2; i < len(b)/2+16; i++ {
				b[i] ^= 0xff
			}
			if err := os.WriteFile(victim, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"replaced, sidecar removed", func(t *testing.T, victim, other string) {
			plant(t, victim, read(t, other))
			if err := os.Remove(victim + ".mac"); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, files := compiledFiles(t, genuine, planted)
			victim, other := files[0], files[1]
			tc.tamper(t, victim, other)
			if got := answer(t, dir, genuine); got != "genuine" {
				t.Fatalf("the plugin answered %q: the planted machine code ran", got)
			}
			if b, err := os.ReadFile(victim); err != nil || bytes.Equal(b, read(t, other)) {
				t.Fatalf("the tampered file was not compiled again (%v)", err)
			}
			if _, err := os.Stat(victim + ".mac"); err != nil {
				t.Errorf("the file compiled again is not signed: %v", err)
			}
		})
	}
}

// TestCodeCacheTrusted: a signed file is used as it is by the next engine
// (not rewritten), a file whose stat changed but whose content did not (a
// copy restored) is signed again and kept, and wazero's temporary files
// are left alone.
func TestCodeCacheTrusted(t *testing.T) {
	dir, files := compiledFiles(t, genuine)
	victim := files[0]
	before, _ := os.Stat(victim)
	tmp := filepath.Join(filepath.Dir(victim), strings.Repeat("a", 64)+".123.tmp")
	if err := os.WriteFile(tmp, []byte("in progress"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := answer(t, dir, genuine); got != "genuine" {
		t.Fatalf("answered %q", got)
	}
	if after, err := os.Stat(victim); err != nil || !os.SameFile(before, after) || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("a signed cache file was not used as it was (%v)", err)
	}
	if _, err := os.Stat(tmp); err != nil {
		t.Errorf("wazero's temporary file was touched: %v", err)
	}

	sidecar := read(t, victim+".mac")
	plant(t, victim, read(t, victim)) // same content, new inode and ctime
	if got := answer(t, dir, genuine); got != "genuine" {
		t.Fatalf("answered %q", got)
	}
	restored, err := os.Stat(victim)
	if err != nil {
		t.Fatalf("a file with its signed content was deleted: %v", err)
	}
	if bytes.Equal(read(t, victim+".mac"), sidecar) {
		t.Error("the sidecar of a copied file was not signed again for its new stat")
	}
	if got := answer(t, dir, genuine); got != "genuine" {
		t.Fatalf("answered %q", got)
	}
	if again, _ := os.Stat(victim); !os.SameFile(restored, again) {
		t.Error("the re-signed file was compiled again")
	}
}

// TestCacheNeedsKey: without a key nothing is cached on disk, since nothing
// read back could be authenticated; a key of the wrong size is refused.
func TestCacheNeedsKey(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	e, err := runtime.New(ctx, runtime.Config{CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	p, err := e.Compile(ctx, "genuine", genuine, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.Close(ctx)
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("an engine without a key wrote %d entries into its cache directory", len(entries))
	}
	if e.Cached(genuine) {
		t.Error("Cached without a disk cache")
	}
	if _, err := runtime.New(ctx, runtime.Config{CacheDir: dir, CacheKey: []byte("short")}); err == nil {
		t.Error("a 5-byte key was accepted")
	}
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// BenchmarkInstrumentMAC measures what authenticating an instrumented
// module costs against the CRC-32C it replaced, for a 5 MB module (a Go
// guest's size).
func BenchmarkInstrumentMAC(b *testing.B) {
	module := bytes.Repeat([]byte("plugboard"), 5<<20/9)
	sum := sha256.Sum256(module)
	b.Run("hmac-sha256", func(b *testing.B) {
		b.SetBytes(int64(len(module)))
		for b.Loop() {
			hostkey.MAC(testKey, []byte("plugboard instrumented module"), sum[:], []byte("1"), module)
		}
	})
	b.Run("crc32c", func(b *testing.B) {
		b.SetBytes(int64(len(module)))
		table := crc32.MakeTable(crc32.Castagnoli)
		for b.Loop() {
			crc32.Checksum(module, table)
		}
	})
}
