package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/plugboard/plugboard/host/internal/sandbox"
)

// The test binary is its own launcher (sandbox.Main) and its own confined
// program (helper): a helper reports the errno of one system call, which
// says more than a shell's exit status.
const helperArg = "sandbox-test-helper"

func TestMain(m *testing.M) {
	sandbox.Main()
	if len(os.Args) > 2 && os.Args[1] == helperArg {
		fmt.Println(helper(os.Args[2], os.Args[3:]))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// helper runs one operation and returns "ok", what it read, or the errno's
// name.
func helper(op string, args []string) string {
	var err error
	switch op {
	case "read":
		var b []byte
		if b, err = os.ReadFile(args[0]); err == nil {
			return strings.TrimSpace(string(b))
		}
	case "write":
		err = os.WriteFile(args[0], []byte("written\n"), 0o644)
	case "mknod": // a character device node like /dev/null's
		err = unix.Mknod(args[0], unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3)))
	case "connect":
		var c net.Conn
		if c, err = net.DialTimeout("tcp", args[0], 5*time.Second); err == nil {
			c.Close()
		}
	case "listen":
		var l net.Listener
		if l, err = net.Listen("tcp", args[0]); err == nil {
			l.Close()
		}
	case "unix":
		var c net.Conn
		if c, err = net.Dial("unix", args[0]); err == nil {
			c.Close()
		}
	case "socket": // family type protocol, as numbers
		var n [3]int
		for i := range n {
			n[i], _ = strconv.Atoi(args[i])
		}
		var fd int
		if fd, err = syscall.Socket(n[0], n[1], n[2]); err == nil {
			syscall.Close(fd)
		}
	case "io_uring":
		var params [120]byte // struct io_uring_params
		fd, _, errno := syscall.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params)), 0)
		if errno != 0 {
			err = errno
		} else {
			syscall.Close(int(fd))
		}
	case "kill":
		pid, _ := strconv.Atoi(args[0])
		sig, _ := strconv.Atoi(args[1])
		err = syscall.Kill(pid, syscall.Signal(sig))
	default:
		return "unknown helper op " + op
	}
	if err == nil {
		return "ok"
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return unix.ErrnoName(errno)
	}
	return err.Error()
}

var self = func() string {
	exe, err := os.Executable()
	if err != nil {
		panic(err)
	}
	return exe
}()

func requireLandlock(t *testing.T) sandbox.Status {
	t.Helper()
	st := sandbox.Probe()
	if !st.Available {
		t.Skip(st.Reason)
	}
	return st
}

// basePolicy lets the test binary run as a helper: the system, the
// standard devices and the binary itself, nothing of the test's files.
func basePolicy() sandbox.Policy {
	return sandbox.Policy{
		ReadOnly: append(sandbox.SystemReadOnly(), self),
		Devices:  sandbox.StandardDevices(),
	}
}

func helperArgv(op string, args ...string) []string {
	return append([]string{self, helperArg, op}, args...)
}

type result struct {
	stdout, stderr string
	code           int
}

// run runs argv as it is, with extra environment variables.
func run(t *testing.T, argv []string, env ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("run %q: %v", argv, err)
	}
	return result{strings.TrimSpace(stdout.String()), strings.TrimSpace(stderr.String()), cmd.ProcessState.ExitCode()}
}

// confined runs argv under p and fails the test unless it exits 0.
func confined(t *testing.T, p sandbox.Policy, argv []string, env ...string) string {
	t.Helper()
	r := confinedResult(t, p, argv, env...)
	if r.code != 0 {
		t.Fatalf("confined %q: exit %d, stderr %q, stdout %q", argv, r.code, r.stderr, r.stdout)
	}
	return r.stdout
}

func confinedResult(t *testing.T, p sandbox.Policy, argv []string, env ...string) result {
	t.Helper()
	cmd, err := sandbox.Command(self, p, argv)
	if err != nil {
		t.Fatal(err)
	}
	return run(t, cmd, env...)
}

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

