package gitops

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// What an agent able to write the host git dir (the host's Unix user's,
// like the agent) plants there must not run or change what the host
// reads: the host writes that git dir's configuration, alternates and info
// files anew before every git run.

// envDump returns a command that, on each run, writes its environment to
// the returned file and then acts as a harmless driver: with no arguments
// it passes its input through (a filter), with arguments it prints
// nothing.
func envDump(t *testing.T) (cmd, out string) {
	t.Helper()
	dir := t.TempDir()
	cmd, out = filepath.Join(dir, "pwn.sh"), filepath.Join(dir, "OUT")
	script := fmt.Sprintf("#!/bin/sh\nenv >> %q\nif [ $# -eq 0 ]; then exec cat; fi\nexit 0\n", out)
	if err := os.WriteFile(cmd, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return cmd, out
}

// pwnConfig defines the filter, diff driver and other commands an agent
// would plant, each running cmd.
func pwnConfig(t *testing.T, cmd string) string {
	t.Helper()
	hooks := filepath.Join(t.TempDir(), "hooks")
	for _, h := range []string{"pre-commit", "post-commit", "reference-transaction", "post-index-change", "fsmonitor-watchman"} {
		writeFiles(t, hooks, map[string]string{h: "#!/bin/sh\nexec " + cmd + " hook\n"})
		os.Chmod(filepath.Join(hooks, h), 0o755)
	}
	q := quoteConfig(cmd)
	return "[filter \"pwn\"]\n\tclean = " + q + "\n\tsmudge = " + q + "\n\trequired = true\n" +
		"[diff \"pwn\"]\n\ttextconv = " + q + "\n\tcommand = " + q + "\n" +
		"[diff]\n\texternal = " + q + "\n" +
		"[core]\n\tfsmonitor = " + q + "\n\thooksPath = " + quoteConfig(hooks) + "\n\tpager = " + q + "\n" +
		"[merge \"pwn\"]\n\tdriver = " + q + "\n" +
		"[commit]\n\tgpgSign = true\n[gpg]\n\tprogram = " + q + "\n"
}

func appendFile(t *testing.T, name, content string) {
	t.Helper()
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}
}

// bogusObjects makes an object store holding, under the id of blob, a
// loose object of other content, and returns its path.
func bogusObjects(t *testing.T, blob, content string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "objects")
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	fmt.Fprintf(w, "blob %d\x00%s", len(content), content)
	w.Close()
	p := filepath.Join(dir, blob[:2], blob[2:])
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, z.Bytes(), 0o444); err != nil {
		t.Fatal(err)
	}
	return dir
}

// attackedClone is an attempt whose work tree has a.txt changed, new.txt
// added and a .gitattributes naming the pwn filter and diff driver for
// every path, which the host git dir's info/attributes names too.
const pwnAttributes = "* filter=pwn diff=pwn merge=pwn\n"

func attackedClone(t *testing.T) (Clone, string) {
	t.Helper()
	repo := newRepo(t, map[string]string{"a.txt": "one\n"})
	c, base := newClone(t, repo, "pb/x", "main")
	attrs := pwnAttributes
	writeFiles(t, c.Dir, map[string]string{"a.txt": "one\ntwo\n", "new.txt": "new\n", ".gitattributes": attrs})
	appendFile(t, filepath.Join(c.HostDir, "info", "attributes"), attrs)
	return c, base
}

// checkReads runs what get_attempt_changes and get_attempt_patch run (with
// a guard, so the precheck runs too) and checks that the results are the
// attempt's and that out was never written.
func checkReads(t *testing.T, c Clone, base, out string) {
	t.Helper()
	changes, _, err := ChangesWithin(t.Context(), c, base, Balanced)
	if b, _ := os.ReadFile(out); len(b) > 0 {
		t.Fatalf("Changes ran the planted command; it saw:\n%s", b)
	}
	want := []FileChange{
		{Path: ".gitattributes", Status: StatusAdded, Added: 1, Bytes: int64(len(pwnAttributes))},
		{Path: "a.txt", Status: StatusModified, Added: 1, Bytes: 8},
		{Path: "new.txt", Status: StatusAdded, Added: 1, Bytes: 4},
	}
	if err != nil || !slices.Equal(changes, want) {
		t.Fatalf("Changes = %+v, %v; want %+v", changes, err, want)
	}
	patch, err := Patch(t.Context(), c, base, nil)
	if b, _ := os.ReadFile(out); len(b) > 0 {
		t.Fatalf("Patch ran the planted command; it saw:\n%s", b)
	}
	if err != nil || !strings.Contains(string(patch), "\n one\n+two\n") || !strings.Contains(string(patch), "+new\n") {
		t.Fatalf("Patch = %q, %v", patch, err)
	}
}

