// Package datadir owns the one rule for the data directory's permissions:
// it is the host's alone. The directory holds the board's database (the
// decision log, mail, prompts), the host's git dirs and its compile caches,
// so another local account must neither read nor write it, and a directory
// another account can write is refused rather than used: what it could plant
// there (a cache entry, a git config) the host would read back.
package datadir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// Mode is the data directory's permission: the host's user only.
const Mode fs.FileMode = 0o700

// Prepare makes dir (and its parents) when missing, with Mode; an existing
// dir is refused when another account can write it or owns it, and is
// narrowed to Mode when others can read or enter it.
func Prepare(dir string) error {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, Mode); err != nil {
			return fmt.Errorf("data directory %s: %w", dir, err)
		}
		// MkdirAll's mode passes through the umask, and an umask can
		// only take bits away: Mode is at most what it made.
		return nil
	}
	if err != nil {
		return fmt.Errorf("data directory %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("data directory %s is not a directory", dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("data directory %s belongs to another user (uid %d, this process runs as %d): "+
			"whoever owns it can plant what the host reads back; give --data a directory of this user's own", dir, st.Uid, os.Geteuid())
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("data directory %s can be written by other users (mode %04o): "+
			"they could plant what the host reads back; run chmod 700 %s, or give --data another directory", dir, fi.Mode().Perm(), dir)
	}
	if fi.Mode().Perm() != Mode {
		if err := os.Chmod(dir, Mode); err != nil {
			return fmt.Errorf("data directory %s: narrow to %04o: %w", dir, Mode, err)
		}
	}
	return nil
}

// PrivateFile narrows an existing file to the host's user (0600): the
// database and its journals. A missing file is not an error.
func PrivateFile(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode().IsRegular() && fi.Mode().Perm()&0o077 != 0 {
		return os.Chmod(path, 0o600)
	}
	return nil
}
