package pluginsrc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/plugboard/plugboard/host/internal/atomicfile"
)

// LockFileName is the lockfile's name, in the configuration file's
// directory.
const LockFileName = "plugboard.lock"

// LockVersion is the lockfile format's version.
const LockVersion = 1

// LockFor returns the lockfile of a configuration file.
func LockFor(configFile string) string {
	return filepath.Join(filepath.Dir(configFile), LockFileName)
}

// Lock is a lockfile: each source plugin's pinned bytes, by plugin name.
type Lock struct {
	Version int              `json:"version"`
	Plugins map[string]Entry `json:"plugins"`
}

// Entry pins one plugin: its source (Recorded), and the sha256 and size
// of its module.
type Entry struct {
	Source string `json:"source"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

var sha256Hex = regexp.MustCompile(`^[a-f0-9]{64}$`)

// ReadLock reads a lockfile; a missing file is an empty lock.
func ReadLock(path string) (*Lock, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &Lock{Version: LockVersion, Plugins: map[string]Entry{}}, nil
	}
	if err != nil {
		return nil, err
	}
	var l Lock
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if l.Version != LockVersion {
		return nil, fmt.Errorf("%s: version %d; this plugboard reads version %d", path, l.Version, LockVersion)
	}
	if l.Plugins == nil {
		l.Plugins = map[string]Entry{}
	}
	for name, e := range l.Plugins {
		if !sha256Hex.MatchString(e.SHA256) {
			return nil, fmt.Errorf("%s: plugins.%s.sha256 %q is not 64 lowercase hex digits", path, name, e.SHA256)
		}
	}
	return &l, nil
}

// Write writes the lock to path, keys sorted and indented, atomically.
func (l *Lock) Write(path string) error {
	if l.Plugins == nil {
		l.Plugins = map[string]Entry{}
	}
	l.Version = LockVersion
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(b, '\n'), 0o644)
}

// Recorded is a source as a lockfile records it: Source.String, except
// that a file in the lockfile's directory tree is written relative to it
// ("plugins/x.wasm", slash-separated), so a checkout that holds both can
// move.
func Recorded(src Source, lockFile string) string {
	if src.Kind != File {
		return src.String()
	}
	dir, err := filepath.Abs(filepath.Dir(lockFile))
	if err != nil {
		return src.String()
	}
	rel, err := filepath.Rel(dir, src.Path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return src.String()
	}
	return filepath.ToSlash(rel)
}

// Cache holds fetched modules by sha256: DATA/sources/<sha256>.wasm.
type Cache struct{ Dir string }

// CacheIn is the cache of a data directory.
func CacheIn(dataDir string) Cache { return Cache{Dir: filepath.Join(dataDir, "sources")} }

// Path is where the module of that sha256 is kept.
func (c Cache) Path(sum string) string { return filepath.Join(c.Dir, sum+".wasm") }

// Has reports whether the module of that sha256 is cached with that
// content (a file changed on disk is not).
func (c Cache) Has(sum string) bool {
	if !sha256Hex.MatchString(sum) {
		return false
	}
	b, err := os.ReadFile(c.Path(sum))
	return err == nil && Sum(b) == sum
}

// Put stores a module and returns its path.
func (c Cache) Put(b []byte) (string, error) {
	p := c.Path(Sum(b))
	if c.Has(Sum(b)) {
		return p, nil
	}
	return p, atomicfile.Write(p, b, 0o644)
}

// MismatchError is a source plugin whose bytes the lockfile does not pin:
// a missing entry (Expected ""), an entry for another source, or another
// sha256.
type MismatchError struct {
	Name, Source string
	// LockFile is the lockfile's path; Expected the sha256 it pins ("" for
	// none) and LockedSource the source it pins it for.
	LockFile, Expected, LockedSource string
	// Actual is the sha256 of the bytes the source has now.
	Actual string
	// Fix is the command that pins them.
	Fix string
}

func (e *MismatchError) Error() string {
	fix := e.Fix
	if fix == "" {
		fix = "plugboard plugin lock " + e.Name
	}
	switch {
	case e.Expected == "":
		return fmt.Sprintf("plugin %s (%s) is not pinned in %s: expected sha256 none, actual sha256 %s; review the plugin, then run `%s`",
			e.Name, e.Source, e.LockFile, e.Actual, fix)
	case e.LockedSource != e.Source:
		return fmt.Sprintf("plugin %s: %s pins it for source %s, not %s: expected sha256 %s (of the old source), actual sha256 %s; review the plugin, then run `%s`",
			e.Name, e.LockFile, e.LockedSource, e.Source, e.Expected, e.Actual, fix)
	}
	return fmt.Sprintf("plugin %s (%s) does not match %s: expected sha256 %s, actual sha256 %s; if the change is expected, review it, then run `%s`",
		e.Name, e.Source, e.LockFile, e.Expected, e.Actual, fix)
}

// Resolve returns the path of a source plugin's module once its bytes
// match the lock: for a remote source whose pinned sha256 is cached, the
// cached copy (no network); else the source fetched (or read), checked and
// cached. The path is always in
// the cache, content-addressed, so what is loaded cannot change after the
// check. A mismatch is a *MismatchError; fix is the command it names.
func Resolve(ctx context.Context, f *Fetcher, cache Cache, name string, src Source, lock *Lock, lockFile, fix string) (string, error) {
	entry, pinned := lock.Plugins[name]
	recorded := Recorded(src, lockFile)
	// A local file is read every time: it is cheap, and a rebuilt file must
	// not hide behind the cached copy of the one that was pinned.
	if pinned && src.Remote() && entry.Source == recorded && cache.Has(entry.SHA256) {
		return cache.Path(entry.SHA256), nil
	}
	b, err := f.Fetch(ctx, src)
	if err != nil {
		return "", fmt.Errorf("plugin %s: %w", name, err)
	}
	sum := Sum(b)
	if !pinned || entry.Source != recorded || entry.SHA256 != sum {
		return "", &MismatchError{Name: name, Source: recorded, LockFile: lockFile, Expected: entry.SHA256,
			LockedSource: entry.Source, Actual: sum, Fix: fix}
	}
	p, err := cache.Put(b)
	if err != nil {
		return "", fmt.Errorf("plugin %s: caching it: %w", name, err)
	}
	return p, nil
}
