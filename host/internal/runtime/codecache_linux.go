package runtime

import (
	"io/fs"
	"syscall"
)

// stampOf is a file's size, inode and change time (codecache.go).
func stampOf(fi fs.FileInfo) fileStamp {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileStamp{size: fi.Size()}
	}
	return fileStamp{size: fi.Size(), ino: st.Ino, ctime: st.Ctim.Nano(), ok: true}
}
