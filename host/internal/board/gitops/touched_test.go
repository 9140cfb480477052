package gitops

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// TestChangesTouched: Changes reads the index's stale stat data without
// refreshing it first, so files only touched, text or binary, must still
// not count, while a binary file changed in place at the same size, a
// mode change and a type change do.
func TestChangesTouched(t *testing.T) {
	repo := newRepo(t, map[string]string{
		"text.txt":       "same text\n",
		"bin-same.dat":   "\x00same binary\x00",
		"bin-edit.dat":   "\x00abc binary\x00",
		"bin-grow.dat":   "\x00grow\x00",
		"script.sh":      "echo hi\n",
		"to-link":        "was a file\n",
		"-diff.txt":      "text marked binary\n",
		".gitattributes": "-diff.txt -diff\n",
	})
	c, base := newClone(t, repo, "pb/touched", "main")
	wt := c.Dir
	writeFiles(t, wt, map[string]string{
		"text.txt":     "same text\n",         // rewritten identically
		"bin-same.dat": "\x00same binary\x00", // rewritten identically
		"-diff.txt":    "text marked binary\n",
		"bin-edit.dat": "\x00xyz binary\x00", // same size, other content
		"bin-grow.dat": "\x00grown\x00",
	})
	later := time.Now().Add(2 * time.Second)
	for _, p := range []string{"text.txt", "bin-same.dat", "-diff.txt", "bin-edit.dat"} {
		if err := os.Chtimes(filepath.Join(wt, p), later, later); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(wt, "script.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(wt, "to-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("text.txt", filepath.Join(wt, "to-link")); err != nil {
		t.Fatal(err)
	}
	changes, _, err := Changes(t.Context(), c, base)
	if err != nil {
		t.Fatal(err)
	}
	want := []FileChange{
		{Path: "bin-edit.dat", Status: StatusModified, Binary: true, Bytes: 12},
		{Path: "bin-grow.dat", Status: StatusModified, Binary: true, Bytes: 7},
		{Path: "script.sh", Status: StatusModified, Bytes: 8},
		{Path: "to-link", Status: StatusModified, Added: 1, Deleted: 1, Bytes: int64(len("text.txt"))},
	}
	if !reflect.DeepEqual(changes, want) {
		t.Errorf("Changes:\n got %+v\nwant %+v", changes, want)
	}
	// Only touched files: nothing changed, and no refresh is needed for
	// text files.
	c2, base2 := newClone(t, repo, "pb/touched-text", "main")
	writeFiles(t, c2.Dir, map[string]string{"text.txt": "same text\n"})
	if err := os.Chtimes(filepath.Join(c2.Dir, "text.txt"), later, later); err != nil {
		t.Fatal(err)
	}
	if changes, sum, err := Changes(t.Context(), c2, base2); err != nil || len(changes) != 0 || sum != (Summary{}) {
		t.Errorf("touched text file: %+v %+v %v", changes, sum, err)
	}
}
