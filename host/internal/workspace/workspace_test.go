package workspace

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/plugboard/plugboard/abi"
)

const (
	secretOutside = "SECRET-OUTSIDE-the-worktree"
	secretSibling = "SECRET-SIBLING-wt-evil"
	secretGit     = "SECRET-GIT-url=https://token@example.com/repo.git"
)

// fixture is two worktrees side by side with secrets around them:
//
//	base/secret.txt             outside every worktree
//	base/outside/secret         a directory outside
//	base/wt                     repo "r": a linked worktree (.git is a file)
//	base/wt-evil/secret         a sibling sharing wt's name as a prefix
//	base/wt2                    repo "other": .git is a directory
type fixture struct {
	base, wt, wt2 string
	ws            *Workspace
}

func write(t testing.TB, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t testing.TB, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	base := t.TempDir()
	f := &fixture{base: base, wt: filepath.Join(base, "wt"), wt2: filepath.Join(base, "wt2")}
	write(t, filepath.Join(base, "secret.txt"), secretOutside)
	write(t, filepath.Join(base, "outside", "secret"), secretOutside)
	write(t, filepath.Join(base, "wt-evil", "secret"), secretSibling)

	write(t, filepath.Join(f.wt, ".git"), "gitdir: "+filepath.Join(base, "main", ".git", "worktrees", "wt")+"\n")
	write(t, filepath.Join(base, "main", ".git", "config"), secretGit)
	write(t, filepath.Join(f.wt, "file.txt"), "hello\n")
	write(t, filepath.Join(f.wt, "sub", "inner.txt"), "inner\n")
	write(t, filepath.Join(f.wt, "vendor", "lib", ".git", "config"), secretGit)
	// Inside the worktree: allowed.
	symlink(t, "sub/inner.txt", filepath.Join(f.wt, "link"))
	symlink(t, "sub", filepath.Join(f.wt, "sublink"))
	symlink(t, "../file.txt", filepath.Join(f.wt, "sub", "up"))
	symlink(t, "missing.txt", filepath.Join(f.wt, "dangling"))
	// Leading outside: refused.
	symlink(t, "../secret.txt", filepath.Join(f.wt, "outfile"))
	symlink(t, filepath.Join(base, "secret.txt"), filepath.Join(f.wt, "absfile"))
	symlink(t, "../outside", filepath.Join(f.wt, "outdir"))
	symlink(t, filepath.Join(base, "outside"), filepath.Join(f.wt, "absdir"))
	symlink(t, "../wt-evil/secret", filepath.Join(f.wt, "evil"))
	symlink(t, filepath.Join(base, "wt-evil"), filepath.Join(f.wt, "absevil"))
	symlink(t, "..", filepath.Join(f.wt, "up"))
	symlink(t, "chain2", filepath.Join(f.wt, "chain1"))
	symlink(t, "sub/../../secret.txt", filepath.Join(f.wt, "chain2"))
	symlink(t, filepath.Join(f.wt, "file.txt"), filepath.Join(f.wt, "absinside"))
	symlink(t, "../wt/file.txt", filepath.Join(f.wt, "roundtrip"))
	symlink(t, ".git", filepath.Join(f.wt, "gitlink"))
	// A hard link shares its content with a file outside; one between two
	// files of the worktree is refused too (nothing tells the other link's
	// place), and so is a symlink to either.
	if err := os.Link(filepath.Join(base, "secret.txt"), filepath.Join(f.wt, "hardlink")); err != nil {
		t.Fatal(err)
	}
	symlink(t, "hardlink", filepath.Join(f.wt, "tohardlink"))
	write(t, filepath.Join(f.wt, "twin1"), "twin\n")
	if err := os.Link(filepath.Join(f.wt, "twin1"), filepath.Join(f.wt, "sub", "twin2")); err != nil {
		t.Fatal(err)
	}

	write(t, filepath.Join(f.wt2, "README.md"), "# other\n")
	write(t, filepath.Join(f.wt2, "sub", "x"), "x\n")
	write(t, filepath.Join(f.wt2, ".git", "config"), secretGit)
	symlink(t, ".git/config", filepath.Join(f.wt2, "cfg"))
	symlink(t, "sub/../.GIT/config", filepath.Join(f.wt2, "cfg2"))

	ws, err := Open([]Repo{{Name: "r", Dir: f.wt}, {Name: "other", Dir: f.wt2}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	f.ws = ws
	return f
}

func envelope(t *testing.T, err error, code string) *abi.Envelope {
	t.Helper()
	var e *abi.Envelope
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an *abi.Envelope", err, err)
	}
	if e.Code != code {
		t.Fatalf("code = %q (%s), want %q", e.Code, e.Message, code)
	}
	return e
}

func read(t *testing.T, ws *Workspace, p string, start int64, maxBytes int) FileSlice {
	t.Helper()
	s, err := ws.ReadFile(p, start, maxBytes)
	if err != nil {
		t.Fatalf("ReadFile(%q, %d, %d): %v", p, start, maxBytes, err)
	}
	return s
}

func decode(t *testing.T, s FileSlice) []byte {
	t.Helper()
	switch s.Encoding {
	case EncodingUTF8:
		if !utf8.ValidString(s.Content) {
			t.Fatalf("utf-8 content is not valid UTF-8: %q", s.Content)
		}
		return []byte(s.Content)
	case EncodingBase64:
		b, err := base64.StdEncoding.DecodeString(s.Content)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	t.Fatalf("encoding = %q", s.Encoding)
	return nil
}

func TestReadFileRefused(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name, path string
		// rootRefuses: os.Root alone, given the path inside the repo,
		// refuses it too; the package's own checks are not the only guard.
		rootRefuses bool
	}{
		{"dotdot escaping the repo", "r/../secret.txt", true},
		{"dotdot deep in the repo escaping", "r/sub/../../secret.txt", true},
		{"dotdot into another repo", "r/../other/README.md", true},
		{"dotdot returning to the same repo", "r/../r/file.txt", true},
		{"leading dotdot", "../secret.txt", false},
		{"absolute path outside", filepath.Join(f.base, "secret.txt"), false},
		{"absolute path inside the worktree", filepath.Join(f.wt, "file.txt"), false},
		{"symlink to a file outside", "r/outfile", true},
		{"absolute symlink to a file outside", "r/absfile", true},
		{"symlink to a directory outside", "r/outdir/secret", true},
		{"absolute symlink to a directory outside", "r/absdir/secret", true},
		{"sibling sharing the prefix via dotdot", "r/../wt-evil/secret", true},
		{"sibling sharing the prefix via symlink", "r/evil", true},
		{"sibling sharing the prefix via absolute symlink", "r/absevil/secret", true},
		{"symlink to the parent", "r/up/secret.txt", true},
		{"symlink to the parent then the sibling", "r/up/wt-evil/secret", true},
		{"symlink chain leaving", "r/chain1", true},
		{"symlink leaving and coming back", "r/roundtrip", true},
		{"absolute symlink pointing inside", "r/absinside", true},
		{"NUL byte", "r/file.txt\x00", true},
		{"NUL byte mid-path", "r/\x00/../../secret.txt", true},
		{".git file of a linked worktree", "r/.git", false},
		{".git directory", "other/.git", false},
		{"file in the .git directory", "other/.git/config", false},
		{".git in another case", "other/.GIT/config", false},
		{"nested .git directory", "r/vendor/lib/.git/config", false},
		{"symlink to the .git file", "r/gitlink", false},
		{"symlink into the .git directory", "other/cfg", false},
		{"symlink into .git through dotdot and case", "other/cfg2", false},
		{"hard link to a file outside", "r/hardlink", false},
		{"symlink to a hard link to a file outside", "r/tohardlink", false},
		{"hard link between two files inside", "r/sub/twin2", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := read(t, f.ws, c.path, 0, 0)
			if !s.Blocked || s.BlockedReason != BlockedOutsideWorkspace {
				t.Fatalf("got %+v, want blocked %s", s, BlockedOutsideWorkspace)
			}
			if s.Content != "" || s.Size != 0 || s.Truncated || s.NextStart != nil {
				t.Errorf("blocked slice carries data: %+v", s)
			}
			if !strings.Contains(s.Hint, "get_attempt_file") || !strings.Contains(s.Hint, "path") {
				t.Errorf("hint %q does not name get_attempt_file and path", s.Hint)
			}
			if _, _, blocked, err := f.ws.Stat(c.path); err != nil || blocked != BlockedOutsideWorkspace {
				t.Errorf("Stat = %q, %v; want %s", blocked, err, BlockedOutsideWorkspace)
			}
			if c.rootRefuses {
				repo, rel, _ := strings.Cut(c.path, "/")
				if fh, err := f.ws.roots[repo].Open(rel); err == nil {
					fh.Close()
					t.Errorf("os.Root opened %q", rel)
				}
			}
		})
	}
}

