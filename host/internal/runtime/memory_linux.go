//go:build linux

package runtime

import "syscall"

// mapNoReserve keeps a reservation from counting against the commit limit
// until its pages are touched.
const mapNoReserve = syscall.MAP_NORESERVE
