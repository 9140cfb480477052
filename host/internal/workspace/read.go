package workspace

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"syscall"
	"unicode/utf8"

	"github.com/plugboard/plugboard/abi"
)

// Read limits of get_attempt_file's max_bytes.
const (
	DefaultMaxBytes = 65536
	MaxBytesCap     = 524288
)

// MaxPathBytes bounds the path argument: longer than any real path
// (PATH_MAX is 4096), and it keeps the walk of a hostile path short.
const MaxPathBytes = 4096

// Encodings of FileSlice.Content.
const (
	EncodingUTF8   = "utf-8"
	EncodingBase64 = "base64"
)

// lookahead bytes past max_bytes let a slice that ends inside a rune be
// told apart from bytes that are not UTF-8 at all.
const lookahead = utf8.UTFMax

// FileSlice is one bounded read of a file, the result of get_attempt_file.
type FileSlice struct {
	// Path is the repo-prefixed path read, cleaned; a refused path is
	// echoed as given.
	Path  string `json:"path"`
	Start int64  `json:"start"`
	// Size is the whole file's size in bytes.
	Size int64 `json:"size"`
	// Content is the bytes from Start on: UTF-8 text when they are valid
	// UTF-8, else base64 (see Encoding).
	Content  string `json:"content"`
	Encoding string `json:"encoding"`
	// Truncated is true when bytes follow the slice; NextStart is then the
	// start of the next slice.
	Truncated bool `json:"truncated"`
	// Blocked is true when nothing was read because the request was
	// refused; BlockedReason says why and Hint what to do instead.
	Blocked       bool   `json:"blocked"`
	BlockedReason string `json:"blocked_reason,omitempty"`
	Hint          string `json:"hint,omitempty"`
	NextStart     *int64 `json:"next_start,omitempty"`
}

const (
	hintOutside = "get_attempt_file reads files inside the attempt's worktrees only: " +
		"pass path as <repo>/<path inside the repo>, without '..' leaving the repo, a leading '/', " +
		"a .git component, or a symlink leading outside; call get_attempt_changes for valid paths"
	hintSize = "call get_attempt_file again with max_bytes at most 524288 (0 means 65536) " +
		"and page through the file with start"
	hintPaths = "call get_attempt_changes to list the attempt's repo-prefixed paths, " +
		"and pass one as path to get_attempt_file"

	hintLinked = "get_attempt_file does not read hard-linked files (more than one link) or files on another file system: " +
		"their content may lie outside the attempt's worktrees; have the agent replace the file with a copy " +
		"(cp --remove-destination), or call get_attempt_changes for other paths"
)

// target is a path that passed every check, ready to open.
type target struct {
	root  *os.Root
	dev   uint64 // the worktree's device
	clean string // repo-prefixed, for FileSlice.Path
	rel   string // symlink-free, inside root
	info  fs.FileInfo
}

// linked reports whether fi, a regular file of t's worktree, may hold
// content from outside it: a hard link shares its content with a file
// that may lie anywhere on the same file system, and a file on another
// device than the worktree's came in through a mount. Like a symlink
// leading outside, such a file is refused, not read.
func (t target) linked(fi fs.FileInfo) bool {
	id, ok := fileIdentity(fi)
	return ok && fi.Mode().IsRegular() && (id.nlink > 1 || id.dev != t.dev)
}

