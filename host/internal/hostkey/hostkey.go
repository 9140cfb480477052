// Package hostkey owns the host's secret key for authenticating what it
// caches on disk (instrumented modules, wazero's machine code, describe
// output) and reads back later. A cache entry carries a MAC under this key;
// an entry whose MAC does not check out was not written by this host and is
// recompiled or refused, never run: a cache's name (a sha256) or a checksum
// anyone can recompute proves nothing about who wrote it.
//
// The key lives in DATA/keys/cache.key, readable by the host's user only.
// It protects the caches from a writer that cannot read it; a process of
// the same user outside the OS sandbox can, so it is a second line behind
// the sandbox that keeps agents out of DATA, not a replacement for it.
package hostkey

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	goruntime "runtime"
)

// Size is the key's length in bytes.
const Size = 32

// Path is where Load keeps the key of a data directory.
func Path(dataDir string) string { return filepath.Join(dataDir, "keys", "cache.key") }

// Load returns the data directory's key, creating it on first use (the
// directory 0700, the file 0600). Two processes starting together on a new
// data directory agree on one key: each writes a candidate to a temporary
// file and links it into place, and the one whose link fails (the name
// exists) reads the other's, which is complete by then. A key file that is
// not a regular file, has the wrong size, or that group or others may read
// or write is refused: a key others can read authenticates nothing.
func Load(dataDir string) ([]byte, error) {
	dir := filepath.Dir(Path(dataDir))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("host key directory: %w", err)
	}
	if err := checkDir(dir); err != nil {
		return nil, err
	}
	key, err := read(Path(dataDir))
	if errors.Is(err, fs.ErrNotExist) {
		return create(Path(dataDir))
	}
	return key, err
}

// checkDir refuses a key directory others may write to: they could put
// their own key in its place. The directory may be a symlink (hosts
// sharing one compile cache share its key that way); the key file may not.
func checkDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("host key directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("host key directory %s is not a directory; remove it and start the host again", dir)
	}
	if goruntime.GOOS != "windows" && fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("host key directory %s is writable by group or others (mode %v); run: chmod 700 %s", dir, fi.Mode().Perm(), dir)
	}
	return nil
}

// read returns the key in path after checking what the file is.
func read(path string) ([]byte, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, fmt.Errorf("host key: %w", err)
	}
	if err := checkFile(path, fi); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("host key: %w", err)
	}
	defer f.Close()
	// The file opened must be the one checked, not one swapped in since.
	opened, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("host key: %w", err)
	}
	if !os.SameFile(fi, opened) {
		return nil, fmt.Errorf("host key %s changed while it was read; start the host again", path)
	}
	key, err := io.ReadAll(io.LimitReader(f, Size+1))
	if err != nil {
		return nil, fmt.Errorf("host key: %w", err)
	}
	if len(key) != Size {
		return nil, fmt.Errorf("host key %s holds %d bytes, not %d; remove it (the caches it signed are rebuilt) and start the host again", path, len(key), Size)
	}
	return key, nil
}

// checkFile refuses anything but a regular file that only its owner may
// read and write.
func checkFile(path string, fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("host key %s is not a regular file (%v); remove it and start the host again", path, fi.Mode().Type())
	}
	if goruntime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("host key %s may be read or written by group or others (mode %v); run: chmod 600 %s, or remove it (the caches it signed are rebuilt)", path, fi.Mode().Perm(), path)
	}
	return nil
}

// create makes a new key at path, or returns the key another process made
// there first.
func create(path string) ([]byte, error) {
	key := make([]byte, Size)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("host key: %w", err)
	}
	tmp, err := writeTemp(filepath.Dir(path), key)
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp)
	// A hard link fails if the name exists, and publishes the whole key at
	// once: a reader never sees an empty or partial key file, as it could
	// between an O_EXCL create and its write.
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return read(path)
		}
		return nil, fmt.Errorf("host key: %w", err)
	}
	return key, nil
}

// writeTemp writes key to a new file in dir (created with O_EXCL, mode
// 0600) and returns its name.
func writeTemp(dir string, key []byte) (string, error) {
	f, err := os.CreateTemp(dir, ".cache.key-*")
	if err != nil {
		return "", fmt.Errorf("host key: %w", err)
	}
	_, err = f.Write(key)
	if err == nil {
		err = f.Chmod(0o600)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("host key: %w", err)
	}
	return f.Name(), nil
}

// MAC returns HMAC-SHA256 under key of parts. Each part is preceded by its
// length (8 bytes, big-endian), so no two different lists of parts are
// hashed as the same bytes: ("ab", "c") and ("a", "bc") differ, and so do
// ("a") and ("a", ""). Callers start parts with a label naming what is
// authenticated, so a MAC made for one cache is never valid for another.
func MAC(key []byte, parts ...[]byte) []byte {
	h := hmac.New(sha256.New, key)
	var n [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write(p)
	}
	return h.Sum(nil)
}

// Equal compares two MACs in constant time.
func Equal(a, b []byte) bool { return hmac.Equal(a, b) }

// Uint64 is the 8-byte big-endian form of v, for numbers among MAC's parts.
func Uint64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// Derive returns a key for one purpose, named by label, made from key:
// a secret of its own that says nothing about key or other purposes'.
func Derive(key []byte, label string) []byte { return MAC(key, []byte("derive"), []byte(label)) }
