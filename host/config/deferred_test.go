package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLoadDeferred: a file read for a command that loads no plugins needs
// neither the variables nor the files holding the plugins' secrets; the
// secrets' sources are still known (attempts are kept from them), and
// ResolveSecrets, which a command loading plugins calls, reads them —
// failing, each problem at its field, while one is missing.
func TestLoadDeferred(t *testing.T) {
	dir := t.TempDir()
	os.Unsetenv("PB_TEST_DEFERRED")
	file := filepath.Join(dir, "pb.json")
	body := `{"plugins": {"settings": {"x": {"config": {
  "key": "${PB_TEST_DEFERRED}",
  "token": {"secret_file": "token.txt"},
  "url": "https://example.com"}}}}}`
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(file); err == nil || !strings.Contains(err.Error(), "PB_TEST_DEFERRED is not set") {
		t.Fatalf("Load = %v, want the unset variable named", err)
	}
	c, err := LoadDeferred(file)
	if err != nil {
		t.Fatalf("LoadDeferred needed the secrets: %v", err)
	}
	cfg := c.Plugins.Settings["x"].Config
	if cfg["key"].Value() != "" || cfg["token"].Value() != "" || cfg["url"].Value() != "https://example.com" {
		t.Errorf("before ResolveSecrets: %q %q %q, want the literal alone", cfg["key"].Value(), cfg["token"].Value(), cfg["url"].Value())
	}
	vars, files := SecretSources(c.Plugins.Settings)
	if !slices.Equal(vars, []string{"PB_TEST_DEFERRED"}) || !slices.Equal(files, []string{filepath.Join(dir, "token.txt")}) {
		t.Errorf("SecretSources = %v %v, want the variable and the file's absolute path", vars, files)
	}

	err = c.ResolveSecrets()
	want := []string{
		file + ":2:10: plugins.settings.x.config.key: environment variable PB_TEST_DEFERRED is not set",
		file + ":3:28: plugins.settings.x.config.token.secret_file: open " + filepath.Join(dir, "token.txt"),
	}
	for _, w := range want {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("ResolveSecrets = %v\nwant it to say %s", err, w)
		}
	}

	t.Setenv("PB_TEST_DEFERRED", "from-env")
	if err := os.WriteFile(filepath.Join(dir, "token.txt"), []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := c.ResolveSecrets(); err != nil {
		t.Fatal(err)
	}
	if cfg["key"].Value() != "from-env" || cfg["token"].Value() != "from-file" || !cfg["key"].Secret() || !cfg["token"].Secret() {
		t.Errorf("after ResolveSecrets: %q %q, want the secrets read", cfg["key"].Value(), cfg["token"].Value())
	}
	var none *Config
	if err := none.ResolveSecrets(); err != nil {
		t.Errorf("nil Config: %v", err)
	}
}

// TestStoreForms: the file's store is a SQLite path or a PostgreSQL URL
// (any case); a URL of another scheme is refused at its field, naming the
// forms accepted, rather than taken for a file named like it.
func TestStoreForms(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "pb.json")
	for store, want := range map[string]string{
		"board.db":                     filepath.Join(dir, "board.db"),
		"postgres://u@db/board":        "postgres://u@db/board",
		"POSTGRESQL://u@db/board":      "POSTGRESQL://u@db/board",
		"mysql://x/y":                  `unknown scheme "mysql"`,
		"postgress://u:hunter2@db/b":   `unknown scheme "postgress"`,
		"sqlite:///var/lib/p/board.db": `unknown scheme "sqlite"`,
	} {
		c, err := Parse(file, []byte(`{"store": "`+store+`"}`))
		if !strings.HasPrefix(want, "unknown") {
			if err != nil || c.Store != want {
				t.Errorf("store %q: %v, %q; want %q", store, err, c.Store, want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), file+":1:11: store: ") || !strings.Contains(err.Error(), want) ||
			!strings.Contains(err.Error(), "a SQLite file path") || !strings.Contains(err.Error(), "postgres://USER@HOST/DB") {
			t.Errorf("store %q: %v, want it refused at its field naming the forms accepted", store, err)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("store %q: the error shows the password: %v", store, err)
		}
	}
}
