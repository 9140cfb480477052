package gitops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestChangesWithinRefusesBeforeReading: changes that certainly exceed
// what git may read under the guard — a huge sparse file, added or grown
// from an empty tracked file, or ten times more added files than the guard
// allows — are refused before git reads them (seconds of hashing for these
// sizes), while files only touched do not count, and changes over the
// guard but cheap to read are measured in full.
func TestChangesWithinRefusesBeforeReading(t *testing.T) {
	ctx := context.Background()
	limit := Guard{Name: "test", MaxFiles: 5, MaxBytes: 1 << 20}
	files := map[string]string{"empty": "", "keep.txt": "keep\n"}
	for i := range 80 {
		files[fmt.Sprintf("tracked/f%02d", i)] = fmt.Sprintf("tracked %d\n", i)
	}
	repo := newRepo(t, files)
	sparse := func(t *testing.T, path string) {
		t.Helper()
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		// Not a multiple of 4 GiB: git keeps sizes modulo 2^32 in its index,
		// so a file grown by a multiple looks unchanged in size.
		if err := f.Truncate(8<<30 + 4096); err != nil {
			t.Skipf("no sparse files here: %v", err)
		}
	}
	for i, c := range []struct {
		name   string
		change func(t *testing.T, dir string)
		reason string
	}{
		{"a new 8 GiB file", func(t *testing.T, dir string) { sparse(t, filepath.Join(dir, "big.bin")) }, "8 GiB > max 1 MiB (test)"},
		{"an empty tracked file grown to 8 GiB", func(t *testing.T, dir string) { sparse(t, filepath.Join(dir, "empty")) }, "8 GiB > max 1 MiB (test)"},
		{"60 new files", func(t *testing.T, dir string) {
			for i := range 60 {
				writeFiles(t, dir, map[string]string{fmt.Sprintf("new/f%02d", i): "x\n"})
			}
		}, "60 files > max 5 (test)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl, base := newClone(t, repo, fmt.Sprintf("pb/t%d-precheck", i), "main")
			c.change(t, cl.Dir)
			start := time.Now()
			_, _, err := ChangesWithin(ctx, cl, base, limit)
			var over *GuardExceeded
			if !errors.As(err, &over) || over.Reason != c.reason {
				t.Fatalf("ChangesWithin: %v, want a GuardExceeded %q", err, c.reason)
			}
			if took := time.Since(start); took > 3*time.Second {
				t.Errorf("refused after %v: git read the files", took)
			}
		})
	}

	// Eighty tracked files rewritten identically (a formatter's run) are
	// over what git may read by status, but none changed: nothing is
	// refused.
	cl, base := newClone(t, repo, "pb/t9-touched", "main")
	later := time.Now().Add(2 * time.Second)
	for i := range 80 {
		p := filepath.Join(cl.Dir, "tracked", fmt.Sprintf("f%02d", i))
		writeFiles(t, cl.Dir, map[string]string{filepath.ToSlash(filepath.Join("tracked", fmt.Sprintf("f%02d", i))): fmt.Sprintf("tracked %d\n", i)})
		if err := os.Chtimes(p, later, later); err != nil {
			t.Fatal(err)
		}
	}
	writeFiles(t, cl.Dir, map[string]string{"keep.txt": "kept\n"})
	changes, sum, err := ChangesWithin(ctx, cl, base, limit)
	if err != nil || sum.FileCount != 1 || len(changes) != 1 || changes[0].Path != "keep.txt" {
		t.Fatalf("touched files: %+v %+v %v", changes, sum, err)
	}

	// Twenty new files: over the guard, but cheap to read — measured in
	// full (lines counted); the caller's Check blocks them.
	cl, base = newClone(t, repo, "pb/t8-cheap", "main")
	for i := range 20 {
		writeFiles(t, cl.Dir, map[string]string{fmt.Sprintf("new/f%02d", i): "x\n"})
	}
	if changes, sum, err := ChangesWithin(ctx, cl, base, limit); err != nil || len(changes) != 20 || sum.Added != 20 {
		t.Fatalf("20 new files: %d changes, %+v, %v", len(changes), sum, err)
	}
}
