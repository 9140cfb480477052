package store

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTargetForms: a store is a file path or a PostgreSQL URL (any case);
// a URL of another scheme is refused by OpenURL before anything is
// created, naming the forms accepted; Redact shows no password.
func TestTargetForms(t *testing.T) {
	for target, kind := range map[string]string{
		"/var/lib/plugboard/board.db":    "sqlite",
		"board.db":                       "sqlite",
		"postgres://u@db/board":          "postgres",
		"PostgreSQL://u@db/board":        "postgres",
		"./odd:name/board.db":            "sqlite",
		"postgres://u:pw@db/b?sslmode=x": "postgres",
	} {
		if err := CheckTarget(target); err != nil || Kind(target) != kind {
			t.Errorf("%s: %v, kind %s; want accepted, %s", target, err, Kind(target), kind)
		}
	}
	if got := Redact("postgres://u:pw@db/b?password=pw2"); strings.Contains(got, "pw@") || strings.Contains(got, "pw2") {
		t.Errorf("Redact = %s", got)
	}

	dir := t.TempDir()
	t.Chdir(dir)
	for _, target := range []string{"mysql://x/y", "postgress://u:hunter2@db/board", "sqlite:///tmp/board.db", "file://board.db"} {
		scheme, _, _ := strings.Cut(target, "://")
		_, err := OpenURL(context.Background(), target)
		if err == nil || !strings.Contains(err.Error(), `unknown scheme "`+scheme+`"`) || !strings.Contains(err.Error(), TargetForms) {
			t.Errorf("OpenURL(%s) = %v, want it refused naming the forms accepted", target, err)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("OpenURL(%s) shows the password: %v", target, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("refused stores created %v", entries)
	}
	if _, err := os.Stat(filepath.Join(dir, "mysql:")); err == nil {
		t.Error("a mysql:// store became a directory")
	}
}
