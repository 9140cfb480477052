package gitops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Guard limits how large an attempt's changes may be before the board stops
// and asks a human. A zero limit means unlimited.
type Guard struct {
	Name     string `json:"name"`
	MaxFiles int    `json:"max_files"`
	MaxLines int    `json:"max_lines"` // added + deleted
	MaxBytes int64  `json:"max_bytes"`
}

// The presets. The sizes are quoted in MB; they are binary megabytes
// (MiB, 1<<20 bytes), the unit file sizes are usually shown in.
var (
	Safe     = Guard{Name: "safe", MaxFiles: 200, MaxLines: 10000, MaxBytes: 20 << 20}
	Balanced = Guard{Name: "balanced", MaxFiles: 500, MaxLines: 25000, MaxBytes: 50 << 20}
	Relaxed  = Guard{Name: "relaxed", MaxFiles: 1000, MaxLines: 60000, MaxBytes: 150 << 20}
	Off      = Guard{Name: "off"}
)

// DefaultGuard is the guard used when none is named.
var DefaultGuard = Balanced

// ErrUnknownGuard is wrapped by GuardByName for a name that is no preset.
var ErrUnknownGuard = errors.New("unknown guard")

// Presets lists the preset guards, strictest first.
func Presets() []Guard { return []Guard{Safe, Balanced, Relaxed, Off} }

// GuardByName returns the preset called name, ignoring case and surrounding
// space; "" is DefaultGuard.
func GuardByName(name string) (Guard, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return DefaultGuard, nil
	}
	var names []string
	for _, g := range Presets() {
		if strings.EqualFold(g.Name, name) {
			return g, nil
		}
		names = append(names, g.Name)
	}
	return Guard{}, fmt.Errorf("gitops: guard %q: %w; choose one of %s", name, ErrUnknownGuard, strings.Join(names, ", "))
}

// Check reports whether s exceeds any of g's limits and, if so, which, for
// example "612 files > max 500 (balanced)". A value equal to its limit is
// allowed; when several limits are exceeded the reason lists them all.
func (g Guard) Check(s Summary) (exceeded bool, reason string) {
	name := g.Name
	if name == "" {
		name = "custom"
	}
	var over []string
	if g.MaxFiles > 0 && s.FileCount > g.MaxFiles {
		over = append(over, fmt.Sprintf("%d files > max %d (%s)", s.FileCount, g.MaxFiles, name))
	}
	if lines := s.Added + s.Deleted; g.MaxLines > 0 && lines > g.MaxLines {
		over = append(over, fmt.Sprintf("%d lines > max %d (%s)", lines, g.MaxLines, name))
	}
	if g.MaxBytes > 0 && s.TotalBytes > g.MaxBytes {
		have, limit := sizeString(s.TotalBytes), sizeString(g.MaxBytes)
		if have == limit { // just over: rounding would hide the difference
			have, limit = fmt.Sprintf("%d bytes", s.TotalBytes), fmt.Sprintf("%d bytes", g.MaxBytes)
		}
		over = append(over, fmt.Sprintf("%s > max %s (%s)", have, limit, name))
	}
	if len(over) == 0 {
		return false, ""
	}
	return true, strings.Join(over, "; ")
}

// sizeString renders n bytes in binary units with up to one decimal, e.g.
// "50 MiB", "50.1 MiB", "812 bytes".
func sizeString(n int64) string {
	const unit = 1 << 10
	if n < unit {
		return fmt.Sprintf("%d bytes", n)
	}
	v, i := float64(n), -1
	for v >= unit && i < 3 {
		v /= unit
		i++
	}
	return strings.TrimSuffix(fmt.Sprintf("%.1f", v), ".0") + " " + [...]string{"KiB", "MiB", "GiB", "TiB"}[i]
}

// GuardExceeded is the error of ChangesWithin when the changes exceed the
// guard before git read any file: Summary is what was measured without
// reading — the files that certainly changed (added, or of another size
// than at base) and their sizes now; deletions and lines are not counted.
type GuardExceeded struct {
	Summary Summary
	Reason  string
}

