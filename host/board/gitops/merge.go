package gitops

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Merging an attempt back is two steps, so that a caller merging several
// repositories can check them all before it changes any:
//
//  1. PrepareMerge changes nothing (it only writes unreferenced objects): it
//     takes the attempt worktree as it is, uncommitted changes included, as
//     a commit; merges that commit with the target branch in memory (git
//     merge-tree --write-tree), which lists conflicting paths; and looks for
//     a worktree that has the target branch checked out and whether that
//     checkout has changes of its own.
//  2. MergePlan.Apply records the worktree commit on the attempt branch,
//     writes the merge commit (git commit-tree, the target tip and the
//     attempt commit as parents) and moves the target branch to it: with
//     git merge --ff-only inside the checkout when the branch is checked out
//     (index and files follow, as if the user had merged there), else with
//     git update-ref given the expected old tip (compare-and-swap).
//
// The merge commit is always made by commit-tree from the tree merge-tree
// computed, so what Apply records is exactly what PrepareMerge checked,
// whichever way the branch moves, and no merge hook or merge setting of the
// user's can change it.

// ErrTargetMoved is wrapped by Apply when the target branch (or the attempt
// branch) is no longer where PrepareMerge found it: prepare again.
var ErrTargetMoved = errors.New("branch moved since the merge was prepared")

// Default identity for commits when the repository has none configured.
const (
	DefaultUserName  = "plugboard"
	DefaultUserEmail = "plugboard@localhost"
)

// Ways MergePlan.Apply moves the target branch.
const (
	// MergedViaWorktree: the branch is checked out; the checkout was
	// fast-forwarded to the merge commit (git merge --ff-only).
	MergedViaWorktree = "worktree"
	// MergedViaRef: the branch is checked out nowhere; its ref was moved
	// (git update-ref with the old value).
	MergedViaRef = "ref"
	// MergedViaUpToDate: the target already contains the attempt; nothing
	// was merged.
	MergedViaUpToDate = "up_to_date"
)

// MergeSpec says what PrepareMerge merges.
type MergeSpec struct {
	// RepoPath is the repository (any of its worktrees).
	RepoPath string
	// TargetBranch is the local branch to merge into.
	TargetBranch string
	// Worktree is the attempt's worktree, which has Branch checked out.
	Worktree string
	// Branch is the attempt branch.
	Branch string
	// ChangesMessage is the message of the commit that records the
	// worktree's uncommitted changes, when there are any.
	ChangesMessage string
}

// MergePlan is a prepared merge of one repository.
type MergePlan struct {
	Spec MergeSpec
	// TargetTip is the target branch's commit when the plan was made.
	TargetTip string
	// BranchTip is the attempt branch's commit when the plan was made.
	BranchTip string
	// Source is the commit merged: BranchTip, or a new commit on top of it
	// holding the worktree's uncommitted changes (ChangesCommitted).
	Source           string
	ChangesCommitted bool
	// Tree is the merged tree; meaningful when Conflicts is empty.
	Tree string
	// Conflicts lists the repo-relative paths that do not merge cleanly.
	Conflicts []string
	// UpToDate is true when the target already contains Source.
	UpToDate bool
	// Checkout is the worktree that has the target branch checked out, ""
	// when none has.
	Checkout string
	// Dirty lists the repo-relative paths that keep the merge out of
	// Checkout: changes to tracked files, and untracked files the merge
	// would overwrite.
	Dirty []string
}

// Ready reports whether Apply can go ahead.
func (p *MergePlan) Ready() bool { return len(p.Conflicts) == 0 && len(p.Dirty) == 0 }

// MergeResult is what Apply did.
type MergeResult struct {
	// Commit is the target branch's tip after the merge: the merge commit,
	// or the unchanged tip when up to date.
	Commit string
	// Via is MergedViaWorktree, MergedViaRef or MergedViaUpToDate.
	Via string
	// ChangesCommit is the commit that recorded the worktree's uncommitted
	// changes on the attempt branch, "" when there were none.
	ChangesCommit string
}