func TestProbe(t *testing.T) {
	st := sandbox.Probe()
	t.Logf("%+v", st)
	if st != sandbox.Probe() {
		t.Errorf("Probe changed between calls")
	}
	if !st.Available {
		if st.Reason == "" || st.ABI != 0 || st.Network || st.Scoped {
			t.Errorf("unavailable status is inconsistent: %+v", st)
		}
		return
	}
	if st.ABI < 1 || st.Reason != "" || st.Network != (st.ABI >= 4) || st.Scoped != (st.ABI >= 6) {
		t.Errorf("available status is inconsistent: %+v", st)
	}
}

// A confined shell reads and executes under ReadOnly and the system
// directories, writes to /dev/null, passes its exit status through, and a
// missing policy path is skipped rather than fatal.
func TestReadAndExecuteReadOnly(t *testing.T) {
	requireLandlock(t)
	ro := t.TempDir()
	writeFile(t, filepath.Join(ro, "data.txt"), "hello\n", 0o644)
	writeFile(t, filepath.Join(ro, "run.sh"), "#!/bin/sh\necho script-ran\n", 0o755)
	p := basePolicy()
	p.ReadOnly = append(p.ReadOnly, ro, "/nonexistent/plugboard-sandbox-test")

	out := confined(t, p, []string{"/bin/sh", "-c",
		`cat "$0/data.txt" && "$0/run.sh" && ls "$0" && echo x >/dev/null && echo devnull-ok`, ro})
	if want := "hello\nscript-ran\ndata.txt\nrun.sh\ndevnull-ok"; out != want {
		t.Errorf("stdout = %q, want %q", out, want)
	}
	if r := confinedResult(t, p, []string{"/bin/sh", "-c", "exit 7"}); r.code != 7 {
		t.Errorf("exit status = %d, want 7 passed through", r.code)
	}
}

// A file outside the policy cannot be read, although file modes allow it:
// the unconfined control run reads it.
func TestCannotReadOutsidePolicy(t *testing.T) {
	requireLandlock(t)
	secret := filepath.Join(t.TempDir(), "secret.txt")
	writeFile(t, secret, "s3cret\n", 0o644)

	if got := run(t, helperArgv("read", secret)).stdout; got != "s3cret" {
		t.Fatalf("unconfined control read %q, want the secret", got)
	}
	if got := confined(t, basePolicy(), helperArgv("read", secret)); got != "EACCES" {
		t.Errorf("confined read = %q, want EACCES", got)
	}
	r := confinedResult(t, basePolicy(), []string{"/bin/cat", secret})
	if r.code == 0 || strings.Contains(r.stdout, "s3cret") || !strings.Contains(r.stderr, "Permission denied") {
		t.Errorf("confined cat: %+v, want a permission error and no secret", r)
	}
}

// ReadWrite directories take writes, creations, renames across directories,
// symlinks and removals; a ReadWrite file can be rewritten (truncated) but
// grants nothing beside it; no device node can be made even as root.
func TestReadWrite(t *testing.T) {
	requireLandlock(t)
	rw := t.TempDir()
	fileDir := t.TempDir()
	rwFile := filepath.Join(fileDir, "file.txt")
	writeFile(t, rwFile, "old\n", 0o644)
	p := basePolicy()
	p.ReadWrite = []string{rw, rwFile}

	confined(t, p, []string{"/bin/sh", "-c", `set -e
		echo new > "$0/new.txt"
		mkdir "$0/sub"
		mv "$0/new.txt" "$0/sub/moved.txt"
		ln -s moved.txt "$0/sub/link"
		mkdir "$0/gone" && rm -r "$0/gone" "$0/sub/link"
		echo replaced > "$1"
		echo appended >> "$1"`, rw, rwFile})
	if b, err := os.ReadFile(filepath.Join(rw, "sub", "moved.txt")); err != nil || string(b) != "new\n" {
		t.Errorf("moved.txt: %q, %v", b, err)
	}
	for _, gone := range []string{"new.txt", "gone", "sub/link"} {
		if _, err := os.Lstat(filepath.Join(rw, gone)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still exists (%v)", gone, err)
		}
	}
	if b, _ := os.ReadFile(rwFile); string(b) != "replaced\nappended\n" {
		t.Errorf("ReadWrite file = %q", b)
	}

	sibling := filepath.Join(fileDir, "sibling.txt")
	if got := confined(t, p, helperArgv("write", sibling)); got != "EACCES" {
		t.Errorf("creating a sibling of a ReadWrite file = %q, want EACCES", got)
	}
	node := filepath.Join(rw, "null2")
	if got := confined(t, p, helperArgv("mknod", node)); got == "ok" {
		t.Errorf("mknod of a character device under ReadWrite succeeded")
	}
	if _, err := os.Lstat(node); err == nil {
		t.Errorf("device node %s exists", node)
	}
}