func TestReadFileAllowed(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name, path, clean, want string
	}{
		{"plain file", "r/file.txt", "r/file.txt", "hello\n"},
		{"file in a subdirectory", "r/sub/inner.txt", "r/sub/inner.txt", "inner\n"},
		{"symlink to a file inside", "r/link", "r/link", "inner\n"},
		{"symlink to a directory inside", "r/sublink/inner.txt", "r/sublink/inner.txt", "inner\n"},
		{"symlink with dotdot staying inside", "r/sub/up", "r/sub/up", "hello\n"},
		{"dotdot staying inside", "r/sub/../file.txt", "r/file.txt", "hello\n"},
		{"messy spelling is cleaned", "./r//sub/./inner.txt", "r/sub/inner.txt", "inner\n"},
		{"second repo", "other/README.md", "other/README.md", "# other\n"},
		{"name starting with .git", "r/.github", "r/.github", "ci\n"},
	}
	write(t, filepath.Join(f.wt, ".github"), "ci\n")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := read(t, f.ws, c.path, 0, 0)
			want := FileSlice{Path: c.clean, Size: int64(len(c.want)), Content: c.want, Encoding: EncodingUTF8}
			if s.NextStart != nil || s != want {
				t.Fatalf("got %+v, want %+v", s, want)
			}
		})
	}
}

