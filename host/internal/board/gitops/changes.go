package gitops

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// FileChange is one file that differs between an attempt's base commit and
// its worktree as it is now (commits made on the attempt branch, staged and
// unstaged edits, and untracked files that are not ignored).
type FileChange struct {
	Path    string `json:"path"`   // repo-relative, forward slashes
	Status  string `json:"status"` // added | modified | deleted | renamed
	OldPath string `json:"old_path,omitempty"`
	Added   int    `json:"added"` // lines; 0 for binary
	Deleted int    `json:"deleted"`
	Binary  bool   `json:"binary,omitempty"`
	Bytes   int64  `json:"bytes"` // size of the file now (for a deletion: its size at base)
}

// FileChange.Status values.
const (
	StatusAdded    = "added"
	StatusModified = "modified"
	StatusDeleted  = "deleted"
	StatusRenamed  = "renamed"
)

// Summary totals a set of changes; Guard.Check judges it.
type Summary struct {
	FileCount  int   `json:"file_count"`
	Added      int   `json:"added"`
	Deleted    int   `json:"deleted"`
	TotalBytes int64 `json:"total_bytes"` // sum of FileChange.Bytes
}

// Summarize totals changes.
func Summarize(changes []FileChange) Summary {
	s := Summary{FileCount: len(changes)}
	for _, c := range changes {
		s.Added += c.Added
		s.Deleted += c.Deleted
		s.TotalBytes += c.Bytes
	}
	return s
}

// renameLimit caps rename detection at that many added × deleted
// candidates, like git's own default for diff; past it git still pairs
// identical files but reports the rest as separate deletions and additions,
// instead of spending seconds comparing every pair.
const renameLimit = "-l1000"

// ChangesWithin lists the files that differ between baseCommit and the
// attempt's files in c.Dir, sorted by path, with their totals.
//
// Untracked files count as added unless ignored (.gitignore, and the
// repository's info/exclude and core.excludesFile as the user's own
// configuration has them; the agent's git dir is not read). Renames are
// detected (git's -M, 50% similarity): a renamed file is one entry with
// Status "renamed" and OldPath, and its lines are the edits made while
// moving it; a deletion and an addition that git does not pair stay two
// entries. Lines are git's numstat counts, which honour .gitattributes
// (binary, -diff; no diff driver runs). A submodule or nested repository
// counts as one file of 0 bytes.
//
// The attempt's files, index and git dir are not modified. git runs a
// fixed number of times whatever the number of files: 4, plus 1 when files
// were deleted, plus 2 when a binary file's content may be unchanged (see
// dropTouched), plus 1 or 2 when limit is set (see precheck). Two of them
// run at the same time: see changesDiff.
//
// limit applies before git reads any file's content: changes that
// certainly exceed it are returned as a *GuardExceeded, unread.
func ChangesWithin(ctx context.Context, c Clone, baseCommit string, limit Guard) ([]FileChange, Summary, error) {
	snap, err := openSnapshot(ctx, c, baseCommit)
	if err != nil {
		return nil, Summary{}, err
	}
	defer snap.close()
	entries, err := snap.changesDiff(ctx, limit)
	if err != nil {
		return nil, Summary{}, err
	}
	changes := make([]FileChange, 0, len(entries))
	var deleted []int // indexes into changes whose size is the blob's at base
	var oldBlobs []string
	for _, e := range entries {
		c := e.change
		switch {
		case e.gitlink:
			// A submodule's size is not ours to measure.
		case c.Status == StatusDeleted:
			deleted = append(deleted, len(changes))
			oldBlobs = append(oldBlobs, e.oldBlob)
		default:
			fi, err := os.Lstat(filepath.Join(snap.c.Dir, filepath.FromSlash(c.Path)))
			switch {
			case err == nil:
				c.Bytes = fi.Size() // a symlink's size is its target's length, as in git
			case errors.Is(err, fs.ErrNotExist):
				// Deleted since git looked: it has no size now.
			default:
				return nil, Summary{}, fmt.Errorf("gitops: %s: size of %s: %w", snap.c.Dir, c.Path, err)
			}
		}
		changes = append(changes, c)
	}
	if len(oldBlobs) > 0 {
		sizes, err := blobSizes(ctx, snap.c, oldBlobs)
		if err != nil {
			return nil, Summary{}, err
		}
		for i, ci := range deleted {
			changes[ci].Bytes = sizes[i]
		}
	}
	slices.SortFunc(changes, func(a, b FileChange) int { return strings.Compare(a.Path, b.Path) })
	return changes, Summarize(changes), nil
}

