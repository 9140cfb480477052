package gitops

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// Clone is one repository of an attempt, in three places:
//
//   - Source is the user's repository. The host's git runs there with the
//     user's own configuration, as the user's git would; an attempt never
//     writes to it through git.
//   - Dir is the attempt's clone of Source (git clone --shared: Source's
//     objects are borrowed, not copied), where the agent works. Its git dir,
//     Dir/.git, is the agent's: config, hooks, refs, index, info files. The
//     host never runs git with that git dir and never writes to it once the
//     clone is made.
//   - HostDir is the host's git dir over Dir's files, outside Dir and
//     never named to the agent: configuration written by the host, objects
//     borrowed from Source and from Dir/.git/objects (alternates), and an
//     index of the base commit. Every git the host runs over the attempt's
//     files runs through it (see Clone.git), so nothing the attempt wrote is
//     read as configuration. Its configuration, alternates and info files
//     are written anew before each of those runs (see hostdir.go), in case
//     an agent reached the directory.
//
// The board derives all three from its own records, never from what an
// agent says.
type Clone struct {
	Source  string
	Dir     string
	HostDir string
}

// hostEnv is the environment added to every git the host runs over an
// attempt's files: no system or global configuration or attributes (git
// 2.32 and later), and a HOME and XDG_CONFIG_HOME in which nothing can be
// found, for older gits and for the default attributes and excludes files.
var hostEnv = []string{
	"GIT_CONFIG_NOSYSTEM=1",
	"GIT_CONFIG_GLOBAL=" + os.DevNull,
	"GIT_ATTR_NOSYSTEM=1",
	"HOME=" + os.DevNull,
	"XDG_CONFIG_HOME=" + os.DevNull,
	"GIT_NO_REPLACE_OBJECTS=1",
}

// hostConfig pins, on the command line, every setting through which git
// would run a command or read a file the host did not choose. The host git
// dir's configuration sets none of them (it is written anew before every
// run) and nothing else is read, so these are a second line: for gits that
// grow new defaults, and for a configuration an agent rewrote between the
// host's rewrite and git's reading it. Command-line settings win over every
// file. What they cannot pin, a driver under a name an attribute chooses,
// is kept from running otherwise: the host's info/attributes un-names
// every filter (noFilters), and every diff the host runs through a host
// git dir passes --no-ext-diff and --no-textconv (plumbing runs neither
// by default; the flags keep it so). No merge runs through a host git dir.
var hostConfig = []string{
	"-c", "core.fsmonitor=false",
	"-c", "core.hooksPath=" + os.DevNull,
	"-c", "core.attributesFile=" + os.DevNull,
	"-c", "core.splitIndex=false",
	"-c", "core.untrackedCache=false",
	"-c", "core.sparseCheckout=false",
	"-c", "index.sparse=false",
	"-c", "core.pager=cat",
	"-c", "protocol.allow=never",
	"-c", "submodule.recurse=false",
	"-c", "advice.addEmbeddedRepo=false",
}

// git runs git over the attempt: HostDir as the git dir and, when
// workTree, Dir as the work tree (and working directory). HostDir's
// configuration, alternates and info files are written anew first (see
// rebuildHostDir): nothing found there is trusted.
func (c Clone) git(ctx context.Context, workTree bool, o runOpts, args ...string) ([]byte, error) {
	if err := c.rebuildHostDir(ctx); err != nil {
		return nil, err
	}
	full := make([]string, 0, 2+len(hostConfig)+len(args))
	full = append(full, "--git-dir="+c.HostDir)
	dir := c.HostDir
	if workTree {
		full = append(full, "--work-tree="+c.Dir)
		dir = c.Dir
	}
	full = append(append(full, hostConfig...), args...)
	o.env = append(slices.Clip(hostEnv), o.env...)
	return run(ctx, dir, o, full...)
}

