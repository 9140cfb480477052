package runtime

import "github.com/tetratelabs/wazero/experimental"

// reservedMemory backs a guest's linear memory with one reservation of the
// full cap, made up front, so that memory.grow never copies: wazero's default
// grows by append, which copies the whole memory each time (a guest growing
// to a 128 MiB cap spent seconds copying before it could hit the cap). The
// reservation costs address space, not RAM, until the guest touches pages.
//
// Where the platform allows (memory_unix.go) the reservation is an anonymous
// mapping outside the Go heap: as a Go allocation, every instance's cap would
// count as live heap and push the collector's goal up by that much, letting
// real garbage pile up to gigabytes before a collection.
type reservedMemory struct {
	buf     []byte
	release func()
}

func newMemoryAllocator(limitBytes uint64) experimental.MemoryAllocator {
	return experimental.MemoryAllocatorFunc(func(capacity, maxBytes uint64) experimental.LinearMemory {
		size := max(min(maxBytes, limitBytes), capacity)
		buf, release := reserve(size)
		return &reservedMemory{buf: buf[:0], release: release}
	})
}

func (m *reservedMemory) Reallocate(size uint64) []byte {
	if size > uint64(cap(m.buf)) {
		return nil
	}
	m.buf = m.buf[:size]
	return m.buf
}

func (m *reservedMemory) Free() {
	m.buf = nil
	if m.release != nil {
		m.release()
		m.release = nil
	}
}
