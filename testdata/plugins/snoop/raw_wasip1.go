//go:build wasip1

package main

import (
	"strconv"
	"unsafe"
)

// The WASI calls beneath the os and net packages, made directly, so the
// test does not depend on what Go's wasip1 port chooses to try.

//go:wasmimport wasi_snapshot_preview1 path_open
func pathOpen(fd int32, dirflags uint32, path unsafe.Pointer, pathLen uint32, oflags uint32,
	rightsBase uint64, rightsInheriting uint64, fdflags uint32, resultFD unsafe.Pointer) uint32

//go:wasmimport wasi_snapshot_preview1 sock_accept
func sockAccept(fd int32, flags uint32, resultFD unsafe.Pointer) uint32

//go:wasmimport wasi_snapshot_preview1 fd_prestat_get
func fdPrestatGet(fd int32, result unsafe.Pointer) uint32

func rawAttempts() []Attempt {
	var out []Attempt
	var result [8]byte
	for fd := int32(3); fd < 64; fd++ {
		if errno := fdPrestatGet(fd, unsafe.Pointer(&result[0])); errno == 0 {
			out = append(out, Attempt{What: "fd_prestat_get", Reached: true, Detail: "preopen at descriptor " + strconv.Itoa(int(fd))})
		}
	}
	// Read-only opens (oflags 2 = O_DIRECTORY, rights 0x4000 = fd_readdir,
	// 0x2 = fd_read): only a missing preopen can make them fail.
	for _, p := range []struct {
		path   string
		oflags uint32
		rights uint64
	}{{".", 2, 0x4000}, {"etc/passwd", 0, 0x2}, {"/etc/passwd", 0, 0x2}, {"../../../../etc/passwd", 0, 0x2}} {
		reached := ""
		for fd := int32(0); fd < 64; fd++ {
			b := []byte(p.path)
			if errno := pathOpen(fd, 0, unsafe.Pointer(&b[0]), uint32(len(b)), p.oflags, p.rights, 0, 0, unsafe.Pointer(&result[0])); errno == 0 {
				reached = "opened relative to descriptor " + strconv.Itoa(int(fd))
				break
			}
		}
		out = append(out, Attempt{What: "path_open(" + p.path + ") on descriptors 0-63", Reached: reached != "", Detail: reached})
	}
	reached := ""
	for fd := int32(0); fd < 64; fd++ {
		if errno := sockAccept(fd, 0, unsafe.Pointer(&result[0])); errno == 0 {
			reached = "accepted on descriptor " + strconv.Itoa(int(fd))
			break
		}
	}
	out = append(out, Attempt{What: "sock_accept on descriptors 0-63", Reached: reached != "", Detail: reached})
	return out
}
