//go:build !unix

package workspace

import "io/fs"

type fileID struct{ dev, nlink uint64 }

// fileIdentity reports nothing where FileInfo carries no link count; the
// link checks are skipped there.
func fileIdentity(fs.FileInfo) (fileID, bool) { return fileID{}, false }