// TestHostDirPlanted: the red team's attack and its variants. Each case
// plants into the host git dir what would make git run a command of the
// agent's (or read base's objects from a store of the agent's) if git read
// it; reading the attempt runs nothing and reports the attempt's changes.
func TestHostDirPlanted(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, c Clone, cmd string)
	}{
		{"config", func(t *testing.T, c Clone, cmd string) {
			appendFile(t, filepath.Join(c.HostDir, "config"), pwnConfig(t, cmd))
		}},
		{"include", func(t *testing.T, c Clone, cmd string) {
			inc := filepath.Join(t.TempDir(), "pwn.inc")
			writeFiles(t, filepath.Dir(inc), map[string]string{"pwn.inc": pwnConfig(t, cmd)})
			appendFile(t, filepath.Join(c.HostDir, "config"), "[include]\n\tpath = "+quoteConfig(inc)+"\n")
		}},
		{"config.worktree", func(t *testing.T, c Clone, cmd string) {
			appendFile(t, filepath.Join(c.HostDir, "config"), "[extensions]\n\tworktreeConfig = true\n")
			appendFile(t, filepath.Join(c.HostDir, "config.worktree"), pwnConfig(t, cmd))
		}},
		{"commondir", func(t *testing.T, c Clone, cmd string) {
			// A copy of the host git dir, configured by the agent.
			other := filepath.Join(t.TempDir(), "common")
			if err := os.CopyFS(other, os.DirFS(c.HostDir)); err != nil {
				t.Fatal(err)
			}
			appendFile(t, filepath.Join(other, "config"), pwnConfig(t, cmd))
			appendFile(t, filepath.Join(c.HostDir, "commondir"), other+"\n")
		}},
		{"alternates", func(t *testing.T, c Clone, cmd string) {
			// base's a.txt, read from the agent's store, would not be "one".
			blob := gitT(t, c.Source, "rev-parse", "main:a.txt")
			bogus := bogusObjects(t, blob, "BOGUS\n")
			alts := filepath.Join(c.HostDir, "objects", "info", "alternates")
			b, err := os.ReadFile(alts)
			if err != nil {
				t.Fatal(err)
			}
			writeFiles(t, filepath.Dir(alts), map[string]string{"alternates": bogus + "\n" + string(b)})
		}},
		{"everything", func(t *testing.T, c Clone, cmd string) {
			appendFile(t, filepath.Join(c.HostDir, "config"), pwnConfig(t, cmd)+"[extensions]\n\tworktreeConfig = true\n")
			appendFile(t, filepath.Join(c.HostDir, "config.worktree"), pwnConfig(t, cmd))
			blob := gitT(t, c.Source, "rev-parse", "main:a.txt")
			appendFile(t, filepath.Join(c.HostDir, "objects", "info", "alternates"), bogusObjects(t, blob, "BOGUS\n")+"\n")
			writeFiles(t, c.HostDir, map[string]string{"info/exclude": "new.txt\n", "info/grafts": "", "shallow": ""})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd, out := envDump(t)
			c, base := attackedClone(t)
			tc.plant(t, c, cmd)
			checkReads(t, c, base, out)
			for _, name := range append(slices.Clip(planted), "config.worktree") {
				if _, err := os.Lstat(filepath.Join(c.HostDir, name)); err == nil {
					t.Errorf("%s is still in the host git dir", name)
				}
			}
		})
	}
}

