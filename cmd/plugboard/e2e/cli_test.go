package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// runCLI runs the real binary in this directory and environment and
// returns stdout, stderr and exit code.
func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return runPB(t, "", nil, args...)
}

func TestCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	dir, wasm := buildtest.Plugins(t, "plugins/echo", "plugins/textdiff")
	data := t.TempDir()

	t.Run("call prints the structured result", func(t *testing.T) {
		out, stderr, code := runCLI(t, "call", "echo", `{"text":"cli"}`, "--plugins", dir, "--data", data)
		var v struct{ Text string }
		if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v.Text != "cli" {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, out, stderr)
		}
	})

	t.Run("call prints the envelope and exits 1", func(t *testing.T) {
		out, _, code := runCLI(t, "call", "echo", `{}`, "--plugins", dir, "--data", data)
		var env struct{ Code, Hint string }
		if code != 1 || json.Unmarshal([]byte(out), &env) != nil || env.Code != "missing_required" || env.Hint == "" {
			t.Fatalf("exit %d, stdout %q", code, out)
		}
	})

	t.Run("call shows progress on stderr", func(t *testing.T) {
		_, stderr, code := runCLI(t, "call", "text_diff", `{"old_text":"a\n","new_text":"b\n"}`, "--plugins", dir, "--data", data)
		if code != 0 || !strings.Contains(stderr, "progress 100/100") {
			t.Fatalf("exit %d, stderr %q", code, stderr)
		}
	})

	t.Run("usage errors exit 2", func(t *testing.T) {
		for _, args := range [][]string{{}, {"frobnicate"}, {"call"}, {"call", "echo", "{not json"}, {"plugin", "inspect"}} {
			if _, _, code := runCLI(t, args...); code != 2 {
				t.Errorf("%q: exit %d, want 2", args, code)
			}
		}
	})

	t.Run("plugin inspect", func(t *testing.T) {
		out, stderr, code := runCLI(t, "plugin", "inspect", "--json", wasm["echo"])
		var got struct {
			SHA256         string `json:"sha256"`
			ManifestSource string `json:"manifest_source"`
			Manifest       struct {
				Tools []struct{ Name string }
			}
			Problems []string
		}
		if code != 0 || json.Unmarshal([]byte(out), &got) != nil {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, out, stderr)
		}
		b, _ := os.ReadFile(wasm["echo"])
		sum := sha256.Sum256(b)
		if got.SHA256 != hex.EncodeToString(sum[:]) || got.ManifestSource != "section" ||
			len(got.Manifest.Tools) != 1 || got.Manifest.Tools[0].Name != "echo" || len(got.Problems) != 0 {
			t.Errorf("inspect: %+v", got)
		}
		corrupt := filepath.Join(t.TempDir(), "corrupt.wasm")
		os.WriteFile(corrupt, []byte("\x00asm\x01\x00\x00\x00\x07\x05"), 0o644)
		if _, _, code := runCLI(t, "plugin", "inspect", corrupt); code != 1 {
			t.Errorf("corrupt module: exit %d, want 1", code)
		}
	})
}