// Nothing under ReadOnly can be written or created.
func TestCannotWriteReadOnly(t *testing.T) {
	requireLandlock(t)
	ro := t.TempDir()
	existing := filepath.Join(ro, "existing.txt")
	writeFile(t, existing, "original\n", 0o644)
	p := basePolicy()
	p.ReadOnly = append(p.ReadOnly, ro)

	if got := confined(t, p, helperArgv("write", existing)); got != "EACCES" {
		t.Errorf("overwriting a ReadOnly file = %q, want EACCES", got)
	}
	created := filepath.Join(ro, "created.txt")
	if got := confined(t, p, helperArgv("write", created)); got != "EACCES" {
		t.Errorf("creating under ReadOnly = %q, want EACCES", got)
	}
	if b, _ := os.ReadFile(existing); string(b) != "original\n" {
		t.Errorf("ReadOnly file changed to %q", b)
	}
	if _, err := os.Stat(created); err == nil {
		t.Errorf("%s was created", created)
	}
}

// The confinement is inherited: a grandchild (forked by a shell started by
// the confined shell) is denied the secret too.
func TestGrandchildIsConfined(t *testing.T) {
	requireLandlock(t)
	secret := filepath.Join(t.TempDir(), "secret.txt")
	writeFile(t, secret, "s3cret\n", 0o644)

	// "& wait" makes each shell fork rather than exec its last command.
	script := `/bin/sh -c '"$HELPER" ` + helperArg + ` read "$SECRET" & wait' & wait`
	out := confined(t, basePolicy(), []string{"/bin/sh", "-c", script}, "HELPER="+self, "SECRET="+secret)
	if out != "EACCES" {
		t.Errorf("grandchild read = %q, want EACCES", out)
	}
}

// NetworkClosed refuses TCP connections except to AllowConnectTCP ports,
// and refuses binding, also through Multipath TCP, which Landlock's TCP
// rules do not see and Go's net.Listen tries first.
func TestNetworkClosed(t *testing.T) {
	if st := requireLandlock(t); !st.Network {
		t.Skipf("NetworkClosed cannot be enforced here (Landlock ABI %d)", st.ABI)
	}
	allowed, denied := listen(t), listen(t)
	if got := run(t, helperArgv("connect", denied)).stdout; got != "ok" {
		t.Fatalf("unconfined control connect = %q", got)
	}
	_, port, _ := net.SplitHostPort(allowed)
	n, _ := strconv.Atoi(port)
	p := basePolicy()
	p.NetworkClosed = true
	p.AllowConnectTCP = []uint16{uint16(n)}

	if got := confined(t, p, helperArgv("connect", allowed)); got != "ok" {
		t.Errorf("connect to allowed port = %q, want ok", got)
	}
	if got := confined(t, p, helperArgv("connect", denied)); got != "EACCES" {
		t.Errorf("connect to other port = %q, want EACCES", got)
	}
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0", ":0"} {
		if got := confined(t, p, helperArgv("listen", addr)); got != "EACCES" {
			t.Errorf("listen %s = %q, want EACCES", addr, got)
		}
	}
	if got := confined(t, basePolicy(), helperArgv("connect", denied)); got != "ok" {
		t.Errorf("connect without NetworkClosed = %q, want ok", got)
	}

	num := func(n int) string { return strconv.Itoa(n) }
	for _, c := range []struct {
		name               string
		family, typ, proto int
		want               string
	}{
		{"tcp", unix.AF_INET, unix.SOCK_STREAM, 0, "ok"},
		{"tcp6", unix.AF_INET6, unix.SOCK_STREAM | unix.SOCK_CLOEXEC, unix.IPPROTO_TCP, "ok"},
		{"udp", unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_UDP, "ok"},
		{"unix", unix.AF_UNIX, unix.SOCK_STREAM, 0, "ok"},
		{"mptcp", unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP, "EPROTONOSUPPORT"},
		{"mptcp6", unix.AF_INET6, unix.SOCK_STREAM | unix.SOCK_NONBLOCK, unix.IPPROTO_MPTCP, "EPROTONOSUPPORT"},
		{"seqpacket", unix.AF_INET, unix.SOCK_SEQPACKET, 0, "EPROTONOSUPPORT"},
		{"raw", unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_TCP, "EPROTONOSUPPORT"},
	} {
		argv := helperArgv("socket", num(c.family), num(c.typ), num(c.proto))
		if got := confined(t, p, argv); got != c.want {
			t.Errorf("socket %s = %q, want %s", c.name, got, c.want)
		}
	}
	// The control shows the kernel would have made the MPTCP socket.
	if got := confined(t, basePolicy(), helperArgv("socket", num(unix.AF_INET), num(unix.SOCK_STREAM), num(unix.IPPROTO_MPTCP))); got != "ok" {
		t.Logf("MPTCP is not available here (%s): the MPTCP cases prove less", got)
	}
	if got := confined(t, p, helperArgv("io_uring")); got != "ENOSYS" {
		t.Errorf("io_uring_setup = %q, want ENOSYS", got)
	}
}

