package procsup

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// TreeEnv is set in the environment of every child to the markers of the
// process trees it belongs to, outermost first ("m1:m2" when a plugboard
// inside an attempt starts processes of its own); descendants inherit it.
// Where no cgroup holds a tree, the marker is how the descendants that left
// the child's process group and session (setsid, double forks) are found
// again in /proc. A process that also clears its environment escapes that
// fallback, which is why a cgroup is used wherever one can be made.
const TreeEnv = "PLUGBOARD_PROCESS_TREE"

// newMarker returns a fresh random tree marker.
func newMarker() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read does not fail on Linux
	return hex.EncodeToString(b)
}

// handle is what a stored process row needs to end the process's tree later,
// from this host or another: "IDENTITY[ tree=MARKER][ cgroup=PATH]". The
// cgroup path comes last because it is the only part that may hold a space.
type handle struct {
	identity, marker, cgroup string
}

func (h handle) String() string {
	s := h.identity
	if h.marker != "" {
		s += " tree=" + h.marker
	}
	if h.cgroup != "" {
		s += " cgroup=" + h.cgroup
	}
	return s
}

func parseHandle(s string) handle {
	var h handle
	s, h.cgroup, _ = strings.Cut(s, " cgroup=")
	h.identity, h.marker, _ = strings.Cut(s, " tree=")
	return h
}

// KillTree is for crash recovery and for stopping a process that another
// host supervises: it ends the whole tree of the process started as pid,
// whose Handle was handle — its cgroup, its process group and session while
// pid is still that process or no process at all (the number cannot be
// reused while a group or session still has it as id), and every process
// carrying its tree marker or descending from one that does. A handle from
// an earlier boot, or "", never leads to a signal: nothing of it is left. A
// plain identity (from before handles had trees) works as KillGroupIf. It
// returns whether anything was signalled (which does not mean anyone was
// left).
func KillTree(pid int, handleText string) (bool, error) {
	if pid <= 1 {
		return false, fmt.Errorf("procsup: kill tree %d: not a process id", pid)
	}
	h := parseHandle(handleText)
	boot, err := bootID()
	if err != nil {
		return false, fmt.Errorf("procsup: kill tree %d: %w", pid, err)
	}
	if !strings.HasPrefix(h.identity, boot+"/") {
		return false, nil
	}
	leader := 0
	current, err := Identity(pid)
	switch {
	case errors.Is(err, fs.ErrNotExist), err == nil && current == h.identity:
		leader = pid
	case err != nil:
		return false, fmt.Errorf("procsup: kill tree %d: %w", pid, err)
	}
	var errs []error
	sent := false
	if leader > 0 {
		errs = append(errs, KillGroup(leader))
		sent = true
	}
	if h.cgroup != "" && validChildCgroup(h.cgroup) {
		existed, err := killCgroup(h.cgroup, 2*time.Second)
		errs = append(errs, err)
		sent = sent || existed
		removeDeadHostDir(filepath.Dir(h.cgroup))
	}
	if leader > 0 || h.marker != "" {
		if killScan(leader, h.marker) > 0 {
			sent = true
		}
	}
	return sent, errors.Join(errs...)
}

// removeDeadHostDir removes a host's cgroup directory once that host is gone
// and nothing is left in it (its watchdog would have, had it lived).
func removeDeadHostDir(dir string) {
	m := hostDirName.FindStringSubmatch(filepath.Base(dir))
	if m == nil {
		return
	}
	pid, _ := strconv.Atoi(m[1])
	boot, err := bootID()
	if err != nil {
		return
	}
	if now, err := Identity(pid); err == nil && now == boot+"/"+m[2] {
		return
	}
	if !populated(dir) {
		removeCgroup(dir)
	}
}

// procEntry is one process as /proc/PID/stat shows it.
type procEntry struct {
	pid, ppid, pgrp, sid int
	state                byte
	start                string
}

func readProcs() []procEntry {
	dirs, _ := os.ReadDir("/proc")
	out := make([]procEntry, 0, len(dirs))
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		f, err := statFields(pid)
		// fields[0] is field 3 of proc_pid_stat(5): state, ppid, pgrp,
		// session, ...; starttime is field 22.
		if err != nil || len(f) <= 22-3 || f[0] == "" {
			continue
		}
		e := procEntry{pid: pid, state: f[0][0], start: f[22-3]}
		e.ppid, _ = strconv.Atoi(f[1])
		e.pgrp, _ = strconv.Atoi(f[2])
		e.sid, _ = strconv.Atoi(f[3])
		out = append(out, e)
	}
	return out
}

// hasMarker reports whether pid's environment marks it as part of the tree
// marker. An environment we may not read (another user's process) is not.
func hasMarker(pid int, marker string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for kv := range bytes.SplitSeq(b, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte(TreeEnv+"=")); ok {
			for m := range strings.SplitSeq(string(v), ":") {
				if m == marker {
					return true
				}
			}
		}
	}
	return false
}

// killScan ends a tree found in /proc, for when no cgroup holds it: the
// processes in the process group or session of leader (0: none; only safe
// while that number cannot name anything else), those carrying marker (""
// for none), and every descendant of either. It scans again until a scan
// finds nobody, for a while, since a process may fork between the scan and
// its kill. It returns how many processes it signalled.
func killScan(leader int, marker string) int {
	if leader <= 1 && marker == "" {
		return 0
	}
	self := os.Getpid()
	total := 0
	for round := 0; round < 20; round++ {
		procs := readProcs()
		children := map[int][]procEntry{}
		var queue []procEntry
		for _, p := range procs {
			children[p.ppid] = append(children[p.ppid], p)
			if leader > 1 && (p.pgrp == leader || p.sid == leader) || marker != "" && hasMarker(p.pid, marker) {
				queue = append(queue, p)
			}
		}
		seen := map[int]bool{}
		n := 0
		for len(queue) > 0 {
			p := queue[0]
			queue = queue[1:]
			if seen[p.pid] {
				continue
			}
			seen[p.pid] = true
			queue = append(queue, children[p.pid]...)
			if p.pid == self || p.pid <= 1 || p.state == 'Z' || p.state == 'X' {
				continue
			}
			if killPID(p.pid, p.start) {
				n++
			}
		}
		total += n
		if n == 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return total
}

// Linux syscall numbers; from 424 on they are the same on every
// architecture.
const (
	sysPidfdSendSignal = 424
	sysPidfdOpen       = 434
)

// killPID sends SIGKILL to pid if it is still the process that started at
// start. Through a pidfd, the check and the signal name the same process
// even if pid is reused in between; without pidfds the window is the few
// microseconds after the check.
func killPID(pid int, start string) bool {
	fd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(pid), 0, 0)
	if errno == 0 {
		defer syscall.Close(int(fd))
	} else if errno != syscall.ENOSYS {
		return false // gone
	}
	f, err := statFields(pid)
	if err != nil || len(f) <= 22-3 || f[22-3] != start {
		return false
	}
	if errno == 0 {
		_, _, errno = syscall.Syscall6(sysPidfdSendSignal, fd, uintptr(syscall.SIGKILL), 0, 0, 0, 0)
		return errno == 0
	}
	return syscall.Kill(pid, syscall.SIGKILL) == nil
}
