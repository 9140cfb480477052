package gitops

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// A host git dir lies outside the attempt's directory, but it is a
// directory of the host's Unix user, which the agent may be able to write
// too (an OS sandbox is meant to hide it; this is the line behind that).
// Whatever git reads there as configuration or as code could then be the
// agent's: a [filter] whose clean command runs when git hashes a file, an
// fsmonitor, hooks, an include, a commondir that moves the whole git dir
// elsewhere, alternates that make base's objects read from an object store
// of the agent's. So before every git run through a host git dir (see
// Clone.git) the host makes those files its own template's again (taking
// nothing from what is there but the knowledge that it already matches;
// see hostTemplate.write), and removes the ones it never writes. Hooks
// need nothing: core.hooksPath is the null device on every run.
//
// This narrows what an agent that can write the host git dir achieves to
// racing the rebuild: a file changed between the rebuild and git's
// reading of it. It does not cover what git reads there as data: objects
// (a loose object under a base blob's id is read before the alternates),
// the index, refs. The settings git is given on its command line (hostConfig), the
// attribute that names no filter (noFilters) and the diff flags keep even
// that race from running a command, short of the agent also winning the
// race on info/attributes.

// hostTemplate is what the host writes into every host git dir over
// clones of one repository.
type hostTemplate struct {
	// common is Source's git dir (shared by its worktrees), whose objects
	// the host git dir borrows; "" when Source is unknown.
	common string
	// config is the host git dir's configuration (hostConfigFile).
	config []byte
	// exclude is Source's info/exclude, nil when it has none.
	exclude []byte
	// attributes is Source's info/attributes, then noFilters.
	attributes []byte
}

// noFilters ends the host git dir's info/attributes, which takes
// precedence over every .gitattributes of the attempt: no path names a
// filter, so no clean or smudge command runs even if a filter's definition
// got into the configuration. The host's configuration defines no filter,
// so this changes nothing git does otherwise. Diff drivers are not
// un-named this way (that would drop the binary and -diff marks that line
// counts honour): every diff the host runs passes --no-textconv and
// --no-ext-diff instead. No merge runs through a host git dir.
const noFilters = "# plugboard: no filter runs over an attempt's files\n* !filter\n"

// planted are files of a git dir that git reads as configuration or as
// history and that the host never writes into a host git dir: a commondir
// makes git read its configuration, refs and objects from another
// directory; config.worktree is more configuration (read only with
// extensions.worktreeConfig, which the host's configuration does not set);
// info/grafts and shallow change which commits are whose parents. Hooks
// are not here: git runs none, as core.hooksPath is the null device.
var planted = []string{"commondir", "config.worktree", "info/grafts", "shallow"}

// templates caches each repository's template: computing one runs git in
// Source three times, writing it runs no process. A template is computed
// on the first use after the host starts and again whenever an attempt of
// the repository is made (makeHostDir), so a change to the user's
// settings reaches the host git dirs of earlier attempts then.
var templates struct {
	sync.Mutex
	bySource map[string]*hostTemplate
}

// templateFor returns the template of the host git dirs of source, from
// the cache when it is there.
func templateFor(ctx context.Context, source string) (*hostTemplate, error) {
	templates.Lock()
	t := templates.bySource[source]
	templates.Unlock()
	if t != nil {
		return t, nil
	}
	common := ""
	if source != "" {
		var err error
		if common, err = commonDir(ctx, source); err != nil {
			return nil, err
		}
	}
	return newTemplate(ctx, source, common)
}

// newTemplate computes the template of source, whose git dir is common,
// and caches it. With source "" (the board could not read the
// repository's record, and still serves reads of the attempt) it is a
// configuration without the user's settings, no info files of the user's,
// and objects borrowed from the clone only, which reaches Source's through
// the clone's own alternates.
func newTemplate(ctx context.Context, source, common string) (*hostTemplate, error) {
	config, err := hostConfigFile(ctx, source)
	if err != nil {
		return nil, err
	}
	t := &hostTemplate{common: common, config: []byte(config), attributes: []byte(noFilters)}
	if common != "" {
		if t.exclude, err = readInfo(common, "exclude"); err != nil {
			return nil, fmt.Errorf("gitops: %s: %w", source, err)
		}
		attrs, err := readInfo(common, "attributes")
		if err != nil {
			return nil, fmt.Errorf("gitops: %s: %w", source, err)
		}
		if len(attrs) > 0 && attrs[len(attrs)-1] != '\n' {
			attrs = append(attrs, '\n')
		}
		t.attributes = append(attrs, noFilters...)
	}
	templates.Lock()
	if templates.bySource == nil {
		templates.bySource = map[string]*hostTemplate{}
	}
	templates.bySource[source] = t
	templates.Unlock()
	return t, nil
}

