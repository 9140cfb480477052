package runtime

// Mounted directories: PluginOptions.Mounts as WASI preopens.
//
// Design. Each mount is one os.Root opened on the host directory when the
// plugin is compiled, wrapped in mountFS, an implementation of wazero's
// experimental sys.FS, and given to the guest with WithSysFSMount; read-only
// and writable mounts share the code, a read-only one refusing every change
// with EROFS. wazero's own directory mounts (WithDirMount,
// WithReadOnlyDirMount, sysfs.DirFS) are not used: they resolve paths with
// the host's open(2) and follow symbolic links wherever they point.
//
// The guarantees are those of host/internal/workspace:
//
//   - every path is resolved by os.Root, so no spelling of it ("..",
//     absolute, symbolic links to files or directories outside, at any
//     depth) reaches outside the directory; wazero also refuses ".." and
//     absolute paths before they get here. Symbolic links that stay inside
//     are followed;
//   - a regular file with more than one hard link is refused (EPERM): it
//     shares its content with a file that may lie anywhere on the same file
//     system. The check is made on the opened descriptor, before anything
//     is read or written (O_TRUNC is applied only after it), so no swap
//     between check and use changes what the guest reaches;
//   - a file or directory on another device than the mount's came in
//     through a mount point inside it and is refused likewise;
//   - FIFOs, sockets and devices are refused; they are opened with
//     O_NONBLOCK so a FIFO swapped in cannot block the open, and refused
//     after it;
//   - a name with a NUL byte is refused (EINVAL).
//
// The guest cannot add links: Link and Symlink are refused (a symbolic link
// it planted would be followed by the host's other programs, which are not
// confined to the directory). Chmod goes through a checked descriptor
// (WASI preview 1 has no chmod; it is there for sys.FS's sake).
// Utimens (setting file times) is not offered (ENOSYS): os.Root has no
// descriptor-based form and a path-based one would escape the link checks.
// Stat and Lstat report metadata of anything inside the directory,
// hard-linked files included; only their content is refused.

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"
)

// mountFS is one mounted host directory.
type mountFS struct {
	root     *os.Root
	dev      uint64
	hasDev   bool
	writable bool
}

func newMountFS(hostPath string, writable bool) (*mountFS, error) {
	if !isAbs(hostPath) {
		return nil, errors.New("the host path is not absolute")
	}
	root, err := os.OpenRoot(hostPath)
	if err != nil {
		return nil, err
	}
	fi, err := root.Stat(".")
	if err != nil {
		root.Close()
		return nil, err
	}
	m := &mountFS{root: root, writable: writable}
	m.dev, _, m.hasDev = fileLinks(fi)
	return m, nil
}

func isAbs(p string) bool {
	return strings.HasPrefix(p, "/") || len(p) > 2 && p[1] == ':' // a Windows drive
}

func (m *mountFS) close() { _ = m.root.Close() }

// errno maps an error of os or os.Root to a WASI errno. os.Root reports a
// path leaving the directory with an error of its own, which becomes EPERM.
func errno(err error) experimentalsys.Errno {
	if err == nil || err == io.EOF {
		return 0
	}
	var se syscall.Errno
	if errors.As(err, &se) {
		return experimentalsys.UnwrapOSError(se)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return experimentalsys.ENOENT
	case errors.Is(err, fs.ErrExist):
		return experimentalsys.EEXIST
	case errors.Is(err, fs.ErrInvalid):
		return experimentalsys.EINVAL
	case errors.Is(err, fs.ErrClosed):
		return experimentalsys.EBADF
	}
	return experimentalsys.EPERM
}

// name turns a path wazero passes (relative to the mount, but for a
// directory the guest opened joined as "<dir>/<name>", "/<name>" for the
// mount itself) into one for os.Root; a NUL byte is refused.
func name(p string) (string, experimentalsys.Errno) {
	if strings.IndexByte(p, 0) >= 0 {
		return "", experimentalsys.EINVAL
	}
	p = path.Clean("/" + p)[1:]
	if p == "" {
		p = "."
	}
	return p, 0
}

// allowed reports whether fi, opened or about to be, may be handed to the
// guest: a directory or a regular file, on the mount's device, not hard
// linked.
func (m *mountFS) allowed(fi fs.FileInfo) bool {
	if !fi.Mode().IsRegular() && !fi.IsDir() {
		return false
	}
	dev, nlink, ok := fileLinks(fi)
	if !ok {
		return true
	}
	if m.hasDev && dev != m.dev {
		return false
	}
	return fi.IsDir() || nlink <= 1
}

