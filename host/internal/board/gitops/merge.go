package gitops

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Merging an attempt back is two steps, so that a caller merging several
// repositories can check them all before it changes any:
//
//  1. PrepareMerge changes no ref, index or file (it only writes
//     unreferenced objects): it takes the attempt's files as they are,
//     uncommitted changes included, as a commit on top of the attempt
//     branch's tip in the clone, made through the host git dir; copies the
//     objects Source lacks into Source (git pack-objects from the host git
//     dir, git index-pack --strict in Source, which runs fsck's checks on
//     every object the attempt made); merges that commit with the target
//     branch in memory (git merge-tree --write-tree), which lists
//     conflicting paths; and looks for a worktree of Source that has the
//     target branch checked out and whether that checkout has changes of
//     its own.
//  2. MergePlan.Apply records the attempt's commit on the attempt branch
//     in Source, writes the merge commit (git commit-tree, the target tip
//     and the attempt commit as parents) and moves the target branch to it:
//     with git merge --ff-only inside the checkout when the branch is
//     checked out (index and files follow, as if the user had merged
//     there), else with git update-ref given the expected old tip
//     (compare-and-swap).
//
// The merge commit is always made by commit-tree from the tree merge-tree
// computed, so what Apply records is exactly what PrepareMerge checked,
// whichever way the branch moves, and no merge hook or merge setting of the
// user's can change it. The attempt's clone is left as it is: its git dir
// is the agent's, which the host does not write.
//
// Every git of the merge that runs in Source (merge-base, merge-tree,
// commit-tree, update-ref, status, merge --ff-only, index-pack) obeys the
// user's configuration, as the user's own git would: that is deliberate
// (see Clone). Can the attempt's files make it run a driver? merge-tree
// reads attributes from the files checked out in Source (checked with git
// 2.39), not from the trees it merges, so the attempt's .gitattributes
// chooses no merge driver there. The fast-forward in the user's checkout
// does apply the merged .gitattributes, the attempt's included, while it
// writes the files: an agent-written .gitattributes can thus have a filter
// that the user's configuration defines (git-lfs's, say) smudge paths the
// user never gave it, as the user's own merge of that commit would. It
// cannot make any git here run a driver the user's configuration does not
// define: an attribute only names a driver, and git ignores a name nothing
// defines (a filter without commands passes content through, an unknown
// merge driver falls back to the text merge). The attempt's configuration
// is never read in Source.

// ErrObjectsRefused is wrapped by PrepareMerge when the user's repository
// refuses an object of the attempt's commits (git fsck's checks: a tree
// entry named .git, a .gitmodules that smuggles an option, ...).
var ErrObjectsRefused = errors.New("the repository refused the attempt's objects")

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
	// Repo is the attempt's repository; the merge goes into Repo.Source.
	Repo Clone
	// TargetBranch is the local branch of Repo.Source to merge into.
	TargetBranch string
	// Branch is the attempt branch: checked out in the clone, and recorded
	// in Repo.Source.
	Branch string
	// Base is the attempt's base commit.
	Base string
	// ChangesMessage is the message of the commit that records the
	// attempt's uncommitted changes, when there are any.
	ChangesMessage string
}

// MergePlan is a prepared merge of one repository.
type MergePlan struct {
	Spec MergeSpec
	// TargetTip is the target branch's commit when the plan was made.
	TargetTip string
	// BranchTip is the attempt branch's commit in the clone when the plan
	// was made.
	BranchTip string
	// RecordedTip is the attempt branch's commit in Source when the plan
	// was made, "" when Source has no such branch.
	RecordedTip string
	// Source is the commit merged: BranchTip, or a new commit on top of it
	// holding the attempt's uncommitted changes (ChangesCommitted).
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
	// Merged is what the target branch gains (zero when UpToDate): worked
	// out before anything changes, so that Apply can report it without a
	// git command that could fail after the branch moved.
	Merged Gains
}