// abs returns c with absolute paths, refusing values git would take for
// options.
func (c Clone) abs() (Clone, error) {
	var err error
	for _, p := range []struct {
		what string
		v    *string
	}{{"repository path", &c.Source}, {"attempt directory", &c.Dir}, {"host git dir", &c.HostDir}} {
		if *p.v == "" && p.v == &c.Source {
			continue // not needed once the host git dir exists
		}
		if err := checkArg(p.what, *p.v); err != nil {
			return c, fmt.Errorf("gitops: %w", err)
		}
		if *p.v, err = filepath.Abs(*p.v); err != nil {
			return c, fmt.Errorf("gitops: %s: %w", *p.v, err)
		}
	}
	return c, nil
}

// workTreeDir checks that Dir is a directory itself, not a symlink to one:
// an agent that swapped its directory for a link must not make the host
// read the link's target as the attempt.
func (c Clone) workTreeDir() error {
	fi, err := os.Lstat(c.Dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("gitops: attempt directory %s is missing: %w", c.Dir, ErrNotWorkTree)
	case err != nil:
		return fmt.Errorf("gitops: attempt directory %s: %w", c.Dir, err)
	case !fi.IsDir():
		return fmt.Errorf("gitops: attempt directory %s is not a directory (a symlink?): %w", c.Dir, ErrNotWorkTree)
	}
	return nil
}

// AddClone creates c.Dir as a clone of c.Source on a new branch newBranch
// that starts at the tip of the existing local branch fromBranch, and the
// host git dir c.HostDir over it. It returns the full sha of that tip, the
// attempt's base commit.
//
// newBranch is also created in Source at the base commit. It keeps the
// base reachable there (the clone borrows Source's objects), and approval
// records the attempt's commits on it; it is the only thing of the
// attempt's in Source until then.
//
// The clone's origin is Source, for fetching: pushing is refused (the push
// URL is no repository), since an attempt's work reaches Source through
// approval only. The clone gets Source's info/exclude and info/attributes,
// so it ignores what Source ignores, and no hooks.
//
// Errors wrap ErrBranchNotFound when fromBranch does not exist and
// ErrBranchExists when newBranch already does; nothing is left behind on
// any error.
func AddClone(ctx context.Context, c Clone, newBranch, fromBranch string) (_ string, err error) {
	for _, a := range [][2]string{{"new branch", newBranch}, {"from branch", fromBranch}, {"repository path", c.Source}} {
		if err := checkArg(a[0], a[1]); err != nil {
			return "", fmt.Errorf("gitops: %s: add clone: %w", c.Source, err)
		}
	}
	if c, err = c.abs(); err != nil {
		return "", err
	}
	out, err := run(ctx, c.Source, runOpts{}, "rev-parse", "--verify", "--quiet", "refs/heads/"+fromBranch+"^{commit}")
	if err != nil {
		if exitCode(err) == 1 {
			return "", fmt.Errorf("gitops: %s: branch %q does not exist (list branches with `git branch`; a new repository needs a first commit): %w", c.Source, fromBranch, ErrBranchNotFound)
		}
		return "", fmt.Errorf("gitops: %s: resolve branch %q: %w", c.Source, fromBranch, err)
	}
	base := strings.TrimSpace(string(out))
	exists, err := BranchExists(ctx, c.Source, newBranch)
	if err != nil {
		return "", err
	}
	if exists {
		return "", fmt.Errorf("gitops: %s: branch %q already exists; delete it (git branch -D %s) or choose another name: %w", c.Source, newBranch, newBranch, ErrBranchExists)
	}
	for _, d := range []string{c.Dir, c.HostDir} {
		if _, err := os.Lstat(d); !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("gitops: %s: add clone: %s already exists", c.Source, d)
		}
	}
	common, err := commonDir(ctx, c.Source)
	if err != nil {
		return "", err
	}
	// The empty old value makes the creation fail if the branch appeared
	// since the check.
	if _, err := run(ctx, c.Source, runOpts{}, "update-ref", "-m", "plugboard: attempt branch", "refs/heads/"+newBranch, base, ""); err != nil {
		return "", fmt.Errorf("gitops: %s: create branch %q: %w", c.Source, newBranch, err)
	}
	defer func() {
		if err != nil {
			cleanup := context.WithoutCancel(ctx)
			removeTree(c.Dir)
			os.RemoveAll(c.HostDir)
			run(cleanup, c.Source, runOpts{}, "update-ref", "-d", "refs/heads/"+newBranch, base)
		}
	}()
	if err := os.MkdirAll(filepath.Dir(c.Dir), 0o755); err != nil {
		return "", fmt.Errorf("gitops: %s: add clone: %w", c.Source, err)
	}
	// Cloning the git dir rather than the work tree: it is the same
	// repository, and the clone's alternates then name the objects
	// directory that Source's linked worktrees share too. No template: the
	// clone starts without hooks. A split index would leave the index that
	// seeds the host's in a file beside it.
	if _, err := run(ctx, filepath.Dir(c.Dir), runOpts{}, "-c", "core.splitIndex=false", "clone", "--quiet", "--shared", "--template=",
		"--branch", newBranch, "--", common, c.Dir); err != nil {
		return "", fmt.Errorf("gitops: %s: clone into %s on branch %q: %w", c.Source, c.Dir, newBranch, err)
	}
	agentGit := filepath.Join(c.Dir, ".git")
	cfg := filepath.Join(agentGit, "config")
	// The clone is still the host's: the agent has not started.
	if _, err := run(ctx, agentGit, runOpts{env: hostEnv}, "config", "--file", cfg, "--remove-section", "branch."+newBranch); err != nil && exitCode(err) != 128 {
		return "", fmt.Errorf("gitops: %s: configure the clone: %w", c.Dir, err)
	}
	if _, err := run(ctx, agentGit, runOpts{env: hostEnv}, "config", "--file", cfg, "remote.origin.pushurl", noPushURL); err != nil {
		return "", fmt.Errorf("gitops: %s: configure the clone: %w", c.Dir, err)
	}
	if err := copyInfo(common, agentGit); err != nil {
		return "", fmt.Errorf("gitops: %s: configure the clone: %w", c.Dir, err)
	}
	if err := makeHostDir(ctx, c, common, base, filepath.Join(agentGit, "index")); err != nil {
		return "", err
	}
	return base, nil
}

