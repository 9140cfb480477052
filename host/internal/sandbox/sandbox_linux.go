//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Filesystem access rights by the Landlock ABI that introduced them. A
// ruleset handles all that the running ABI knows: a right not handled is
// a right not restricted.
const (
	fsABI1 = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR |
		unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
		unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM
	fsABI2 = fsABI1 | unix.LANDLOCK_ACCESS_FS_REFER
	fsABI3 = fsABI2 | unix.LANDLOCK_ACCESS_FS_TRUNCATE
	fsABI5 = fsABI3 | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	fsABI9 = fsABI5 | unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX

	netTCP = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
	scopes = unix.LANDLOCK_SCOPE_SIGNAL | unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
)

// Rights granted by each kind of policy path; every grant is then cut
// down to what the ruleset handles.
const (
	readRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_DIR
	// writeRights leaves out MAKE_CHAR and MAKE_BLOCK (a device node made
	// in a writable directory would open the device around every rule)
	// and IOCTL_DEV (devices are granted through Devices only).
	writeRights = unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR |
		unix.LANDLOCK_ACCESS_FS_REMOVE_FILE | unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
		unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_SYM |
		unix.LANDLOCK_ACCESS_FS_REFER | unix.LANDLOCK_ACCESS_FS_TRUNCATE |
		unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX
	deviceRights = unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	// fileRights are those the kernel accepts in a rule on anything but a
	// directory; it rejects the rest with EINVAL.
	fileRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE |
		unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
)

// rulesetAttr is struct landlock_ruleset_attr up to ABI 9. x/sys/unix's
// LandlockRulesetAttr also has the newer quiet_* fields; the kernel takes
// the size it is given, so the struct is cut to what the ABI knows.
type rulesetAttr struct {
	handledAccessFS  uint64
	handledAccessNet uint64
	scoped           uint64
}

// netPortAttr is struct landlock_net_port_attr, which x/sys/unix lacks.
type netPortAttr struct {
	allowedAccess uint64
	port          uint64
}

const ruleNetPort = 2 // LANDLOCK_RULE_NET_PORT

func probe() Status {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		why := "Landlock is not available"
		switch errno {
		case unix.ENOSYS:
			why = "this kernel has no Landlock"
		case unix.EOPNOTSUPP:
			why = "Landlock is not enabled in this kernel"
		}
		return Status{Reason: fmt.Sprintf("%s (landlock_create_ruleset: %s)", why, errnoName(errno))}
	}
	abi := int(v)
	if capped, ok := testABICap(); ok && capped < abi {
		if capped < 1 {
			return Status{Reason: fmt.Sprintf("Landlock is capped at ABI %d by %s (a test setting)", capped, TestABIEnv)}
		}
		abi = capped
	}
	return Status{ABI: abi, Available: abi >= 1, Network: abi >= 4 && filterArch != 0, Scoped: abi >= 6}
}

// plan is what the launcher asks of the kernel: the ruleset's attributes
// and its rules.
type plan struct {
	attr     rulesetAttr
	attrSize uintptr
	paths    []pathRule
	ports    []uint16 // TCP ports that may be connected to
	// filterNet installs the seccomp filter that makes every IPv4 and
	// IPv6 stream socket a TCP one, which Landlock's rules see.
	filterNet bool
}

type pathRule struct {
	path   string
	access uint64 // for a directory; cut to fileRights for anything else
}

