package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestHTTPTokenResolution checks where `serve --http` takes its bearer token
// from: --http-token, then --http-token-file, then PLUGBOARD_HTTP_TOKEN.
func TestHTTPTokenResolution(t *testing.T) {
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("  from-file \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(envHTTPToken, "from-env")
	for _, c := range []struct {
		flags httpFlags
		want  string
	}{
		{httpFlags{token: "from-flag"}, "from-flag"},
		{httpFlags{tokenFile: file}, "from-file"},
		{httpFlags{}, "from-env"},
	} {
		got, _, err := c.flags.resolveToken()
		if err != nil || got != c.want {
			t.Errorf("%+v: %q %v, want %q", c.flags, got, err, c.want)
		}
	}
	t.Setenv(envHTTPToken, "")
	if got, _, err := (&httpFlags{}).resolveToken(); err != nil || got != "" {
		t.Errorf("no token anywhere: %q %v", got, err)
	}
}
