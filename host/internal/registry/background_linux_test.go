package registry

import (
	"runtime"
	"syscall"
	"testing"
)

// TestInBackgroundLowersOnlyItsThread: the warm-up's goroutine runs at nice
// 19, and the priority leaves with it: the other goroutines' threads keep
// theirs, and so does a thread started afterwards.
func TestInBackgroundLowersOnlyItsThread(t *testing.T) {
	priority := func() int {
		// getpriority returns 20 - nice for a thread (the raw syscall).
		p, err := syscall.Getpriority(syscall.PRIO_PROCESS, syscall.Gettid())
		if err != nil {
			t.Fatal(err)
		}
		return 20 - p
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before := priority()

	got := make(chan int)
	go func() {
		inBackground()
		got <- priority()
	}()
	if nice := <-got; nice != 19 {
		t.Fatalf("nice in the background goroutine = %d, want 19", nice)
	}
	if nice := priority(); nice != before {
		t.Fatalf("the test's own thread went from nice %d to %d", before, nice)
	}
	// Goroutines started now, on whatever threads the runtime has, none
	// of which may be the one inBackground lowered (it ended with its
	// goroutine).
	for range 8 {
		go func() {
			runtime.LockOSThread()
			got <- priority()
		}()
	}
	for range 8 {
		if nice := <-got; nice != before {
			t.Fatalf("a later goroutine runs at nice %d, want %d", nice, before)
		}
	}
}