// diffFlags are the flags of every diff-index that ChangesWithin runs,
// after which come the rename and filter flags, base and "--".
var diffFlags = []string{"diff-index", "-z", "--raw", "--numstat", "--no-abbrev",
	"--ignore-submodules=dirty", "--no-textconv", "--no-ext-diff"}

// changesDiff lists what differs from base, line counts included, in two
// diff-index processes that run at the same time (2 cores read the files
// in about half the time one does; see docs/BENCHMARKS.md):
//
//   - tracked files modified in place (M, and T for a type change), with
//     the host's index of base, which diff-index only reads: no private
//     index is needed for them, so this one starts at once;
//   - deletions, untracked files and the renames between them (D, A, R),
//     with the private index that "add --all --intent-to-add" makes, the
//     only way git sees untracked files in a diff. Rename detection pairs
//     deletions with additions only (no -C), so it loses nothing by
//     leaving modified files to the other process.
//
// Neither refreshes an index first: see dropTouched for the files whose
// stat data changed but whose content did not. With a limit, the private
// index and the precheck come first, so that no file is read before it.
func (s *snapshot) changesDiff(ctx context.Context, limit Guard) ([]diffEntry, error) {
	limited := limit.MaxFiles > 0 || limit.MaxBytes > 0
	if limited {
		if err := s.addAll(ctx, "--intent-to-add"); err != nil {
			return nil, err
		}
		if err := s.precheck(ctx, limit); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		out []byte
		err error
	}
	diffErr := func(err error) error {
		return fmt.Errorf("gitops: %s: diff against %s: %w", s.c.Dir, s.base, err)
	}
	modifiedDone := make(chan result, 1)
	go func() {
		out, err := s.c.git(ctx, true, runOpts{}, append(slices.Clip(diffFlags), "--no-renames", "--diff-filter=MT", s.base, "--")...)
		if err != nil {
			err = diffErr(err)
		}
		modifiedDone <- result{out, err}
	}()
	moved, err := func() ([]byte, error) {
		if !limited {
			if err := s.addAll(ctx, "--intent-to-add"); err != nil {
				return nil, err
			}
		}
		out, err := s.git(ctx, append(slices.Clip(diffFlags), "-M", renameLimit, "--diff-filter=ADR", s.base, "--")...)
		if err != nil {
			return nil, diffErr(err)
		}
		return out, nil
	}()
	if err != nil {
		cancel() // and wait: the private index goes when we return
	}
	modified := <-modifiedDone
	if err == nil {
		err = modified.err
	}
	if err != nil {
		return nil, err
	}
	entries, err := parseDiff(modified.out)
	if err != nil {
		return nil, diffErr(err)
	}
	movedEntries, err := parseDiff(moved)
	if err != nil {
		return nil, diffErr(err)
	}
	if entries, err = s.dropTouched(ctx, entries); err != nil {
		return nil, err
	}
	return append(entries, movedEntries...), nil
}

// dropTouched removes from entries, the modified files of a diff-index run
// without refreshing the index, those whose content is base's: files only
// touched or rewritten identically, which the index's stale stat data
// shows as modified. For a text file numstat tells: git compares the
// file's content (as it would store it) with base's blob before counting,
// so 0 lines added and 0 deleted, with the same mode, means the same
// content. A binary file's numstat does not tell, so when one is listed
// with its mode unchanged, the private index is refreshed as
// takeSnapshot's is (git hashes the files whose stat data changed) and a
// diff-index that reads no content names the files that still differ.
func (s *snapshot) dropTouched(ctx context.Context, entries []diffEntry) ([]diffEntry, error) {
	sameMode := func(e diffEntry) bool { return e.status == 'M' && !e.gitlink && e.oldMode == e.newMode }
	binary := false
	entries = slices.DeleteFunc(entries, func(e diffEntry) bool {
		if !sameMode(e) {
			return false
		}
		binary = binary || e.change.Binary
		return !e.change.Binary && e.change.Added == 0 && e.change.Deleted == 0
	})
	if !binary {
		return entries, nil
	}
	if _, err := s.git(ctx, "update-index", "-q", "--unmerged", "--ignore-submodules", "--refresh"); err != nil && exitCode(err) != 1 {
		return nil, fmt.Errorf("gitops: %s: refresh private index: %w", s.c.Dir, err)
	}
	out, err := s.git(ctx, "diff-index", "-z", "--name-only", "--no-renames", "--no-ext-diff", "--no-textconv", "--diff-filter=MT", "--ignore-submodules=dirty", s.base, "--")
	if err != nil {
		return nil, fmt.Errorf("gitops: %s: list changed files: %w", s.c.Dir, err)
	}
	differ := map[string]bool{}
	for _, p := range bytes.Split(out, []byte{0}) {
		differ[string(p)] = true
	}
	return slices.DeleteFunc(entries, func(e diffEntry) bool {
		return sameMode(e) && e.change.Binary && !differ[e.change.Path]
	}), nil
}