// TestHostDirRebuiltAsMade: what the host writes before a git run is what
// AddClone wrote (the user's info files included), whatever was there.
func TestHostDirRebuiltAsMade(t *testing.T) {
	repo := newRepo(t, map[string]string{"a.txt": "one\n", "a.bin": "x\n"})
	writeFiles(t, filepath.Join(repo, ".git", "info"), map[string]string{"exclude": "*.log\n", "attributes": "*.bin -diff"})
	c, base := newClone(t, repo, "pb/x", "main")
	files := []string{"config", "objects/info/alternates", "info/exclude", "info/attributes"}
	made := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(c.HostDir, f))
		if err != nil {
			t.Fatal(err)
		}
		made[f] = string(b)
		os.WriteFile(filepath.Join(c.HostDir, f), []byte("[core]\n\tbare = true\n"), 0o600)
	}
	if want := "*.bin -diff\n" + noFilters; made["info/attributes"] != want {
		t.Fatalf("info/attributes = %q, want %q", made["info/attributes"], want)
	}
	writeFiles(t, c.Dir, map[string]string{"a.bin": "y\n", "b.log": "log\n"})
	changes, _, err := Changes(t.Context(), c, base)
	if err != nil || len(changes) != 1 || changes[0].Path != "a.bin" || !changes[0].Binary {
		t.Fatalf("Changes = %+v, %v; want a.bin, binary (the user's attributes), no b.log (the user's excludes)", changes, err)
	}
	for _, f := range files {
		b, _ := os.ReadFile(filepath.Join(c.HostDir, f))
		if string(b) != made[f] {
			t.Errorf("%s rebuilt as %q; AddClone wrote %q", f, b, made[f])
		}
		if fi, err := os.Stat(filepath.Join(c.HostDir, f)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, %v; want mode 0600", f, fi, err)
		}
	}
	// No temporary file is left behind.
	for _, d := range []string{".", "info", "objects/info"} {
		entries, _ := os.ReadDir(filepath.Join(c.HostDir, d))
		for _, e := range entries {
			if strings.Contains(e.Name(), ".plugboard-") {
				t.Errorf("left behind: %s", filepath.Join(d, e.Name()))
			}
		}
	}
}

// TestHostDirRace: an agent that rewrites the host git dir's configuration
// after the host's rewrite and before git reads it (played by
// afterRebuild, before every run) still runs nothing: the command-line
// settings, the host's info/attributes and the diff flags keep every
// command it defines from running, for reads and for a merge.
func TestHostDirRace(t *testing.T) {
	cmd, out := envDump(t)
	c, base := attackedClone(t)
	gitT(t, c.Source, "checkout", "-q", "--detach") // the merge moves the ref
	pwn := pwnConfig(t, cmd)
	afterRebuild = func(hostDir string) {
		// Runs in the goroutines that run git: no t.Fatal.
		f, err := os.OpenFile(filepath.Join(hostDir, "config"), os.O_WRONLY|os.O_APPEND, 0)
		if err == nil {
			_, err = f.WriteString(pwn)
			f.Close()
		}
		if err != nil {
			t.Errorf("plant: %v", err)
		}
	}
	t.Cleanup(func() { afterRebuild = nil })
	checkReads(t, c, base, out)
	p, err := PrepareMerge(t.Context(), MergeSpec{Repo: c, TargetBranch: "main", Branch: "pb/x", Base: base})
	if err != nil || !p.Ready() {
		t.Fatalf("PrepareMerge = %+v, %v", p, err)
	}
	if _, err := p.Apply(t.Context(), "merge"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(out); len(b) > 0 {
		t.Fatalf("the merge ran the planted command; it saw:\n%s", b)
	}
	if got := gitT(t, c.Source, "show", "main:a.txt"); got != "one\ntwo" {
		t.Fatalf("main:a.txt = %q", got)
	}
}

// TestHostDirSymlinkRefused: the host writes into no host git dir, and no
// configuration of one, that is a symlink: the write would go where the
// link points.
func TestHostDirSymlinkRefused(t *testing.T) {
	t.Run("dir", func(t *testing.T) {
		cmd, out := envDump(t)
		c, base := attackedClone(t)
		moved := filepath.Join(t.TempDir(), "elsewhere")
		if err := os.Rename(c.HostDir, moved); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(moved, c.HostDir); err != nil {
			t.Fatal(err)
		}
		appendFile(t, filepath.Join(moved, "config"), pwnConfig(t, cmd))
		before, _ := os.ReadFile(filepath.Join(moved, "config"))
		if _, _, err := Changes(t.Context(), c, base); err == nil || !strings.Contains(err.Error(), "not a directory") {
			t.Fatalf("Changes = %v; want a refusal", err)
		}
		if _, err := Patch(t.Context(), c, base, nil); err == nil {
			t.Fatal("Patch read through a symlinked host git dir")
		}
		if after, _ := os.ReadFile(filepath.Join(moved, "config")); !bytes.Equal(before, after) {
			t.Fatal("the host wrote through the link")
		}
		if b, _ := os.ReadFile(out); len(b) > 0 {
			t.Fatalf("ran the planted command:\n%s", b)
		}
	})
	t.Run("config", func(t *testing.T) {
		cmd, out := envDump(t)
		c, base := attackedClone(t)
		target := filepath.Join(t.TempDir(), "config")
		precious := "[core]\n\trepositoryformatversion = 0\n" + pwnConfig(t, cmd)
		writeFiles(t, filepath.Dir(target), map[string]string{"config": precious})
		cfg := filepath.Join(c.HostDir, "config")
		if err := os.Remove(cfg); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, cfg); err != nil {
			t.Fatal(err)
		}
		if _, _, err := Changes(t.Context(), c, base); err == nil || !strings.Contains(err.Error(), "config is not a regular file") {
			t.Fatalf("Changes = %v; want a refusal", err)
		}
		if b, _ := os.ReadFile(target); string(b) != precious {
			t.Fatal("the link's target changed")
		}
		if fi, err := os.Lstat(cfg); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("the link was replaced: %v, %v", fi, err)
		}
		if b, _ := os.ReadFile(out); len(b) > 0 {
			t.Fatalf("ran the planted command:\n%s", b)
		}
	})
}

