//go:build unix

package workspace

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plugboard/plugboard/abi"
)

// A FIFO in the worktree (any process there can make one) must be refused,
// not opened: opening it for reading would block until a writer came.
func TestReadFileFIFO(t *testing.T) {
	f := newFixture(t)
	if err := syscall.Mkfifo(filepath.Join(f.wt, "fifo"), 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	symlink(t, "fifo", filepath.Join(f.wt, "fifolink"))
	for _, p := range []string{"r/fifo", "r/fifolink"} {
		done := make(chan error, 1)
		go func() {
			_, err := f.ws.ReadFile(p, 0, 0)
			done <- err
		}()
		select {
		case err := <-done:
			if e := envelope(t, err, abi.CodeInvalidArgument); !strings.Contains(e.Message, "not a regular file") {
				t.Errorf("%s: %s", p, e.Message)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: ReadFile blocked on a FIFO", p)
		}
	}
}
