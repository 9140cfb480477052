package registry

import (
	"runtime"
	"syscall"
)

// inBackground lowers the calling goroutine to the lowest CPU priority for
// the rest of its life: it is locked to its OS thread, which is given nice
// 19 and ends with the goroutine (a goroutine that exits locked takes its
// thread with it, so no other goroutine ever runs at that priority). The
// warm-up compiles in such goroutines: wazero compiles in the goroutine
// that asks, and on a machine with two cores a compilation at normal
// priority took the core a client and the first calls needed (a cold
// TypeScript listTools() took 220 ms instead of 120 ms beside it).
func inBackground() {
	runtime.LockOSThread()
	_ = syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), 19)
}
