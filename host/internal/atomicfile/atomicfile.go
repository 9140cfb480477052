// Package atomicfile owns writing a file so that a reader sees either the
// old content or the new, never a part: the host's caches (instrumented
// modules, compile marks, manifests) and the plugin lockfile.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write writes data to path with mode through a temporary file in the same
// directory and a rename, creating the directory if needed. On failure the
// temporary file is removed and path is untouched.
func Write(path string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), mode)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}
