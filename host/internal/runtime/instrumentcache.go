package runtime

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"

	"github.com/plugboard/plugboard/host/internal/atomicfile"
	"github.com/plugboard/plugboard/host/internal/wasmfile"
)

// instrumentVersion names the output of wasmfile.Instrument: bump it
// whenever the instrumentation changes, so modules instrumented by an
// older host are not reused.
const instrumentVersion = 1

// instrumentMagic starts every cached instrumented module, followed by the
// CRC-32C of the instrumented bytes that follow it (hardware-accelerated:
// a sha256 of 5 MB would cost most of what the cache saves).
var instrumentMagic = []byte("plugboard-instrumented\x00")

// instrument returns wasmfile.Instrument(wasm), from the disk cache under
// Config.CacheDir when an earlier run instrumented the same bytes (by
// sha256, with instrumentVersion), saving the rewrite (≈ 16 ms for a
// 5 MB Go guest) on every warm start. An entry that does not check out
// (truncated, corrupt, another format) is ignored and rewritten; a cache
// that cannot be written only costs the next start the rewrite.
func (e *Engine) instrument(wasm []byte) ([]byte, error) {
	if e.cfg.CacheDir == "" {
		return wasmfile.Instrument(wasm)
	}
	file := e.cacheEntry(wasm, ".wasm")
	if b, err := os.ReadFile(file); err == nil {
		if out, ok := checkInstrumented(b); ok {
			return out, nil
		}
		e.cfg.Logger.Warn("instrumented module cache entry is damaged; rewriting it", "path", file)
	}
	out, err := wasmfile.Instrument(wasm)
	if err != nil {
		return nil, err
	}
	entry := make([]byte, 0, len(instrumentMagic)+4+len(out))
	entry = binary.BigEndian.AppendUint32(append(entry, instrumentMagic...), crc32.Checksum(out, castagnoli))
	entry = append(entry, out...)
	if err := atomicfile.Write(file, entry, 0o644); err != nil {
		e.cfg.Logger.Warn("instrumented module not cached", "path", file, "err", err)
	}
	return out, nil
}

// checkInstrumented returns the module in a cache entry if its checksum
// matches.
func checkInstrumented(b []byte) ([]byte, bool) {
	head := len(instrumentMagic) + 4
	if len(b) < head || !bytes.Equal(b[:len(instrumentMagic)], instrumentMagic) {
		return nil, false
	}
	out := b[head:]
	if crc32.Checksum(out, castagnoli) != binary.BigEndian.Uint32(b[len(instrumentMagic):head]) {
		return nil, false
	}
	return out, true
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// cacheEntry is the file under CacheDir/instrumented named by the original
// module's sha256 and instrumentVersion, with ext.
func (e *Engine) cacheEntry(wasm []byte, ext string) string {
	sum := sha256.Sum256(wasm)
	return filepath.Join(e.cfg.CacheDir, "instrumented",
		hex.EncodeToString(sum[:])+"-v"+strconv.Itoa(instrumentVersion)+ext)
}

// compiledMark is the extension of the empty file that records that this
// engine's wazero compiled a module into CacheDir (its version is part of
// the name: another wazero does not read that cache).
var compiledMark = ".compiled-" + wazeroVersion()

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

// markCompiled records that wasm's machine code is in the disk cache.
func (e *Engine) markCompiled(wasm []byte) {
	if e.cfg.CacheDir == "" {
		return
	}
	file := e.cacheEntry(wasm, compiledMark)
	if _, err := os.Stat(file); err == nil {
		return
	}
	if err := atomicfile.Write(file, nil, 0o644); err != nil {
		e.cfg.Logger.Debug("compile mark not written", "path", file, "err", err)
	}
}

// Cached reports whether an earlier compilation of wasm by this wazero
// left its machine code in the disk cache, so the warm-up has nothing to
// do for it (a load from the cache is ≈ 50 ms; the warm-up's work is the
// seconds of a first compilation). A cache emptied behind the mark only
// costs the first call that compilation.
func (e *Engine) Cached(wasm []byte) bool {
	if e.cfg.CacheDir == "" {
		return false
	}
	_, err := os.Stat(e.cacheEntry(wasm, compiledMark))
	return err == nil
}
