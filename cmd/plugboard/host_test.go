package main

import (
	"path/filepath"
	"testing"
)

// TestAttemptOfDir checks which attempt a directory under the data
// directory's worktrees belongs to, and that other directories belong to none.
func TestAttemptOfDir(t *testing.T) {
	data := t.TempDir()
	id := "0b6f3ad4-2f58-4e8d-9a51-3f6f0b1a2c3d"
	for dir, want := range map[string]string{
		filepath.Join(data, "worktrees", id, "app", "src"): id,
		filepath.Join(data, "worktrees", id):               id,
		filepath.Join(data, "worktrees"):                   "",
		filepath.Join(data, "worktrees", "not-an-id", "x"): "",
		filepath.Join(data, "compiled"):                    "",
		t.TempDir():                                        "",
	} {
		if got := attemptOfDir(data, dir); got != want {
			t.Errorf("attemptOfDir(%s) = %q, want %q", dir, got, want)
		}
	}
}
