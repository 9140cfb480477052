package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Repo is one worktree of a workspace.
type Repo struct {
	// Name is the repo's prefix in agent-facing paths.
	Name string
	// Dir is the worktree directory on the host.
	Dir string
}

// Workspace is the set of worktrees of one attempt, each opened as an
// os.Root. It is safe for concurrent use; Close releases it.
type Workspace struct {
	names []string
	roots map[string]*os.Root
	devs  map[string]uint64 // device of each worktree, where link counts exist
}

// ErrOutsideWorkspace is returned by SplitPath for a path that may not be
// read whatever the file system holds: one with a NUL byte, an absolute
// path, a ".." that leaves the repo, or a .git component.
var ErrOutsideWorkspace = errors.New("workspace: path outside workspace")

// ErrNoRepoPrefix is returned by SplitPath for a path with no component at
// all ("", ".", "./").
var ErrNoRepoPrefix = errors.New("workspace: path has no repo prefix")

// Blocked reasons of FileSlice.BlockedReason and Stat.
const (
	BlockedOutsideWorkspace = "path_outside_workspace"
	BlockedSizeExceeded     = "size_exceeded"
)

// maxSymlinks is os.Root's own limit: a path that needs more links than
// this cannot be opened through the root anyway.
const maxSymlinks = 8

// Open opens the worktree of every repo. Repo names must be unique and
// usable as a single path component, since they are the first component of
// every agent-facing path.
func Open(repos []Repo) (*Workspace, error) {
	if len(repos) == 0 {
		return nil, errors.New("workspace: no repos")
	}
	w := &Workspace{roots: make(map[string]*os.Root, len(repos)), devs: make(map[string]uint64, len(repos))}
	for _, r := range repos {
		if err := checkName(r.Name); err != nil {
			w.Close()
			return nil, err
		}
		if _, dup := w.roots[r.Name]; dup {
			w.Close()
			return nil, fmt.Errorf("workspace: duplicate repo name %q", r.Name)
		}
		// os.OpenRoot follows a symlink in the worktree's own place; an
		// agent that swapped its directory for one must not move the root.
		if fi, err := os.Lstat(r.Dir); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			w.Close()
			return nil, fmt.Errorf("workspace: repo %q: %s is a symbolic link, not the worktree", r.Name, r.Dir)
		}
		root, err := os.OpenRoot(r.Dir)
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("workspace: repo %q: %w", r.Name, err)
		}
		w.names = append(w.names, r.Name)
		w.roots[r.Name] = root
		if fi, err := root.Stat("."); err == nil {
			if id, ok := fileIdentity(fi); ok {
				w.devs[r.Name] = id.dev
			}
		}
	}
	return w, nil
}

func checkName(name string) error {
	switch {
	case name == "", name == ".", name == "..":
		return fmt.Errorf("workspace: invalid repo name %q", name)
	case strings.ContainsAny(name, "/\\\x00"):
		return fmt.Errorf("workspace: repo name %q contains '/', '\\' or NUL", name)
	case isGitName(name):
		// SplitPath would refuse every path of such a repo.
		return fmt.Errorf("workspace: invalid repo name %q", name)
	}
	return nil
}

// Close releases the worktrees' roots. Reads after Close fail.
func (w *Workspace) Close() error {
	var errs []error
	for _, name := range w.names {
		errs = append(errs, w.roots[name].Close())
	}
	return errors.Join(errs...)
}

// Repos returns the repo names, in the order given to Open.
func (w *Workspace) Repos() []string {
	return append([]string(nil), w.names...)
}