// Patch is the unified diff between baseCommit and the attempt's files in
// c.Dir, in the same terms as Changes (untracked files appear as new files,
// deleted files as deletions), limited to paths when paths is not empty.
// paths are repo-relative and taken literally (no glob); a directory
// selects everything under it. Binary files are reported as differing
// without their contents; no diff driver or textconv runs.
//
// Rename pairs are found only among the selected paths: to see a renamed
// file as a rename, select both its Path and its OldPath; selecting one
// shows just that side, as an addition or a deletion.
//
// A file of the patch whose content is not the attempt's own — a hard link
// (more than one link) or a file on another device than c.Dir — refuses
// the whole patch with a *LinkedFilesError naming every such path, since
// its content may be any file's on the machine. Each file is checked
// before and after git reads it.
func Patch(ctx context.Context, c Clone, baseCommit string, paths []string) ([]byte, error) {
	snap, err := takeSnapshot(ctx, c, baseCommit, "--intent-to-add")
	if err != nil {
		return nil, err
	}
	defer snap.close()
	literal := []string{"GIT_LITERAL_PATHSPECS=1"}
	files, err := snap.workTreeFiles(ctx, literal, false, paths)
	if err != nil {
		return nil, err
	}
	before, err := checkLinks(snap.c.Dir, files)
	if err != nil {
		return nil, err
	}
	// Plumbing diff-index ignores diff.noprefix, color.ui, diff.external
	// and similar settings, which would change the format; the flags below
	// pin what is left.
	args := []string{"diff-index", "-p", "-M", renameLimit, "--no-color", "--no-ext-diff", "--no-textconv",
		"--ignore-submodules=dirty", "--src-prefix=a/", "--dst-prefix=b/", snap.base, "--"}
	args = append(args, paths...)
	out, err := snap.gitEnv(ctx, literal, args...)
	if err != nil {
		return nil, fmt.Errorf("gitops: %s: patch against %s: %w", snap.c.Dir, snap.base, err)
	}
	if err := recheckLinks(snap.c.Dir, before); err != nil {
		return nil, err
	}
	return out, nil
}

// snapshot is a private index describing the attempt's files as they are
// now, untracked files included, for diffing against base.
//
// Why a private index: git diff against a commit only sees paths that are
// in the index, so untracked files would be missing, and the agent's own
// index is the agent's (the host neither reads nor writes it). A copy of
// the host git dir's index of base keeps its cached stat data, so git only
// has to look at files that differ from base; "git add --all
// --intent-to-add" then records untracked files as "to be added" and drops
// deleted ones without reading or storing their content, and diff-index
// (without --cached) reads the contents straight from the files. A plain
// "git add --all" followed by "diff --cached" would give the same answer,
// but it stores a blob of every changed file on every call (the board
// polls), and its add step took 1 s against 0.1 s on 5,000 changed files.
// The copy is thrown away, so the host's index always describes base: an
// untracked file the agent ignores later is not kept as added.
type snapshot struct {
	c    Clone    // absolute paths
	base string   // full sha of the base commit
	env  []string // points git at the private index
	tmp  string   // directory holding the private index
}