func TestReadFileMaxBytes(t *testing.T) {
	f := newFixture(t)
	big := strings.Repeat("0123456789abcdef", 40000) // 640000 bytes
	write(t, filepath.Join(f.wt, "big.txt"), big)

	t.Run("zero means the default", func(t *testing.T) {
		s := read(t, f.ws, "r/big.txt", 0, 0)
		if len(s.Content) != DefaultMaxBytes || !s.Truncated || *s.NextStart != DefaultMaxBytes || s.Size != int64(len(big)) {
			t.Fatalf("len %d truncated %v next %v size %d", len(s.Content), s.Truncated, s.NextStart, s.Size)
		}
	})
	t.Run("explicit", func(t *testing.T) {
		s := read(t, f.ws, "r/big.txt", 3, 10)
		if s.Content != big[3:13] || *s.NextStart != 13 {
			t.Fatalf("got %+v", s)
		}
	})
	t.Run("the cap itself is allowed", func(t *testing.T) {
		s := read(t, f.ws, "r/big.txt", 0, MaxBytesCap)
		if s.Blocked || len(s.Content) != MaxBytesCap {
			t.Fatalf("blocked %v len %d", s.Blocked, len(s.Content))
		}
	})
	t.Run("over the cap is blocked", func(t *testing.T) {
		s := read(t, f.ws, "r/big.txt", 0, MaxBytesCap+1)
		if !s.Blocked || s.BlockedReason != BlockedSizeExceeded || s.Content != "" || s.Size != int64(len(big)) {
			t.Fatalf("got %+v", s)
		}
		for _, w := range []string{"get_attempt_file", "max_bytes", "524288", "start"} {
			if !strings.Contains(s.Hint, w) {
				t.Errorf("hint %q lacks %q", s.Hint, w)
			}
		}
	})
	t.Run("negative max_bytes", func(t *testing.T) {
		_, err := f.ws.ReadFile("r/big.txt", 0, -1)
		if e := envelope(t, err, abi.CodeInvalidArgument); e.Details["field"] != "max_bytes" {
			t.Fatalf("details %v", e.Details)
		}
	})
	t.Run("negative start", func(t *testing.T) {
		_, err := f.ws.ReadFile("r/big.txt", -1, 0)
		if e := envelope(t, err, abi.CodeInvalidArgument); e.Details["field"] != "start" {
			t.Fatalf("details %v", e.Details)
		}
	})
}

