//go:build unix

package workspace

import (
	"os"
	"syscall"
)

// openFlags adds O_NONBLOCK so that a file swapped for a FIFO after it was
// checked cannot block the open; on a regular file the flag does nothing.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK
