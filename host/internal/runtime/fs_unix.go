//go:build unix

package runtime

import (
	"io/fs"
	"syscall"
)

// openNonblock keeps a FIFO swapped in after the check from blocking the
// open; on regular files and directories it does nothing.
const openNonblock = syscall.O_NONBLOCK

// fileLinks reads the device and link count of fi.
func fileLinks(fi fs.FileInfo) (dev, nlink uint64, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return uint64(st.Dev), uint64(st.Nlink), true
}
