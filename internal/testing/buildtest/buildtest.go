// Package buildtest builds plugboard's binary and plugins for tests and
// benchmarks, once per source state: artifacts are cached in the system temp
// directory under a hash of every source file they depend on, so repeated
// `go test` runs do not pay for Go-to-wasm builds again. It is test support
// only; nothing in the product imports it.
package buildtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/plugboard/plugboard/build/pluginbuild"
)

// Root returns the repository root (the directory holding go.mod).
func Root(tb testing.TB) string {
	tb.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

var mu sync.Mutex

// Plugins builds the named plugins (paths relative to the repository root,
// e.g. "plugins/echo", "testdata/plugins/loop") into one fresh directory and
// returns it, together with each plugin's .wasm path by name.
func Plugins(tb testing.TB, srcs ...string) (dir string, wasm map[string]string) {
	tb.Helper()
	root := Root(tb)
	cache := cacheDir(tb)
	dir = tb.TempDir()
	wasm = map[string]string{}
	var wg sync.WaitGroup
	errs := make([]error, len(srcs))
	built := make([]string, len(srcs))
	// Two at a time: each go build already uses every core.
	sem := make(chan struct{}, 2)
	for i, src := range srcs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			built[i], errs[i] = cachedPlugin(root, cache, src)
		})
	}
	wg.Wait()
	for i, src := range srcs {
		if errs[i] != nil {
			tb.Fatalf("build %s: %v", src, errs[i])
		}
		name := filepath.Base(src)
		dst := filepath.Join(dir, name+".wasm")
		b, err := os.ReadFile(built[i])
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			tb.Fatal(err)
		}
		wasm[name] = dst
	}
	return dir, wasm
}

// Binary builds cmd/plugboard and returns its path.
func Binary(tb testing.TB) string {
	tb.Helper()
	root := Root(tb)
	// conformance: `plugboard conformance` links the kit in.
	key, err := sourceHash(root, "cmd", "host", "abi", "build", "conformance")
	if err != nil {
		tb.Fatal(err)
	}
	out := filepath.Join(cacheDir(tb), "plugboard-"+key)
	mu.Lock()
	defer mu.Unlock()
	if _, err := os.Stat(out); err == nil {
		return out
	}
	cmd := exec.Command("go", "build", "-o", out+".tmp", "./cmd/plugboard")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go build ./cmd/plugboard: %v\n%s", err, b)
	}
	if err := os.Rename(out+".tmp", out); err != nil {
		tb.Fatal(err)
	}
	return out
}

func cacheDir(tb testing.TB) string {
	d := filepath.Join(os.TempDir(), "plugboard-test-artifacts")
	if err := os.MkdirAll(d, 0o755); err != nil {
		tb.Fatal(err)
	}
	return d
}

func cachedPlugin(root, cache, src string) (string, error) {
	dirs := []string{src, "sdk-guest", "abi", "build"}
	// Code the first-party plugins share.
	if _, err := os.Stat(filepath.Join(root, "plugins", "internal")); err == nil {
		dirs = append(dirs, filepath.Join("plugins", "internal"))
	}
	key, err := sourceHash(root, dirs...)
	if err != nil {
		return "", err
	}
	out := filepath.Join(cache, filepath.Base(src)+"-"+key+".wasm")
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	if _, err := pluginbuild.Plugin(context.Background(), filepath.Join(root, src), out, pluginbuild.Options{}); err != nil {
		return "", err
	}
	return out, nil
}

// sourceHash hashes the root go.mod and go.sum and every .go, go.mod and
// go.sum file, and every file under an assets directory (embedded), under
// the given directories (relative to root): abi and
// sdk-guest are modules of their own, whose go.mod and go.sum choose what a
// plugin links.
func sourceHash(root string, dirs ...string) (string, error) {
	var files []string
	for _, d := range dirs {
		err := filepath.WalkDir(filepath.Join(root, d), func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			name := e.Name()
			// Embedded assets (the dashboard's pages) are sources too.
			asset := strings.Contains(filepath.ToSlash(p), "/assets/")
			if !e.IsDir() && (strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") || name == "go.mod" || name == "go.sum" || asset) {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			return "", err
		}
	}
	sort.Strings(files)
	files = append(files, filepath.Join(root, "go.mod"), filepath.Join(root, "go.sum"))
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", strings.TrimPrefix(f, root), len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}
