package procsup

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unsafe"
)

// waitExited blocks until pid has exited without reaping it (WNOWAIT), so
// its pid, and the group id equal to it, stay reserved while the caller
// signals the group.
func waitExited(pid int) error {
	const pPID = 1     // P_PID from <sys/wait.h>; package syscall does not export it
	var info [128]byte // siginfo_t
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&info)), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		switch errno {
		case 0:
			return nil
		case syscall.EINTR:
			continue
		default:
			return errno
		}
	}
}

// Alive reports whether a live process with this pid exists. A zombie does
// not count: it has exited and only waits for its parent (or init) to reap
// it, which in a container without a reaping init may be never.
func Alive(pid int) bool {
	if pid <= 0 {
		return false // kill(0) and kill(-n) address groups, not a pid
	}
	if err := syscall.Kill(pid, 0); err != nil && err != syscall.EPERM {
		return false
	}
	state, err := procState(pid)
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	return state != 'Z' && state != 'X'
}

// KillGroup sends SIGKILL to the process group whose id is pid. A group that
// no longer exists is not an error.
//
// After a host restart a stored pid may have been reused (after a reboot it
// almost certainly has been) by an unrelated process leading its own group;
// KillGroupIf guards against killing that.
func KillGroup(pid int) error {
	if pid <= 1 {
		return fmt.Errorf("procsup: kill group %d: not a process group id", pid)
	}
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil && err != syscall.ESRCH {
		return fmt.Errorf("procsup: kill group %d: %w", pid, err)
	}
	return nil
}

// KillGroupIf is KillGroup for crash recovery: it kills the group only if pid
// still belongs to the process whose Identity was identity, or to no process
// at all. In the latter case the group can only be the original one, because
// Linux does not reuse a number while a process group still has it as id.
// An identity from an earlier boot, or "", never leads to a signal. It
// returns whether a signal was sent (which does not mean anyone was left).
// It reaches only the group; KillTree, given a Handle, ends the whole tree.
func KillGroupIf(pid int, identity string) (bool, error) {
	if pid <= 1 {
		return false, fmt.Errorf("procsup: kill group %d: not a process group id", pid)
	}
	boot, err := bootID()
	if err != nil {
		return false, fmt.Errorf("procsup: kill group %d: %w", pid, err)
	}
	if !strings.HasPrefix(identity, boot+"/") {
		return false, nil // started before the last boot (or identity unknown): nothing of it is left
	}
	current, err := Identity(pid)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return false, fmt.Errorf("procsup: kill group %d: %w", pid, err)
	case current != identity:
		return false, nil // pid reused: the group we started is gone
	}
	return true, KillGroup(pid)
}

// Identity returns a token naming the process pid for its whole life and no
// other process: the boot id and the process's start time. Together with the
// pid it tells a process from a later one that reused the pid. The error
// wraps fs.ErrNotExist when there is no such process.
func Identity(pid int) (string, error) {
	if pid <= 0 {
		return "", fmt.Errorf("procsup: identity of %d: %w", pid, fs.ErrNotExist)
	}
	boot, err := bootID()
	if err != nil {
		return "", fmt.Errorf("procsup: identity of %d: %w", pid, err)
	}
	fields, err := statFields(pid)
	if err != nil {
		return "", fmt.Errorf("procsup: identity of %d: %w", pid, err)
	}
	// fields[0] is field 3 of proc_pid_stat(5); starttime is field 22.
	const startTime = 22 - 3
	if len(fields) <= startTime {
		return "", fmt.Errorf("procsup: identity of %d: short /proc stat", pid)
	}
	if _, err := strconv.ParseUint(fields[startTime], 10, 64); err != nil {
		return "", fmt.Errorf("procsup: identity of %d: bad start time: %w", pid, err)
	}
	return boot + "/" + fields[startTime], nil
}

var bootID = sync.OnceValues(func() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
})

// statFields returns the fields of /proc/pid/stat after the command name,
// which is parenthesised and may itself contain spaces and parentheses.
func statFields(pid int) ([]string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	return strings.Fields(string(b[i+1:])), nil
}

func procState(pid int) (byte, error) {
	fields, err := statFields(pid)
	if err != nil {
		return 0, err
	}
	if len(fields) == 0 || fields[0] == "" {
		return 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	return fields[0][0], nil
}