// Gains is what a merge brings into the target branch: the attempt's
// commits it did not have and the files whose content changes, each
// counted in full and listed up to a bound.
type Gains struct {
	// CommitCount counts the commits reachable from the merged commit and
	// not from the target; Commits lists the newest MaxGainedCommits.
	CommitCount int
	Commits     []string
	// FileCount counts the paths that differ between the target's tree
	// and the merged tree; Files lists the first MaxGainedFiles, sorted.
	FileCount int
	Files     []string
}

// Bounds of Gains' lists: an answer stays small whatever the merge.
const (
	MaxGainedCommits = 20
	MaxGainedFiles   = 100
)

// Ready reports whether Apply can go ahead.
func (p *MergePlan) Ready() bool { return len(p.Conflicts) == 0 && len(p.Dirty) == 0 }

// MergeResult is what Apply did.
type MergeResult struct {
	// Commit is the target branch's tip after the merge: the merge commit,
	// or the unchanged tip when up to date.
	Commit string
	// Via is MergedViaWorktree, MergedViaRef or MergedViaUpToDate.
	Via string
	// ChangesCommit is the commit that recorded the attempt's uncommitted
	// changes on the attempt branch, "" when there were none.
	ChangesCommit string
	// Merged is what the target branch gained; zero when up to date.
	Merged Gains
}

// PrepareMerge checks how the attempt would merge into the target branch,
// changing no ref, index or file. It fails with a *LinkedFilesError when a
// changed file is a hard link or on another file system (its content is
// not the attempt's own), wrapping ErrNotWorkTree when the clone is gone
// and ErrBranchNotFound when a branch is.
func PrepareMerge(ctx context.Context, spec MergeSpec) (*MergePlan, error) {
	for _, a := range [][2]string{{"target branch", spec.TargetBranch}, {"attempt branch", spec.Branch},
		{"repository path", spec.Repo.Source}, {"base commit", spec.Base}} {
		if err := checkArg(a[0], a[1]); err != nil {
			return nil, fmt.Errorf("gitops: prepare merge: %w", err)
		}
	}
	var err error
	if spec.Repo, err = spec.Repo.abs(); err != nil {
		return nil, err
	}
	if spec.ChangesMessage == "" {
		spec.ChangesMessage = "plugboard: uncommitted changes"
	}
	c := spec.Repo
	p := &MergePlan{Spec: spec}
	if p.TargetTip, err = resolveBranch(ctx, c.Source, spec.TargetBranch); err != nil {
		return nil, err
	}
	if p.RecordedTip, err = resolveBranch(ctx, c.Source, spec.Branch); errors.Is(err, ErrBranchNotFound) {
		p.RecordedTip = "" // deleted in Source by hand: Apply records it anew
	} else if err != nil {
		return nil, err
	}
	if err := c.workTreeDir(); err != nil {
		return nil, err
	}
	if err := ensureHostDir(ctx, c, spec.Base); err != nil {
		return nil, err
	}
	if p.BranchTip, err = agentTip(ctx, c, spec.Branch); err != nil {
		return nil, err
	}
	ident, err := identity(ctx, c.Source)
	if err != nil {
		return nil, err
	}
	if p.Source, p.ChangesCommitted, err = worktreeCommit(ctx, c, spec.Base, p.BranchTip, spec.ChangesMessage, ident); err != nil {
		return nil, err
	}
	if err := transferObjects(ctx, c, p.Source, p.TargetTip, p.RecordedTip); err != nil {
		return nil, err
	}
	if _, err := run(ctx, c.Source, runOpts{}, "merge-base", "--is-ancestor", p.Source, p.TargetTip); err == nil {
		p.UpToDate = true
		return p, nil
	} else if exitCode(err) != 1 {
		return nil, fmt.Errorf("gitops: %s: compare %s with %s: %w", c.Source, spec.Branch, spec.TargetBranch, err)
	}
	if p.Tree, p.Conflicts, err = mergeTree(ctx, c.Source, p.TargetTip, p.Source); err != nil {
		return nil, err
	}
	if len(p.Conflicts) > 0 {
		return p, nil
	}
	if p.Checkout, err = checkedOutIn(ctx, c.Source, spec.TargetBranch); err != nil {
		return nil, err
	}
	if p.Checkout != "" {
		if p.Dirty, err = dirtyFor(ctx, p.Checkout, p.TargetTip, p.Tree); err != nil {
			return nil, err
		}
	}
	if p.Merged, err = gains(ctx, c.Source, p.TargetTip, p.Source, p.Tree); err != nil {
		return nil, err
	}
	return p, nil
}

