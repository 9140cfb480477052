//go:build !unix

package runtime_test

import (
	"os"
	"testing"
)

// makeFIFO makes a plain file where there are no FIFOs: the corpus then
// only checks it cannot be read past the others.
func makeFIFO(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("SECRET"), 0o644); err != nil {
		t.Fatal(err)
	}
}
