package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadLenient: a "${VAR}" value whose variable is not set fails Load,
// as serve needs, and passes LoadLenient, left unset (EnvUnset, no value)
// beside the values that resolve; every other problem still fails both.
func TestLoadLenient(t *testing.T) {
	t.Setenv("PB_TEST_LENIENT_SET", "from-env")
	os.Unsetenv("PB_TEST_LENIENT_UNSET")
	file := filepath.Join(t.TempDir(), "pb.json")
	body := `{"plugins": {"settings": {"x": {"config": {"a": "${PB_TEST_LENIENT_UNSET}", "b": "${PB_TEST_LENIENT_SET}", "c": "lit"}}}}}`
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(file); err == nil || !strings.Contains(err.Error(), "environment variable PB_TEST_LENIENT_UNSET is not set") {
		t.Fatalf("Load = %v, want the unset variable named", err)
	}
	c, err := LoadLenient(file)
	if err != nil {
		t.Fatal(err)
	}
	cfg := c.Plugins.Settings["x"].Config
	if a := cfg["a"]; !a.EnvUnset() || a.Value() != "" || a.From() != "${PB_TEST_LENIENT_UNSET}" {
		t.Errorf("a = unset %v, value %q, from %s; want unset, no value, from ${PB_TEST_LENIENT_UNSET}", a.EnvUnset(), a.Value(), a.From())
	}
	if b := cfg["b"]; b.EnvUnset() || b.Value() != "from-env" {
		t.Errorf("b = unset %v, value %q; want from-env", b.EnvUnset(), b.Value())
	}
	if c := cfg["c"]; c.EnvUnset() || c.Value() != "lit" {
		t.Errorf("c = unset %v, value %q; want lit", c.EnvUnset(), c.Value())
	}

	if err := os.WriteFile(file, []byte(`{"plugins": {"settings": {"x": {"config": {"a": "${PB_TEST_LENIENT_UNSET}"}, "allowed_hosts": ["*"]}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadLenient(file); err == nil || !strings.Contains(err.Error(), `"*" would allow every host`) || strings.Contains(err.Error(), "PB_TEST_LENIENT_UNSET") {
		t.Errorf("LoadLenient of a file with another problem = %v, want that problem alone", err)
	}
}
