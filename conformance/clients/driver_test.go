package clients

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestDriverWrittenConcurrently: the scenarios of one test process connect
// their TypeScript clients at once, each making sure the driver beside
// node_modules is current; every writer succeeds and the file ends whole
// with nothing temporary left behind (CI once failed with one writer's
// rename finding its temporary file already renamed by another).
func TestDriverWrittenConcurrently(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "ts-driver.mjs")
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- writeDriver(script, tsDriver)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(script)
	if err != nil || !bytes.Equal(got, tsDriver) {
		t.Fatalf("driver content differs (err %v)", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("directory holds %d entries, want only the driver", len(entries))
	}
}
