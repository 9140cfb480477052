package gitops

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A file in an attempt's directory need not hold the attempt's own
// content: a hard link shares its content with a file that may lie anywhere
// on the same file system (an agent can link a key of the user's into its
// worktree), and a mount point brings in another file system. git reads
// through both without noticing, so the host checks, for every file whose
// content it is about to hand on, that it has one link and lies on the
// attempt directory's device.

// LinkedFilesError refuses a patch or a merge that would hand on the
// content of files that are not the attempt's own: hard links (more than
// one link) or files on another device than the attempt directory.
type LinkedFilesError struct {
	Dir   string   // the attempt directory
	Paths []string // repo-relative, forward slashes, sorted
}

func (e *LinkedFilesError) Error() string {
	return fmt.Sprintf("gitops: %s: %s %s hard-linked or on another file system, so %s content may be any file's",
		e.Dir, strings.Join(e.Paths, ", "), plural(len(e.Paths), "is", "are"), plural(len(e.Paths), "its", "their"))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// fileID identifies a file between two looks at it.
type fileID struct {
	dev, ino, nlink uint64
}

// workTreeFiles lists the regular files of the attempt that differ from
// base in the snapshot's index (cached: the index holds them) or in the
// work tree, limited to paths: the files whose content git reads for a
// patch or a commit.
func (s *snapshot) workTreeFiles(ctx context.Context, env []string, cached bool, paths []string) ([]string, error) {
	args := []string{"diff-index", "-z", "--raw", "--no-abbrev", "--no-renames", "--no-ext-diff", "--no-textconv", "--ignore-submodules=dirty"}
	if cached {
		args = append(args, "--cached")
	}
	args = append(append(args, s.base, "--"), paths...)
	out, err := s.gitEnv(ctx, env, args...)
	if err != nil {
		return nil, fmt.Errorf("gitops: %s: list changed files: %w", s.c.Dir, err)
	}
	var files []string
	fields := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		meta := strings.Fields(strings.TrimPrefix(fields[i], ":"))
		if len(meta) != 5 {
			return nil, fmt.Errorf("gitops: %s: bad raw diff record %q", s.c.Dir, fields[i])
		}
		if (meta[1] == "100644" || meta[1] == "100755") && meta[4] != "D" {
			files = append(files, fields[i+1])
		}
	}
	return files, nil
}

// checkLinks returns the identity of each of files (repo-relative) in dir,
// or a *LinkedFilesError naming those that are not dir's own. A file that
// no longer exists is skipped: git will not read it either.
func checkLinks(dir string, files []string) (map[string]fileID, error) {
	ids := make(map[string]fileID, len(files))
	if len(files) == 0 {
		return ids, nil
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("gitops: %s: %w", dir, err)
	}
	defer root.Close()
	top, err := root.Lstat(".")
	if err != nil {
		return nil, fmt.Errorf("gitops: %s: %w", dir, err)
	}
	topID, ok := fileIdentity(top)
	if !ok {
		return ids, nil // no link counts on this system
	}
	var linked []string
	for _, f := range files {
		fi, err := root.Lstat(filepath.FromSlash(f))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			// Through a symlink out of dir, for one: git does not follow
			// it, but it is not the attempt's file either.
			linked = append(linked, f)
			continue
		}
		if !fi.Mode().IsRegular() {
			continue
		}
		id, _ := fileIdentity(fi)
		if id.nlink > 1 || id.dev != topID.dev {
			linked = append(linked, f)
			continue
		}
		ids[f] = id
	}
	if len(linked) > 0 {
		slices.Sort(linked)
		return nil, &LinkedFilesError{Dir: dir, Paths: linked}
	}
	return ids, nil
}

// recheckLinks looks at the files checkLinks passed again, after git read
// them: one that became a link, or was replaced by another file meanwhile,
// may have been read as that.
func recheckLinks(dir string, before map[string]fileID) error {
	if len(before) == 0 {
		return nil
	}
	files := make([]string, 0, len(before))
	for f := range before {
		files = append(files, f)
	}
	after, err := checkLinks(dir, files)
	if err != nil {
		return err
	}
	for f, id := range after {
		if b := before[f]; b.dev != id.dev || b.ino != id.ino {
			return fmt.Errorf("gitops: %s: %s was replaced while it was read; retry", dir, f)
		}
	}
	return nil
}