// listen serves TCP on 127.0.0.1 until the test ends and returns the address.
func listen(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return l.Addr().String()
}

// With scoping the confined tree can neither signal the host (the test
// process, same user) nor connect to its abstract unix sockets, while it
// can still signal itself.
func TestScopedSignalsAndAbstractSockets(t *testing.T) {
	if st := requireLandlock(t); !st.Scoped {
		t.Skipf("Landlock ABI %d has no scoping (needs 6)", st.ABI)
	}
	// Should a signal get through, it must fail the test, not kill it.
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	defer signal.Stop(usr1)
	pid := strconv.Itoa(os.Getpid())

	if got := run(t, helperArgv("kill", pid, "0")).stdout; got != "ok" {
		t.Fatalf("unconfined control kill = %q", got)
	}
	if got := confined(t, basePolicy(), helperArgv("kill", pid, "0")); got != "EPERM" {
		t.Errorf("kill(host, 0) = %q, want EPERM", got)
	}
	if got := confined(t, basePolicy(), helperArgv("kill", pid, strconv.Itoa(int(syscall.SIGUSR1)))); got != "EPERM" {
		t.Errorf("kill(host, SIGUSR1) = %q, want EPERM", got)
	}
	select {
	case <-usr1:
		t.Errorf("SIGUSR1 reached the host")
	case <-time.After(100 * time.Millisecond):
	}
	// The shell's $$ is the confined process itself.
	if got := confined(t, basePolicy(), []string{"/bin/sh", "-c", `kill -0 $$ && echo ok`}); got != "ok" {
		t.Errorf("kill(self, 0) = %q, want ok", got)
	}

	name := "@plugboard-sandbox-test-" + pid
	l, err := net.Listen("unix", name)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	if got := run(t, helperArgv("unix", name)).stdout; got != "ok" {
		t.Fatalf("unconfined control connect to %s = %q", name, got)
	}
	if got := confined(t, basePolicy(), helperArgv("unix", name)); got != "EPERM" {
		t.Errorf("connect to the host's abstract socket = %q, want EPERM", got)
	}
}

// From ABI 9 a pathname unix socket can be connected to under ReadWrite
// only. Below it Landlock does not see such connections at all.
func TestPathnameUnixSockets(t *testing.T) {
	if st := requireLandlock(t); st.ABI < 9 {
		t.Skipf("Landlock ABI %d does not control pathname unix sockets (needs 9)", st.ABI)
	}
	rw, outside := t.TempDir(), t.TempDir()
	p := basePolicy()
	p.ReadWrite = []string{rw}
	for _, c := range []struct {
		dir     string
		allowed bool
	}{{rw, true}, {outside, false}} {
		path := filepath.Join(c.dir, "s")
		l, err := net.Listen("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		if got := confined(t, p, helperArgv("unix", path)); (got == "ok") != c.allowed {
			t.Errorf("connect to %s = %q, want allowed %v", path, got, c.allowed)
		}
	}
}