// SplitPath splits a repo-prefixed path into the repo name and the cleaned,
// slash-separated path inside the repo ("." for the repo itself). It only
// looks at the string: a path it accepts may still be refused once its
// symlinks are resolved. It returns ErrOutsideWorkspace or ErrNoRepoPrefix.
//
// A ".." is refused as soon as it would leave the repo, even when the path
// comes back ("r/../r/f"): the prefix must name the repo read, so that
// "r/../other/f" can never become a read of repo "other".
func SplitPath(p string) (repo, rel string, err error) {
	if strings.IndexByte(p, 0) >= 0 || path.IsAbs(p) || filepath.IsAbs(p) || filepath.VolumeName(p) != "" {
		return "", "", ErrOutsideWorkspace
	}
	// Where '\' is a separator it would hide components from the checks
	// below; agent paths are slash-separated everywhere.
	if filepath.Separator != '/' && strings.ContainsRune(p, filepath.Separator) {
		return "", "", ErrOutsideWorkspace
	}
	var parts []string
	for _, e := range strings.Split(p, "/") {
		if e != "" && e != "." {
			parts = append(parts, e)
		}
	}
	if len(parts) == 0 {
		return "", "", ErrNoRepoPrefix
	}
	if parts[0] == ".." {
		return "", "", ErrOutsideWorkspace
	}
	rel = path.Clean(strings.Join(parts[1:], "/"))
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return "", "", ErrOutsideWorkspace
	}
	for _, e := range strings.Split(rel, "/") {
		if isGitName(e) {
			return "", "", ErrOutsideWorkspace
		}
	}
	return parts[0], rel, nil
}

// isGitName ignores case because on case-insensitive file systems (macOS,
// Windows) ".GIT" opens ".git".
func isGitName(e string) bool {
	return strings.EqualFold(e, ".git")
}

var (
	errNotDir        = errors.New("not a directory")
	errTooManyLinks  = errors.New("too many levels of symbolic links")
	errDanglingEmpty = errors.New("empty symbolic link")
)

// resolve walks rel (clean, from SplitPath) one component at a time,
// replacing each symlink by its target, and returns the symlink-free path
// inside root with the Lstat of its last component. It returns
// ErrOutsideWorkspace when a ".." leaves the root, a link is absolute, or a
// component is .git; a missing component gives an fs.ErrNotExist error.
//
// os.Root would refuse the same escapes, but only with an unexported error
// that cannot be told apart from other failures; and it would happily
// follow a link into .git. Opening the returned path through os.Root keeps
// the root the enforcement even if the tree changes after this walk.
func resolve(root *os.Root, rel string) (string, fs.FileInfo, error) {
	pending := strings.Split(rel, "/")
	var done []string
	links := 0
	for len(pending) > 0 {
		e := pending[0]
		pending = pending[1:]
		switch {
		case e == "" || e == ".":
			continue
		case e == "..":
			if len(done) == 0 {
				return "", nil, ErrOutsideWorkspace
			}
			done = done[:len(done)-1]
			continue
		case isGitName(e):
			return "", nil, ErrOutsideWorkspace
		}
		p := strings.Join(append(done, e), "/")
		fi, err := root.Lstat(p)
		if err != nil {
			return "", nil, err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if !fi.IsDir() && len(pending) > 0 && hasName(pending) {
				return "", nil, errNotDir
			}
			done = append(done, e)
			continue
		}
		if links++; links > maxSymlinks {
			return "", nil, errTooManyLinks
		}
		target, err := root.Readlink(p)
		if err != nil {
			return "", nil, err
		}
		if target == "" {
			return "", nil, errDanglingEmpty
		}
		// os.Root refuses absolute links even when they point back inside
		// the root; refusing them here keeps both in agreement.
		if path.IsAbs(target) || filepath.IsAbs(target) || filepath.VolumeName(target) != "" {
			return "", nil, ErrOutsideWorkspace
		}
		pending = append(strings.Split(filepath.ToSlash(target), "/"), pending...)
	}
	if len(done) == 0 {
		fi, err := root.Lstat(".")
		return ".", fi, err
	}
	p := strings.Join(done, "/")
	// The last component was Lstat'ed above, but a ".." after it may have
	// popped back to an earlier one.
	fi, err := root.Lstat(p)
	return p, fi, err
}

// hasName reports whether components still follow the current one, as a
// path through a non-directory; like POSIX, "file/.." counts.
func hasName(components []string) bool {
	for _, e := range components {
		if e != "" && e != "." {
			return true
		}
	}
	return false
}
