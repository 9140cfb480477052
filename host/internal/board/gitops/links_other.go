//go:build !unix

package gitops

import "io/fs"

// fileIdentity reports no identity where FileInfo carries no link count: the
// checks are skipped there.
func fileIdentity(fs.FileInfo) (fileID, bool) { return fileID{}, false }