// page reads a whole file slice by slice, following NextStart.
func page(t *testing.T, ws *Workspace, p string, maxBytes int) []byte {
	t.Helper()
	var got []byte
	start := int64(0)
	for i := 0; ; i++ {
		if i > 100000 {
			t.Fatal("paging does not end")
		}
		s := read(t, ws, p, start, maxBytes)
		b := decode(t, s)
		if len(b) > maxBytes {
			t.Fatalf("slice of %d bytes, max %d", len(b), maxBytes)
		}
		got = append(got, b...)
		if !s.Truncated {
			if s.NextStart != nil {
				t.Fatalf("NextStart %d without Truncated", *s.NextStart)
			}
			return got
		}
		if *s.NextStart != start+int64(len(b)) || *s.NextStart <= start {
			t.Fatalf("NextStart %d after %d bytes from %d", *s.NextStart, len(b), start)
		}
		start = *s.NextStart
	}
}

func TestReadFilePaging(t *testing.T) {
	f := newFixture(t)
	text := strings.Repeat("ascii é ü € 𝄞 日本語\n", 50)
	bin := make([]byte, 3000)
	for i := range bin {
		bin[i] = byte(i * 7)
	}
	mixed := append([]byte(text[:100]), 0xff, 0xfe)
	mixed = append(mixed, text[100:300]...)
	write(t, filepath.Join(f.wt, "text.txt"), text)
	write(t, filepath.Join(f.wt, "bin.dat"), string(bin))
	write(t, filepath.Join(f.wt, "mixed.txt"), string(mixed))
	for _, c := range []struct {
		name string
		want []byte
	}{{"text.txt", []byte(text)}, {"bin.dat", bin}, {"mixed.txt", mixed}} {
		for _, max := range []int{1, 2, 3, 4, 5, 7, 64, 1000, 0} {
			if max == 0 {
				max = DefaultMaxBytes
			}
			if got := page(t, f.ws, "r/"+c.name, max); !bytes.Equal(got, c.want) {
				t.Errorf("%s with max_bytes %d: reassembled %d bytes, want %d", c.name, max, len(got), len(c.want))
			}
		}
	}
}

func TestReadFileStart(t *testing.T) {
	f := newFixture(t)
	t.Run("beyond size", func(t *testing.T) {
		_, err := f.ws.ReadFile("r/file.txt", 7, 0)
		e := envelope(t, err, abi.CodeInvalidArgument)
		if e.Details["field"] != "start" || e.Details["size"] != int64(6) {
			t.Fatalf("details %v", e.Details)
		}
	})
	t.Run("at size is an empty slice", func(t *testing.T) {
		s := read(t, f.ws, "r/file.txt", 6, 0)
		if s.Content != "" || s.Truncated || s.Size != 6 || s.Encoding != EncodingUTF8 {
			t.Fatalf("got %+v", s)
		}
	})
	t.Run("empty file", func(t *testing.T) {
		write(t, filepath.Join(f.wt, "empty"), "")
		s := read(t, f.ws, "r/empty", 0, 0)
		if s.Content != "" || s.Truncated || s.Size != 0 {
			t.Fatalf("got %+v", s)
		}
	})
}

