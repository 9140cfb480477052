package runtime

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"

	"github.com/plugboard/plugboard/host/internal/atomicfile"
	"github.com/plugboard/plugboard/host/internal/hostkey"
	"github.com/plugboard/plugboard/host/internal/wasmfile"
)

// instrumentVersion names the output of wasmfile.Instrument: bump it
// whenever the instrumentation changes, so modules instrumented by an
// older host are not reused.
const instrumentVersion = 1

// instrumentMagic starts every cached instrumented module, followed by its
// MAC (instrumentMAC) and the instrumented bytes. An entry of the older
// format (a CRC-32C anyone could recompute) does not match it and is
// rewritten.
var instrumentMagic = []byte("plugboard-instrumented-hmac\x00")

// instrumentLabel is the first part of an instrumented module's MAC: what
// it authenticates.
var instrumentLabel = []byte("plugboard instrumented module")

// instrument returns wasmfile.Instrument(wasm), from the disk cache under
// Config.CacheDir when an earlier run instrumented the same bytes (by
// sha256, with instrumentVersion), saving the rewrite (≈ 16 ms for a
// 5 MB Go guest) on every warm start. An entry is used only if its MAC
// under Config.CacheKey holds: the file's name is the original module's
// sha256, which anyone can compute, so without the MAC whoever can write
// the directory chooses what runs under a plugin's name and grants. An
// entry that does not check out (planted, truncated, another format) is
// never run: it is logged and rewritten from a fresh instrumentation. A
// cache that cannot be written only costs the next start the rewrite.
// Checking the MAC hashes the entry again: ≈ 3.5–6.5 ms for 5 MB
// (0.8–1.5 GB/s with SHA-NI on a busy 2-core VM; BenchmarkInstrumentMAC),
// against ≈ 20–30 ms for the rewrite on the same machine.
func (e *Engine) instrument(wasm []byte, sum [sha256.Size]byte) ([]byte, error) {
	if e.cfg.CacheDir == "" {
		return wasmfile.Instrument(wasm)
	}
	file := e.cacheEntry(sum, ".wasm")
	if b, err := os.ReadFile(file); err == nil {
		if out, ok := e.checkInstrumented(sum, b); ok {
			return out, nil
		}
		e.cfg.Logger.Warn("instrumented module cache entry not signed by this host; instrumenting the module again", "path", file)
	}
	out, err := wasmfile.Instrument(wasm)
	if err != nil {
		return nil, err
	}
	mac := e.instrumentMAC(sum, out)
	entry := make([]byte, 0, len(instrumentMagic)+len(mac)+len(out))
	entry = append(append(append(entry, instrumentMagic...), mac...), out...)
	if err := atomicfile.Write(file, entry, 0o600); err != nil {
		e.cfg.Logger.Warn("instrumented module not cached", "path", file, "err", err)
	}
	return out, nil
}

// instrumentMAC binds the instrumented bytes to the module they were made
// from and to the instrumentation's version.
func (e *Engine) instrumentMAC(sum [sha256.Size]byte, out []byte) []byte {
	return hostkey.MAC(e.cfg.CacheKey, instrumentLabel, sum[:], []byte(strconv.Itoa(instrumentVersion)), out)
}

// checkInstrumented returns the module in a cache entry if its MAC holds
// for the original module's sha256.
func (e *Engine) checkInstrumented(sum [sha256.Size]byte, b []byte) ([]byte, bool) {
	head := len(instrumentMagic) + sha256.Size
	if len(b) < head || !bytes.HasPrefix(b, instrumentMagic) {
		return nil, false
	}
	out := b[head:]
	return out, hostkey.Equal(b[len(instrumentMagic):head], e.instrumentMAC(sum, out))
}

// cacheEntry is the file under CacheDir/instrumented named by the original
// module's sha256 and instrumentVersion, with ext.
func (e *Engine) cacheEntry(sum [sha256.Size]byte, ext string) string {
	return filepath.Join(e.cfg.CacheDir, "instrumented",
		hex.EncodeToString(sum[:])+"-v"+strconv.Itoa(instrumentVersion)+ext)
}

// compiledMark is the extension of the file that records that this
// engine's wazero compiled a module into CacheDir (its version is part of
// the name: another wazero does not read that cache).
var compiledMark = ".compiled-" + wazeroVersion()

// compiledLabel is the first part of a compile mark's MAC.
var compiledLabel = []byte("plugboard compile mark")

func wazeroVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == "github.com/tetratelabs/wazero" {
				return m.Version
			}
		}
	}
	return "unknown"
}

// markMAC is a compile mark's content: a mark only says the warm-up may
// skip a module, but a forged one is still refused, as everything the host
// reads back from the cache is.
func (e *Engine) markMAC(sum [sha256.Size]byte) []byte {
	return hostkey.MAC(e.cfg.CacheKey, compiledLabel, sum[:], []byte(compiledMark))
}

// markCompiled records that the machine code of the module whose sha256
// is sum is in the disk cache.
func (e *Engine) markCompiled(sum [sha256.Size]byte) {
	if e.cfg.CacheDir == "" || e.code == nil {
		return
	}
	if e.marked(sum) {
		return
	}
	file := e.cacheEntry(sum, compiledMark)
	if err := atomicfile.Write(file, e.markMAC(sum), 0o600); err != nil {
		e.cfg.Logger.Debug("compile mark not written", "path", file, "err", err)
	}
}

// marked reports whether sum's compile mark exists and is this host's.
func (e *Engine) marked(sum [sha256.Size]byte) bool {
	b, err := os.ReadFile(e.cacheEntry(sum, compiledMark))
	return err == nil && hostkey.Equal(b, e.markMAC(sum))
}

// Cached reports whether an earlier compilation of wasm by this wazero
// left its machine code in the disk cache, so the warm-up has nothing to
// do for it (a load from the cache is ≈ 50 ms; the warm-up's work is the
// seconds of a first compilation). A cache emptied behind the mark only
// costs the first call that compilation.
func (e *Engine) Cached(wasm []byte) bool { return e.CachedSum(sha256.Sum256(wasm)) }

// CachedSum is Cached for the module whose sha256 is sum, for a caller
// that has hashed it already.
func (e *Engine) CachedSum(sum [sha256.Size]byte) bool {
	if e.cfg.CacheDir == "" || e.code == nil {
		return false
	}
	return e.marked(sum)
}
