package runtime

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/plugboard/plugboard/host/internal/atomicfile"
	"github.com/plugboard/plugboard/host/internal/hostkey"
)

// The machine-code cache, authenticated around wazero.
//
// wazero's file cache (wazero.NewCompilationCacheWithDir) keeps the machine
// code of each module in a file named by a hash of the module, under
// CacheDir/wazero-<version>-<arch>-<os>, and maps whatever that file holds
// as executable code the next time the module is compiled: its only check
// is a CRC anyone can recompute. It is not pluggable (v1.12.0:
// internal/filecache), so the engine authenticates the directory around
// each CompileModule instead:
//
//   - before: every cache file must have a sidecar (<name>.mac) holding the
//     sha256 of its content, its (size, inode, ctime) and the time it was
//     signed, and an HMAC under Config.CacheKey of those and its name. A
//     file whose sidecar checks out and whose (size, inode, ctime) is
//     unchanged is trusted without reading it: no unprivileged process can
//     set a file's ctime, and any write changes it — to the clock's tick,
//     so only a ctime that was settled (settle older than the signing)
//     when it was signed is trusted this way; a younger one is hashed again
//     and, still matching, signed again. A file whose stat changed but
//     whose content still has the signed sha256 (a backup restored, a copy)
//     is signed again. Any other file — no sidecar, a forged or another
//     file's sidecar, other content — is deleted with its sidecar, and
//     wazero compiles the module again. Files this process has checked are
//     remembered by their stat, so a check is a directory read and an lstat
//     per file.
//   - after: files wazero wrote during the compilation (no sidecar yet) are
//     hashed and signed.
//
// What this does not close: a writer of the host's own user racing the
// host — replacing a file between the check and wazero's read of it, or
// between wazero's write and the signing — gets its file used (and, in the
// second case, signed). Only keeping such writers out of the directory
// closes that window: the OS sandbox around agents does, this is the
// second line behind it. Two compilations running at once in one process
// may cost a cache entry (one's check can delete the other's file before
// it is signed): the next load compiles that module again, nothing worse.
//
// wazero's interpreter never reads or writes the file cache, so an
// interpreter engine has none (its instrumented modules are still cached:
// instrumentcache.go).

// sidecarExt ends the name of the file holding a cache file's signature.
const sidecarExt = ".mac"

// sidecarMagic starts every sidecar: the format, so another one is never
// misread.
var sidecarMagic = []byte("plugboard-wazero-cache-v1\x00")

// sidecarLabel is the first part of a sidecar's MAC: what it authenticates.
var sidecarLabel = []byte("plugboard wazero cache file")

// codeCache is the authenticated view of wazero's cache directory.
type codeCache struct {
	dir string
	key []byte
	log *slog.Logger

	// now is the clock signing times are taken from (time.Now; tests
	// move it).
	now func() time.Time

	// mu serialises checks and signing, and guards trusted.
	mu sync.Mutex
	// trusted maps each file checked or signed by this process with a
	// settled stamp to that stamp: while the stat is the same, the file
	// is too.
	trusted map[string]fileStamp
	// known holds every file this process has kept at a check or signed,
	// until a check deletes it. Signing after a compilation passes over
	// them: with two compilations at once, a file the other one wrote
	// and signed is not new to this one, and one rewritten since (by a
	// writer of the host's user) must be deleted by the next check, not
	// adopted.
	known map[string]bool
}

// fileStamp is what changes whenever a file's content is written: its
// size, inode and change time. ok is false where the platform does not
// give the last two (the content is then hashed at every check).
type fileStamp struct {
	size  int64
	ino   uint64
	ctime int64
	ok    bool
}

// sidecar is a parsed sidecar file: the content's sha256, the stamp of
// the file when it was signed and when that was (Unix ns).
type sidecar struct {
	sum      [sha256.Size]byte
	stamp    fileStamp
	signedAt int64
}

// settle is how much older than its signing a file's ctime must be for its
// stamp to vouch for its content: a write within the same tick of the
// filesystem's clock (jiffies; a second on some filesystems) keeps the
// ctime it had.
const settle = 2 * time.Second

