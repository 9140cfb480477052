//go:build !unix

package workspace

import "os"

// openFlags: outside Unix there are no FIFOs to guard against.
const openFlags = os.O_RDONLY
