package workspace

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"

	"github.com/plugboard/plugboard/abi"
)

// FuzzReadFilePath feeds arbitrary paths to ReadFile and Stat over a
// worktree surrounded by secrets (outside it, in a sibling sharing its
// prefix, in .git) and reachable by symlinks that leave it or hard links. Whatever the
// path, a read returns one of the worktree's own files or nothing, errors
// are envelopes, and nothing panics.
// Run longer with: go test -fuzz FuzzReadFilePath ./host/internal/workspace
func FuzzReadFilePath(f *testing.F) {
	fx := newFixture(f)
	// Every file a read may return; secrets are not among them.
	allowed := map[string]bool{"hello\n": true, "inner\n": true, "# other\n": true, "x\n": true}
	for _, p := range []string{
		"r/file.txt", "r/link", "r/sub/up", "r/sublink/inner.txt", "other/README.md",
		"r/../secret.txt", "../secret.txt", "r/sub/../../secret.txt", "r/../wt-evil/secret",
		"r/outfile", "r/absfile", "r/outdir/secret", "r/absdir/secret", "r/evil",
		"r/absevil/secret", "r/up/secret.txt", "r/up/wt-evil/secret", "r/chain1", "r/roundtrip",
		"r/.git", "other/.git/config", "other/.GIT/config", "other/cfg", "other/cfg2",
		"r/gitlink/../../main/.git/config", "r/vendor/lib/.git/config", "r/file.txt\x00",
		filepath.Join(fx.base, "secret.txt"), "r//./sub/../../wt/file.txt", "r\\..\\secret.txt",
		"r/hardlink", "r/tohardlink", "r/twin1", "r/sub/twin2",
	} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		s, err := fx.ws.ReadFile(p, 0, 0)
		checkEnvelope(t, p, err)
		if err == nil && !s.Blocked {
			got := []byte(s.Content)
			if s.Encoding == EncodingBase64 {
				t.Fatalf("%q: base64 content, but every readable file is text", p)
			}
			if !allowed[string(got)] || bytes.Contains(got, []byte("SECRET")) {
				t.Fatalf("%q read %q", p, got)
			}
		}
		_, _, _, err = fx.ws.Stat(p)
		checkEnvelope(t, p, err)
	})
}

func checkEnvelope(t *testing.T, p string, err error) {
	t.Helper()
	var e *abi.Envelope
	if err != nil && !errors.As(err, &e) {
		t.Fatalf("%q: error %v (%T) is not an envelope", p, err, err)
	}
}
