//go:build unix

package workspace

import (
	"io/fs"
	"syscall"
)

type fileID struct{ dev, nlink uint64 }

// fileIdentity reads the device and link count of fi.
func fileIdentity(fi fs.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{dev: uint64(st.Dev), nlink: uint64(st.Nlink)}, true
}