const writeFlags = experimentalsys.O_WRONLY | experimentalsys.O_RDWR | experimentalsys.O_CREAT | experimentalsys.O_TRUNC

// OpenFile implements sys.FS.
func (m *mountFS) OpenFile(p string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	p, e := name(p)
	if e != 0 {
		return nil, e
	}
	if flag&writeFlags != 0 && !m.writable {
		return nil, experimentalsys.EROFS
	}
	// Refuse what must not be opened at all (a device may act on being
	// opened) before opening; the opened file is checked again below.
	if fi, err := m.root.Stat(p); err == nil {
		if !m.allowed(fi) {
			return nil, experimentalsys.EPERM
		}
	} else if !errors.Is(err, fs.ErrNotExist) || flag&experimentalsys.O_CREAT == 0 {
		return nil, errno(err)
	}
	if flag&experimentalsys.O_NOFOLLOW != 0 {
		if fi, err := m.root.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, experimentalsys.ELOOP
		}
	}
	of := os.O_RDONLY
	switch flag & (experimentalsys.O_RDONLY | experimentalsys.O_WRONLY | experimentalsys.O_RDWR) {
	case experimentalsys.O_WRONLY:
		of = os.O_WRONLY
	case experimentalsys.O_RDWR:
		of = os.O_RDWR
	}
	if flag&experimentalsys.O_APPEND != 0 {
		of |= os.O_APPEND
	}
	if flag&experimentalsys.O_CREAT != 0 {
		of |= os.O_CREATE
	}
	if flag&experimentalsys.O_EXCL != 0 {
		of |= os.O_EXCL
	}
	if flag&(experimentalsys.O_SYNC|experimentalsys.O_DSYNC|experimentalsys.O_RSYNC) != 0 {
		of |= os.O_SYNC
	}
	// O_TRUNC waits for the checks: truncating first would empty a hard
	// linked file's content outside.
	f, fi, e := m.open(p, of, perm)
	if e != 0 {
		return nil, e
	}
	if flag&experimentalsys.O_DIRECTORY != 0 && !fi.IsDir() {
		f.Close()
		return nil, experimentalsys.ENOTDIR
	}
	if flag&experimentalsys.O_TRUNC != 0 && fi.Mode().IsRegular() {
		if err := f.Truncate(0); err != nil {
			f.Close()
			return nil, errno(err)
		}
	}
	// wazero's adapter of an fs.FS file does the reading, seeking and
	// directory listing (rewinding a directory reopens it through
	// handoff, hence through open); mountFile adds what it lacks.
	wf, e := (&sysfs.AdaptFS{FS: &handoff{m: m, f: f}}).OpenFile(p, experimentalsys.O_RDONLY, 0)
	if e != 0 {
		f.Close()
		return nil, e
	}
	return &mountFile{File: wf, f: f, dir: fi.IsDir(), append: flag&experimentalsys.O_APPEND != 0}, 0
}

