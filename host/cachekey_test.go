package host

import (
	"context"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
)

// TestOpenCacheKey: Open makes the key that authenticates the host's caches
// in the data directory (readable by the host's user only), opens again
// with it, and refuses a key file others may read rather than trust caches
// signed with it.
func TestOpenCacheKey(t *testing.T) {
	if goruntime.GOOS == "windows" {
		t.Skip("Unix modes")
	}
	ctx := context.Background()
	data := t.TempDir()
	open := func() error {
		h, err := Open(ctx, Config{DataDir: data, PluginDirs: []string{t.TempDir()}})
		if err == nil {
			err = h.Close(ctx)
		}
		return err
	}
	if err := open(); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(data, "keys", "cache.key")
	fi, err := os.Stat(key)
	if err != nil || fi.Mode().Perm() != 0o600 || fi.Size() != 32 {
		t.Fatalf("cache key %v, %v; want 32 bytes, mode 0600", fi, err)
	}
	if err := open(); err != nil {
		t.Fatalf("second Open: %v", err)
	}
	if err := os.Chmod(key, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := open(); err == nil || !strings.Contains(err.Error(), key) {
		t.Fatalf("Open with a key others may read: %v", err)
	}
}