func TestReadFileEncoding(t *testing.T) {
	f := newFixture(t)
	bin := []byte{0x7f, 'E', 'L', 'F', 0x00, 0xff, 0xc3}
	write(t, filepath.Join(f.wt, "bin"), string(bin))
	write(t, filepath.Join(f.wt, "runes"), "aé𝄞")      // 61 | c3 a9 | f0 9d 84 9e
	write(t, filepath.Join(f.wt, "badtail"), "ok\xc3") // ends inside a rune
	write(t, filepath.Join(f.wt, "nul"), "a\x00b")

	t.Run("binary file is base64", func(t *testing.T) {
		s := read(t, f.ws, "r/bin", 0, 0)
		if s.Encoding != EncodingBase64 || !bytes.Equal(decode(t, s), bin) || s.Truncated {
			t.Fatalf("got %+v", s)
		}
	})
	t.Run("NUL bytes are valid UTF-8", func(t *testing.T) {
		if s := read(t, f.ws, "r/nul", 0, 0); s.Encoding != EncodingUTF8 || s.Content != "a\x00b" {
			t.Fatalf("got %+v", s)
		}
	})
	t.Run("two-byte rune split backs off", func(t *testing.T) {
		s := read(t, f.ws, "r/runes", 0, 2)
		if s.Content != "a" || s.Encoding != EncodingUTF8 || !s.Truncated || *s.NextStart != 1 {
			t.Fatalf("got %+v", s)
		}
	})
	for _, max := range []int{4, 5, 6} {
		t.Run(fmt.Sprintf("four-byte rune split backs off at max_bytes %d", max), func(t *testing.T) {
			s := read(t, f.ws, "r/runes", 0, max)
			if s.Content != "aé" || s.Encoding != EncodingUTF8 || *s.NextStart != 3 {
				t.Fatalf("max %d: got %+v", max, s)
			}
		})
	}
	t.Run("rune longer than max_bytes is base64", func(t *testing.T) {
		// Backing off would leave nothing and NextStart would not move.
		s := read(t, f.ws, "r/runes", 1, 1)
		if s.Encoding != EncodingBase64 || !bytes.Equal(decode(t, s), []byte{0xc3}) || *s.NextStart != 2 {
			t.Fatalf("got %+v", s)
		}
	})
	t.Run("start inside a rune is base64", func(t *testing.T) {
		s := read(t, f.ws, "r/runes", 2, 0)
		if s.Encoding != EncodingBase64 || !bytes.Equal(decode(t, s), []byte("aé𝄞")[2:]) {
			t.Fatalf("got %+v", s)
		}
	})
	t.Run("file ending inside a rune is base64", func(t *testing.T) {
		s := read(t, f.ws, "r/badtail", 0, 0)
		if s.Encoding != EncodingBase64 || s.Truncated {
			t.Fatalf("got %+v", s)
		}
	})
}

func TestReadFileErrors(t *testing.T) {
	f := newFixture(t)
	t.Run("unknown repo prefix", func(t *testing.T) {
		_, err := f.ws.ReadFile("nope/file.txt", 0, 0)
		e := envelope(t, err, abi.CodeInvalidArgument)
		if e.Details["field"] != "path" || !slices.Equal(e.Details["repos"].([]string), []string{"r", "other"}) {
			t.Fatalf("details %v", e.Details)
		}
		if !strings.Contains(e.Hint, "get_attempt_changes") {
			t.Errorf("hint %q", e.Hint)
		}
	})
	for _, p := range []string{"file.txt", "", ".", "./"} {
		t.Run("no repo prefix "+p, func(t *testing.T) {
			_, err := f.ws.ReadFile(p, 0, 0)
			e := envelope(t, err, abi.CodeInvalidArgument)
			if e.Details["field"] != "path" || e.Details["repos"] == nil || !strings.Contains(e.Message, "no repo prefix") {
				t.Fatalf("got %+v", e)
			}
		})
	}
	for _, p := range []string{"r/missing.txt", "r/sub/missing/x", "r/file.txt/x", "r/dangling", "other/nope"} {
		t.Run("missing file "+p, func(t *testing.T) {
			_, err := f.ws.ReadFile(p, 0, 0)
			if e := envelope(t, err, abi.CodeNotFound); !strings.Contains(e.Hint, "get_attempt_changes") {
				t.Fatalf("hint %q", e.Hint)
			}
		})
	}
	for _, p := range []string{"r/sub", "r/sublink", "r", "r/", "other"} {
		t.Run("directory "+p, func(t *testing.T) {
			_, err := f.ws.ReadFile(p, 0, 0)
			e := envelope(t, err, abi.CodeInvalidArgument)
			if !strings.Contains(e.Message, "is a directory") || e.Details["field"] != "path" {
				t.Fatalf("got %+v", e)
			}
		})
	}
	t.Run("path too long", func(t *testing.T) {
		_, err := f.ws.ReadFile("r/"+strings.Repeat("a", MaxPathBytes), 0, 0)
		envelope(t, err, abi.CodeInvalidArgument)
	})
	t.Run("component too long", func(t *testing.T) {
		_, err := f.ws.ReadFile("r/"+strings.Repeat("a", 300), 0, 0)
		if err == nil {
			t.Fatal("no error")
		}
		envelope(t, err, abi.CodeInvalidArgument)
	})
	t.Run("symlink loop", func(t *testing.T) {
		symlink(t, "loop2", filepath.Join(f.wt, "loop1"))
		symlink(t, "loop1", filepath.Join(f.wt, "loop2"))
		_, err := f.ws.ReadFile("r/loop1", 0, 0)
		envelope(t, err, abi.CodeInvalidArgument)
	})
	t.Run("after Close", func(t *testing.T) {
		ws, err := Open([]Repo{{Name: "r", Dir: f.wt}})
		if err != nil {
			t.Fatal(err)
		}
		ws.Close()
		_, err = ws.ReadFile("r/file.txt", 0, 0)
		envelope(t, err, abi.CodeInternal)
	})
}

