package plugin

import (
	"github.com/plugboard/plugboard/host/internal/pluginsrc"
)

// Plugins with a source (plugins.settings.NAME.source in the configuration
// file) and the lockfile pinning their bytes, for `plugboard plugin add`,
// `lock` and `verify`: the same fetching and checking the host does before
// it loads one (host/internal/pluginsrc). They are aliases of pluginsrc's:
// Fetcher, Lock and SourceCache are handles whose methods are pluginsrc's
// own, and Source and LockEntry what those methods take and return.
type (
	// Source is a parsed source: a file, an https:// URL or an OCI
	// reference; String is how a lockfile records it.
	Source = pluginsrc.Source
	// Fetcher reads a source (https with the system's roots, a timeout
	// and a size cap; the OCI distribution API).
	Fetcher = pluginsrc.Fetcher
	// Lock is a lockfile: each source plugin's source, sha256 and size,
	// by plugin name.
	Lock = pluginsrc.Lock
	// LockEntry pins one plugin.
	LockEntry = pluginsrc.Entry
	// SourceCache holds fetched modules by sha256 (DATA/sources).
	SourceCache = pluginsrc.Cache
)

// LockFileName is the lockfile's name, next to the configuration file.
const LockFileName = pluginsrc.LockFileName

// ParseSource reads a source; a relative file path is taken from base.
func ParseSource(s, base string) (Source, error) { return pluginsrc.Parse(s, base) }

// ReadLock reads a lockfile (a missing one is empty).
func ReadLock(path string) (*Lock, error) { return pluginsrc.ReadLock(path) }

// LockFor is the lockfile of a configuration file.
func LockFor(configFile string) string { return pluginsrc.LockFor(configFile) }

// SourceCacheIn is the cache of fetched modules in a data directory.
func SourceCacheIn(dataDir string) SourceCache { return pluginsrc.CacheIn(dataDir) }

// RecordedSource is a source as a lockfile records it (a file in the
// lockfile's directory tree relative to it).
func RecordedSource(src Source, lockFile string) string { return pluginsrc.Recorded(src, lockFile) }

// SHA256 is the lowercase hex sha256 of a module, as a lockfile pins it.
func SHA256(b []byte) string { return pluginsrc.Sum(b) }
