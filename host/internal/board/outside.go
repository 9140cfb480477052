package board

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/plugboard/plugboard/abi/tasks"
	"github.com/plugboard/plugboard/host/internal/store"
)

// Files outside any repository. A multi-repo attempt's agent starts in the
// attempt folder, which holds one folder per repo (see StartTaskAttempt):
// what it writes beside them is in no repo, so no diff shows it and no
// approval can merge it. It is looked for here and reported, so that it
// is never dropped without a word.

// OutsideFiles are the files of an attempt folder that are in no repo.
type OutsideFiles = tasks.OutsideFiles

// OutsideFile is one of them.
type OutsideFile = tasks.OutsideFile

// outsideBounds bound the search for outside files: it reads no file,
// only directory entries and their metadata, and stops after reading
// 10000 entries, so a node_modules unpacked beside the repos costs a
// bounded walk; the answer lists at most 50 paths, of 8 KiB in all (the numbers
// the output schema states).
var outsideBounds = outsideLimits{walked: 10000, listed: 50, pathBytes: 8 << 10}

// outsideLimits bound findOutside: directory entries read, files listed,
// bytes of the listed paths.
type outsideLimits struct {
	walked, listed, pathBytes int
}

// outsideFiles looks in the attempt folder for files outside its repos'
// folders. A folder that is gone has nothing outside.
func (b *Board) outsideFiles(ctx context.Context, attemptID string, repos []store.AttemptRepo) (OutsideFiles, error) {
	names := make([]string, len(repos))
	for i, r := range repos {
		names[i] = r.RepoName
	}
	return findOutside(ctx, b.attemptRoot(attemptID), names, outsideBounds)
}

// findOutside walks root, skipping the top-level folders named in repos,
// and counts every other entry that is not a folder (files, links,
// anything else), listing the first ones by path, within limits.
//
// The folder is the agent's, which may change it while it is read: the
// walk goes through an os.Root, so that a folder swapped for a symbolic
// link cannot lead it out of root (links are counted, never followed),
// and reads each directory only up to the entries it may still look at,
// so that no directory, however large, costs more than the bound.
func findOutside(ctx context.Context, root string, repos []string, limits outsideLimits) (OutsideFiles, error) {
	out := OutsideFiles{Files: []OutsideFile{}}
	r, err := os.OpenRoot(root)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return OutsideFiles{}, fmt.Errorf("look for files outside the repos: %w", err)
	}
	defer r.Close()
	w := &outsideWalk{ctx: ctx, root: r, repos: repos, limits: limits, out: &out}
	if err := w.dir("."); err != nil && !errors.Is(err, errWalkDone) {
		return OutsideFiles{}, fmt.Errorf("look for files outside the repos in %s: %w", root, err)
	}
	out.Truncated = len(out.Files) < out.Count
	return out, nil
}

// errWalkDone ends a walk that reached its bound.
var errWalkDone = errors.New("walk bound reached")

// outsideWalk is one findOutside under way.
type outsideWalk struct {
	ctx    context.Context
	root   *os.Root
	repos  []string
	limits outsideLimits
	out    *OutsideFiles
	// read counts the directory entries read; listedBytes the bytes of
	// the paths listed; full is set once a path did not fit the list.
	read, listedBytes int
	full              bool
}

// dir walks the directory rel (slash-separated, "." for root) depth
// first, its entries by name, so that paths come in sorted order.
func (w *outsideWalk) dir(rel string) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	budget := w.limits.walked - w.read
	if budget <= 0 {
		w.out.Partial = true
		return errWalkDone
	}
	f, err := w.root.Open(rel)
	if err != nil {
		// Gone or unreadable: what is in it cannot be counted.
		w.out.Partial = true
		return nil
	}
	entries, err := f.ReadDir(budget)
	if err == nil && len(entries) == budget {
		if more, _ := f.ReadDir(1); len(more) > 0 {
			w.out.Partial = true
		}
	}
	f.Close()
	if err != nil && !errors.Is(err, io.EOF) {
		w.out.Partial = true
	}
	w.read += len(entries)
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for _, e := range entries {
		p := path.Join(rel, e.Name())
		switch {
		case e.IsDir() && rel == "." && slices.Contains(w.repos, e.Name()):
		case e.IsDir():
			if err := w.dir(p); err != nil {
				return err
			}
		default:
			w.add(p)
		}
	}
	return nil
}

// add counts the file p and lists it while the list has room. The list is
// a prefix of the walk's order: once a path does not fit, none after it
// is listed.
func (w *outsideWalk) add(p string) {
	var size int64
	if info, err := w.root.Lstat(p); err == nil {
		size = info.Size()
	}
	w.out.Count++
	w.out.TotalBytes += size
	if w.full = w.full || len(w.out.Files) == w.limits.listed || w.listedBytes+len(p) > w.limits.pathBytes; !w.full {
		w.out.Files = append(w.out.Files, OutsideFile{Path: p, Bytes: size})
		w.listedBytes += len(p)
	}
}

// outsideWarning says what of outside was not merged and what can be
// done about it; "" when nothing is outside.
func outsideWarning(o OutsideFiles) string {
	if o.Count == 0 {
		return ""
	}
	paths := make([]string, 0, 3)
	for _, f := range o.Files[:min(3, len(o.Files))] {
		paths = append(paths, f.Path)
	}
	list := strings.Join(paths, ", ")
	if o.Count > len(paths) {
		list += ", …"
	}
	return fmt.Sprintf("%s outside any repository (%s) not merged: %s. Left in the attempt folder; "+
		"to merge, send request_changes(attempt_id, feedback) asking the agent to move them into a repo folder, then approve again",
		outsideCount(o), plural(o.TotalBytes, "byte"), list)
}

// outsideCount is "1 file", "3 files", or "at least 10000 files" when the
// search stopped early.
func outsideCount(o OutsideFiles) string {
	if o.Partial {
		return "at least " + plural(int64(o.Count), "file")
	}
	return plural(int64(o.Count), "file")
}
