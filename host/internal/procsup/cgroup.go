package procsup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Cgroups. Where the host can create cgroup v2 directories (root, or a
// delegated subtree) and the kernel has cgroup.kill (5.14), every child is
// born into a cgroup of its own (clone3 with CLONE_INTO_CGROUP, so it cannot
// fork before it is inside), under one directory per host process:
//
//	<cgroup2 mount><the host's cgroup>/plugboard-<host pid>-<host start time>/p<n>
//
// No process can leave its cgroup without write access to the cgroup tree,
// so writing cgroup.kill ends the whole tree, whatever it did with sessions,
// process groups or double forks. A watchdog (a shell outside that
// directory, reading a pipe only the host holds) writes cgroup.kill of the
// host's directory when the pipe reaches EOF — when the host has died, even
// by SIGKILL — so nothing outlives a crashed host for longer than a moment.
// Crash recovery (KillTree) and the next host's start-up sweep remain for a
// watchdog that was killed with its host.

// cgroupHost is this process's directory of child cgroups.
type cgroupHost struct {
	dir string
	seq atomic.Uint64

	mu       sync.Mutex
	watchdog *os.File // write end of the watchdog's stdin, held for the host's life; nil when none runs
}

// hostCgroup sets up this process's cgroup directory on first use; an error
// means processes are started without cgroups (the tracked-tree fallback).
var hostCgroup = sync.OnceValues(setupCgroups)

// cgroupsBroken is set once a start into a cgroup failed where a start
// without one then worked: clone3 or the migration is refused here, so the
// rest of this host's life uses the fallback.
var cgroupsBroken atomic.Bool

var (
	hostDirName  = regexp.MustCompile(`^plugboard-([0-9]+)-([0-9]+)$`)
	childDirName = regexp.MustCompile(`^p[0-9]+$`)
)

func setupCgroups() (*cgroupHost, error) {
	mount, err := cgroup2Mount()
	if err != nil {
		return nil, err
	}
	own, err := ownCgroup()
	if err != nil {
		return nil, err
	}
	parent := filepath.Join(mount, own)
	self, err := Identity(os.Getpid())
	if err != nil {
		return nil, err
	}
	_, start, _ := strings.Cut(self, "/")
	sweepDeadHosts(parent)
	dir := filepath.Join(parent, fmt.Sprintf("plugboard-%d-%s", os.Getpid(), start))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("procsup: cgroup: %w", err)
	}
	// cgroup.kill is what makes ending a tree one atomic write; without it
	// (before Linux 5.14) the fallback is as good and simpler.
	if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err != nil {
		os.Remove(dir)
		return nil, fmt.Errorf("procsup: cgroup: no cgroup.kill: %w", err)
	}
	h := &cgroupHost{dir: dir}
	h.ensureWatchdog()
	return h, nil
}

// cgroup2Mount finds where the cgroup v2 hierarchy is mounted: /sys/fs/cgroup
// on a unified system, /sys/fs/cgroup/unified on a hybrid one.
func cgroup2Mount() (string, error) {
	mounts, err := cgroup2Mounts()
	if err != nil {
		return "", err
	}
	if len(mounts) == 0 {
		return "", errors.New("procsup: cgroup: no cgroup2 mount")
	}
	return mounts[0], nil
}

func cgroup2Mounts() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// mountinfo: ID parent major:minor root mountpoint options [optional...] - fstype source super
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		if fields := strings.Fields(pre); len(fields) >= 5 {
			out = append(out, unescapeMount(fields[4]))
		}
	}
	return out, sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ownCgroup is this process's cgroup v2 path ("0::/path" in /proc/self/cgroup).
func ownCgroup() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok && strings.HasPrefix(p, "/") {
			return p, nil
		}
	}
	return "", errors.New("procsup: cgroup: this process is in no cgroup v2")
}

// newChild makes the cgroup of one child and opens it for CLONE_INTO_CGROUP.
func (h *cgroupHost) newChild() (string, int, error) {
	h.ensureWatchdog()
	dir := filepath.Join(h.dir, "p"+strconv.FormatUint(h.seq.Add(1), 10))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", -1, err
	}
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		os.Remove(dir)
		return "", -1, err
	}
	return dir, fd, nil
}