// noPushURL is the clone's push URL: a path that is no repository, whose
// name tells an agent trying `git push` why.
const noPushURL = "/nonexistent/plugboard-attempts-reach-their-repository-through-approve_attempt"

// RemoveClone deletes c.Dir (discarding any work in it) and c.HostDir, and
// then deletes branch from c.Source (skipped when branch is ""). It is
// idempotent: what is already gone is not an error. An attempt made when
// attempts were linked worktrees of Source (Dir/.git is a file) is removed
// from Source's worktree list too.
func RemoveClone(ctx context.Context, c Clone, branch string) error {
	if branch != "" {
		if err := checkArg("branch name", branch); err != nil {
			return fmt.Errorf("gitops: %s: remove clone: %w", c.Source, err)
		}
	}
	c, err := c.abs()
	if err != nil {
		return err
	}
	if fi, err := os.Lstat(filepath.Join(c.Dir, ".git")); err == nil && fi.Mode().IsRegular() && c.Source != "" {
		// A linked worktree: git forgets it once its directory is gone.
		run(ctx, c.Source, runOpts{}, "worktree", "remove", "--force", c.Dir)
	}
	if err := removeTree(c.Dir); err != nil {
		return fmt.Errorf("gitops: remove attempt directory %s: %w", c.Dir, err)
	}
	if err := os.RemoveAll(c.HostDir); err != nil {
		return fmt.Errorf("gitops: remove host git dir %s: %w", c.HostDir, err)
	}
	if c.Source == "" {
		return nil
	}
	if _, err := run(ctx, c.Source, runOpts{}, "worktree", "prune"); err != nil {
		return fmt.Errorf("gitops: %s: prune worktrees: %w", c.Source, err)
	}
	if branch == "" {
		return nil
	}
	exists, err := BranchExists(ctx, c.Source, branch)
	if err != nil || !exists {
		return err
	}
	if _, err := run(ctx, c.Source, runOpts{}, "branch", "-D", branch); err != nil {
		// Someone else may have deleted it between the check and now.
		if exists, cerr := BranchExists(ctx, c.Source, branch); cerr == nil && !exists {
			return nil
		}
		return fmt.Errorf("gitops: %s: delete branch %q: %w", c.Source, branch, err)
	}
	return nil
}

