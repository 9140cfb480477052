package gitops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Sentinel errors, for errors.Is; the returned errors also name the
// repository and the branch or path involved.
var (
	ErrNotWorkTree    = errors.New("not a git work tree")
	ErrDetachedHead   = errors.New("HEAD is detached")
	ErrBranchNotFound = errors.New("branch does not exist")
	ErrBranchExists   = errors.New("branch already exists")
)

// Repo is a repository that Open verified.
type Repo struct {
	// Path is the absolute top-level directory of the work tree, which may
	// be a parent of the path given to Open.
	Path string `json:"path"`
	// Branch is the checked-out branch, "" when HEAD is detached. It is set
	// even when the branch has no commit yet.
	Branch string `json:"branch"`
}

// Open verifies that path is inside a git work tree and reports the work
// tree's top level and current branch. A detached HEAD is not an error here:
// the board can still branch attempts from any named branch.
func Open(ctx context.Context, path string) (Repo, error) {
	if path == "" {
		return Repo{}, fmt.Errorf("gitops: open: repository path is empty: %w", ErrNotWorkTree)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return Repo{}, fmt.Errorf("gitops: open %s: %w", path, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return Repo{}, fmt.Errorf("gitops: open %s: %w: %w", abs, ErrNotWorkTree, err)
	}
	if !fi.IsDir() {
		return Repo{}, fmt.Errorf("gitops: open %s: it is a file, not a directory; give the repository's directory: %w", abs, ErrNotWorkTree)
	}
	out, err := run(ctx, abs, runOpts{}, "rev-parse", "--is-inside-work-tree", "--show-toplevel")
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err != nil || len(lines) != 2 || lines[0] != "true" {
		if ctx.Err() != nil {
			return Repo{}, fmt.Errorf("gitops: open %s: %w", abs, ctx.Err())
		}
		var cause error = ErrNotWorkTree
		if err != nil {
			cause = fmt.Errorf("%w: %w", ErrNotWorkTree, err)
		}
		return Repo{}, fmt.Errorf("gitops: %s is not inside a git work tree (a bare repository or .git directory does not count); "+
			"run `git init` there and commit, or `git clone` the project and use the clone's directory: %w", abs, cause)
	}
	top := filepath.Clean(lines[1])
	branch, err := currentBranch(ctx, top)
	if err != nil && !errors.Is(err, ErrDetachedHead) {
		return Repo{}, err
	}
	return Repo{Path: top, Branch: branch}, nil
}

// DefaultBranch is the branch checked out in repoPath (HEAD's short name),
// the natural target for new attempts.
func DefaultBranch(ctx context.Context, repoPath string) (string, error) {
	return currentBranch(ctx, repoPath)
}

func currentBranch(ctx context.Context, repoPath string) (string, error) {
	out, err := run(ctx, repoPath, runOpts{}, "symbolic-ref", "--quiet", "--short", "HEAD")
	if err != nil {
		if exitCode(err) == 1 {
			return "", fmt.Errorf("gitops: %s: HEAD is detached; check out a branch (git switch <branch>) or name the target branch explicitly: %w", repoPath, ErrDetachedHead)
		}
		return "", fmt.Errorf("gitops: %s: read current branch: %w", repoPath, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// BranchExists reports whether the local branch refs/heads/<branch> exists
// in repoPath.
func BranchExists(ctx context.Context, repoPath, branch string) (bool, error) {
	if err := checkArg("branch name", branch); err != nil {
		return false, fmt.Errorf("gitops: %s: %w", repoPath, err)
	}
	_, err := run(ctx, repoPath, runOpts{}, "show-ref", "--verify", "--quiet", "refs/heads/"+branch)
	switch {
	case err == nil:
		return true, nil
	case exitCode(err) == 1:
		return false, nil
	default:
		return false, fmt.Errorf("gitops: %s: look up branch %q: %w", repoPath, branch, err)
	}
}

// maxSlug bounds the title part of a branch name: long enough to recognise
// the task, short enough for terminals and PR lists.
const maxSlug = 40

// BranchName is the attempt branch for a task: "pb/<shortID>-<slug>", where
// slug is the lowercased title with every run of characters outside [a-z0-9]
// replaced by "-", trimmed of "-", cut to at most 40 characters (at a "-"
// when there is one to cut at), and "task" when nothing is left. shortID is
// slugged the same way (without the cut) and left out when empty. Only
// [a-z0-9-] follows "pb/", so the result is always a valid branch name.
func BranchName(shortID, title string) string {
	slug := slugify(title)
	if len(slug) > maxSlug {
		cut := slug[:maxSlug]
		if slug[maxSlug] != '-' {
			if i := strings.LastIndexByte(cut, '-'); i > 0 {
				cut = cut[:i]
			}
		}
		slug = strings.TrimRight(cut, "-")
	}
	if slug == "" {
		slug = "task"
	}
	if id := slugify(shortID); id != "" {
		return "pb/" + id + "-" + slug
	}
	return "pb/" + slug
}

func slugify(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if ('a' <= r && r <= 'z') || ('0' <= r && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			continue
		}
		dash = true
	}
	return b.String()
}