// gains works out what merging source (whose merge with tip is tree)
// brings into tip, in repo: git rev-list for the commits, git diff-tree
// between tip and the merged tree for the files. The lists are kept to
// their bounds while git streams them, so a merge of a million files
// costs no more memory than one of a hundred.
func gains(ctx context.Context, repo, tip, source, tree string) (Gains, error) {
	var g Gains
	out, err := run(ctx, repo, runOpts{}, "rev-list", "--count", tip+".."+source)
	if err != nil {
		return Gains{}, fmt.Errorf("gitops: %s: count the attempt's commits: %w", repo, err)
	}
	if g.CommitCount, err = strconv.Atoi(strings.TrimSpace(string(out))); err != nil {
		return Gains{}, fmt.Errorf("gitops: %s: count the attempt's commits: %q: %w", repo, out, err)
	}
	out, err = run(ctx, repo, runOpts{}, "rev-list", "--max-count="+strconv.Itoa(MaxGainedCommits), tip+".."+source)
	if err != nil {
		return Gains{}, fmt.Errorf("gitops: %s: list the attempt's commits: %w", repo, err)
	}
	g.Commits = strings.Fields(string(out))
	files := &boundedList{max: MaxGainedFiles}
	if _, err := run(ctx, repo, runOpts{stdout: files}, "diff-tree", "-r", "--name-only", "--no-renames", "-z", tip, tree); err != nil {
		return Gains{}, fmt.Errorf("gitops: %s: list the files the merge changes: %w", repo, err)
	}
	g.FileCount, g.Files = files.count, files.items
	return g, nil
}

// boundedList is an io.Writer taking NUL-terminated items: it counts them
// all and keeps the first max.
type boundedList struct {
	max     int
	count   int
	items   []string
	partial []byte // the item being written, while it is kept
}

func (l *boundedList) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			if len(l.items) < l.max {
				l.partial = append(l.partial, b...)
			}
			break
		}
		if len(l.items) < l.max {
			l.items = append(l.items, string(append(l.partial, b[:i]...)))
		}
		l.partial = l.partial[:0]
		l.count++
		b = b[i+1:]
	}
	return n, nil
}

