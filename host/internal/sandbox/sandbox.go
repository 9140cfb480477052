package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// LauncherArg is os.Args[1] of a launcher process. It is unlikely as a real
// first argument so that Main never mistakes an ordinary invocation of the
// host for a launcher.
const LauncherArg = "__plugboard-sandbox-exec"

// exitCannotConfine is the launcher's exit status when it does not run the
// program; 126 is what shells use for "found but cannot execute".
const exitCannotConfine = 126

// Policy is what a confined process tree may reach. Paths are absolute and
// clean; one that does not exist when the launcher runs is skipped. A
// symbolic link is followed once, when the launcher opens it: the rule
// applies to its target. Rights for a path listed twice add up.
type Policy struct {
	// ReadWrite paths (directories or files) may be read, written,
	// executed, and beneath a directory files and directories may be
	// created, renamed and removed. A regular file gets only the rights
	// that apply to a file.
	ReadWrite []string `json:"readWrite,omitempty"`
	// ReadOnly paths (directories or files) may be read and executed.
	ReadOnly []string `json:"readOnly,omitempty"`
	// Devices are device files, or directories of them such as /dev/pts,
	// under /dev. They may be opened for reading and writing and, from
	// Landlock ABI 5, receive ioctls; nothing is created or removed.
	Devices []string `json:"devices,omitempty"`
	// NetworkClosed denies binding any TCP port and connecting to any TCP
	// port but those in AllowConnectTCP, and creating IPv4 or IPv6 sockets
	// other than TCP and UDP ones. UDP stays open. It needs Landlock ABI 4
	// and amd64 or arm64 (Status.Network); without them the launcher
	// refuses to run the program.
	NetworkClosed   bool     `json:"networkClosed,omitempty"`
	AllowConnectTCP []uint16 `json:"allowConnectTCP,omitempty"`
}

// Status says what the kernel offers.
type Status struct {
	ABI       int    // Landlock ABI version, 0 when unavailable
	Available bool   // filesystem confinement can be set up
	Reason    string // why not, when !Available
	Network   bool   // NetworkClosed can be enforced: TCP rules (ABI >= 4), on amd64 or arm64
	Scoped    bool   // signal and abstract-unix-socket scoping available (ABI >= 6)
}

// Probe reports what the running kernel offers. The answer is computed once
// and cached: it cannot change while the process runs.
func Probe() Status { return probeOnce() }

var probeOnce = sync.OnceValue(probe)

// Command returns the argv that runs argv confined by p through the
// launcher in the executable self (the host's own, from os.Executable).
// argv[0] must be the absolute path of the program: the launcher execs it
// as is, with no PATH search. Command refuses, with an error naming the
// problem, an invalid policy or argv and what the kernel cannot enforce,
// so that such a failure shows here rather than as exit status 126.
func Command(self string, p Policy, argv []string) ([]string, error) {
	if !filepath.IsAbs(self) || strings.ContainsRune(self, 0) {
		return nil, fmt.Errorf("sandbox: launcher %q is not an absolute path", self)
	}
	if err := validate(p, argv); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	st := Probe()
	if !st.Available {
		return nil, fmt.Errorf("sandbox: %s", st.Reason)
	}
	if p.NetworkClosed && !st.Network {
		return nil, fmt.Errorf("sandbox: %s", networkReason(st.ABI))
	}
	enc, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	return append([]string{self, LauncherArg, string(enc), "--"}, argv...), nil
}

// Main must be called first thing in the host's main. When os.Args names
// the launcher it confines the process and execs the program, never
// returning; otherwise it returns at once. On any failure to confine it
// prints one line "plugboard sandbox: <reason>" to stderr and exits with
// status 126 without running the program.
func Main() {
	if len(os.Args) < 2 || os.Args[1] != LauncherArg {
		return
	}
	err := launch(os.Args[2:]) // returns only on failure
	msg := strings.ReplaceAll(err.Error(), "\n", " ")
	fmt.Fprintf(os.Stderr, "plugboard sandbox: %s\n", msg)
	os.Exit(exitCannotConfine)
}

