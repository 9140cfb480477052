package runtime_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/host/internal/runtime"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

type filesAnswer struct {
	OK    bool     `json:"ok"`
	Error string   `json:"error"`
	Errno uint32   `json:"errno"`
	Text  string   `json:"text"`
	Names []string `json:"names"`
}

// mountCorpus lays out, under base, a directory to mount (returned) beside
// an outside directory holding a secret, with every way out of the mount:
// symbolic links (relative and absolute, to a file and to a directory), a
// hard link to the outside secret, plus a symbolic link that stays inside.
func mountCorpus(t *testing.T, base, name string) (mnt, secret string) {
	t.Helper()
	out := filepath.Join(base, "outside-"+name)
	mnt = filepath.Join(base, name)
	for _, d := range []string{filepath.Join(out, "dir"), filepath.Join(mnt, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	secret = filepath.Join(out, "secret.txt")
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(secret, "SECRET")
	write(filepath.Join(out, "dir", "inner.txt"), "SECRET-INNER")
	write(filepath.Join(mnt, "hello.txt"), "hello")
	write(filepath.Join(mnt, "sub", "a.txt"), "a")
	links := map[string]string{
		"link_out_file": filepath.Join("..", "outside-"+name, "secret.txt"),
		"link_out_abs":  secret,
		"link_out_dir":  filepath.Join("..", "outside-"+name, "dir"),
		"link_in":       "hello.txt",
		"sub/link_up":   filepath.Join("..", "..", "outside-"+name, "secret.txt"),
	}
	for l, target := range links {
		if err := os.Symlink(target, filepath.Join(mnt, l)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(secret, filepath.Join(mnt, "hard")); err != nil {
		t.Skipf("hard links unsupported here: %v", err)
	}
	makeFIFO(t, filepath.Join(mnt, "fifo"))
	return mnt, secret
}

func TestMounts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins")
	}
	_, wasm := buildtest.Plugins(t, "testdata/plugins/files")
	code, err := os.ReadFile(wasm["files"])
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	e, err := runtime.New(ctx, runtime.Config{CacheDir: t.TempDir(), CacheKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	base := t.TempDir()
	ro, roSecret := mountCorpus(t, base, "ro")
	rw, rwSecret := mountCorpus(t, base, "rw")
	p, err := e.CompileWith(ctx, "files", code, runtime.PluginOptions{Mounts: []runtime.Mount{
		{HostPath: ro, GuestPath: "/data"},
		{HostPath: rw, GuestPath: "/rw", Writable: true},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	call := func(t *testing.T, tool string, args map[string]any) filesAnswer {
		t.Helper()
		b, _ := json.Marshal(args)
		text, err := toolText(ctx, p, tool, string(b), runtime.CallOptions{})
		if err != nil {
			t.Fatalf("%s %s: %v", tool, b, err)
		}
		if strings.Contains(text, "SECRET") {
			t.Errorf("%s %s reached the secret: %s", tool, b, text)
		}
		var a filesAnswer
		if err := json.Unmarshal([]byte(text), &a); err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		return a
	}
	read := func(t *testing.T, p string) filesAnswer { return call(t, "files_read", map[string]any{"path": p}) }
	write := func(t *testing.T, p, text string) filesAnswer {
		return call(t, "files_write", map[string]any{"path": p, "text": text})
	}
	probe := func(t *testing.T, op, p, to string) filesAnswer {
		return call(t, "files_probe", map[string]any{"op": op, "path": p, "to": to})
	}
	unchanged := func(t *testing.T, secret string) {
		t.Helper()
		b, err := os.ReadFile(secret)
		if err != nil || string(b) != "SECRET" {
			t.Errorf("outside file is now %q, %v", b, err)
		}
		if fi, err := os.Stat(secret); err != nil || fi.Mode().Perm() != 0o644 {
			t.Errorf("outside file mode changed: %v %v", fi.Mode(), err)
		}
	}

	// The escape corpus, on both mounts: nothing outside can be read.
	for _, dir := range []string{"/data", "/rw"} {
		t.Run("escape corpus "+dir, func(t *testing.T) {
			if a := read(t, dir+"/hello.txt"); !a.OK || a.Text != "hello" {
				t.Errorf("inside file: %+v", a)
			}
			if a := read(t, dir+"/link_in"); !a.OK || a.Text != "hello" {
				t.Errorf("a symbolic link staying inside is followed: %+v", a)
			}
			if a := call(t, "files_list", map[string]any{"path": dir}); !a.OK || !slices.Contains(a.Names, "hello.txt") || !slices.Contains(a.Names, "sub") {
				t.Errorf("list: %+v", a)
			}
			for _, p := range []string{
				"/link_out_file", "/link_out_abs", "/link_out_dir/inner.txt", "/sub/link_up", "/hard", "/fifo",
				"/../outside-ro/secret.txt", "/sub/../../outside-ro/secret.txt",
			} {
				if a := read(t, dir+p); a.OK {
					t.Errorf("%s%s read: %+v", dir, p, a)
				}
			}
			if a := call(t, "files_list", map[string]any{"path": dir + "/link_out_dir"}); a.OK {
				t.Errorf("list through a link out: %+v", a)
			}
			// Raw WASI opens, past Go's own path cleaning.
			for _, rel := range []string{
				"../outside-ro/secret.txt", "sub/../../outside-ro/secret.txt", secretPathAbs(base), "link_out_file",
				"link_out_dir/inner.txt", "hard", "hello.txt\x00", "hello\x00.txt", "fifo",
			} {
				if a := probe(t, "raw_open", dir, rel); a.OK || a.Errno == 0 {
					t.Errorf("raw open %q under %s: %+v", rel, dir, a)
				}
			}
			if a := probe(t, "raw_open", dir, "sub/a.txt"); !a.OK {
				t.Errorf("raw open inside: %+v", a)
			}
		})
	}

	t.Run("a read-only mount cannot be changed", func(t *testing.T) {
		for i, a := range []filesAnswer{
			write(t, "/data/new.txt", "x"),
			write(t, "/data/hello.txt", "changed"),
			probe(t, "mkdir", "/data/d", ""),
			probe(t, "remove", "/data/hello.txt", ""),
			probe(t, "rename", "/data/hello.txt", "/data/moved.txt"),
			probe(t, "truncate", "/data/hello.txt", ""),
			probe(t, "symlink", "/data/evil", "/etc"),
			probe(t, "raw_create", "/data", "created.txt"),
		} {
			if a.OK {
				t.Errorf("changed a read-only mount (%d): %+v", i, a)
			}
		}
		entries, _ := os.ReadDir(ro)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		if b, _ := os.ReadFile(filepath.Join(ro, "hello.txt")); string(b) != "hello" || len(names) != 8 {
			t.Errorf("read-only mount now holds %v, hello.txt %q", names, b)
		}
		unchanged(t, roSecret)
	})

	t.Run("a writable mount changes inside only", func(t *testing.T) {
		if a := write(t, "/rw/new.txt", "new"); !a.OK {
			t.Errorf("create: %+v", a)
		}
		if a := write(t, "/rw/hello.txt", "changed"); !a.OK {
			t.Errorf("modify: %+v", a)
		}
		if a := call(t, "files_write", map[string]any{"path": "/rw/hello.txt", "text": "+", "append": true}); !a.OK {
			t.Errorf("append: %+v", a)
		}
		if a := probe(t, "mkdir", "/rw/d", ""); !a.OK {
			t.Errorf("mkdir: %+v", a)
		}
		if a := probe(t, "rename", "/rw/new.txt", "/rw/d/moved.txt"); !a.OK {
			t.Errorf("rename: %+v", a)
		}
		if a := write(t, "/rw/link_in", "via link"); !a.OK {
			t.Errorf("write through a link staying inside: %+v", a)
		}
		if b, _ := os.ReadFile(filepath.Join(rw, "hello.txt")); string(b) != "via link" {
			t.Errorf("hello.txt = %q", b)
		}
		if b, _ := os.ReadFile(filepath.Join(rw, "d", "moved.txt")); string(b) != "new" {
			t.Errorf("moved.txt = %q", b)
		}
		for i, a := range []filesAnswer{
			write(t, "/rw/link_out_file", "PWNED"),
			write(t, "/rw/link_out_abs", "PWNED"),
			write(t, "/rw/sub/link_up", "PWNED"),
			write(t, "/rw/link_out_dir/new.txt", "PWNED"),
			write(t, "/rw/hard", "PWNED"),
			call(t, "files_write", map[string]any{"path": "/rw/hard", "text": "PWNED", "append": true}),
			probe(t, "truncate", "/rw/hard", ""),
			probe(t, "symlink", "/rw/evil", "/etc"),
			probe(t, "link", "/rw/d/moved.txt", "/rw/twin"),
			probe(t, "rename", "/rw/hello.txt", "/rw/../outside-rw/stolen.txt"),
			probe(t, "mkdir", "/rw/link_out_dir/sub", ""),
			probe(t, "raw_create", "/rw", "../outside-rw/escape.txt"),
			probe(t, "raw_create", "/rw", "link_out_dir/escape.txt"),
			probe(t, "raw_create", "/rw", "esc\x00ape.txt"),
			write(t, "/outside-rw/x.txt", "PWNED"),
		} {
			if a.OK {
				t.Errorf("escaped the writable mount (%d): %+v", i, a)
			}
		}
		unchanged(t, rwSecret)
		entries, _ := os.ReadDir(filepath.Dir(rwSecret))
		if len(entries) != 2 {
			t.Errorf("outside directory now holds %v", entries)
		}
		if entries, _ := os.ReadDir(filepath.Join(filepath.Dir(rwSecret), "dir")); len(entries) != 1 {
			t.Errorf("outside dir/ now holds %v", entries)
		}
		for _, n := range []string{"evil", "twin", "esc"} {
			if _, err := os.Lstat(filepath.Join(rw, n)); err == nil {
				t.Errorf("%s was created", n)
			}
		}
	})

	t.Run("bad mounts are refused at compile time", func(t *testing.T) {
		for _, m := range []runtime.Mount{
			{HostPath: filepath.Join(base, "missing"), GuestPath: "/x"},
			{HostPath: "relative", GuestPath: "/x"},
			{HostPath: ro, GuestPath: "relative"},
			{HostPath: roSecret, GuestPath: "/x"},
		} {
			if _, err := e.CompileWith(ctx, "files", code, runtime.PluginOptions{Mounts: []runtime.Mount{m}}); err == nil {
				t.Errorf("mount %+v accepted", m)
			}
		}
	})
}

func secretPathAbs(base string) string { return filepath.Join(base, "outside-ro", "secret.txt") }