// Apply carries out a ready plan; message is the merge commit's message.
// It fails, wrapping ErrTargetMoved, when a branch moved since the plan was
// made; nothing has changed then.
func (p *MergePlan) Apply(ctx context.Context, message string) (res MergeResult, err error) {
	s := p.Spec
	src := s.Repo.Source
	if !p.Ready() {
		return MergeResult{}, fmt.Errorf("gitops: %s: merge of %s into %s has conflicts or a dirty checkout", src, s.Branch, s.TargetBranch)
	}
	// Every branch must still be where the plan found it.
	moved := func(branch, now, was string) error {
		return fmt.Errorf("gitops: %s: branch %q is at %s, was %s: %w", src, branch, short(now), short(was), ErrTargetMoved)
	}
	tip, err := resolveBranch(ctx, src, s.TargetBranch)
	if err != nil {
		return MergeResult{}, err
	}
	if tip != p.TargetTip {
		return MergeResult{}, moved(s.TargetBranch, tip, p.TargetTip)
	}
	recorded, err := resolveBranch(ctx, src, s.Branch)
	if errors.Is(err, ErrBranchNotFound) {
		recorded, err = "", nil
	}
	if err != nil {
		return MergeResult{}, err
	}
	if recorded != p.RecordedTip {
		return MergeResult{}, moved(s.Branch, recorded, p.RecordedTip)
	}
	if tip, err := agentTip(ctx, s.Repo, s.Branch); err != nil {
		return MergeResult{}, err
	} else if tip != p.BranchTip {
		return MergeResult{}, fmt.Errorf("gitops: %s: branch %q is at %s, was %s: %w", s.Repo.Dir, s.Branch, short(tip), short(p.BranchTip), ErrTargetMoved)
	}
	defer func() {
		if err == nil {
			// Best effort: without it a later approval may conflict with
			// this one, which the conflict then says.
			s.Repo.git(context.WithoutCancel(ctx), false, runOpts{}, "update-ref", "-m", "plugboard: approved", approvedRef, p.Source)
		}
	}()
	if p.Source != p.RecordedTip {
		// The attempt's history, on its branch in the user's repository.
		if _, err := run(ctx, src, runOpts{}, "update-ref", "-m", "plugboard: the attempt's commits",
			"refs/heads/"+s.Branch, p.Source, p.RecordedTip); err != nil {
			return MergeResult{}, fmt.Errorf("gitops: %s: record the attempt on %s: %w", src, s.Branch, err)
		}
	}
	if p.ChangesCommitted {
		res.ChangesCommit = p.Source
	}
	res.Merged = p.Merged
	if p.UpToDate {
		res.Commit, res.Via = p.TargetTip, MergedViaUpToDate
		return res, nil
	}
	ident, err := identity(ctx, src)
	if err != nil {
		return MergeResult{}, err
	}
	args := append(ident, "commit-tree", p.Tree, "-p", p.TargetTip, "-p", p.Source, "-F", "-")
	out, err := run(ctx, src, runOpts{stdin: strings.NewReader(message)}, args...)
	if err != nil {
		return MergeResult{}, fmt.Errorf("gitops: %s: write merge commit: %w", src, err)
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
	if _, err := run(ctx, src, runOpts{}, "update-ref", "-m", reflog, "refs/heads/"+s.TargetBranch, res.Commit, p.TargetTip); err != nil {
		if tip, rerr := resolveBranch(ctx, src, s.TargetBranch); rerr == nil && tip != p.TargetTip {
			return MergeResult{}, fmt.Errorf("gitops: %s: branch %q moved while merging: %w", src, s.TargetBranch, ErrTargetMoved)
		}
		return MergeResult{}, fmt.Errorf("gitops: %s: move %s to the merge commit: %w", src, s.TargetBranch, err)
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

// identity returns -c options giving commits the author and committer of
// the user's repository (its configuration, the user's global one
// included), else plugboard's. Commits made through the host git dir get
// them too: that git reads no identity of its own. GIT_AUTHOR_NAME and the
// like still win, as in git.
func identity(ctx context.Context, repo string) ([]string, error) {
	var args []string
	for _, k := range [][2]string{{"user.name", DefaultUserName}, {"user.email", DefaultUserEmail}} {
		out, err := run(ctx, repo, runOpts{}, "config", "--get", k[0])
		switch {
		case err == nil:
			args = append(args, "-c", k[0]+"="+strings.TrimSuffix(string(out), "\n"))
		case exitCode(err) == 1:
			args = append(args, "-c", k[0]+"="+k[1])
		default:
			return nil, fmt.Errorf("gitops: %s: read %s: %w", repo, k[0], err)
		}
	}
	return args, nil
}

// approvedRef, in the host git dir, is the last commit of the attempt that
// Apply merged. The clone is not told (its git dir is the agent's), so its
// files go on from that commit while its branch does not: the next
// worktreeCommit takes it as a parent, and a second approval after more
// work merges only the new work.
const approvedRef = "refs/plugboard/approved"

// worktreeCommit returns the commit of the attempt's files as they are
// now: head itself when nothing is uncommitted, else a new commit holding
// every change, untracked files included (ignored ones excluded), written
// through the host git dir and a private index, so that the clone, its
// index and every ref stay as they are. Its parent is head, and the last
// approved commit too when head does not contain it.
func worktreeCommit(ctx context.Context, c Clone, base, head, message string, ident []string) (string, bool, error) {
	snap, err := takeSnapshot(ctx, c, base)
	if err != nil {
		return "", false, err
	}
	defer snap.close()
	out, err := snap.git(ctx, "write-tree")
	if err != nil {
		return "", false, fmt.Errorf("gitops: %s: write the attempt's tree: %w", c.Dir, err)
	}
	tree := strings.TrimSpace(string(out))
	// What was just stored is what gets merged: refuse files whose content
	// is not the attempt's own.
	files, err := snap.workTreeFiles(ctx, nil, true, nil)
	if err != nil {
		return "", false, err
	}
	if _, err := checkLinks(c.Dir, files); err != nil {
		return "", false, err
	}
	parents := []string{head}
	if out, err := c.git(ctx, false, runOpts{}, "rev-parse", "--verify", "--quiet", approvedRef); err == nil {
		approved := strings.TrimSpace(string(out))
		switch {
		case approved == head || isAncestor(ctx, c, approved, head):
			// The agent's branch has it already.
		case isAncestor(ctx, c, head, approved):
			parents = []string{approved}
		default:
			parents = append(parents, approved)
		}
	}
	out, err = c.git(ctx, false, runOpts{}, "rev-parse", "--verify", parents[0]+"^{tree}")
	if err != nil {
		return "", false, fmt.Errorf("gitops: %s: tree of %s: %w", c.Dir, short(parents[0]), err)
	}
	if len(parents) == 1 && strings.TrimSpace(string(out)) == tree {
		return parents[0], false, nil
	}
	args := append(slices.Clip(ident), "commit-tree", tree)
	for _, p := range parents {
		args = append(args, "-p", p)
	}
	args = append(args, "-F", "-")
	out, err = c.git(ctx, false, runOpts{stdin: strings.NewReader(message)}, args...)
	if err != nil {
		return "", false, fmt.Errorf("gitops: %s: commit the uncommitted changes: %w", c.Dir, err)
	}
	return strings.TrimSpace(string(out)), true, nil
}

// isAncestor reports whether a is an ancestor of b (or b itself), as the
// host git dir sees them; an error counts as no.
func isAncestor(ctx context.Context, c Clone, a, b string) bool {
	_, err := c.git(ctx, false, runOpts{}, "merge-base", "--is-ancestor", a, b)
	return err == nil
}

// transferObjects copies into Source what it lacks of commit's history:
// the objects reachable from commit and not from have (refs of Source's),
// packed by the host git dir and indexed by Source with --strict, so an
// object fsck would refuse (a tree entry named .git, a .gitmodules that
// smuggles an option) never enters the user's repository. No transport
// runs: nothing of the clone's configuration (upload-pack hooks) or of
// Source's fetch settings is involved.
func transferObjects(ctx context.Context, c Clone, commit string, have ...string) error {
	if _, err := run(ctx, c.Source, runOpts{}, "cat-file", "-e", commit+"^{commit}"); err == nil {
		return nil
	}
	pack, err := os.CreateTemp(c.HostDir, "transfer-*.pack")
	if err != nil {
		return fmt.Errorf("gitops: %s: copy the attempt's objects: %w", c.Source, err)
	}
	defer os.Remove(pack.Name())
	defer pack.Close()
	revs := commit + "\n"
	for _, h := range have {
		if h != "" {
			revs += "^" + h + "\n"
		}
	}
	if _, err := c.git(ctx, false, runOpts{stdin: strings.NewReader(revs), stdout: pack}, "pack-objects", "--stdout", "--revs", "-q"); err != nil {
		return fmt.Errorf("gitops: %s: pack the attempt's objects: %w", c.Dir, err)
	}
	if _, err := pack.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("gitops: %s: copy the attempt's objects: %w", c.Source, err)
	}
	if _, err := run(ctx, c.Source, runOpts{stdin: pack}, "index-pack", "--stdin", "--strict"); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("gitops: %s: take in the attempt's objects: %w", c.Source, err)
		}
		return fmt.Errorf("gitops: %s: take in the attempt's objects: %w: %w", c.Source, ErrObjectsRefused, err)
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