// planFor turns p into a plan for Landlock ABI abi, or says why that ABI
// cannot enforce p.
func planFor(p Policy, abi int) (plan, error) {
	var pl plan
	switch {
	case abi < 1:
		return plan{}, fmt.Errorf("no Landlock (ABI %d)", abi)
	case abi == 1:
		pl.attr.handledAccessFS = fsABI1
	case abi == 2:
		pl.attr.handledAccessFS = fsABI2
	case abi <= 4:
		pl.attr.handledAccessFS = fsABI3
	case abi <= 8:
		pl.attr.handledAccessFS = fsABI5
	default:
		pl.attr.handledAccessFS = fsABI9
	}
	pl.attrSize = unsafe.Offsetof(pl.attr.handledAccessNet)
	if p.NetworkClosed {
		if abi < 4 {
			return plan{}, errors.New(networkReason(abi))
		}
		pl.attr.handledAccessNet = netTCP
		pl.filterNet = true
		pl.ports = p.AllowConnectTCP
		pl.attrSize = unsafe.Offsetof(pl.attr.scoped)
	}
	if abi >= 6 {
		// Always: without it the tree could signal the host (same user)
		// or connect to its abstract unix sockets.
		pl.attr.scoped = scopes
		pl.attrSize = unsafe.Sizeof(pl.attr)
	}
	add := func(paths []string, access uint64) {
		for _, path := range paths {
			pl.paths = append(pl.paths, pathRule{path, access & pl.attr.handledAccessFS})
		}
	}
	add(p.ReadOnly, readRights)
	add(p.ReadWrite, readRights|writeRights)
	add(p.Devices, deviceRights)
	return pl, nil
}

// restrict applies pl to the calling thread, for good.
func (pl plan) restrict() error {
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET,
		uintptr(unsafe.Pointer(&pl.attr)), pl.attrSize, 0)
	if errno != 0 {
		return fmt.Errorf("landlock_create_ruleset: %s", errnoName(errno))
	}
	ruleset := int(fd)
	defer unix.Close(ruleset)

	for _, r := range pl.paths {
		if err := addPathRule(ruleset, r); err != nil {
			return err
		}
	}
	for _, port := range pl.ports {
		attr := netPortAttr{allowedAccess: unix.LANDLOCK_ACCESS_NET_CONNECT_TCP, port: uint64(port)}
		if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), ruleNetPort,
			uintptr(unsafe.Pointer(&attr)), 0, 0, 0); errno != 0 {
			return fmt.Errorf("landlock_add_rule: TCP port %d: %s", port, errnoName(errno))
		}
	}
	// Required to restrict without CAP_SYS_ADMIN, and wanted anyway: no
	// set-user-ID program in the tree may gain privileges.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %s", errnoName(err))
	}
	if pl.filterNet {
		if err := installNetworkFilter(); err != nil {
			return err
		}
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(ruleset), 0, 0); errno != 0 {
		return fmt.Errorf("landlock_restrict_self: %s", errnoName(errno))
	}
	return nil
}

func addPathRule(ruleset int, r pathRule) error {
	// O_PATH opens without reading: the launcher need not be able to read
	// what it grants, and a FIFO or device is not opened for real.
	fd, err := unix.Open(r.path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return nil // does not exist: nothing to grant
	}
	if err != nil {
		return fmt.Errorf("open %s: %s", r.path, errnoName(err))
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("stat %s: %s", r.path, errnoName(err))
	}
	access := r.access
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		access &= fileRights
	}
	if access == 0 {
		return nil // the kernel refuses an empty rule (ENOMSG); it would grant nothing
	}
	attr := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(fd)}
	if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH,
		uintptr(unsafe.Pointer(&attr)), 0, 0, 0); errno != 0 {
		return fmt.Errorf("landlock_add_rule: %s: %s", r.path, errnoName(errno))
	}
	return nil
}

// launch confines the calling thread as the policy in args says and execs
// the program from it. It returns only on failure.
func launch(args []string) error {
	// Landlock and no_new_privs apply to the calling thread; the exec must
	// come from that thread so the new program is the confined one.
	runtime.LockOSThread()
	p, argv, err := parseArgs(args)
	if err != nil {
		return err
	}
	st := Probe()
	if !st.Available {
		return errors.New(st.Reason)
	}
	if p.NetworkClosed && !st.Network {
		return errors.New(networkReason(st.ABI))
	}
	pl, err := planFor(p, st.ABI)
	if err != nil {
		return err
	}
	if err := dropCapabilities(); err != nil {
		return err
	}
	if err := pl.restrict(); err != nil {
		return err
	}
	err = syscall.Exec(argv[0], argv, os.Environ())
	return fmt.Errorf("exec %s: %s", argv[0], errnoName(err))
}

// errnoName spells an errno as its symbol ("EACCES"), which says more in
// one line than its text; anything else is spelled as usual.
func errnoName(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		if name := unix.ErrnoName(errno); name != "" {
			return name
		}
	}
	return err.Error()
}
