//go:build !unix

package runtime

import "io/fs"

// openNonblock: outside Unix there are no FIFOs to guard against.
const openNonblock = 0

// fileLinks reports nothing where FileInfo carries no link count; the link
// and device checks are skipped there.
func fileLinks(fs.FileInfo) (dev, nlink uint64, ok bool) { return 0, 0, false }