// TestHostDirUnknownSource: when the board cannot say which repository an
// attempt's is (Source ""), reads of the attempt still work, through a
// configuration of the host's without the user's settings.
func TestHostDirUnknownSource(t *testing.T) {
	cmd, out := envDump(t)
	c, base := attackedClone(t)
	appendFile(t, filepath.Join(c.HostDir, "config"), pwnConfig(t, cmd))
	c.Source = ""
	checkReads(t, c, base, out)
	b, err := os.ReadFile(filepath.Join(c.HostDir, "config"))
	if err != nil || !strings.HasPrefix(string(b), "[core]\n\trepositoryformatversion = 0\n") || strings.Contains(string(b), "pwn") {
		t.Fatalf("config = %q, %v", b, err)
	}
}

// secretEnv sets variables a host holds secrets in, and returns a check
// that env (a git's environment as `env` prints it) has none of them.
func secretEnv(t *testing.T) func(what, env string) {
	t.Setenv("PLUGBOARD_HTTP_TOKEN", "secret-token")
	t.Setenv("SOME_API_KEY", "secret-key")
	t.Setenv("LC_SMUGGLED", "secret-lc")
	return func(what, env string) {
		t.Helper()
		if !strings.Contains(env, "PATH=") {
			t.Fatalf("%s: no environment captured: %q", what, env)
		}
		for _, s := range []string{"PLUGBOARD_", "secret-", "SOME_API_KEY"} {
			if strings.Contains(env, s) {
				t.Errorf("%s: git's environment has %q:\n%s", what, s, env)
			}
		}
	}
}

// TestGitEnvHasNoSecrets: git, and what it starts, sees none of the host's
// secrets: through the host git dir and in the user's repository, where
// the user's own filter runs by design.
func TestGitEnvHasNoSecrets(t *testing.T) {
	check := secretEnv(t)
	repo := newRepo(t, map[string]string{"a.txt": "one\n"})
	c, base := newClone(t, repo, "pb/x", "main")
	// An alias that prints the environment git gives the commands it runs.
	printEnv := []string{"-c", "alias.printenv=!env", "printenv"}
	env, err := c.git(t.Context(), true, runOpts{}, printEnv...)
	if err != nil {
		t.Fatal(err)
	}
	check("a git over the attempt", string(env))
	if !slices.Contains(strings.Split(string(env), "\n"), "HOME="+os.DevNull) {
		t.Errorf("a git over the attempt has another HOME:\n%s", env)
	}
	env, err = run(t.Context(), repo, runOpts{}, printEnv...)
	if err != nil {
		t.Fatal(err)
	}
	check("a git in the repository", string(env))

	// The user's own smudge filter, defined in the repository's
	// configuration, runs when the approval checks the merge out.
	cmd, out := envDump(t)
	gitT(t, repo, "config", "filter.user.smudge", cmd)
	gitT(t, repo, "config", "filter.user.clean", "cat")
	writeFiles(t, repo, map[string]string{".gitattributes": "*.dat filter=user\n"})
	gitT(t, repo, "add", ".gitattributes")
	gitT(t, repo, "commit", "-q", "-m", "attributes")
	writeFiles(t, c.Dir, map[string]string{"x.dat": "data\n"})
	p, err := PrepareMerge(t.Context(), MergeSpec{Repo: c, TargetBranch: "main", Branch: "pb/x", Base: base})
	if err != nil || !p.Ready() {
		t.Fatalf("PrepareMerge = %+v, %v", p, err)
	}
	if res, err := p.Apply(t.Context(), "merge"); err != nil || res.Via != MergedViaWorktree {
		t.Fatalf("Apply = %+v, %v", res, err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("the user's filter did not run: %v", err)
	}
	check("the user's filter", string(b))
}