// PrepareMerge checks how the attempt worktree would merge into the target
// branch, changing no ref, index or file.
func PrepareMerge(ctx context.Context, spec MergeSpec) (*MergePlan, error) {
	for _, a := range [][2]string{{"target branch", spec.TargetBranch}, {"attempt branch", spec.Branch},
		{"repository path", spec.RepoPath}, {"worktree directory", spec.Worktree}} {
		if err := checkArg(a[0], a[1]); err != nil {
			return nil, fmt.Errorf("gitops: prepare merge: %w", err)
		}
	}
	if spec.ChangesMessage == "" {
		spec.ChangesMessage = "plugboard: uncommitted changes"
	}
	p := &MergePlan{Spec: spec}
	var err error
	if p.TargetTip, err = resolveBranch(ctx, spec.RepoPath, spec.TargetBranch); err != nil {
		return nil, err
	}
	if p.BranchTip, err = resolveBranch(ctx, spec.RepoPath, spec.Branch); err != nil {
		return nil, err
	}
	if p.Source, p.ChangesCommitted, err = worktreeCommit(ctx, spec.Worktree, spec.Branch, p.BranchTip, spec.ChangesMessage); err != nil {
		return nil, err
	}
	if _, err := run(ctx, spec.RepoPath, runOpts{}, "merge-base", "--is-ancestor", p.Source, p.TargetTip); err == nil {
		p.UpToDate = true
		return p, nil
	} else if exitCode(err) != 1 {
		return nil, fmt.Errorf("gitops: %s: compare %s with %s: %w", spec.RepoPath, spec.Branch, spec.TargetBranch, err)
	}
	if p.Tree, p.Conflicts, err = mergeTree(ctx, spec.RepoPath, p.TargetTip, p.Source); err != nil {
		return nil, err
	}
	if len(p.Conflicts) > 0 {
		return p, nil
	}
	if p.Checkout, err = checkedOutIn(ctx, spec.RepoPath, spec.TargetBranch); err != nil {
		return nil, err
	}
	if p.Checkout != "" {
		if p.Dirty, err = dirtyFor(ctx, p.Checkout, p.TargetTip, p.Tree); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Apply carries out a ready plan; message is the merge commit's message.
// It fails, wrapping ErrTargetMoved, when a branch moved since the plan was
// made; nothing has changed then.
func (p *MergePlan) Apply(ctx context.Context, message string) (MergeResult, error) {
	if !p.Ready() {
		return MergeResult{}, fmt.Errorf("gitops: %s: merge of %s into %s has conflicts or a dirty checkout", p.Spec.RepoPath, p.Spec.Branch, p.Spec.TargetBranch)
	}
	s := p.Spec
	// Both branches must still be where the plan found them.
	for _, b := range [][2]string{{s.TargetBranch, p.TargetTip}, {s.Branch, p.BranchTip}} {
		tip, err := resolveBranch(ctx, s.RepoPath, b[0])
		if err != nil {
			return MergeResult{}, err
		}
		if tip != b[1] {
			return MergeResult{}, fmt.Errorf("gitops: %s: branch %q is at %s, was %s: %w", s.RepoPath, b[0], short(tip), short(b[1]), ErrTargetMoved)
		}
	}
	var res MergeResult
	if p.ChangesCommitted {
		if err := recordWorktreeCommit(ctx, s.Worktree, s.Branch, p.BranchTip, p.Source); err != nil {
			return MergeResult{}, err
		}
		res.ChangesCommit = p.Source
	}
	if p.UpToDate {
		res.Commit, res.Via = p.TargetTip, MergedViaUpToDate
		return res, nil
	}
	ident, err := identity(ctx, s.RepoPath)
	if err != nil {
		return MergeResult{}, err
	}
	args := append(ident, "commit-tree", p.Tree, "-p", p.TargetTip, "-p", p.Source, "-F", "-")
	out, err := run(ctx, s.RepoPath, runOpts{stdin: strings.NewReader(message)}, args...)
	if err != nil {
		return MergeResult{}, fmt.Errorf("gitops: %s: write merge commit: %w", s.RepoPath, err)
	}
	res.Commit = strings.TrimSpace(string(out))
	if p.Checkout != "" {
		// A fast-forward to a commit whose first parent is HEAD: git
		// updates index and files and refuses (changing nothing) if a file
		// it must write has local changes.
		if _, err := run(ctx, p.Checkout, runOpts{}, "merge", "--ff-only", "--quiet", res.Commit); err != nil {
			return MergeResult{}, fmt.Errorf("gitops: %s: fast-forward %s to the merge commit: %w", p.Checkout, s.TargetBranch, err)
		}
		res.Via = MergedViaWorktree
		return res, nil
	}
	reflog := "plugboard: merge " + s.Branch
	if _, err := run(ctx, s.RepoPath, runOpts{}, "update-ref", "-m", reflog, "refs/heads/"+s.TargetBranch, res.Commit, p.TargetTip); err != nil {
		if tip, rerr := resolveBranch(ctx, s.RepoPath, s.TargetBranch); rerr == nil && tip != p.TargetTip {
			return MergeResult{}, fmt.Errorf("gitops: %s: branch %q moved while merging: %w", s.RepoPath, s.TargetBranch, ErrTargetMoved)
		}
		return MergeResult{}, fmt.Errorf("gitops: %s: move %s to the merge commit: %w", s.RepoPath, s.TargetBranch, err)
	}
	res.Via = MergedViaRef
	return res, nil
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// resolveBranch returns the commit a local branch points at.
func resolveBranch(ctx context.Context, repo, branch string) (string, error) {
	out, err := run(ctx, repo, runOpts{}, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch+"^{commit}")
	if err != nil {
		if exitCode(err) == 1 {
			return "", fmt.Errorf("gitops: %s: branch %q does not exist: %w", repo, branch, ErrBranchNotFound)
		}
		return "", fmt.Errorf("gitops: %s: resolve branch %q: %w", repo, branch, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// identity returns -c options giving commits an author and committer when
// the repository (or the user's or system configuration) has none.
func identity(ctx context.Context, repo string) ([]string, error) {
	var args []string
	for _, k := range [][2]string{{"user.name", DefaultUserName}, {"user.email", DefaultUserEmail}} {
		_, err := run(ctx, repo, runOpts{}, "config", "--get", k[0])
		switch {
		case err == nil:
		case exitCode(err) == 1:
			args = append(args, "-c", k[0]+"="+k[1])
		default:
			return nil, fmt.Errorf("gitops: %s: read %s: %w", repo, k[0], err)
		}
	}
	return args, nil
}

// worktreeCommit returns the commit of the worktree as it is now: head
// itself when nothing is uncommitted, else a new commit on top of head
// holding every change, untracked files included (ignored ones excluded),
// written through a private index so that the worktree's own index, and
// every ref, stay as they are.
func worktreeCommit(ctx context.Context, worktree, branch, head, message string) (string, bool, error) {
	dir, err := filepath.Abs(worktree)
	if err != nil {
		return "", false, fmt.Errorf("gitops: %s: %w", worktree, err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", false, fmt.Errorf("gitops: attempt worktree %s is missing: %w", dir, ErrNotWorkTree)
	}
	out, err := run(ctx, dir, runOpts{}, "rev-parse", "--show-toplevel", "--git-path", "index", "--symbolic-full-name", "HEAD")
	if err != nil {
		return "", false, fmt.Errorf("gitops: %s: open attempt worktree: %w", dir, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 3 {
		return "", false, fmt.Errorf("gitops: %s: unexpected rev-parse output %q", dir, out)
	}
	top, realIndex, ref := filepath.Clean(lines[0]), lines[1], lines[2]
	if ref != "refs/heads/"+branch {
		return "", false, fmt.Errorf("gitops: %s: the attempt worktree is not on its branch %q (HEAD is %q); switch back with `git switch %s`", top, branch, ref, branch)
	}
	if !filepath.IsAbs(realIndex) {
		realIndex = filepath.Join(dir, realIndex)
	}
	tmp, err := os.MkdirTemp("", "plugboard-merge-*")
	if err != nil {
		return "", false, fmt.Errorf("gitops: %s: private index: %w", top, err)
	}
	defer os.RemoveAll(tmp)
	index := filepath.Join(tmp, "index")
	if err := copyIndex(realIndex, index); err != nil {
		return "", false, fmt.Errorf("gitops: %s: copy index %s: %w", top, realIndex, err)
	}
	o := runOpts{env: []string{"GIT_INDEX_FILE=" + index}}
	if _, err := run(ctx, top, o, "-c", "core.splitIndex=false", "-c", "advice.addEmbeddedRepo=false", "add", "--all"); err != nil {
		return "", false, fmt.Errorf("gitops: %s: stage the worktree: %w", top, err)
	}
	out, err = run(ctx, top, o, "write-tree")
	if err != nil {
		return "", false, fmt.Errorf("gitops: %s: write the worktree's tree: %w", top, err)
	}
	tree := strings.TrimSpace(string(out))
	out, err = run(ctx, top, runOpts{}, "rev-parse", "--verify", head+"^{tree}")
	if err != nil {
		return "", false, fmt.Errorf("gitops: %s: tree of %s: %w", top, short(head), err)
	}
	if strings.TrimSpace(string(out)) == tree {
		return head, false, nil
	}
	ident, err := identity(ctx, top)
	if err != nil {
		return "", false, err
	}
	args := append(ident, "commit-tree", tree, "-p", head, "-F", "-")
	out, err = run(ctx, top, runOpts{stdin: strings.NewReader(message)}, args...)
	if err != nil {
		return "", false, fmt.Errorf("gitops: %s: commit the uncommitted changes: %w", top, err)
	}
	return strings.TrimSpace(string(out)), true, nil
}

// recordWorktreeCommit moves the attempt branch from head to commit (made
// by worktreeCommit from the files as they are) and resets the worktree's
// index to it, so the worktree shows nothing uncommitted.
func recordWorktreeCommit(ctx context.Context, worktree, branch, head, commit string) error {
	if _, err := run(ctx, worktree, runOpts{}, "update-ref", "-m", "plugboard: commit the attempt's changes",
		"refs/heads/"+branch, commit, head); err != nil {
		return fmt.Errorf("gitops: %s: record the uncommitted changes on %s: %w", worktree, branch, err)
	}
	if _, err := run(ctx, worktree, runOpts{}, "reset", "--quiet"); err != nil {
		return fmt.Errorf("gitops: %s: reset the index to %s: %w", worktree, short(commit), err)
	}
	return nil
}

// mergeTree merges two commits in memory and returns the merged tree and
// the conflicting paths (git 2.38+).
func mergeTree(ctx context.Context, repo, ours, theirs string) (string, []string, error) {
	out, err := run(ctx, repo, runOpts{}, "merge-tree", "--write-tree", "--name-only", "--no-messages", "-z", ours, theirs)
	if err != nil && exitCode(err) != 1 {
		return "", nil, fmt.Errorf("gitops: %s: merge %s into %s: %w", repo, short(theirs), short(ours), err)
	}
	fields := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if len(fields) == 0 || fields[0] == "" {
		return "", nil, fmt.Errorf("gitops: %s: merge-tree gave no tree", repo)
	}
	if err == nil {
		return fields[0], nil, nil
	}
	var conflicts []string
	for _, f := range fields[1:] {
		if f != "" && !slices.Contains(conflicts, f) {
			conflicts = append(conflicts, f)
		}
	}
	if len(conflicts) == 0 {
		return "", nil, fmt.Errorf("gitops: %s: merge-tree reported a conflict without paths", repo)
	}
	slices.Sort(conflicts)
	return fields[0], conflicts, nil
}

// checkedOutIn returns the worktree of repo that has branch checked out,
// "" when none (a worktree whose directory is gone does not count).
func checkedOutIn(ctx context.Context, repo, branch string) (string, error) {
	out, err := run(ctx, repo, runOpts{}, "worktree", "list", "--porcelain", "-z")
	if err != nil {
		return "", fmt.Errorf("gitops: %s: list worktrees: %w", repo, err)
	}
	var path string
	for _, f := range strings.Split(string(out), "\x00") {
		switch {
		case strings.HasPrefix(f, "worktree "):
			path = strings.TrimPrefix(f, "worktree ")
		case f == "branch refs/heads/"+branch && path != "":
			if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
				return "", nil
			}
			return path, nil
		}
	}
	return "", nil
}

// dirtyFor lists what keeps a fast-forward of the checkout from tip to
// tree: tracked files with changes (staged or not, or unmerged), and
// untracked files at paths the merge writes.
func dirtyFor(ctx context.Context, checkout, tip, tree string) ([]string, error) {
	out, err := run(ctx, checkout, runOpts{}, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignore-submodules=dirty")
	if err != nil {
		return nil, fmt.Errorf("gitops: %s: status: %w", checkout, err)
	}
	var dirty, untracked []string
	fields := bytes.Split(out, []byte{0})
	for i := 0; i < len(fields); i++ {
		f := string(fields[i])
		if len(f) < 4 {
			continue
		}
		xy, path := f[:2], f[3:]
		switch {
		case xy == "??":
			untracked = append(untracked, path)
		default:
			dirty = append(dirty, path)
			if xy[0] == 'R' || xy[0] == 'C' {
				i++ // the old path follows
			}
		}
	}
	if len(untracked) > 0 {
		out, err := run(ctx, checkout, runOpts{}, "diff-tree", "-r", "--name-only", "--no-renames", "-z", tip, tree)
		if err != nil {
			return nil, fmt.Errorf("gitops: %s: paths the merge writes: %w", checkout, err)
		}
		written := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
		for _, u := range untracked {
			if slices.Contains(written, u) {
				dirty = append(dirty, u)
			}
		}
	}
	slices.Sort(dirty)
	return slices.Compact(dirty), nil
}