func (e *GuardExceeded) Error() string {
	return "the changes exceed the diff guard before git read them: " + e.Reason
}

// Changes lists the files that differ between baseCommit and the attempt's
// files in c.Dir, however many and large they are: ChangesWithin with no
// guard.
func Changes(ctx context.Context, c Clone, baseCommit string) ([]FileChange, Summary, error) {
	return ChangesWithin(ctx, c, baseCommit, Off)
}

// readFactor is how many times its MaxFiles a guard lets git read, so that
// changes over the guard by count still get a full summary (line counts
// included) as long as that is cheap: 5,000 small changed files take git
// about 0.3 s. Bytes get no such allowance: reading is what they cost.
const readFactor = 10

// precheck applies g before git reads any file's content. Counting lines
// (numstat), detecting renames and refreshing the index all read every
// changed file whole: a 20 GB file, or a million of them, kept git busy
// past the call's deadline, and a deadline-bound retry started it again.
// So, right after the snapshot lists untracked files (which reads no
// content), it measures what differs from base the cheap way — one raw
// diff-index, which compares file status only, and an lstat per file — and,
// only when that exceeds what git may read (g's bytes, readFactor times
// its files), the sizes at base of modified files (one cat-file), to count
// just the files that certainly changed: added ones, and modified ones
// whose size is not their size at base. Files only touched (same size, new
// mtime) are left for git's refresh to tell, so a formatter run over a
// tree does not block it. When the certain changes alone exceed what git
// may read it returns a *GuardExceeded, and git reads nothing; below that,
// git measures everything and the caller judges the full summary.
func (s *snapshot) precheck(ctx context.Context, g Guard) error {
	if g.MaxFiles <= 0 && g.MaxBytes <= 0 {
		return nil
	}
	g.MaxLines = 0 // not known before git reads the files
	read := Guard{MaxFiles: g.MaxFiles * readFactor, MaxBytes: g.MaxBytes}
	out, err := s.git(ctx, "diff-index", "-z", "--raw", "--no-abbrev", "--no-renames", "--no-ext-diff", "--no-textconv", "--ignore-submodules=dirty", s.base, "--")
	if err != nil {
		return fmt.Errorf("gitops: %s: list changed files: %w", s.c.Dir, err)
	}
	entries, err := parseDiff(out)
	if err != nil {
		return fmt.Errorf("gitops: %s: list changed files: %w", s.c.Dir, err)
	}
	type file struct {
		size    int64
		oldBlob string // of a modified file, for its size at base
	}
	var (
		files []file
		all   Summary // every listed file, touched ones included
	)
	for _, e := range entries {
		if e.change.Status == StatusDeleted {
			continue // it may pair with an addition as a rename
		}
		f := file{}
		if !e.gitlink {
			if fi, err := os.Lstat(filepath.Join(s.c.Dir, filepath.FromSlash(e.change.Path))); err == nil {
				f.size = fi.Size()
			}
			if e.change.Status == StatusModified {
				f.oldBlob = e.oldBlob
			}
		}
		all.FileCount++
		all.TotalBytes += f.size
		files = append(files, f)
	}
	if over, _ := read.Check(all); !over {
		return nil // git reads no more than it may
	}
	var blobs []string
	for _, f := range files {
		if f.oldBlob != "" {
			blobs = append(blobs, f.oldBlob)
		}
	}
	var sizes []int64
	if len(blobs) > 0 {
		if sizes, err = blobSizes(ctx, s.c, blobs); err != nil {
			return err
		}
	}
	var sure Summary
	for _, f := range files {
		if f.oldBlob != "" {
			size := sizes[0]
			sizes = sizes[1:]
			if size == f.size {
				continue // perhaps only touched
			}
		}
		sure.FileCount++
		sure.TotalBytes += f.size
	}
	if over, _ := read.Check(sure); over {
		_, why := g.Check(sure)
		return &GuardExceeded{Summary: sure, Reason: why}
	}
	return nil
}
