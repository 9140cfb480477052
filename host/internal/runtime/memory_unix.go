//go:build unix

package runtime

import "syscall"

// reserve maps size bytes of zeroed, lazily committed memory outside the Go
// heap, falling back to a Go allocation if the mapping fails.
func reserve(size uint64) ([]byte, func()) {
	if size == 0 {
		return nil, nil
	}
	b, err := syscall.Mmap(-1, 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANON|mapNoReserve)
	if err != nil {
		return make([]byte, size), nil
	}
	return b, func() { _ = syscall.Munmap(b) }
}
