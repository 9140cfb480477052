//go:build unix

package workspace

import (
	"os"
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

// A file on another device than its worktree came in through a mount
// (which a test cannot make without privileges): it is refused like a
// hard link, whatever its link count.
func TestLinkedOtherDevice(t *testing.T) {
	f := newFixture(t)
	fi, err := f.ws.roots["r"].Lstat("file.txt")
	if err != nil {
		t.Fatal(err)
	}
	same := target{dev: f.ws.devs["r"]}
	if same.linked(fi) {
		t.Fatal("a file of the worktree counts as linked")
	}
	if other := (target{dev: f.ws.devs["r"] + 1}); !other.linked(fi) {
		t.Fatal("a file on another device is not refused")
	}
	dir, _ := f.ws.roots["r"].Lstat("sub")
	if (target{dev: f.ws.devs["r"] + 1}).linked(dir) {
		t.Fatal("a directory counts as linked")
	}
}

// ReadFile checks the link count on the file it opened: one linked after
// the walk is refused all the same.
func TestReadFileLinkedAfterWalk(t *testing.T) {
	f := newFixture(t)
	tg, blocked, err := f.ws.find("r/file.txt")
	if err != nil || blocked {
		t.Fatal(err, blocked)
	}
	if err := os.Link(filepath.Join(f.wt, "file.txt"), filepath.Join(f.base, "outside", "second")); err != nil {
		t.Fatal(err)
	}
	fh, err := tg.root.Open(tg.rel)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	fi, _ := fh.Stat()
	if !tg.linked(fi) {
		t.Fatal("a file that gained a link is not refused")
	}
	if s := read(t, f.ws, "r/file.txt", 0, 0); !s.Blocked || !strings.Contains(s.Hint, "hard-linked") {
		t.Fatalf("ReadFile = %+v", s)
	}
}