// takeSnapshot makes the private index: base's, then "git add --all" with
// addFlags, then refreshed.
func takeSnapshot(ctx context.Context, c Clone, baseCommit string, addFlags ...string) (_ *snapshot, err error) {
	return takeSnapshotWithin(ctx, c, baseCommit, Off, addFlags...)
}

// takeSnapshotWithin is takeSnapshot checking limit (precheck) before the
// refresh, which is the first step to read file contents.
func takeSnapshotWithin(ctx context.Context, c Clone, baseCommit string, limit Guard, addFlags ...string) (_ *snapshot, err error) {
	s, err := openSnapshot(ctx, c, baseCommit)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if err := s.addAll(ctx, addFlags...); err != nil {
		return nil, err
	}
	if err := s.precheck(ctx, limit); err != nil {
		return nil, err
	}
	// Files whose stat data changed but whose content did not (touched,
	// rewritten identically) would otherwise be reported as modified.
	if _, err := s.git(ctx, "update-index", "-q", "--unmerged", "--ignore-submodules", "--refresh"); err != nil {
		return nil, fmt.Errorf("gitops: %s: refresh private index: %w", c.Dir, err)
	}
	return s, nil
}

// openSnapshot checks c and resolves baseCommit; the private index is
// made by addAll.
func openSnapshot(ctx context.Context, c Clone, baseCommit string) (_ *snapshot, err error) {
	if err := checkArg("base commit", baseCommit); err != nil {
		return nil, fmt.Errorf("gitops: %s: %w", c.Dir, err)
	}
	if c, err = c.abs(); err != nil {
		return nil, err
	}
	if err := c.workTreeDir(); err != nil {
		return nil, err
	}
	if err := ensureHostDir(ctx, c, baseCommit); err != nil {
		return nil, err
	}
	out, err := c.git(ctx, false, runOpts{}, "rev-parse", "--verify", baseCommit+"^{commit}")
	if err != nil {
		return nil, fmt.Errorf("gitops: %s: resolve base commit %q: %w", c.Dir, baseCommit, err)
	}
	return &snapshot{c: c, base: strings.TrimSpace(string(out))}, nil
}

// addAll makes the private index: a copy of the host's index of base,
// then "git add --all" with addFlags.
func (s *snapshot) addAll(ctx context.Context, addFlags ...string) (err error) {
	// Beside the host's index, which stays as it is.
	s.tmp, err = os.MkdirTemp(s.c.HostDir, "snapshot-*")
	if err != nil {
		return fmt.Errorf("gitops: %s: private index: %w", s.c.Dir, err)
	}
	index := filepath.Join(s.tmp, "index")
	if err := copyIndex(filepath.Join(s.c.HostDir, "index"), index); err != nil {
		return fmt.Errorf("gitops: %s: copy index: %w", s.c.Dir, err)
	}
	s.env = []string{"GIT_INDEX_FILE=" + index}
	if _, err := s.git(ctx, append([]string{"add", "--all"}, addFlags...)...); err != nil {
		return fmt.Errorf("gitops: %s: list untracked files: %w", s.c.Dir, err)
	}
	return nil
}

// git runs git over the attempt's files with the private index.
func (s *snapshot) git(ctx context.Context, args ...string) ([]byte, error) {
	return s.gitEnv(ctx, nil, args...)
}

func (s *snapshot) gitEnv(ctx context.Context, env []string, args ...string) ([]byte, error) {
	return s.c.git(ctx, true, runOpts{env: append(slices.Clip(s.env), env...)}, args...)
}

func (s *snapshot) close() {
	if s.tmp != "" {
		os.RemoveAll(s.tmp)
	}
}

// copyIndex copies the index file and its modification time: git trusts
// cached stat data only for entries older than the index file itself
// ("racy git"), so a copy stamped with the current time could report a file
// modified just after the real index was written as unchanged.
func copyIndex(src, dst string) error {
	in, err := os.Open(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // no index: git starts empty
	}
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chtimes(dst, fi.ModTime(), fi.ModTime())
}

// diffEntry is one file of diff-index output.
type diffEntry struct {
	change           FileChange
	oldBlob          string // object at base, for sizing deletions
	oldMode, newMode string
	status           byte // git's letter: M, A, D, R, T...
	gitlink          bool
}

const gitlinkMode = "160000"