// find resolves an agent path. blocked is true, with a nil error, for a
// path outside the workspace; err is always an *abi.Envelope.
func (w *Workspace) find(p string) (t target, blocked bool, err error) {
	if len(p) > MaxPathBytes {
		return t, false, abi.NewEnvelope(abi.CodeInvalidArgument,
			fmt.Sprintf("path is %d bytes long, more than %d", len(p), MaxPathBytes), hintPaths).
			WithDetail("field", "path")
	}
	repo, rel, err := SplitPath(p)
	if errors.Is(err, ErrOutsideWorkspace) {
		return t, true, nil
	}
	root, ok := w.roots[repo]
	if !ok {
		msg := fmt.Sprintf("unknown repo %q in path %q: paths are <repo>/<path inside the repo>", repo, p)
		if err != nil || rel == "." {
			msg = fmt.Sprintf("path %q has no repo prefix: paths are <repo>/<path inside the repo>", p)
		}
		return t, false, abi.NewEnvelope(abi.CodeInvalidArgument, msg, hintPaths).
			WithDetail("field", "path").WithDetail("repos", w.Repos())
	}
	t.root, t.dev = root, w.devs[repo]
	t.clean = path.Join(repo, rel)
	t.rel, t.info, err = resolve(root, rel)
	switch {
	case err == nil:
		return t, false, nil
	case errors.Is(err, ErrOutsideWorkspace):
		return t, true, nil
	default:
		return t, false, fsError(t.clean, err)
	}
}

// fsError turns a failure to resolve or open a path into an envelope.
func fsError(p string, err error) *abi.Envelope {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, errNotDir), errors.Is(err, errDanglingEmpty):
		return abi.NewEnvelope(abi.CodeNotFound, fmt.Sprintf("no file %q in the attempt's worktrees", p),
			"call get_attempt_changes to list the attempt's files").WithDetail("path", p)
	case errors.Is(err, errTooManyLinks):
		return abi.NewEnvelope(abi.CodeInvalidArgument,
			fmt.Sprintf("path %q: more than %d symbolic links", p, maxSymlinks), hintPaths).
			WithDetail("field", "path")
	case errors.Is(err, syscall.ENAMETOOLONG):
		return abi.NewEnvelope(abi.CodeInvalidArgument,
			fmt.Sprintf("path %q has a component too long for the file system", p), hintPaths).
			WithDetail("field", "path")
	case errors.Is(err, fs.ErrPermission):
		// The agent cannot fix this and retrying will not help.
		return abi.NewEnvelope(abi.CodePermissionDenied,
			fmt.Sprintf("the host may not read %q (file system permissions)", p), "").WithDetail("path", p)
	default:
		return abi.NewEnvelope(abi.CodeInternal, fmt.Sprintf("reading %q: %v", p, err), "").WithDetail("path", p)
	}
}

func notRegular(p string, fi fs.FileInfo) *abi.Envelope {
	msg := fmt.Sprintf("%q is not a regular file", p)
	if fi.IsDir() {
		msg = fmt.Sprintf("%q is a directory", p)
	}
	return abi.NewEnvelope(abi.CodeInvalidArgument, msg,
		"pass the path of a file; call get_attempt_changes to list the attempt's files").
		WithDetail("field", "path")
}

