package hostkey

import (
	"bytes"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
)

// TestLoad: the first Load makes a key (directory 0700, file 0600) and
// later ones return it; processes starting together agree on one key.
func TestLoad(t *testing.T) {
	data := t.TempDir()
	key, err := Load(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(key) != Size || bytes.Equal(key, make([]byte, Size)) {
		t.Fatalf("key %x", key)
	}
	again, err := Load(data)
	if err != nil || !bytes.Equal(again, key) {
		t.Fatalf("second Load: %x, %v; want the first key", again, err)
	}
	if goruntime.GOOS != "windows" {
		dir, _ := os.Stat(filepath.Dir(Path(data)))
		file, _ := os.Stat(Path(data))
		if dir.Mode().Perm() != 0o700 || file.Mode().Perm() != 0o600 {
			t.Errorf("modes: directory %v, file %v; want 0700, 0600", dir.Mode().Perm(), file.Mode().Perm())
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(Path(data)))
	if len(entries) != 1 {
		t.Errorf("key directory holds %d entries; temporary files left behind?", len(entries))
	}
}

// TestLoadSharedDir: hosts sharing a compile cache share its key through
// a symlinked key directory.
func TestLoadSharedDir(t *testing.T) {
	shared, a, b := t.TempDir(), t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(shared, "keys"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, data := range []string{a, b} {
		if err := os.Symlink(filepath.Join(shared, "keys"), filepath.Join(data, "keys")); err != nil {
			t.Skip("no symlinks:", err)
		}
	}
	ka, err := Load(a)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := Load(b)
	if err != nil || !bytes.Equal(ka, kb) {
		t.Fatalf("hosts sharing the key directory got %x and %x (%v)", ka, kb, err)
	}
}

func TestLoadConcurrent(t *testing.T) {
	for range 20 {
		data := t.TempDir()
		keys := make([][]byte, 8)
		var wg sync.WaitGroup
		for i := range keys {
			wg.Go(func() {
				k, err := Load(data)
				if err != nil {
					t.Error(err)
				}
				keys[i] = k
			})
		}
		wg.Wait()
		for _, k := range keys[1:] {
			if !bytes.Equal(k, keys[0]) {
				t.Fatalf("concurrent Loads disagree: %x vs %x", k, keys[0])
			}
		}
	}
}

// TestLoadRefuses: a key file that is not a regular file, has the wrong
// size, or that others may read, and a key directory others may write, are
// refused with an error naming the path and the fix.
func TestLoadRefuses(t *testing.T) {
	if goruntime.GOOS == "windows" {
		t.Skip("Unix modes")
	}
	cases := []struct {
		name  string
		setup func(t *testing.T, path string)
		want  string
	}{
		{"readable by others", func(t *testing.T, path string) {
			write(t, path, make([]byte, Size), 0o644)
		}, "chmod 600"},
		{"wrong size", func(t *testing.T, path string) {
			write(t, path, []byte("short"), 0o600)
		}, "holds 5 bytes"},
		{"empty", func(t *testing.T, path string) {
			write(t, path, nil, 0o600)
		}, "holds 0 bytes"},
		{"a symlink", func(t *testing.T, path string) {
			target := filepath.Join(t.TempDir(), "k")
			write(t, target, make([]byte, Size), 0o600)
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file"},
		{"a directory", func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file"},
		{"directory writable by others", func(t *testing.T, path string) {
			write(t, path, make([]byte, Size), 0o600)
			if err := os.Chmod(filepath.Dir(path), 0o777); err != nil {
				t.Fatal(err)
			}
		}, "chmod 700"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := t.TempDir()
			if err := os.MkdirAll(filepath.Dir(Path(data)), 0o700); err != nil {
				t.Fatal(err)
			}
			c.setup(t, Path(data))
			_, err := Load(data)
			if err == nil {
				t.Fatal("loaded")
			}
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), filepath.Dir(Path(data))) {
				t.Errorf("error %q does not name the path and %q", err, c.want)
			}
		})
	}
}

func write(t *testing.T, path string, b []byte, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, b, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // past the umask
		t.Fatal(err)
	}
}

// TestMAC: the framing keeps different part lists apart, the key matters,
// and Equal compares.
func TestMAC(t *testing.T) {
	k1, k2 := bytes.Repeat([]byte{1}, Size), bytes.Repeat([]byte{2}, Size)
	base := MAC(k1, []byte("ab"), []byte("c"))
	for name, other := range map[string][]byte{
		"parts split differently": MAC(k1, []byte("a"), []byte("bc")),
		"joined":                  MAC(k1, []byte("abc")),
		"an empty part added":     MAC(k1, []byte("ab"), []byte("c"), nil),
		"another key":             MAC(k2, []byte("ab"), []byte("c")),
	} {
		if Equal(base, other) {
			t.Errorf("%s: same MAC", name)
		}
	}
	if !Equal(base, MAC(k1, []byte("ab"), []byte("c"))) {
		t.Error("MAC is not deterministic")
	}
	if len(base) != 32 {
		t.Errorf("MAC is %d bytes", len(base))
	}
}
