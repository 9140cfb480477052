package registry

// The last good version of a plugin file. Watch serves a plugin file that
// changed on disk anew; a new file that does not load — a copy still being
// written, a truncated build, a manifest that fails to validate — would
// otherwise withdraw every tool of a plugin agents are using, until someone
// reads the log. So while Watch runs, the registry keeps the bytes of each
// plugin version it has read whole (the warm-up reads every plugin at
// start and every plugin a reload adds, a call the plugin it compiles) in
// a copy of its own, and when a changed file fails to load it goes on
// serving the version before it, compiled from that copy, and reports the
// refusal (KeptError: one log line per new file, and a problem for the
// dashboard) until the file loads again or is deleted.
//
// The copy is an unlinked file in the data directory: it costs disk, not
// memory (seven first-party plugins are ≈ 26 MB, about what the whole idle
// host holds in memory), nothing else can open or replace it, and it goes
// with the process. A version the registry never read whole has no copy:
// its file failing is refused as any broken file is, and so is a plugin
// whose earlier version never loaded. Plugins from a source
// (plugins.settings.NAME.source) are not concerned: their modules are the
// host's own checked copies.

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// KeptError is the problem of a plugin file that failed to load while the
// registry still serves the version of that file before it.
type KeptError struct {
	// Err is why the new file was refused.
	Err error
	// SHA256 identifies the version still served (hex).
	SHA256 string
}

func (e *KeptError) Error() string {
	return fmt.Sprintf("new file refused, still serving the previous version (sha256 %s): %v", e.SHA256, e.Err)
}

func (e *KeptError) Unwrap() error { return e.Err }

// keeper makes the copies, once Watch has turned it on.
type keeper struct {
	// dir is where copies are made ("": the system's temporary directory).
	dir string
	log *slog.Logger
	on  atomic.Bool
}

// module is what the registry knows of the bytes of one version of a
// plugin file, shared by the plugin and the copies bind makes of it.
type module struct {
	mu sync.Mutex
	// known is set once the file was read whole while it still was the
	// version loaded; sum is then that version's sha256.
	known bool
	sum   [sha256.Size]byte
	// copy holds those bytes once the keeper kept them; nil until then.
	copy *os.File
	size int64
	// proven is the file's identity when it was last read whole and
	// found to be this version, with a change time settled by then
	// (identitySettle): while the file keeps that identity its bytes are
	// that version without hashing them again. A call reads a plugin
	// file two or three times on its way to the compiler, and the
	// warm-up every file once: hashing each time cost ≈ 15 ms of a new
	// process's first call to a 3.5 MB plugin, and as much again on the
	// other core.
	proven  fileIdentity
	isProof bool
}

// fileIdentity is a file's device, inode, size and change time: any write,
// rename over or attribute change gives it another, and no unprivileged
// process can set a change time back.
type fileIdentity struct {
	dev, ino uint64
	size     int64
	ctime    int64
}

// identitySettle is how old a change time must be, when a file is read,
// for its identity to prove the bytes: a write in the same tick of the
// file system's clock as the one before it could leave the change time as
// it was (runtime's compiled-code cache uses the same rule).
const identitySettle = 2 * time.Second

// readProven reads path and reports the identity the bytes are proven to
// have (ok false: the file changed during the read, or its change time is
// too recent to prove anything).
func readProven(path string) (b []byte, id fileIdentity, ok bool, err error) {
	before, err := os.Stat(path)
	if err != nil {
		return nil, fileIdentity{}, false, err
	}
	if b, err = os.ReadFile(path); err != nil {
		return nil, fileIdentity{}, false, err
	}
	after, err := os.Stat(path)
	if err != nil {
		return b, fileIdentity{}, false, nil
	}
	idBefore, ok1 := identityOf(before)
	idAfter, ok2 := identityOf(after)
	ok = ok1 && ok2 && idBefore == idAfter && int64(len(b)) == idAfter.size &&
		time.Since(time.Unix(0, idAfter.ctime)) > identitySettle
	return b, idAfter, ok, nil
}

