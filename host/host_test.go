package host

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestLifecycleClosesInReverseOnce: parts close newest first, every one
// even when one fails, and a second close does nothing.
func TestLifecycleClosesInReverseOnce(t *testing.T) {
	var l lifecycle
	var order []string
	for _, name := range []string{"a", "b", "c"} {
		l.add(name, func(context.Context) error {
			order = append(order, name)
			if name == "b" {
				return errors.New("b broke")
			}
			return nil
		})
	}
	err := l.close(context.Background(), slog.New(slog.DiscardHandler))
	if !slices.Equal(order, []string{"c", "b", "a"}) {
		t.Fatalf("closed %v, want c b a", order)
	}
	if err == nil || err.Error() != "close b: b broke" {
		t.Fatalf("err = %v", err)
	}
	if err := l.close(context.Background(), slog.New(slog.DiscardHandler)); err != nil || len(order) != 3 {
		t.Fatalf("second close: %v, %v", err, order)
	}
}

// TestOpenFailureClosesWhatOpened: a failure late in Open — the plugin
// engine cannot make its cache, after the board, the decision log and the
// mail system started — leaves nothing running: no goroutine of the
// decision log's writer or the board is left, and the board's store is
// closed, so the data directory opens again at once.
func TestOpenFailureClosesWhatOpened(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	before := runtime.NumGoroutine()
	if err := os.WriteFile(filepath.Join(data, "compiled"), []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The failure must come from the engine, after the board and the
	// decision log started; an earlier one would prove nothing here.
	if _, err := Open(ctx, Config{DataDir: data, PluginDirs: []string{t.TempDir()}}); err == nil {
		t.Fatal("Open succeeded with its compile cache path taken by a file")
	} else if !strings.Contains(err.Error(), "plugin engine") {
		t.Fatalf("Open failed before the engine step: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines left running after a failed Open (before: %d):\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
	os.Remove(filepath.Join(data, "compiled"))
	h, err := Open(ctx, Config{DataDir: data, PluginDirs: []string{t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Board(ctx); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(ctx); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