// watchdogScript waits for EOF on stdin, which comes when the host has
// exited however it did, then ends every process in the host's cgroups and
// removes them (rmdir fails until a cgroup is empty, hence the retries).
const watchdogScript = `cat >/dev/null
i=0
while [ -d "$1" ] && [ $i -lt 200 ]; do
	echo 1 > "$1/cgroup.kill" 2>/dev/null
	find "$1" -depth -type d -exec rmdir {} + 2>/dev/null
	[ -d "$1" ] && sleep 0.05
	i=$((i+1))
done
`

// ensureWatchdog starts the watchdog unless one runs. It is a child of the
// host in its own session (a Ctrl-C at the host's terminal does not reach
// it) and without Pdeathsig: it must outlive the host to do its work.
func (h *cgroupHost) ensureWatchdog() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.watchdog != nil {
		return
	}
	r, w, err := os.Pipe() // close-on-exec: no other child holds the write end
	if err != nil {
		return
	}
	cmd := exec.Command("/bin/sh", "-c", watchdogScript, "plugboard-watchdog", h.dir)
	cmd.Stdin = r
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return
	}
	r.Close()
	h.watchdog = w
	go func() {
		// A watchdog that ends while the host lives is reaped and replaced
		// at the next start; until then recovery is the backstop.
		_ = cmd.Wait()
		h.mu.Lock()
		if h.watchdog == w {
			h.watchdog = nil
		}
		h.mu.Unlock()
		w.Close()
	}()
}

// killCgroup ends every process in dir and below, waits (up to wait) for
// them to be gone, and removes the cgroups. It reports whether dir existed.
func killCgroup(dir string, wait time.Duration) (bool, error) {
	// O_WRONLY alone: never create a file, whatever dir names.
	f, err := os.OpenFile(filepath.Join(dir, "cgroup.kill"), os.O_WRONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err == nil {
		_, err = f.Write([]byte("1"))
		f.Close()
	}
	if err != nil {
		return true, fmt.Errorf("procsup: kill cgroup %s: %w", dir, err)
	}
	deadline := time.Now().Add(wait)
	for populated(dir) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	return true, removeCgroup(dir)
}

// populated reports whether a process is left in dir or below it.
func populated(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
	if err != nil {
		return false
	}
	return bytes.Contains(b, []byte("populated 1"))
}

// removeCgroup removes dir and the cgroups below it, deepest first (a nested
// plugboard inside an attempt makes its own below the attempt's). A cgroup
// still populated stays, for the watchdog or the next sweep.
func removeCgroup(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	for _, e := range entries {
		if e.IsDir() {
			removeCgroup(filepath.Join(dir, e.Name()))
		}
	}
	if err := syscall.Rmdir(dir); err != nil && err != syscall.ENOENT {
		return fmt.Errorf("procsup: remove cgroup %s: %w", dir, err)
	}
	return nil
}

// sweepDeadHosts ends and removes the cgroup directories, beside this
// host's, of plugboard hosts that no longer run and whose watchdog did not
// clean up (it died with them).
func sweepDeadHosts(parent string) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	boot, err := bootID()
	if err != nil {
		return
	}
	for _, e := range entries {
		m := hostDirName.FindStringSubmatch(e.Name())
		if m == nil || !e.IsDir() {
			continue
		}
		pid, _ := strconv.Atoi(m[1])
		if now, err := Identity(pid); err == nil && now == boot+"/"+m[2] {
			continue // that host runs
		}
		killCgroup(filepath.Join(parent, e.Name()), time.Second)
	}
}

// validChildCgroup reports whether dir, read from a stored handle, names a
// child cgroup this package made: a p<n> directory inside a plugboard host
// directory on a cgroup2 mount. A handle in a database the agent could write
// must not aim cgroup.kill at anything else.
func validChildCgroup(dir string) bool {
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir {
		return false
	}
	if !childDirName.MatchString(filepath.Base(dir)) || !hostDirName.MatchString(filepath.Base(filepath.Dir(dir))) {
		return false
	}
	mounts, err := cgroup2Mounts()
	if err != nil {
		return false
	}
	for _, m := range mounts {
		if rel, err := filepath.Rel(m, dir); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
			return true
		}
	}
	return false
}