func TestStat(t *testing.T) {
	f := newFixture(t)
	if size, isDir, blocked, err := f.ws.Stat("r/link"); err != nil || size != 6 || isDir || blocked != "" {
		t.Errorf("Stat(r/link) = %d %v %q %v", size, isDir, blocked, err)
	}
	if _, isDir, _, err := f.ws.Stat("r/sublink"); err != nil || !isDir {
		t.Errorf("Stat(r/sublink) = %v %v", isDir, err)
	}
	if _, isDir, _, err := f.ws.Stat("other"); err != nil || !isDir {
		t.Errorf("Stat(other) = %v %v", isDir, err)
	}
	_, _, _, err := f.ws.Stat("r/missing")
	envelope(t, err, abi.CodeNotFound)
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name  string
		repos []Repo
	}{
		{"no repos", nil},
		{"duplicate name", []Repo{{"a", dir}, {"a", dir}}},
		{"name with a slash", []Repo{{"a/b", dir}}},
		{"empty name", []Repo{{"", dir}}},
		{"dotdot name", []Repo{{"..", dir}}},
		{".git name", []Repo{{".git", dir}}},
		{"missing directory", []Repo{{"a", filepath.Join(dir, "nope")}}},
		{"a file, not a directory", []Repo{{"a", filepath.Join(dir, "f")}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			write(t, filepath.Join(dir, "f"), "x")
			if ws, err := Open(c.repos); err == nil {
				ws.Close()
				t.Fatal("no error")
			}
		})
	}
	ws, err := Open([]Repo{{"b", dir}, {"a", dir}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if got := ws.Repos(); !slices.Equal(got, []string{"b", "a"}) {
		t.Errorf("Repos = %v", got)
	}
}

func TestSplitPath(t *testing.T) {
	for _, c := range []struct {
		in, repo, rel string
		err           error
	}{
		{"r/a/b", "r", "a/b", nil},
		{"r", "r", ".", nil},
		{"./r/./a//b/", "r", "a/b", nil},
		{"r/a/../b", "r", "b", nil},
		{"r/..", "", "", ErrOutsideWorkspace},
		{"r/a/../../b", "", "", ErrOutsideWorkspace},
		{"/r/a", "", "", ErrOutsideWorkspace},
		{"r/.git/HEAD", "", "", ErrOutsideWorkspace},
		{"r/\x00", "", "", ErrOutsideWorkspace},
		{"", "", "", ErrNoRepoPrefix},
		{".//.", "", "", ErrNoRepoPrefix},
	} {
		repo, rel, err := SplitPath(c.in)
		if repo != c.repo || rel != c.rel || err != c.err {
			t.Errorf("SplitPath(%q) = %q, %q, %v; want %q, %q, %v", c.in, repo, rel, err, c.repo, c.rel, c.err)
		}
	}
}
