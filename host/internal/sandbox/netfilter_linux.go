//go:build linux

package sandbox

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock's TCP rules apply to sockets of protocol IPPROTO_TCP only: a
// Multipath TCP socket (IPPROTO_MPTCP, which Go's net.Listen uses by
// default since Go 1.24 and curl --mptcp asks for) or an SCTP one connects
// and binds unchecked. So under NetworkClosed the launcher also installs a
// seccomp filter that lets an IPv4 or IPv6 socket be created only as plain
// TCP or UDP (stream or datagram, protocol 0, IPPROTO_TCP or IPPROTO_UDP);
// anything else fails with EPROTONOSUPPORT, which programs take for "not
// supported by this kernel" and fall back to TCP, which Landlock governs.
// io_uring can create sockets without the socket system call, so
// io_uring_setup fails with ENOSYS (programs fall back to plain calls).
//
// The filter decodes system calls of the native ABI only: on amd64 and
// arm64, where socket(2) is the one way to make a socket. A process of
// another ABI (32-bit, x32), which could use socketcall(2) instead, is
// killed at its first system call. On other architectures NetworkClosed is
// refused.

// filterArch is the audit architecture of the native system call ABI, or
// 0 where the filter is not supported.
var filterArch = map[string]uint32{
	"amd64": unix.AUDIT_ARCH_X86_64,
	"arm64": unix.AUDIT_ARCH_AARCH64,
}[runtime.GOARCH]

// x32SyscallBit marks x32 system calls, which amd64 reports with the
// native audit architecture.
const x32SyscallBit = 0x40000000

func networkReason(abi int) string {
	if abi >= 4 {
		return fmt.Sprintf("NetworkClosed is enforced on amd64 and arm64 only, not %s", runtime.GOARCH)
	}
	return fmt.Sprintf("NetworkClosed needs Landlock ABI 4 for TCP rules, this kernel has ABI %d", abi)
}

// insn is one classic BPF instruction whose jump targets are labels ("" is
// the next instruction).
type insn struct {
	label  string
	code   uint16
	k      uint32
	jt, jf string
}

// seccomp_data offsets; argument words are read as their low 32 bits
// (little-endian on both supported architectures), which is what the
// kernel reads of socket's int arguments.
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16 // socket: domain
	offArg1 = 24 // socket: type
	offArg2 = 32 // socket: protocol
)

func networkFilter(arch uint32) []unix.SockFilter {
	ld := func(off uint32) insn { return insn{code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, k: off} }
	jeq := func(k uint32, jt, jf string) insn {
		return insn{code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, k: k, jt: jt, jf: jf}
	}
	ret := func(label string, k uint32) insn { return insn{label: label, code: unix.BPF_RET | unix.BPF_K, k: k} }

	prog := []insn{ld(offArch), jeq(arch, "", "kill"), ld(offNr)}
	if arch == unix.AUDIT_ARCH_X86_64 {
		prog = append(prog, insn{code: unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, k: x32SyscallBit, jt: "kill"})
	}
	inet := ld(offArg1)
	inet.label = "inet"
	proto := ld(offArg2)
	proto.label = "proto"
	prog = append(prog,
		jeq(unix.SYS_IO_URING_SETUP, "enosys", ""),
		jeq(unix.SYS_SOCKET, "", "allow"),
		ld(offArg0),
		jeq(unix.AF_INET, "inet", ""),
		jeq(unix.AF_INET6, "", "allow"),
		inet,
		insn{code: unix.BPF_ALU | unix.BPF_AND | unix.BPF_K, k: 0xf}, // SOCK_TYPE_MASK: drop SOCK_CLOEXEC, SOCK_NONBLOCK
		jeq(unix.SOCK_STREAM, "proto", ""),
		jeq(unix.SOCK_DGRAM, "proto", "refuse"),
		proto,
		jeq(0, "allow", ""),
		jeq(unix.IPPROTO_TCP, "allow", ""),
		jeq(unix.IPPROTO_UDP, "allow", "refuse"),
		ret("allow", unix.SECCOMP_RET_ALLOW),
		ret("refuse", unix.SECCOMP_RET_ERRNO|uint32(unix.EPROTONOSUPPORT)),
		ret("enosys", unix.SECCOMP_RET_ERRNO|uint32(unix.ENOSYS)),
		ret("kill", unix.SECCOMP_RET_KILL_PROCESS),
	)

	at := map[string]int{}
	for i, in := range prog {
		if in.label != "" {
			at[in.label] = i
		}
	}
	jump := func(from int, label string) uint8 {
		if label == "" {
			return 0
		}
		to, ok := at[label]
		if !ok || to <= from || to-from-1 > 255 {
			panic("sandbox: bad BPF jump to " + label) // a bug in the program above
		}
		return uint8(to - from - 1)
	}
	out := make([]unix.SockFilter, len(prog))
	for i, in := range prog {
		out[i] = unix.SockFilter{Code: in.code, K: in.k, Jt: jump(i, in.jt), Jf: jump(i, in.jf)}
	}
	return out
}

// installNetworkFilter applies the filter to the calling thread, which
// execve passes on to the program. no_new_privs must be set already.
func installNetworkFilter() error {
	filter := networkFilter(filterArch)
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0,
		uintptr(unsafe.Pointer(&prog))); errno != 0 {
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER): %s", errnoName(errno))
	}
	runtime.KeepAlive(filter)
	return nil
}