// The launcher fails closed: on a bad policy or command line it exits 126
// with one line of reason and runs nothing. This holds without Landlock.
func TestLauncherFailsClosed(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	prog := []string{"/bin/sh", "-c", `touch "$0"`, marker}
	launcher := func(args ...string) []string {
		return append([]string{self, sandbox.LauncherArg}, args...)
	}
	withProg := func(policy string) []string { return launcher(append([]string{policy, "--"}, prog...)...) }
	for name, argv := range map[string][]string{
		"not json":        withProg(`{not json`),
		"unknown field":   withProg(`{"readonly":["/usr"],"bogus":true}`),
		"trailing data":   withProg(`{} {}`),
		"relative path":   withProg(`{"readOnly":["usr"]}`),
		"unclean path":    withProg(`{"readWrite":["/tmp/../etc"]}`),
		"device not /dev": withProg(`{"devices":["/home"]}`),
		"ports, open net": withProg(`{"allowConnectTCP":[22]}`),
		"no separator":    launcher(append([]string{`{}`}, prog...)...),
		"relative prog":   launcher(`{}`, "--", "sh", "-c", `touch "$0"`, marker),
		"nothing":         launcher(),
	} {
		t.Run(name, func(t *testing.T) {
			r := run(t, argv)
			assertFailedClosed(t, r, marker)
		})
	}

	// A policy that does not grant the program: confined, the exec fails.
	t.Run("program not granted", func(t *testing.T) {
		requireLandlock(t)
		r := run(t, launcher(`{}`, "--", "/bin/sh", "-c", `touch "$0"`, marker))
		assertFailedClosed(t, r, marker)
		if !strings.Contains(r.stderr, "EACCES") {
			t.Errorf("stderr %q does not name EACCES", r.stderr)
		}
	})
}

func assertFailedClosed(t *testing.T, r result, marker string) {
	t.Helper()
	if r.code != 126 {
		t.Errorf("exit status %d, want 126", r.code)
	}
	if !strings.HasPrefix(r.stderr, "plugboard sandbox: ") || strings.Contains(r.stderr, "\n") {
		t.Errorf("stderr %q, want one line \"plugboard sandbox: <reason>\"", r.stderr)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the program ran")
	}
	t.Log(r.stderr)
}

// TestOtherProcessesEnvironHidden: a confined process cannot read another
// process's environment (/proc/PID/environ), the way a host's secrets
// would leak. Landlock refuses ptrace-level access across domains — but
// honours CAP_SYS_PTRACE, so for root the launcher must drop it: this test
// running as root is the case that needs it.
func TestOtherProcessesEnvironHidden(t *testing.T) {
	requireLandlock(t)
	cmd := exec.Command("sleep", "60")
	cmd.Env = append(os.Environ(), "SANDBOX_TEST_SECRET=hidden-value")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	environ := fmt.Sprintf("/proc/%d/environ", cmd.Process.Pid)
	if got := run(t, helperArgv("read", environ)).stdout; !strings.Contains(got, "hidden-value") {
		t.Fatalf("unconfined control cannot read %s: %q", environ, got)
	}
	if got := confined(t, basePolicy(), helperArgv("read", environ)); got != "EACCES" {
		t.Fatalf("confined read of another process's environment: %q, want EACCES", got)
	}
	if os.Geteuid() == 0 {
		status := confined(t, basePolicy(), helperArgv("read", "/proc/self/status"))
		for _, line := range strings.Split(status, "\n") {
			if strings.HasPrefix(line, "CapBnd:") {
				bnd, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(line, "CapBnd:")), 16, 64)
				if bnd&(1<<unix.CAP_SYS_PTRACE) != 0 || bnd&(1<<unix.CAP_SYS_ADMIN) != 0 || bnd&(1<<unix.CAP_DAC_READ_SEARCH) != 0 {
					t.Fatalf("a confined root process keeps CAP_SYS_PTRACE, CAP_SYS_ADMIN or CAP_DAC_READ_SEARCH: %s", line)
				}
			}
		}
	}
}