// parseDiff reads "diff-index -z --raw --numstat" output: every file's raw
// record (modes, objects, status, paths) followed by every file's numstat
// record (line counts), both NUL-separated so that no path is quoted.
func parseDiff(out []byte) ([]diffEntry, error) {
	fields := bytes.Split(out, []byte{0})
	if n := len(fields); n > 0 && len(fields[n-1]) == 0 {
		fields = fields[:n-1]
	}
	next := func() (string, error) {
		if len(fields) == 0 {
			return "", errors.New("truncated diff output")
		}
		f := string(fields[0])
		fields = fields[1:]
		return f, nil
	}
	var entries []diffEntry
	byPath := map[string]int{}
	for len(fields) > 0 {
		head, _ := next()
		if strings.HasPrefix(head, ":") {
			// :oldmode newmode oldsha newsha status[score]
			meta := strings.Fields(head[1:])
			if len(meta) != 5 || meta[4] == "" {
				return nil, fmt.Errorf("bad raw diff record %q", head)
			}
			e := diffEntry{oldBlob: meta[2], oldMode: meta[0], newMode: meta[1], status: meta[4][0],
				gitlink: meta[0] == gitlinkMode || meta[1] == gitlinkMode}
			path, err := next()
			if err != nil {
				return nil, err
			}
			switch meta[4][0] {
			case 'A':
				e.change.Status = StatusAdded
			case 'D':
				e.change.Status = StatusDeleted
			case 'R':
				e.change.Status = StatusRenamed
				e.change.OldPath = path
				if path, err = next(); err != nil {
					return nil, err
				}
			case 'C': // only with -C, which is not asked for; treat the copy as new
				e.change.Status = StatusAdded
				if path, err = next(); err != nil {
					return nil, err
				}
			default: // M, T (type change), U (unmerged)
				e.change.Status = StatusModified
			}
			e.change.Path = path
			if i, ok := byPath[path]; ok {
				// An unmerged path can be listed twice; the real change wins.
				if meta[4][0] != 'U' {
					entries[i] = e
				}
				continue
			}
			byPath[path] = len(entries)
			entries = append(entries, e)
			continue
		}
		// added \t deleted \t path, or added \t deleted \t \0 old \0 new
		parts := strings.SplitN(head, "\t", 3)
		if len(parts) != 3 {
			return nil, fmt.Errorf("bad numstat record %q", head)
		}
		path := parts[2]
		if path == "" {
			if _, err := next(); err != nil {
				return nil, err
			}
			var err error
			if path, err = next(); err != nil {
				return nil, err
			}
		}
		i, ok := byPath[path]
		if !ok {
			return nil, fmt.Errorf("numstat for unlisted path %q", path)
		}
		c := &entries[i].change
		if parts[0] == "-" && parts[1] == "-" {
			c.Binary, c.Added, c.Deleted = true, 0, 0
			continue
		}
		var err1, err2 error
		c.Added, err1 = strconv.Atoi(parts[0])
		c.Deleted, err2 = strconv.Atoi(parts[1])
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("bad numstat record %q: %w", head, err)
		}
	}
	return entries, nil
}

// blobSizes asks one git process for the size of every blob, in order; a
// blob git cannot find counts as 0 bytes.
func blobSizes(ctx context.Context, c Clone, blobs []string) ([]int64, error) {
	dir := c.Dir
	var in bytes.Buffer
	for _, b := range blobs {
		in.WriteString(b)
		in.WriteByte('\n')
	}
	out, err := c.git(ctx, false, runOpts{stdin: &in}, "cat-file", "--batch-check=%(objectname) %(objectsize)", "--buffer")
	if err != nil {
		return nil, fmt.Errorf("gitops: %s: sizes of deleted files: %w", dir, err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(blobs) {
		return nil, fmt.Errorf("gitops: %s: sizes of deleted files: got %d answers for %d objects", dir, len(lines), len(blobs))
	}
	sizes := make([]int64, len(blobs))
	for i, line := range lines {
		name, size, _ := strings.Cut(line, " ")
		if name != blobs[i] {
			return nil, fmt.Errorf("gitops: %s: sizes of deleted files: answer %q for object %s", dir, line, blobs[i])
		}
		if n, err := strconv.ParseInt(size, 10, 64); err == nil {
			sizes[i] = n
		}
	}
	return sizes, nil
}
