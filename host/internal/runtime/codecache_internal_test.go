package runtime

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
)

// TestWazeroCacheSubdir: the directory the code cache checks is the one
// wazero writes to, so a change in how wazero names it fails here rather
// than leave its files unchecked.
func TestWazeroCacheSubdir(t *testing.T) {
	dir := t.TempDir()
	c, err := wazero.NewCompilationCacheWithDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(t.Context())
	if fi, err := os.Stat(filepath.Join(dir, wazeroCacheSubdir())); err != nil || !fi.IsDir() {
		entries, _ := os.ReadDir(dir)
		t.Fatalf("wazero made %v, not %s", entries, wazeroCacheSubdir())
	}
}

// newTestCodeCache returns a code cache over a new directory holding n
// files of size bytes each, signed with settled stamps (as they are once
// the files are older than settle).
func newTestCodeCache(t testing.TB, n, size int) *codeCache {
	dir := t.TempDir()
	for i := range n {
		sum := sha256.Sum256([]byte(strconv.Itoa(i)))
		if err := os.WriteFile(filepath.Join(dir, hex.EncodeToString(sum[:])), bytes.Repeat([]byte{byte(i)}, size), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c := freshCodeCache(dir)
	c.now = later
	c.sign()
	return c
}

// later is a clock past settle.
func later() time.Time { return time.Now().Add(time.Hour) }

// freshCodeCache is a code cache over dir as a new process has it: nothing
// checked yet.
func freshCodeCache(dir string) *codeCache {
	return &codeCache{dir: dir, key: bytes.Repeat([]byte{7}, 32), log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		now: time.Now, trusted: map[string]fileStamp{}, known: map[string]bool{}}
}

// TestCodeCacheFreshProcess: a new process trusts signed files by their
// stat, without hashing them, and deletes a file whose sidecar is another
// file's.
func TestCodeCacheFreshProcess(t *testing.T) {
	c := newTestCodeCache(t, 3, 100)
	names, _ := c.entries()
	fresh := freshCodeCache(c.dir)
	if _, err := fresh.verify(); err != nil {
		t.Fatal(err)
	}
	if len(fresh.trusted) != 3 {
		t.Fatalf("trusted %d files, want 3", len(fresh.trusted))
	}
	// names[1]'s sidecar copied to names[0]: bound to another name.
	sc, _ := os.ReadFile(filepath.Join(c.dir, names[1]+sidecarExt))
	os.WriteFile(filepath.Join(c.dir, names[0]+sidecarExt), sc, 0o600)
	if _, err := freshCodeCache(c.dir).verify(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(c.dir, names[0])); err == nil {
		t.Error("a file with another file's sidecar was kept")
	}
	if _, err := os.Stat(filepath.Join(c.dir, names[1])); err != nil {
		t.Error("a good file was deleted")
	}
}

// TestCodeCacheSettle: a stamp signed within settle of the file's ctime
// does not vouch for its content (a write in the same clock tick keeps the
// ctime), so the file is hashed: here, a sidecar naming the file's present
// stamp but other content gets the file deleted. Once settled, the stamp
// alone is trusted — the file is not read.
func TestCodeCacheSettle(t *testing.T) {
	c := newTestCodeCache(t, 1, 100)
	names, _ := c.entries()
	f, st, err := c.open(names[0])
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	var other [sha256.Size]byte

	settled := freshCodeCache(c.dir)
	settled.now = later
	if err := settled.writeSidecar(names[0], other, st); err != nil {
		t.Fatal(err)
	}
	if _, err := freshCodeCache(c.dir).verify(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(c.dir, names[0])); err != nil {
		t.Fatal("a file with a settled stamp was read and deleted; its stamp should vouch for it")
	}

	if err := freshCodeCache(c.dir).writeSidecar(names[0], other, st); err != nil {
		t.Fatal(err)
	}
	if _, err := freshCodeCache(c.dir).verify(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(c.dir, names[0])); err == nil {
		t.Error("a file whose unsettled stamp matched was trusted without hashing it")
	}
}

// BenchmarkCodeCache measures what the code cache adds to a compilation:
// the check of a directory of 20 signed files (this process checked them
// before: a stat each; or a new process: each sidecar read and its MAC
// computed too), and signing a new 12 MB file (wazero's cache file for a
// 4 MB Go guest is about that size: its sha256).
func BenchmarkCodeCache(b *testing.B) {
	c := newTestCodeCache(b, 20, 4096)
	b.Run("verify-20-files-known", func(b *testing.B) {
		for b.Loop() {
			if _, err := c.verify(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("verify-20-files-new-process", func(b *testing.B) {
		for b.Loop() {
			if _, err := freshCodeCache(c.dir).verify(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sign-12MB", func(b *testing.B) {
		big := newTestCodeCache(b, 0, 0)
		name := strings.Repeat("ab", 32)
		if err := os.WriteFile(filepath.Join(big.dir, name), bytes.Repeat([]byte{1}, 12<<20), 0o600); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(12 << 20)
		for b.Loop() {
			delete(big.trusted, name)
			os.Remove(filepath.Join(big.dir, name+sidecarExt))
			big.sign()
		}
	})
}

// TestCodeCacheSignsOnlyNewFiles: after a compilation only files that
// appeared since the check are signed. A file the check kept and a writer
// then replaced (its sidecar removed, as an unconfined agent could) is not
// adopted by the signing that follows, and the next check deletes it —
// whereas signing whatever lacked a valid signature would have vouched for
// it.
func TestCodeCacheSignsOnlyNewFiles(t *testing.T) {
	c := newTestCodeCache(t, 2, 64)
	kept, err := c.verify()
	if err != nil || len(kept) != 2 {
		t.Fatalf("verify = %v, %v", kept, err)
	}
	var planted string
	for name := range kept {
		planted = filepath.Join(c.dir, name)
		break
	}
	os.Remove(planted + sidecarExt)
	if err := os.WriteFile(planted, []byte("planted machine code"), 0o600); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(c.dir, strings.Repeat("ab", sha256.Size))
	os.WriteFile(fresh, []byte("written by the compilation"), 0o600)
	c.sign()
	if _, err := os.Stat(planted + sidecarExt); err == nil {
		t.Fatal("the signing adopted a file the check had kept and a writer replaced")
	}
	if _, err := os.Stat(fresh + sidecarExt); err != nil {
		t.Fatalf("the file the compilation wrote is not signed: %v", err)
	}
	if _, err := freshCodeCache(c.dir).verify(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(planted); err == nil {
		t.Fatal("the next check kept the replaced file")
	}
}

// TestCodeCacheConcurrentCompilations: two compilations at once. The first
// checks the cache; the second writes its file and signs it; a writer of
// the host's user then replaces that file (sidecar removed). The first's
// signing must not adopt it as its own new file — it did, when signing
// passed over only the names of its own check, and the next start fed the
// planted bytes to wazero (a CI run of TestSignedCachesWithSandboxOff).
func TestCodeCacheConcurrentCompilations(t *testing.T) {
	c := newTestCodeCache(t, 1, 64)
	if _, err := c.verify(); err != nil { // the first compilation's check
		t.Fatal(err)
	}
	other := filepath.Join(c.dir, strings.Repeat("cd", sha256.Size))
	if err := os.WriteFile(other, []byte("the second compilation's code"), 0o600); err != nil {
		t.Fatal(err)
	}
	if n := c.sign(); n != 1 { // the second compilation's signing
		t.Fatalf("the second compilation's signing found %d new files, want 1", n)
	}
	os.Remove(other + sidecarExt)
	if err := os.WriteFile(other+".swap", []byte("planted"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other+".swap", other); err != nil {
		t.Fatal(err)
	}
	if n := c.sign(); n != 0 { // the first compilation's signing
		t.Fatalf("the first compilation's signing adopted %d files", n)
	}
	if _, err := os.Stat(other + sidecarExt); err == nil {
		t.Fatal("the replaced file was signed")
	}
	if _, err := freshCodeCache(c.dir).verify(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(other); err == nil {
		t.Fatal("the next check kept the replaced file")
	}
}

// TestCodeCacheRewrittenAfterDrop: a file a check deleted is new again
// when wazero writes it afresh, and is signed.
func TestCodeCacheRewrittenAfterDrop(t *testing.T) {
	c := newTestCodeCache(t, 1, 64)
	names, _ := c.entries()
	path := filepath.Join(c.dir, names[0])
	os.Remove(path + sidecarExt)
	c = freshCodeCache(c.dir) // a new process: nothing trusted by its stat
	if _, err := c.verify(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err == nil {
		t.Fatal("an unsigned file survived the check")
	}
	if err := os.WriteFile(path, []byte("compiled again"), 0o600); err != nil {
		t.Fatal(err)
	}
	if n := c.sign(); n != 1 {
		t.Fatalf("signing found %d new files, want 1", n)
	}
	kept, err := freshCodeCache(c.dir).verify()
	if err != nil || !kept[names[0]] {
		t.Fatalf("the file compiled again is not kept: %v, %v", kept, err)
	}
}
