package sandbox

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// keptCapabilities are the capabilities a confined process tree started by
// root keeps: those a container runtime grants by default, less NET_RAW,
// so that tools that expect root to own its files and switch users still
// work. Every other capability is dropped, and with them the ways root
// would have around the Landlock domain and the host: CAP_SYS_PTRACE
// (Landlock lets it read other processes' /proc/PID/environ and memory,
// the host's included), CAP_DAC_READ_SEARCH (open_by_handle_at),
// CAP_SYS_ADMIN, CAP_SYS_MODULE, CAP_SYS_RAWIO, CAP_NET_ADMIN, CAP_BPF and
// the rest.
var keptCapabilities = map[uintptr]bool{
	unix.CAP_CHOWN: true, unix.CAP_DAC_OVERRIDE: true, unix.CAP_FOWNER: true, unix.CAP_FSETID: true,
	unix.CAP_KILL: true, unix.CAP_SETGID: true, unix.CAP_SETUID: true, unix.CAP_SETPCAP: true,
	unix.CAP_NET_BIND_SERVICE: true, unix.CAP_SYS_CHROOT: true, unix.CAP_MKNOD: true,
	unix.CAP_AUDIT_WRITE: true, unix.CAP_SETFCAP: true,
}

// dropCapabilities removes every capability not in keptCapabilities from
// the bounding set (so the program executed next cannot have it: root's
// permitted set after exec is the bounding set), and clears the
// inheritable and ambient sets, which could otherwise carry one across.
// A process without capabilities (the host as an ordinary user) has
// nothing to drop.
func dropCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %s", errnoName(err))
	}
	if data[0].Effective == 0 && data[1].Effective == 0 && data[0].Permitted == 0 && data[1].Permitted == 0 {
		return nil
	}
	for c := uintptr(0); c <= unix.CAP_LAST_CAP; c++ {
		if keptCapabilities[c] {
			continue
		}
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, c, 0, 0, 0); err != nil && err != unix.EINVAL {
			return fmt.Errorf("drop capability %d from the bounding set: %s", c, errnoName(err))
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && err != unix.EINVAL {
		return fmt.Errorf("clear ambient capabilities: %s", errnoName(err))
	}
	data[0].Inheritable, data[1].Inheritable = 0, 0
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %s", errnoName(err))
	}
	return nil
}
