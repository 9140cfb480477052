// Package sandbox confines an attempt's process tree with Landlock, the
// Linux security module that lets an unprivileged process restrict itself
// and, irrevocably, every process it later starts. It owns the policy an
// attempt runs under (which paths it may read, write or use as devices,
// whether it may open TCP connections), the launcher that applies that
// policy, and the probe that says what the running kernel can enforce. It
// knows nothing of tasks, attempts or worktrees: callers build a [Policy].
//
// # Why a launcher
//
// Landlock restricts the calling thread, so the restriction has to be made
// inside the new process, between fork and exec. Go cannot run code there
// (os/exec and syscall.ForkExec give no hook), so the host re-executes its
// own binary: [Command] turns an argv into
//
//	self LauncherArg POLICY-JSON -- argv...
//
// and [Main], called first thing in the host's main, recognises that form,
// restricts its own thread and execs argv from that same thread. The domain
// survives exec and is inherited by every descendant; nothing in the tree
// can lift it. Only the launcher's thread is restricted, which is enough
// because execve leaves that thread as the only one. The launcher fails
// closed: when it cannot confine (a malformed policy, no Landlock, a rule
// the kernel refuses) it prints "plugboard sandbox: <reason>" and exits
// with status 126 without running the program.
//
// # Why raw system calls
//
// The package calls the Landlock system calls through golang.org/x/sys/unix
// rather than github.com/landlock-lsm/go-landlock. That binding imports
// kernel.org/.../libcap/psx in every package, even its low-level one, to
// restrict all threads at once; in a cgo build psx links C code into the
// whole host binary that wraps pthread_create and installs a signal
// handler, and under cgo it also silently grants read access to
// /proc/PID/task (its bug 39 workaround). The launcher needs none of that,
// since restricting one thread before exec is sufficient, and the policy
// here (ABI 1 required, newer rights taken when present, fail closed for
// network rules below ABI 4, per-file rights) is a few dozen lines of its
// own. The seccomp filter NetworkClosed also needs (below) is outside the
// binding anyway. x/sys/unix lacks only the network rule type, defined
// here.
//
// # What each Landlock ABI gives
//
// ABI 1 (Linux 5.13) is required: reads, writes, executes, creations and
// removals are confined to the policy's paths. Creating device nodes is
// never granted, even under ReadWrite, because a root attempt could
// otherwise mknod the disk's block device in its worktree and read it raw.
// Weaker kernels leave gaps the package can only document: below ABI 2 the
// kernel refuses every rename or link across directories (EXDEV, so mv
// falls back to copying); below ABI 3 truncate(2) is not controlled, so a
// file the tree may not write can still be truncated if its mode allows;
// below ABI 4 there are no TCP rules, so a policy with NetworkClosed fails
// closed; below ABI 5 device ioctls are not controlled; below ABI 6
// signals and abstract unix sockets are not scoped, so the tree can signal
// or connect to the host when its user may; below ABI 9 connecting to a
// pathname unix socket is not controlled at all, wherever the socket lies
// (a database's, Docker's or D-Bus's socket is reachable if its mode
// allows).
//
// Landlock's TCP rules see IPPROTO_TCP sockets only, so under
// NetworkClosed the launcher adds a seccomp filter that refuses other IP
// stream protocols (Multipath TCP, SCTP), raw IP sockets and io_uring; see
// netfilter_linux.go. UDP stays open.
//
// Landlock confines file system access, TCP ports and scopes; it does not
// take away capabilities. A tree running as root can still read every
// file beneath a granted directory whatever its mode (/etc/shadow, under
// /etc in [SystemReadOnly]), use packet sockets or load kernel modules.
// Run attempts as an unprivileged user to rely on those checks too.
package sandbox