// wasm returns the module bytes of the plugin's version: its file's, read
// now, or — once the file holds another version — the kept copy's. It is
// an error for the file to hold another version when there is no copy: its
// bytes are not what the plugin's manifest describes.
func (p *Plugin) wasm() ([]byte, error) {
	m := p.module
	if m == nil {
		return os.ReadFile(p.Path)
	}
	b, id, proven, err := readProven(p.Path)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.known {
		if err == nil && proven && m.isProof && id == m.proven {
			return b, nil
		}
		if err == nil && sha256.Sum256(b) == m.sum {
			m.proven, m.isProof = id, proven
			return b, nil
		}
		if c, cerr := m.read(); cerr == nil {
			return c, nil
		}
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%s no longer holds the version of plugin %s that was loaded (sha256 %s); it is served anew once the plugin folders are scanned again",
			p.Path, p.Name(), hex.EncodeToString(m.sum[:]))
	}
	if err != nil {
		return nil, err
	}
	if p.stamp.current(p.Path) {
		m.known, m.sum = true, sha256.Sum256(b)
		m.proven, m.isProof = id, proven
		if k := p.keep; k != nil && k.on.Load() {
			k.save(m, b, p.Path)
		}
	}
	return b, nil
}

// cached reports whether the engine's disk cache holds the machine code of
// wasm, the bytes wasm() returned: by the sha256 wasm() proved them to
// have, when it did, instead of hashing them again.
func (p *Plugin) cached(wasm []byte) bool {
	if m := p.module; m != nil {
		m.mu.Lock()
		known, sum := m.known && int64(len(wasm)) == m.proven.size && m.isProof, m.sum
		m.mu.Unlock()
		if known {
			return p.engine.CachedSum(sum)
		}
	}
	return p.engine.Cached(wasm)
}

// current reports whether the file at path still has this stamp.
func (s fileStamp) current(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Size() == s.size && info.ModTime().Equal(s.modTime)
}

// save keeps b, the bytes of m's version read from path, in a copy.
// Called with m.mu held.
func (k *keeper) save(m *module, b []byte, path string) {
	if m.copy != nil {
		return
	}
	f, err := os.CreateTemp(k.dir, ".plugboard-kept-*.wasm")
	if err != nil {
		k.log.Warn("no copy kept of a plugin version; if its file is replaced by one that does not load, the plugin is withdrawn",
			"path", path, "err", err)
		return
	}
	_, werr := f.Write(b)
	if rerr := os.Remove(f.Name()); werr != nil || rerr != nil {
		_ = f.Close()
		_ = os.Remove(f.Name())
		k.log.Warn("no copy kept of a plugin version; if its file is replaced by one that does not load, the plugin is withdrawn",
			"path", path, "err", errors.Join(werr, rerr))
		return
	}
	m.copy, m.size = f, int64(len(b))
}

// saveKnown keeps a copy of a version read before the keeper was on, if
// the file still holds it.
func (k *keeper) saveKnown(m *module, path string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.known || m.copy != nil {
		return
	}
	if b, err := os.ReadFile(path); err == nil && sha256.Sum256(b) == m.sum {
		k.save(m, b, path)
	}
}

// read returns the kept copy's bytes. Called with m.mu held.
func (m *module) read() ([]byte, error) {
	if m.copy == nil {
		return nil, errors.New("no copy kept")
	}
	b := make([]byte, m.size)
	if _, err := m.copy.ReadAt(b, 0); err != nil {
		return nil, err
	}
	if sha256.Sum256(b) != m.sum {
		return nil, errors.New("the kept copy does not hold the version loaded")
	}
	return b, nil
}

// kept returns the sha256 of the version a copy holds, if there is one.
func (m *module) kept() (string, bool) {
	if m == nil {
		return "", false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.copy == nil {
		return "", false
	}
	return hex.EncodeToString(m.sum[:]), true
}

// close gives the copy's disk space back.
func (m *module) close() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.copy != nil {
		_ = m.copy.Close()
		m.copy = nil
	}
}

// keepVersions turns the keeper on (Watch), copying the versions read
// before it was: the warm-up may have read them already.
func (r *Registry) keepVersions() {
	k := r.opts.keeper
	if k.on.Swap(true) {
		return
	}
	r.mu.Lock()
	var plugins []*Plugin
	for _, e := range r.files {
		if e.plugin != nil && e.plugin.module != nil {
			plugins = append(plugins, e.plugin)
		}
	}
	r.mu.Unlock()
	for _, p := range plugins {
		k.saveKnown(p.module, p.Path)
	}
}

// keptEntry is the entry serving old's plugin after its file, now loaded
// as e, failed to load — or nil when old's plugin cannot be kept: there
// was none, it comes from a source, or no copy of its version was kept.
func keptEntry(old, e *fileEntry) *fileEntry {
	if old == nil || old.plugin == nil || old.origin != "" || e.origin != "" {
		return nil
	}
	sum, ok := old.plugin.module.kept()
	if !ok {
		return nil
	}
	return &fileEntry{stamp: e.stamp, plugin: old.plugin, err: &KeptError{Err: e.err, SHA256: sum}}
}
