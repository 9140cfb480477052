package datadir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPrepare(t *testing.T) {
	base := t.TempDir()

	made := filepath.Join(base, "new", "data")
	if err := Prepare(made); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(made); fi.Mode().Perm() != Mode {
		t.Errorf("made with mode %04o, want %04o", fi.Mode().Perm(), Mode)
	}

	readable := filepath.Join(base, "readable")
	os.Mkdir(readable, 0o755)
	os.Chmod(readable, 0o755)
	if err := Prepare(readable); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(readable); fi.Mode().Perm() != Mode {
		t.Errorf("a directory others could read kept mode %04o", fi.Mode().Perm())
	}

	for _, mode := range []os.FileMode{0o777, 0o775, 0o1777} {
		writable := filepath.Join(base, "writable"+mode.String())
		os.Mkdir(writable, 0o700)
		os.Chmod(writable, mode)
		err := Prepare(writable)
		if err == nil || !strings.Contains(err.Error(), "can be written by other users") || !strings.Contains(err.Error(), "chmod 700") {
			t.Errorf("mode %v: Prepare = %v, want a refusal naming chmod 700", mode, err)
		}
		if fi, _ := os.Stat(writable); fi.Mode().Perm() != mode.Perm() {
			t.Errorf("mode %v: a refused directory was changed to %v", mode, fi.Mode())
		}
	}

	file := filepath.Join(base, "file")
	os.WriteFile(file, nil, 0o600)
	if err := Prepare(file); err == nil {
		t.Error("Prepare accepted a file")
	}
}

func TestPrivateFile(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "board.db")
	os.WriteFile(db, []byte("x"), 0o644)
	os.Chmod(db, 0o644)
	if err := PrivateFile(db); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(db); fi.Mode().Perm() != 0o600 {
		t.Errorf("board.db mode %04o, want 0600", fi.Mode().Perm())
	}
	if err := PrivateFile(filepath.Join(dir, "missing")); err != nil {
		t.Errorf("a missing file: %v", err)
	}
}

// TestPrepareRefusesAnotherOwner: a directory another account owns is
// refused even when only its owner may write it (run as root, the test can
// make one).
func TestPrepareRefusesAnotherOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a directory to another user")
	}
	dir := filepath.Join(t.TempDir(), "theirs")
	os.Mkdir(dir, 0o700)
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := Prepare(dir); err == nil || !strings.Contains(err.Error(), "belongs to another user") {
		t.Fatalf("Prepare = %v, want a refusal", err)
	}
}