// parseArgs reads the launcher's arguments after LauncherArg:
// POLICY-JSON -- argv... It validates as Command does, since the launcher
// must not confine less than asked because of a malformed policy.
func parseArgs(args []string) (Policy, []string, error) {
	if len(args) < 3 || args[1] != "--" {
		return Policy{}, nil, errors.New("usage: " + LauncherArg + " POLICY-JSON -- PROGRAM [ARG...]")
	}
	var p Policy
	dec := json.NewDecoder(bytes.NewReader([]byte(args[0])))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Policy{}, nil, fmt.Errorf("policy: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Policy{}, nil, errors.New("policy: trailing data after the JSON object")
	}
	argv := args[2:]
	if err := validate(p, argv); err != nil {
		return Policy{}, nil, err
	}
	return p, argv, nil
}

func validate(p Policy, argv []string) error {
	for _, l := range []struct {
		name  string
		paths []string
	}{{"ReadWrite", p.ReadWrite}, {"ReadOnly", p.ReadOnly}, {"Devices", p.Devices}} {
		for _, path := range l.paths {
			switch {
			case strings.ContainsRune(path, 0):
				return fmt.Errorf("%s path %q contains NUL", l.name, path)
			case !filepath.IsAbs(path):
				return fmt.Errorf("%s path %q is not absolute", l.name, path)
			case filepath.Clean(path) != path:
				return fmt.Errorf("%s path %q is not clean (want %q)", l.name, path, filepath.Clean(path))
			}
		}
	}
	// Device rights include writing files: confined to /dev, Devices
	// cannot become a second, unnoticed ReadWrite.
	for _, path := range p.Devices {
		if !strings.HasPrefix(path, "/dev/") {
			return fmt.Errorf("path %q in Devices is not under /dev", path)
		}
	}
	if len(p.AllowConnectTCP) > 0 && !p.NetworkClosed {
		return errors.New("AllowConnectTCP is set but NetworkClosed is not: every port is open")
	}
	if len(argv) == 0 {
		return errors.New("no program to run")
	}
	if !filepath.IsAbs(argv[0]) {
		return fmt.Errorf("program %q is not an absolute path", argv[0])
	}
	for _, a := range argv {
		if strings.ContainsRune(a, 0) {
			return fmt.Errorf("argument %q contains NUL", a)
		}
	}
	return nil
}

// SystemReadOnly returns the system and toolchain roots that exist on this
// machine, for ReadOnly: enough for a shell, git, node or python installed
// from the distribution or under /opt or /usr/local to start and find their
// libraries, configuration, CA certificates and DNS settings. It leaves out
// every place users or programs keep their own data (/home, /root, /tmp,
// /var/tmp, /dev/shm, /run at large). /proc is needed by most runtimes;
// Landlock keeps the tree from ptrace-level access (/proc/PID/environ, mem,
// fd) to processes outside it.
func SystemReadOnly() []string {
	return existing("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
		"/etc", "/opt", "/proc", "/sys",
		// resolv.conf is a link into here where systemd-resolved manages DNS.
		"/run/systemd/resolve")
}

// StandardDevices returns the device files every program expects, for
// Devices. /dev/fd, /dev/stdin and the like are links into /proc, which
// SystemReadOnly covers.
func StandardDevices() []string {
	return existing("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom",
		"/dev/tty", "/dev/ptmx", "/dev/pts")
}

func existing(paths ...string) []string {
	var out []string
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// TestABIEnv names a variable that, set to a number below the kernel's
// Landlock ABI, makes Probe report that ABI instead (0: no Landlock), so
// that tests on a kernel with Landlock can see how the host behaves on one
// without. It can only take away: a host it is set for refuses what it
// could not enforce. Attempt processes never get it (no PLUGBOARD_*
// variable reaches them).
const TestABIEnv = "PLUGBOARD_TEST_LANDLOCK_ABI"

func testABICap() (int, bool) {
	v, ok := os.LookupEnv(TestABIEnv)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, true // a value that does not read as a cap caps at nothing: refuse
	}
	return n, true
}
