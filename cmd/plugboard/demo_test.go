package main

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestDemoUsage checks flag misuse exits 2 without running anything.
func TestDemoUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"demo", "extra"}, &stdout, &stderr)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 2 {
		t.Fatalf("demo extra = %v, want a usage error", err)
	}
	err = run(context.Background(), []string{"demo", "--plugins", filepath.Join(t.TempDir(), "missing")}, &stdout, &stderr)
	if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("demo --plugins missing = %v, want a usage error", err)
	}
}
