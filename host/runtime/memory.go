package runtime

import "github.com/tetratelabs/wazero/experimental"

// reservedMemory backs a guest's linear memory with one allocation of the
// full cap, made up front. Go maps large allocations lazily, so this costs
// address space, not RAM, until the guest touches the pages; in exchange a
// memory.grow never copies. wazero's default grows by append, which copies
// the whole memory each time: a guest growing to a 128 MiB cap spent seconds
// copying before it could hit the cap.
type reservedMemory struct{ buf []byte }

func newMemoryAllocator(limitBytes uint64) experimental.MemoryAllocator {
	return experimental.MemoryAllocatorFunc(func(capacity, maxBytes uint64) experimental.LinearMemory {
		return &reservedMemory{buf: make([]byte, 0, max(min(maxBytes, limitBytes), capacity))}
	})
}

func (m *reservedMemory) Reallocate(size uint64) []byte {
	if size > uint64(cap(m.buf)) {
		return nil
	}
	m.buf = m.buf[:size]
	return m.buf
}

func (m *reservedMemory) Free() { m.buf = nil }