// readInfo reads a file of common's info directory, nil when there is
// none.
func readInfo(common, name string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(common, "info", name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

// alternates is the host git dir's objects/info/alternates for the clone
// in dir: Source's objects, then the clone's own (where the agent's
// commits are) when the clone has a git dir of its own. Source's come
// first, so an object both have (base's, for one) is read from the user's
// repository.
func (t *hostTemplate) alternates(dir string) ([]byte, error) {
	var alts []string
	if t.common != "" {
		alts = append(alts, filepath.Join(t.common, "objects"))
	}
	if fi, err := os.Lstat(filepath.Join(dir, ".git", "objects")); err == nil && fi.IsDir() {
		alts = append(alts, filepath.Join(dir, ".git", "objects"))
	}
	var b strings.Builder
	for _, a := range alts {
		// git reads one path a line, and a leading quote as a C-quoted
		// path.
		if strings.ContainsAny(a, "\n\"") {
			return nil, fmt.Errorf("object directory %q has a newline or quote in its path", a)
		}
		b.WriteString(a)
		b.WriteByte('\n')
	}
	return []byte(b.String()), nil
}

// write makes the git dir open as root hold the template, for the clone
// in dir: configuration, alternates and info files of the template's
// content, and none of the planted files. It is what makeHostDir writes
// and what Clone.git writes again before every run.
//
// A file that already holds the template's content is left as it is: a
// read costs a few system calls, while writing a file and renaming it into
// place takes a journal commit (about 1 ms on ext4 where this was
// measured, more than the read and git's own start-up). Either way, what
// git finds when this returns is the template; what an agent writes after
// the check it could as well write after a rewrite (see the top of this
// file). A file that differs is written anew, to a temporary file renamed
// over it, so that a git running at the same time reads the old file or
// the new one whole, never a part.
func (t *hostTemplate) write(root *os.Root, dir string) error {
	// A link would have the rename replace it, which is harmless, but a
	// host git dir whose configuration is a link is not one the host made.
	if fi, err := root.Lstat("config"); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("config is not a regular file (%s)", fi.Mode().Type())
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	alternates, err := t.alternates(dir)
	if err != nil {
		return err
	}
	files := []struct {
		name string
		data []byte
	}{
		{"config", t.config},
		{"objects/info/alternates", alternates},
		{"info/attributes", t.attributes},
		{"info/exclude", t.exclude},
	}
	for _, f := range files {
		if f.data == nil {
			if err := remove(root, f.name); err != nil {
				return err
			}
			continue
		}
		if holds(root, f.name, f.data) {
			continue
		}
		if err := replaceFile(root, f.name, f.data); err != nil {
			return err
		}
	}
	for _, name := range planted {
		if err := remove(root, name); err != nil {
			return err
		}
	}
	return nil
}

// holds reports whether name in root is a regular file holding data and
// nothing more. It reads no more than that (an agent's file may be huge)
// and does not block on a FIFO; any failure counts as no.
func holds(root *os.Root, name string, data []byte) bool {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || fi.Size() != int64(len(data)) {
		return false
	}
	b := make([]byte, len(data)+1)
	n, err := io.ReadFull(f, b)
	return errors.Is(err, io.ErrUnexpectedEOF) && n == len(data) && bytes.Equal(b[:n], data)
}

// remove removes name from root, whether file or directory; a name that
// is not there is no error.
func remove(root *os.Root, name string) error {
	err := root.Remove(name)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return root.RemoveAll(name) // a directory with files in it
}

// replaceFile writes data to name in root through a temporary file beside
// it (mode 0600, made with O_EXCL so that nothing already there is written
// through) renamed over name, making name's directory when it is missing.
func replaceFile(root *os.Root, name string, data []byte) error {
	var (
		tmp string
		f   *os.File
		err error
	)
	for try := 0; try < 8; try++ {
		tmp = name + ".plugboard-" + strconv.FormatUint(rand.Uint64(), 36)
		f, err = root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrNotExist) && try == 0 {
			if err = root.MkdirAll(filepath.Dir(name), 0o700); err != nil {
				return err
			}
			continue
		}
		if !errors.Is(err, fs.ErrExist) { // else the name is taken: draw another
			break
		}
	}
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, name)
	}
	if err != nil {
		root.Remove(tmp)
	}
	return err
}

// openHostDir opens the host git dir of c for writing its template,
// refusing one that is a symlink (or was swapped for one while it was
// opened): writing through it would write where the link points.
func (c Clone) openHostDir() (*os.Root, error) {
	fi, err := os.Lstat(c.HostDir)
	if err != nil {
		return nil, fmt.Errorf("gitops: host git dir %s: %w", c.HostDir, err)
	}
	if !fi.IsDir() {
		what := "not a directory"
		if fi.Mode()&fs.ModeSymlink != 0 {
			what = "a symlink, not a directory"
		}
		return nil, fmt.Errorf("gitops: host git dir %s is %s: the host made a directory there, so something else replaced it", c.HostDir, what)
	}
	root, err := os.OpenRoot(c.HostDir)
	if err != nil {
		return nil, fmt.Errorf("gitops: host git dir %s: %w", c.HostDir, err)
	}
	if opened, err := root.Stat("."); err != nil || !os.SameFile(fi, opened) {
		root.Close()
		return nil, fmt.Errorf("gitops: host git dir %s was replaced while it was opened", c.HostDir)
	}
	return root, nil
}

// rebuildHostDir writes c's host git dir's template again: see the top of
// this file.
func (c Clone) rebuildHostDir(ctx context.Context) error {
	t, err := templateFor(ctx, c.Source)
	if err != nil {
		return err
	}
	root, err := c.openHostDir()
	if err != nil {
		return err
	}
	defer root.Close()
	if err := t.write(root, c.Dir); err != nil {
		return fmt.Errorf("gitops: host git dir %s: rebuild: %w", c.HostDir, err)
	}
	if afterRebuild != nil {
		afterRebuild(c.HostDir)
	}
	return nil
}

// afterRebuild, when set (by tests only), runs after each rebuild, just
// before git: it plays an agent that wins the race with the rebuild.
var afterRebuild func(hostDir string)
