//go:build !unix

package runtime

// reserve allocates size bytes on the Go heap where no anonymous mapping is
// available.
func reserve(size uint64) ([]byte, func()) { return make([]byte, size), nil }
