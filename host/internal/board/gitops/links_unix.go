//go:build unix

package gitops

import (
	"io/fs"
	"syscall"
)

func fileIdentity(fi fs.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino), nlink: uint64(st.Nlink)}, true
}