// settled reports whether sc's stamp vouches for the file's content.
func (sc sidecar) settled() bool {
	return sc.stamp.ok && sc.stamp.ctime < sc.signedAt-int64(settle)
}

// checkCacheKey drops CacheDir when there is no key to authenticate what
// is read back from it, and refuses a key that is not the host's size.
func checkCacheKey(cfg *Config) error {
	switch {
	case cfg.CacheDir == "":
	case len(cfg.CacheKey) == 0:
		cfg.Logger.Warn("compiled code is not cached on disk: no key to authenticate the cache", "dir", cfg.CacheDir)
		cfg.CacheDir = ""
	case len(cfg.CacheKey) != hostkey.Size:
		return fmt.Errorf("cache key is %d bytes, not %d", len(cfg.CacheKey), hostkey.Size)
	default:
		// Each key caches in a directory of its own, named by a digest of
		// the key: hosts with different keys sharing one CacheDir (tests
		// do, so does a compiled/ linked between data directories) would
		// otherwise discard each other's entries as forged, and recompile
		// for ever.
		id := hostkey.MAC(cfg.CacheKey, []byte("plugboard cache directory"))
		cfg.CacheDir = filepath.Join(cfg.CacheDir, "key-"+hex.EncodeToString(id[:8]))
	}
	return nil
}

// newCompilationCache returns wazero's compilation cache for cfg and, when
// it keeps machine code on disk, the codeCache that authenticates it.
func newCompilationCache(cfg Config) (wazero.CompilationCache, *codeCache, error) {
	if cfg.CacheDir == "" || cfg.Interpreter {
		return wazero.NewCompilationCache(), nil, nil
	}
	dir, err := filepath.Abs(cfg.CacheDir)
	if err != nil {
		return nil, nil, fmt.Errorf("compilation cache %s: %w", cfg.CacheDir, err)
	}
	cache, err := wazero.NewCompilationCacheWithDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("compilation cache %s: %w", cfg.CacheDir, err)
	}
	code := &codeCache{dir: filepath.Join(dir, wazeroCacheSubdir()), key: cfg.CacheKey, log: cfg.Logger,
		now: time.Now, trusted: map[string]fileStamp{}, known: map[string]bool{}}
	return cache, code, nil
}

// wazeroCacheSubdir is the directory wazero v1.12.0 keeps its files in
// under the one it is given (cache.go, ensuresFileCache), with the version
// found as internal/version.GetWazeroVersion finds it.
func wazeroCacheSubdir() string {
	ver := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range bi.Deps {
			if strings.Contains(dep.Path, "github.com/tetratelabs/wazero") {
				ver = dep.Version
			}
		}
		if ver == "" || ver == "(devel)" {
			ver = bi.Main.Version
		}
	}
	if ver == "" || ver == "(devel)" {
		ver = "dev"
	}
	return "wazero-" + ver + "-" + goruntime.GOARCH + "-" + goruntime.GOOS
}

// compileModule is wazero's CompileModule with its disk cache checked
// before and what it wrote signed after. A cache that cannot be checked
// (a file that fails and cannot be deleted) fails the compilation rather
// than let wazero read it.
func (e *Engine) compileModule(ctx context.Context, instrumented []byte) (wazero.CompiledModule, error) {
	if e.code == nil {
		defer e.returnMemory()
		return e.rt.CompileModule(ctx, instrumented)
	}
	if _, err := e.code.verify(); err != nil {
		return nil, fmt.Errorf("compiled-code cache: %w", err)
	}
	cm, err := e.rt.CompileModule(ctx, instrumented)
	if e.code.sign() > 0 {
		// A compilation, not a cache load: wazero's compiler leaves
		// hundreds of MB of garbage per Go guest (SSA, register
		// allocation), which the runtime would hand back to the system
		// only gradually — 263 MB of RSS 20 s after a first start with
		// every first-party plugin warmed, 110 MB once returned.
		e.returnMemory()
	}
	return cm, err
}