// removeTree deletes dir like os.RemoveAll, also when the agent left
// directories without write permission (Go's module cache does).
func removeTree(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

// commonDir is the absolute git dir shared by every worktree of repo.
func commonDir(ctx context.Context, repo string) (string, error) {
	out, err := run(ctx, repo, runOpts{}, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return "", fmt.Errorf("gitops: %s: find the git dir: %w", repo, err)
	}
	return filepath.Clean(strings.TrimSpace(string(out))), nil
}

// copyInfo copies Source's info/exclude and info/attributes into gitDir:
// the user's own ignore and attribute lists (data git reads, never a
// command; a driver an attribute names runs only if configuration defines
// it).
func copyInfo(common, gitDir string) error {
	for _, name := range []string{"exclude", "attributes"} {
		b, err := os.ReadFile(filepath.Join(common, "info", name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(gitDir, "info"), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(gitDir, "info", name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// hostSettings are the settings of Source's configuration (the user's,
// global included) that the host git dir copies: how the file system
// behaves, how line endings are converted, where the user's excludes are.
// None of them names a command.
var hostSettings = []string{"core.filemode", "core.symlinks", "core.ignorecase", "core.precomposeunicode",
	"core.autocrlf", "core.eol", "core.excludesfile", "extensions.objectformat"}

// makeHostDir writes the host git dir of c: HEAD at base, and the
// repository's template (a configuration of the host's, alternates naming
// Source's objects and the clone's, the user's info files: see
// hostTemplate.write, which writes the same before every git run), and an
// index of base, copied from seedIndex (the index the clone's checkout
// wrote, so its stat data is warm) or, when there is none, read from base
// and refreshed once. It is built beside HostDir and renamed into place,
// so a host git dir is complete or absent.
func makeHostDir(ctx context.Context, c Clone, common, base, seedIndex string) (err error) {
	if err := os.MkdirAll(filepath.Dir(c.HostDir), 0o700); err != nil {
		return fmt.Errorf("gitops: host git dir %s: %w", c.HostDir, err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(c.HostDir), "."+filepath.Base(c.HostDir)+".new-*")
	if err != nil {
		return fmt.Errorf("gitops: host git dir %s: %w", c.HostDir, err)
	}
	defer func() {
		if tmp != "" {
			os.RemoveAll(tmp)
		}
	}()
	fail := func(err error) error { return fmt.Errorf("gitops: host git dir %s: %w", c.HostDir, err) }
	for _, d := range []string{"objects/info", "refs/heads", "info"} {
		if err := os.MkdirAll(filepath.Join(tmp, d), 0o700); err != nil {
			return fail(err)
		}
	}
	// Computed afresh: a new attempt takes the user's settings as they are
	// now, and so do the host git dirs of earlier ones from now on.
	t, err := newTemplate(ctx, c.Source, common)
	if err != nil {
		return err
	}
	root, err := os.OpenRoot(tmp)
	if err != nil {
		return fail(err)
	}
	err = t.write(root, c.Dir)
	root.Close()
	if err != nil {
		return fail(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "HEAD"), []byte(base+"\n"), 0o600); err != nil {
		return fail(err)
	}
	inTmp := Clone{Source: c.Source, Dir: c.Dir, HostDir: tmp}
	seeded := false
	if seedIndex != "" {
		switch err := copyIndex(seedIndex, filepath.Join(tmp, "index")); {
		case err == nil:
			_, serr := os.Stat(filepath.Join(tmp, "index"))
			seeded = serr == nil
		case !errors.Is(err, fs.ErrNotExist):
			return fail(err)
		}
	}
	if !seeded {
		if _, err := inTmp.git(ctx, false, runOpts{}, "read-tree", base); err != nil {
			return fail(fmt.Errorf("index of %s: %w", short(base), err))
		}
		// Hashing every file once now spares every later read of the
		// attempt; files that differ from base stay to be looked at.
		if _, err := inTmp.git(ctx, true, runOpts{}, "update-index", "-q", "--ignore-submodules", "--refresh"); err != nil && exitCode(err) != 1 {
			return fail(fmt.Errorf("refresh the index of %s: %w", short(base), err))
		}
	}
	if err := os.Rename(tmp, c.HostDir); err != nil {
		if _, serr := os.Stat(filepath.Join(c.HostDir, "HEAD")); serr == nil {
			return nil // made meanwhile by another call
		}
		return fail(err)
	}
	tmp = ""
	return nil
}

// hostConfigFile is the configuration of a host git dir: the repository
// format and hostSettings as Source's configuration has them; with source
// "" (unknown), git's defaults but for the excludes file, resolved as
// below. It names no command, includes nothing, and sets no extension but
// the object format.
func hostConfigFile(ctx context.Context, source string) (string, error) {
	values := map[string]string{}
	if source != "" {
		out, err := run(ctx, source, runOpts{}, "config", "--get-regexp", `^(core\.(filemode|symlinks|ignorecase|precomposeunicode|autocrlf|eol)|extensions\.objectformat)$`)
		if err != nil && exitCode(err) != 1 {
			return "", fmt.Errorf("gitops: %s: read settings: %w", source, err)
		}
		for _, line := range strings.Split(string(out), "\n") {
			k, v, ok := strings.Cut(line, " ")
			if !ok {
				v = "true" // "[core] symlinks" alone is a true boolean
			}
			if k != "" {
				values[strings.ToLower(k)] = v // the last one wins, as in git
			}
		}
		// Read on its own: --path (which expands ~) fails on a valueless key.
		out, err = run(ctx, source, runOpts{}, "config", "--path", "--get", "core.excludesFile")
		switch {
		case err == nil:
			values["core.excludesfile"] = strings.TrimSuffix(string(out), "\n")
		case exitCode(err) != 1:
			return "", fmt.Errorf("gitops: %s: read core.excludesFile: %w", source, err)
		}
	}
	if _, ok := values["core.excludesfile"]; !ok {
		// git's default, resolved here: the host's git sees no HOME.
		if p := defaultExcludes(); p != "" {
			values["core.excludesfile"] = p
		}
	}
	var b strings.Builder
	format := "0"
	if values["extensions.objectformat"] != "" {
		format = "1"
	}
	fmt.Fprintf(&b, "[core]\n\trepositoryformatversion = %s\n\tbare = false\n\tlogallrefupdates = false\n", format)
	for _, k := range hostSettings {
		v, ok := values[k]
		if !ok || strings.HasPrefix(k, "extensions.") {
			continue
		}
		if strings.ContainsAny(v, "\n\x00") {
			return "", fmt.Errorf("gitops: %s: %s has a newline", source, k)
		}
		fmt.Fprintf(&b, "\t%s = %s\n", strings.TrimPrefix(k, "core."), quoteConfig(v))
	}
	if v := values["extensions.objectformat"]; v != "" {
		fmt.Fprintf(&b, "[extensions]\n\tobjectformat = %s\n", quoteConfig(v))
	}
	return b.String(), nil
}

func defaultExcludes() string {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(home, ".config")
	}
	p := filepath.Join(dir, "git", "ignore")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// quoteConfig writes v as a git configuration value that reads back as v.
func quoteConfig(v string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`
}

// ensureHostDir makes c's host git dir when it is missing: for an attempt
// made before host git dirs existed (a linked worktree of Source), or one
// whose host git dir was deleted. Its index is then read from base.
func ensureHostDir(ctx context.Context, c Clone, base string) error {
	if _, err := os.Stat(filepath.Join(c.HostDir, "HEAD")); err == nil {
		return nil
	}
	if c.Source == "" {
		return fmt.Errorf("gitops: host git dir %s is missing and the repository is unknown", c.HostDir)
	}
	common, err := commonDir(ctx, c.Source)
	if err != nil {
		return err
	}
	out, err := run(ctx, c.Source, runOpts{}, "rev-parse", "--verify", "--quiet", base+"^{commit}")
	if err != nil {
		return fmt.Errorf("gitops: %s: base commit %q: %w", c.Source, base, err)
	}
	return makeHostDir(ctx, c, common, strings.TrimSpace(string(out)), "")
}

// maxRefFile bounds what is read of one ref file of the agent's git dir.
const maxRefFile = 4 << 10

// maxPackedRefs bounds what is read of its packed-refs.
const maxPackedRefs = 64 << 20

// agentTip returns the commit the attempt's branch points at in the clone,
// read as data from the agent's git dir (HEAD must name the branch; the
// branch is a loose ref or a line of packed-refs): running git there would
// read the agent's configuration. For a linked worktree of Source, the
// branch is Source's. The commit is checked to exist.
func agentTip(ctx context.Context, c Clone, branch string) (string, error) {
	gitPath := filepath.Join(c.Dir, ".git")
	fi, err := os.Lstat(gitPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("gitops: %s: the attempt's git dir is gone: %w", c.Dir, ErrNotWorkTree)
	case err != nil:
		return "", fmt.Errorf("gitops: %s: %w", c.Dir, err)
	case fi.Mode().IsRegular():
		return resolveBranch(ctx, c.Source, branch)
	case !fi.IsDir():
		return "", fmt.Errorf("gitops: %s: .git is neither a directory nor a file: %w", c.Dir, ErrNotWorkTree)
	}
	root, err := os.OpenRoot(gitPath)
	if err != nil {
		return "", fmt.Errorf("gitops: %s: %w", c.Dir, err)
	}
	defer root.Close()
	head, err := readSmall(root, "HEAD", maxRefFile)
	if err != nil {
		return "", fmt.Errorf("gitops: %s: read HEAD: %w", c.Dir, err)
	}
	ref := "refs/heads/" + branch
	if got := strings.TrimSpace(string(head)); got != "ref: "+ref {
		return "", fmt.Errorf("gitops: %s: the attempt's clone is not on its branch %q (HEAD is %q); switch back with `git switch %s`", c.Dir, branch, got, branch)
	}
	sha := ""
	loose, err := readSmall(root, filepath.FromSlash(ref), maxRefFile)
	switch {
	case err == nil:
		sha = strings.TrimSpace(string(loose))
	case errors.Is(err, fs.ErrNotExist):
		if sha, err = packedRef(root, ref); err != nil {
			return "", fmt.Errorf("gitops: %s: read packed-refs: %w", c.Dir, err)
		}
	default:
		return "", fmt.Errorf("gitops: %s: read %s: %w", c.Dir, ref, err)
	}
	if sha == "" {
		return "", fmt.Errorf("gitops: %s: branch %q has no commit in the attempt's clone: %w", c.Dir, branch, ErrBranchNotFound)
	}
	if !isHex(sha) {
		return "", fmt.Errorf("gitops: %s: branch %q holds %.80q, not a commit id", c.Dir, branch, sha)
	}
	out, err := c.git(ctx, false, runOpts{}, "rev-parse", "--verify", "--quiet", sha+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("gitops: %s: branch %q points at %s, which is not a commit the host can read: %w", c.Dir, branch, short(sha), err)
	}
	return strings.TrimSpace(string(out)), nil
}

func isHex(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, r := range s {
		if (r < '0' || r > '9') && (r < 'a' || r > 'f') {
			return false
		}
	}
	return true
}

// readSmall reads a regular file of root, refusing more than max bytes;
// O_NONBLOCK keeps a FIFO put in its place from blocking the open.
func readSmall(root *os.Root, name string, max int64) ([]byte, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", name)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s is larger than %d bytes", name, max)
	}
	return b, nil
}

// packedRef finds ref in packed-refs, "" when it is not there.
func packedRef(root *os.Root, ref string) (string, error) {
	f, err := root.OpenFile("packed-refs", os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", fmt.Errorf("packed-refs is not a regular file")
	}
	sc := bufio.NewScanner(io.LimitReader(f, maxPackedRefs))
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		sha, name, ok := strings.Cut(sc.Text(), " ")
		if ok && name == ref {
			return sha, nil
		}
	}
	return "", sc.Err()
}
