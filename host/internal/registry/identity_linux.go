package registry

import (
	"io/fs"
	"syscall"
)

// identityOf is what proves a file unchanged without reading it: device,
// inode, size and change time. ok is false where the platform does not
// say (then the file is hashed every time).
func identityOf(fi fs.FileInfo) (fileIdentity, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileIdentity{}, false
	}
	return fileIdentity{dev: uint64(st.Dev), ino: st.Ino, size: fi.Size(), ctime: st.Ctim.Nano()}, true
}
