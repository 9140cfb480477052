package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWrite: the file appears whole with its mode, in a directory made for
// it, replaces an older one, and a failed write leaves neither the target
// nor a temporary file behind.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "f.json")
	if err := Write(path, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("two"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	fi, _ := os.Stat(path)
	if err != nil || string(b) != "two" || fi.Mode().Perm() != 0o644 {
		t.Fatalf("content %q mode %v err %v", b, fi.Mode(), err)
	}
	// A directory where the file should be: the rename fails.
	blocked := filepath.Join(dir, "blocked")
	os.MkdirAll(filepath.Join(blocked, "x"), 0o755)
	if err := Write(blocked, []byte("x"), 0o644); err == nil {
		t.Fatal("wrote over a non-empty directory")
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != "sub" && e.Name() != "blocked" {
			t.Errorf("left behind %s", e.Name())
		}
	}
}