// verify checks every cache file, deleting those that fail, and returns
// the names it checked and kept.
func (c *codeCache) verify() (map[string]bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	names, err := c.entries()
	if err != nil {
		return nil, err
	}
	kept := map[string]bool{}
	for _, name := range names {
		ok, err := c.check(name)
		if err != nil {
			return nil, err
		}
		kept[name] = ok
	}
	return kept, nil
}

// sign signs the cache files this process has not kept or signed before
// and that have no valid signature: those wazero has just written. A file
// a check kept, or this process signed (another compilation running at
// the same time), is never signed here, whatever happened to it since: a
// file rewritten under a name the host had checked is deleted by the next
// verify, not adopted. It returns how many new files it found.
func (c *codeCache) sign() (found int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	names, err := c.entries()
	if err != nil {
		c.log.Warn("compiled-code cache not signed; its files are compiled again at the next load", "dir", c.dir, "err", err)
		return 0
	}
	for _, name := range names {
		if c.known[name] {
			continue
		}
		found++
		if err := c.adopt(name); err != nil {
			c.log.Warn("compiled-code cache file not signed; it is compiled again at the next load", "path", filepath.Join(c.dir, name), "err", err)
			continue
		}
		c.known[name] = true
	}
	return found
}

// entries lists the names wazero reads cache files by: the hex of a
// sha256. Everything else (sidecars, wazero's temporary files of writes in
// progress) is never opened as machine code.
func (c *codeCache) entries() ([]string, error) {
	des, err := os.ReadDir(c.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, de := range des {
		if isCacheName(de.Name()) {
			names = append(names, de.Name())
		}
	}
	return names, nil
}

func isCacheName(name string) bool {
	if len(name) != 2*sha256.Size {
		return false
	}
	_, err := hex.DecodeString(name)
	return err == nil && strings.ToLower(name) == name
}

// check keeps a file whose signature holds (signing it again if only its
// stat changed) and deletes any other.
func (c *codeCache) check(name string) (kept bool, _ error) {
	ok, err := c.valid(name)
	if err == nil && ok {
		return true, nil
	}
	if err != nil {
		c.log.Warn("compiled-code cache file unreadable; deleting it", "path", filepath.Join(c.dir, name), "err", err)
	} else {
		c.log.Warn("compiled-code cache file not signed by this host; deleting it (the module is compiled again)", "path", filepath.Join(c.dir, name))
	}
	return false, c.drop(name)
}

// adopt signs a file unless its signature already holds.
func (c *codeCache) adopt(name string) error {
	if ok, _ := c.valid(name); ok {
		return nil
	}
	f, st, err := c.open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	sum, err := hashFile(f)
	if err != nil {
		return err
	}
	return c.writeSidecar(name, sum, st)
}

// valid reports whether name's signature holds: at once if this process
// checked it at its present stat or its sidecar names that stat, else by
// hashing it (and then signing it for its new stat).
func (c *codeCache) valid(name string) (bool, error) {
	// The common case, a file this process checked before, costs one
	// lstat.
	if fi, err := os.Lstat(filepath.Join(c.dir, name)); err == nil && fi.Mode().IsRegular() {
		if st := stampOf(fi); st.ok && c.trusted[name] == st {
			c.known[name] = true
			return true, nil
		}
	}
	f, st, err := c.open(name)
	if errors.Is(err, fs.ErrNotExist) {
		delete(c.trusted, name)
		delete(c.known, name)
		return true, nil // gone: nothing for wazero to read
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	sc, ok := c.readSidecar(name)
	if !ok {
		return false, nil
	}
	if sc.stamp == st && sc.settled() {
		c.trusted[name] = st
		c.known[name] = true
		return true, nil
	}
	sum, err := hashFile(f)
	if err != nil || sum != sc.sum {
		return false, err
	}
	if err := c.writeSidecar(name, sum, st); err != nil {
		c.log.Debug("compiled-code cache file not signed again", "path", filepath.Join(c.dir, name), "err", err)
	}
	c.known[name] = true
	return true, nil
}

// open opens a cache file and stats the file opened, so the stamp and the
// content hashed are of one file even if the name is replaced meanwhile.
// Anything but a regular file fails.
func (c *codeCache) open(name string) (*os.File, fileStamp, error) {
	path := filepath.Join(c.dir, name)
	if fi, err := os.Lstat(path); err != nil {
		return nil, fileStamp{}, err
	} else if !fi.Mode().IsRegular() {
		return nil, fileStamp{}, fmt.Errorf("%s is not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fileStamp{}, err
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fileStamp{}, fmt.Errorf("%s is not a regular file (%v)", path, err)
	}
	return f, stampOf(fi), nil
}

func hashFile(f *os.File) ([sha256.Size]byte, error) {
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return [sha256.Size]byte{}, err
	}
	return [sha256.Size]byte(h.Sum(nil)), nil
}

// drop deletes a cache file and its sidecar, and forgets it.
func (c *codeCache) drop(name string) error {
	delete(c.trusted, name)
	delete(c.known, name)
	path := filepath.Join(c.dir, name)
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("a file that failed its check could not be deleted: %w", err)
	}
	if err := os.Remove(path + sidecarExt); err != nil && !errors.Is(err, fs.ErrNotExist) {
		c.log.Debug("compiled-code cache sidecar not deleted", "path", path+sidecarExt, "err", err)
	}
	return nil
}

// sidecarLen is a sidecar's size: magic, sha256, size, inode, ctime,
// signing time, MAC.
var sidecarLen = len(sidecarMagic) + sha256.Size + 4*8 + sha256.Size

// mac is the HMAC binding a file's name to its content and stamp.
func (c *codeCache) mac(name string, sc sidecar) []byte {
	return hostkey.MAC(c.key, sidecarLabel, []byte(name), sc.sum[:],
		hostkey.Uint64(uint64(sc.stamp.size)), hostkey.Uint64(sc.stamp.ino), hostkey.Uint64(uint64(sc.stamp.ctime)),
		hostkey.Uint64(uint64(sc.signedAt)))
}

// writeSidecar signs name as holding content sum at stamp st, and
// remembers it as trusted if that stamp is settled.
func (c *codeCache) writeSidecar(name string, sum [sha256.Size]byte, st fileStamp) error {
	sc := sidecar{sum: sum, stamp: st, signedAt: c.now().UnixNano()}
	b := make([]byte, 0, sidecarLen)
	b = append(append(b, sidecarMagic...), sc.sum[:]...)
	for _, v := range []uint64{uint64(st.size), st.ino, uint64(st.ctime), uint64(sc.signedAt)} {
		b = binary.BigEndian.AppendUint64(b, v)
	}
	b = append(b, c.mac(name, sc)...)
	if err := atomicfile.Write(filepath.Join(c.dir, name+sidecarExt), b, 0o600); err != nil {
		return err
	}
	if sc.settled() {
		c.trusted[name] = st
	} else {
		delete(c.trusted, name)
	}
	return nil
}

// readSidecar returns name's signature if its MAC holds.
func (c *codeCache) readSidecar(name string) (sidecar, bool) {
	b, err := os.ReadFile(filepath.Join(c.dir, name+sidecarExt))
	if err != nil || len(b) != sidecarLen || !bytes.HasPrefix(b, sidecarMagic) {
		return sidecar{}, false
	}
	b = b[len(sidecarMagic):]
	var sc sidecar
	copy(sc.sum[:], b)
	b = b[sha256.Size:]
	sc.stamp = fileStamp{size: int64(binary.BigEndian.Uint64(b)), ino: binary.BigEndian.Uint64(b[8:]),
		ctime: int64(binary.BigEndian.Uint64(b[16:])), ok: true}
	sc.signedAt = int64(binary.BigEndian.Uint64(b[24:]))
	if !hostkey.Equal(b[32:], c.mac(name, sc)) {
		return sidecar{}, false
	}
	return sc, true
}