// ReadFile reads at most maxBytes bytes of a file from start. maxBytes 0
// means DefaultMaxBytes. A refused request (path outside the workspace,
// maxBytes over MaxBytesCap) is a FileSlice with Blocked set, not an error;
// errors are *abi.Envelope values, to be passed to the agent unchanged.
func (w *Workspace) ReadFile(p string, start int64, maxBytes int) (FileSlice, error) {
	if start < 0 {
		return FileSlice{}, abi.NewEnvelope(abi.CodeInvalidArgument, "start must not be negative",
			"pass start 0 to read from the beginning").WithDetail("field", "start")
	}
	if maxBytes < 0 {
		return FileSlice{}, abi.NewEnvelope(abi.CodeInvalidArgument, "max_bytes must not be negative",
			"pass max_bytes 0 for the default of 65536").WithDetail("field", "max_bytes")
	}
	if maxBytes == 0 {
		maxBytes = DefaultMaxBytes
	}
	t, blocked, err := w.find(p)
	if err != nil {
		return FileSlice{}, err
	}
	if blocked {
		return FileSlice{Path: p, Start: start, Blocked: true,
			BlockedReason: BlockedOutsideWorkspace, Hint: hintOutside}, nil
	}
	// Refusing a FIFO or device before opening it: a FIFO would block the
	// open, a device may act on being opened.
	if !t.info.Mode().IsRegular() {
		return FileSlice{}, notRegular(t.clean, t.info)
	}
	f, err := t.root.OpenFile(t.rel, openFlags, 0)
	if err != nil {
		return FileSlice{}, fsError(t.clean, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return FileSlice{}, fsError(t.clean, err)
	}
	if !fi.Mode().IsRegular() {
		return FileSlice{}, notRegular(t.clean, fi)
	}
	if t.linked(fi) {
		// Checked on the opened file: no swap after the check can change
		// what is read.
		return FileSlice{Path: t.clean, Start: start, Blocked: true,
			BlockedReason: BlockedOutsideWorkspace, Hint: hintLinked}, nil
	}
	if !os.SameFile(fi, t.info) {
		// The tree changed between the walk and the open, and what was
		// opened was not checked; the worktree is still being written.
		return FileSlice{}, abi.NewEnvelope(abi.CodeConflict,
			fmt.Sprintf("%q changed while it was being opened", t.clean),
			"call get_attempt_file again").WithDetail("path", t.clean)
	}
	size := fi.Size()
	if start > size {
		return FileSlice{}, abi.NewEnvelope(abi.CodeInvalidArgument,
			fmt.Sprintf("start %d is past the end of %q (%d bytes)", start, t.clean, size),
			"pass start between 0 and size").WithDetail("field", "start").WithDetail("size", size)
	}
	// Checked after the stat so that the refusal carries Size, which the
	// agent needs to plan its pages.
	if maxBytes > MaxBytesCap {
		return FileSlice{Path: t.clean, Start: start, Size: size, Blocked: true,
			BlockedReason: BlockedSizeExceeded, Hint: hintSize}, nil
	}

	want := min(int64(maxBytes)+lookahead, size-start)
	buf := make([]byte, want)
	n, err := f.ReadAt(buf, start)
	if err != nil && err != io.EOF {
		return FileSlice{}, fsError(t.clean, err)
	}
	if int64(n) < want {
		// The file shrank since the stat: report the size actually seen so
		// that Truncated and NextStart agree with the content.
		size = start + int64(n)
	}
	buf = buf[:n]
	keep := min(n, maxBytes)
	s := FileSlice{Path: t.clean, Start: start, Size: size}
	if k, ok := textPrefix(buf, keep); ok {
		keep = k
		s.Content, s.Encoding = string(buf[:keep]), EncodingUTF8
	} else {
		s.Content, s.Encoding = base64.StdEncoding.EncodeToString(buf[:keep]), EncodingBase64
	}
	if end := start + int64(keep); end < size {
		s.Truncated, s.NextStart = true, &end
	}
	return s, nil
}

// textPrefix decides whether b[:n] is sent as text, and how much of it. b
// may hold a few bytes past n. When the slice is valid UTF-8 but for a rune
// cut by n, the cut backs off to that rune's start, so Content stays valid
// and the next slice starts on the rune. A back-off to nothing (max_bytes
// smaller than the rune) would never progress, so such a slice is base64.
func textPrefix(b []byte, n int) (int, bool) {
	if utf8.Valid(b[:n]) {
		return n, true
	}
	for k := 1; k < utf8.UTFMax && k < n; k++ {
		i := n - k
		if !utf8.RuneStart(b[i]) {
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if (r != utf8.RuneError || size > 1) && i+size > n && utf8.Valid(b[:i]) {
			return i, true
		}
		break
	}
	return 0, false
}

// Stat reports what a path names: the size of a file, or isDir for a
// directory. blocked is BlockedOutsideWorkspace, with a nil error, for a
// path ReadFile would refuse. Errors are *abi.Envelope values.
func (w *Workspace) Stat(p string) (size int64, isDir bool, blocked string, err error) {
	t, out, err := w.find(p)
	if err != nil {
		return 0, false, "", err
	}
	if out || t.linked(t.info) {
		return 0, false, BlockedOutsideWorkspace, nil
	}
	return t.info.Size(), t.info.IsDir(), "", nil
}