// open opens p with os flags of and checks what it opened.
func (m *mountFS) open(p string, of int, perm fs.FileMode) (*os.File, fs.FileInfo, experimentalsys.Errno) {
	f, err := m.root.OpenFile(p, of|openNonblock, perm)
	if err != nil {
		return nil, nil, errno(err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, errno(err)
	}
	if !m.allowed(fi) {
		f.Close()
		return nil, nil, experimentalsys.EPERM
	}
	return f, fi, 0
}

// handoff is the fs.FS wazero's adapter opens a mountFile's file through:
// the file OpenFile opened and checked, then (to rewind a directory) a
// fresh read-only open, checked alike.
type handoff struct {
	m *mountFS
	f *os.File
}

func (h *handoff) Open(name string) (fs.File, error) {
	if f := h.f; f != nil {
		h.f = nil
		return f, nil
	}
	f, _, e := h.m.open(name, os.O_RDONLY, 0)
	if e != 0 {
		return nil, e
	}
	return f, nil
}

// Lstat implements sys.FS.
func (m *mountFS) Lstat(p string) (sys.Stat_t, experimentalsys.Errno) {
	p, e := name(p)
	if e != 0 {
		return sys.Stat_t{}, e
	}
	fi, err := m.root.Lstat(p)
	if err != nil {
		return sys.Stat_t{}, errno(err)
	}
	return sys.NewStat_t(fi), 0
}

// Stat implements sys.FS.
func (m *mountFS) Stat(p string) (sys.Stat_t, experimentalsys.Errno) {
	p, e := name(p)
	if e != 0 {
		return sys.Stat_t{}, e
	}
	fi, err := m.root.Stat(p)
	if err != nil {
		return sys.Stat_t{}, errno(err)
	}
	return sys.NewStat_t(fi), 0
}

// change checks a change to path p: EROFS on a read-only mount; it
// returns p as name does.
func (m *mountFS) change(p string) (string, experimentalsys.Errno) {
	if !m.writable {
		return "", experimentalsys.EROFS
	}
	return name(p)
}

// Mkdir implements sys.FS.
func (m *mountFS) Mkdir(p string, perm fs.FileMode) experimentalsys.Errno {
	p, e := m.change(p)
	if e != 0 {
		return e
	}
	return errno(m.root.Mkdir(p, perm))
}

// Chmod implements sys.FS, on a checked descriptor.
func (m *mountFS) Chmod(p string, perm fs.FileMode) experimentalsys.Errno {
	p, e := m.change(p)
	if e != 0 {
		return e
	}
	f, e := m.OpenFile(p, experimentalsys.O_RDONLY, 0)
	if e != 0 {
		return e
	}
	defer f.Close()
	return errno(f.(*mountFile).f.Chmod(perm))
}

// Rename implements sys.FS. Renaming moves names, not content: a hard
// linked file may be renamed inside the directory, still not opened.
func (m *mountFS) Rename(from, to string) experimentalsys.Errno {
	from, e := m.change(from)
	if e != 0 {
		return e
	}
	to, e = name(to)
	if e != 0 {
		return e
	}
	return errno(m.root.Rename(from, to))
}

// Rmdir implements sys.FS.
func (m *mountFS) Rmdir(p string) experimentalsys.Errno {
	p, e := m.change(p)
	if e != 0 {
		return e
	}
	fi, err := m.root.Lstat(p)
	if err != nil {
		return errno(err)
	}
	if !fi.IsDir() {
		return experimentalsys.ENOTDIR
	}
	return errno(m.root.Remove(p))
}

// Unlink implements sys.FS. It removes a name (a symbolic link itself,
// not its target).
func (m *mountFS) Unlink(p string) experimentalsys.Errno {
	p, e := m.change(p)
	if e != 0 {
		return e
	}
	fi, err := m.root.Lstat(p)
	if err != nil {
		return errno(err)
	}
	if fi.IsDir() {
		return experimentalsys.EISDIR
	}
	return errno(m.root.Remove(p))
}

// Link implements sys.FS: refused.
func (m *mountFS) Link(_, _ string) experimentalsys.Errno {
	if !m.writable {
		return experimentalsys.EROFS
	}
	return experimentalsys.EPERM
}

// Symlink implements sys.FS: refused.
func (m *mountFS) Symlink(_, _ string) experimentalsys.Errno {
	if !m.writable {
		return experimentalsys.EROFS
	}
	return experimentalsys.EPERM
}

// Readlink implements sys.FS.
func (m *mountFS) Readlink(p string) (string, experimentalsys.Errno) {
	p, e := name(p)
	if e != 0 {
		return "", e
	}
	s, err := m.root.Readlink(p)
	return s, errno(err)
}

// Utimens implements sys.FS: not offered.
func (m *mountFS) Utimens(string, int64, int64) experimentalsys.Errno {
	if !m.writable {
		return experimentalsys.EROFS
	}
	return experimentalsys.ENOSYS
}

// mountFile is a file or directory opened through a mountFS, checked:
// wazero's adapter (File) with truncation, syncing and the append flag,
// which it lacks, added.
type mountFile struct {
	experimentalsys.File
	f      *os.File // the file opened; for a directory, until a rewind
	dir    bool
	append bool
}

func (f *mountFile) IsAppend() bool { return f.append }

func (f *mountFile) Truncate(size int64) experimentalsys.Errno {
	if f.dir {
		return experimentalsys.EISDIR
	}
	if size < 0 {
		return experimentalsys.EINVAL
	}
	return errno(f.f.Truncate(size))
}

func (f *mountFile) Sync() experimentalsys.Errno {
	if f.dir {
		return 0
	}
	return errno(f.f.Sync())
}

func (f *mountFile) Datasync() experimentalsys.Errno { return f.Sync() }
