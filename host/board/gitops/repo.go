package gitops

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
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

// AddWorktree creates worktreeDir (and any missing parents) as a new
// worktree of repoPath on a new branch newBranch that starts at the tip of
// the existing local branch fromBranch. It returns the full sha of that tip,
// the attempt's base commit.
//
// Errors wrap ErrBranchNotFound when fromBranch does not exist and
// ErrBranchExists when newBranch already does; in those cases nothing was
// created. git's post-checkout hook runs, as it would for the user.
func AddWorktree(ctx context.Context, repoPath, worktreeDir, newBranch, fromBranch string) (string, error) {
	for _, a := range [][2]string{{"new branch", newBranch}, {"from branch", fromBranch}, {"worktree directory", worktreeDir}} {
		if err := checkArg(a[0], a[1]); err != nil {
			return "", fmt.Errorf("gitops: %s: add worktree: %w", repoPath, err)
		}
	}
	// git resolves a relative path against its working directory, which is
	// the repository; the caller means its own.
	dir, err := filepath.Abs(worktreeDir)
	if err != nil {
		return "", fmt.Errorf("gitops: %s: add worktree %s: %w", repoPath, worktreeDir, err)
	}
	out, err := run(ctx, repoPath, runOpts{}, "rev-parse", "--verify", "--quiet", "refs/heads/"+fromBranch+"^{commit}")
	if err != nil {
		if exitCode(err) == 1 {
			return "", fmt.Errorf("gitops: %s: branch %q does not exist (list branches with `git branch`; a new repository needs a first commit): %w", repoPath, fromBranch, ErrBranchNotFound)
		}
		return "", fmt.Errorf("gitops: %s: resolve branch %q: %w", repoPath, fromBranch, err)
	}
	base := strings.TrimSpace(string(out))
	exists, err := BranchExists(ctx, repoPath, newBranch)
	if err != nil {
		return "", err
	}
	if exists {
		return "", fmt.Errorf("gitops: %s: branch %q already exists; delete it (git branch -D %s) or choose another name: %w", repoPath, newBranch, newBranch, ErrBranchExists)
	}
	// Start from the resolved sha rather than the branch name: the base we
	// report is then exactly where the branch starts even if fromBranch
	// moves meanwhile, and no upstream tracking gets configured.
	if _, err := run(ctx, repoPath, runOpts{}, "worktree", "add", "--quiet", "-b", newBranch, dir, base); err != nil {
		return "", fmt.Errorf("gitops: %s: add worktree %s on branch %q from %q: %w", repoPath, dir, newBranch, fromBranch, err)
	}
	return base, nil
}

// RemoveWorktree removes the worktree at worktreeDir, discarding any
// uncommitted work in it, and then deletes branch (skipped when branch is
// ""). It is idempotent: a directory already deleted by hand is pruned from
// git's records, and a missing worktree or branch is not an error.
//
// A worktree locked with `git worktree lock` is refused, since someone
// locked it on purpose.
func RemoveWorktree(ctx context.Context, repoPath, worktreeDir, branch string) error {
	if err := checkArg("worktree directory", worktreeDir); err != nil {
		return fmt.Errorf("gitops: %s: remove worktree: %w", repoPath, err)
	}
	if branch != "" {
		if err := checkArg("branch name", branch); err != nil {
			return fmt.Errorf("gitops: %s: remove worktree: %w", repoPath, err)
		}
	}
	dir, err := filepath.Abs(worktreeDir)
	if err != nil {
		return fmt.Errorf("gitops: %s: remove worktree %s: %w", repoPath, worktreeDir, err)
	}
	if _, err := run(ctx, repoPath, runOpts{}, "worktree", "remove", "--force", dir); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("gitops: %s: remove worktree %s: %w", repoPath, dir, err)
		}
		// A directory that still exists is not ours to delete unless git
		// agrees it is a worktree, so only a vanished one is tolerated.
		if _, serr := os.Lstat(dir); !errors.Is(serr, fs.ErrNotExist) {
			return fmt.Errorf("gitops: %s: remove worktree %s: %w", repoPath, dir, err)
		}
		// Forget the registration of a directory deleted by hand, so that
		// the branch is no longer "checked out" there and can be deleted.
		if _, err := run(ctx, repoPath, runOpts{}, "worktree", "prune"); err != nil {
			return fmt.Errorf("gitops: %s: prune worktree %s: %w", repoPath, dir, err)
		}
	}
	if branch == "" {
		return nil
	}
	exists, err := BranchExists(ctx, repoPath, branch)
	if err != nil || !exists {
		return err
	}
	if _, err := run(ctx, repoPath, runOpts{}, "branch", "-D", branch); err != nil {
		// Someone else may have deleted it between the check and now.
		if exists, cerr := BranchExists(ctx, repoPath, branch); cerr == nil && !exists {
			return nil
		}
		return fmt.Errorf("gitops: %s: delete branch %q: %w", repoPath, branch, err)
	}
	return nil
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
