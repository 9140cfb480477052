//go:build wasip1

package main

import (
	"strconv"
	"unsafe"
)

// The raw WASI calls, so a test reaches the host's checks with paths Go's
// os package would clean or refuse first (NUL bytes, "..", absolute).

//go:wasmimport wasi_snapshot_preview1 path_open
func pathOpen(fd int32, dirflags uint32, path unsafe.Pointer, pathLen uint32, oflags uint32,
	rightsBase uint64, rightsInheriting uint64, fdflags uint32, resultFD unsafe.Pointer) uint32

//go:wasmimport wasi_snapshot_preview1 fd_prestat_get
func fdPrestatGet(fd int32, result unsafe.Pointer) uint32

//go:wasmimport wasi_snapshot_preview1 fd_prestat_dir_name
func fdPrestatDirName(fd int32, path unsafe.Pointer, pathLen uint32) uint32

//go:wasmimport wasi_snapshot_preview1 fd_close
func fdClose(fd int32) uint32

// preopen finds the descriptor of the mount at guest path dir.
func preopen(dir string) (int32, bool) {
	var st [8]byte
	for fd := int32(3); fd < 64; fd++ {
		if fdPrestatGet(fd, unsafe.Pointer(&st[0])) != 0 || st[0] != 0 {
			continue
		}
		n := uint32(st[4]) | uint32(st[5])<<8 | uint32(st[6])<<16 | uint32(st[7])<<24
		name := make([]byte, n)
		if n > 0 && fdPrestatDirName(fd, unsafe.Pointer(&name[0]), n) != 0 {
			continue
		}
		if string(name) == dir {
			return fd, true
		}
	}
	return 0, false
}

// rawOpen opens rel relative to the mount at dir, following symbolic
// links; create asks for O_CREAT and the write right.
func rawOpen(dir, rel string, create bool) Answer {
	fd, ok := preopen(dir)
	if !ok {
		return Answer{Error: "no preopen at " + dir}
	}
	var oflags uint32
	rights := uint64(0x2) // fd_read
	if create {
		oflags = 1             // O_CREAT
		rights |= uint64(0x40) // fd_write
	}
	b := append([]byte(rel), 0)
	var out int32
	errno := pathOpen(fd, 1, unsafe.Pointer(&b[0]), uint32(len(rel)), oflags, rights, 0, 0, unsafe.Pointer(&out))
	if errno != 0 {
		return Answer{Error: "errno " + strconv.Itoa(int(errno)), Errno: errno}
	}
	fdClose(out)
	return Answer{OK: true}
}
