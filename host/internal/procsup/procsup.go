package procsup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/plugboard/plugboard/host/internal/sandbox"
)

// DefaultMaxLineBytes is the chunk size used when Spec.MaxLineBytes is 0.
const DefaultMaxLineBytes = 64 << 10

// drainTimeout bounds how long Done waits for the output pipes to reach EOF
// after the tree has been killed. Only a descendant that escaped it (left
// the group and cleared its environment, where no cgroup holds the tree) can
// still hold them; its output is not worth a hang.
const drainTimeout = 2 * time.Second

// cgroupWait bounds how long the end of a tree waits for its cgroup to empty
// after cgroup.kill, so the cgroup can be removed and Done means gone.
const cgroupWait = 2 * time.Second

// Spec describes the child to run.
type Spec struct {
	// Dir is the working directory; "" means the host's.
	Dir string
	// Argv is the program and its arguments. A program name without a slash
	// is looked up in the host's PATH, not in Env's.
	Argv []string
	// Env holds KEY=VALUE pairs for the child's environment, appended to
	// os.Environ() unless NoInheritEnv is set; a later duplicate key wins.
	// PWD is set to Dir unless Env sets it. TreeEnv is always set.
	Env []string
	// NoInheritEnv makes Env the child's whole environment: nothing of the
	// host's own (its secrets) reaches the child unless Env carries it.
	NoInheritEnv bool
	// Stdin is written to the child's stdin, which is then closed; "" gives
	// the child /dev/null.
	Stdin string
	// MaxLineBytes is the longest line delivered in one piece; a longer line
	// arrives as several consecutive chunks of at most this size. It is also
	// the read buffer per stream, so it bounds memory whatever the child
	// prints. 0 means DefaultMaxLineBytes.
	MaxLineBytes int

	// Sandbox, when set, confines the child and all it starts
	// (host/internal/sandbox): the child is started as Launcher's sandbox
	// launcher, which restricts itself and then executes Argv. Argv[0] is
	// resolved in the host's PATH first.
	Sandbox *sandbox.Policy
	// Launcher is the executable whose launcher mode confines (sandbox.Main
	// must run in it); "" is this process's own executable.
	Launcher string

	// noCgroup starts the child without a cgroup, as where none can be
	// made; for tests of the fallback.
	noCgroup bool
}

// Stream names an output stream of the child.
type Stream string

// The child's output streams.
const (
	Stdout Stream = "stdout"
	Stderr Stream = "stderr"
)

// OnLine receives one line of output without its "\n" (and without a "\r"
// before it); an unterminated last line is delivered too. Lines of one
// stream arrive in order. Calls are serialised across both streams, so the
// callback may number lines without locking. line is a fresh copy the
// callback may keep. The callback should return promptly: the other stream
// waits for it, and a child whose pipe fills up blocks on its next write.
type OnLine func(stream Stream, line []byte)

// Values of Result.StoppedBy.
const (
	StopGraceful = "graceful"
	StopForce    = "force"
)

// Result is how the process ended.
type Result struct {
	// ExitCode is the exit status, or -1 if the process was killed by a
	// signal.
	ExitCode int
	// Signal names the signal that killed the process ("interrupt",
	// "killed"), or is "".
	Signal string
	// StoppedBy is "" if no Stop reached the process before it exited,
	// StopForce if any Stop(true) did, otherwise StopGraceful, also when a
	// graceful stop had to escalate to SIGKILL (Signal then says "killed").
	StoppedBy string
	// Err is non-nil when the run could not be observed completely: waiting
	// or reading output failed, or output was cut off because a descendant
	// that escaped the tree kept a pipe open. It does not report a non-zero
	// exit.
	Err error
}

// ErrRunning is Result's Err while the process has not finished.
var ErrRunning = errors.New("procsup: process still running")

// Process is a running (or finished) child. Its methods are safe for
// concurrent use.
type Process struct {
	pid      int
	identity string
	marker   string // the tree marker (TreeEnv) of this child
	cgroup   string // the child's cgroup directory, "" when it has none
	onLine   OnLine
	done     chan struct{}
	result   Result // written once before done is closed

	deliverMu sync.Mutex // serialises onLine

	mu          sync.Mutex
	reaped      bool // the leader is about to be reaped: its pid may be reused, so no more signals
	interrupted bool
	stoppedBy   string
}

// Start starts the child described by spec and returns once it is running.
// ctx bounds only the start: the child outlives the request that started
// it. On error nothing is left running.
func Start(ctx context.Context, spec Spec, onLine OnLine) (*Process, error) {
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return nil, errors.New("procsup: start: empty Argv")
	}
	name := spec.Argv[0]
	wrap := func(err error) error {
		return fmt.Errorf("procsup: start %q in dir %q: %w", name, spec.Dir, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, wrap(err)
	}
	argv, err := confined(spec)
	if err != nil {
		return nil, wrap(err)
	}
	name = argv[0]
	maxLine := spec.MaxLineBytes
	if maxLine <= 0 {
		maxLine = DefaultMaxLineBytes
	}

	SealHost()
	pp, err := newPipes(spec.Stdin != "")
	if err != nil {
		return nil, wrap(err)
	}
	p := &Process{onLine: onLine, done: make(chan struct{}), marker: newMarker()}
	env := environ(spec, p.marker)
	newCmd := func(cgroupFD int) *exec.Cmd {
		cmd := exec.Command(name, argv[1:]...)
		cmd.Dir = spec.Dir
		cmd.Env = env
		// Setsid rather than only Setpgid: the child also loses the
		// controlling terminal, so a tool that opens /dev/tty (a git
		// credential prompt) fails instead of being stopped by SIGTTIN for
		// ever when the host runs in a terminal. The session leader leads
		// its process group all the same.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
		if cgroupFD >= 0 {
			// Born inside its cgroup (clone3): there is no moment in which
			// it could fork a process outside it.
			cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, cgroupFD
		}
		cmd.Stdout, cmd.Stderr = pp.outW, pp.errW
		if pp.inR != nil {
			cmd.Stdin = pp.inR
		}
		return cmd
	}

	started := make(chan error, 1)
	go p.supervise(func() (*exec.Cmd, error) { return p.start(spec, newCmd) }, pp, spec.Stdin, maxLine, started)
	if err := <-started; err != nil {
		return nil, wrap(err)
	}
	return p, nil
}

// confined is the argv that starts spec's child: Argv itself, or, with a
// Sandbox, the launcher confining Argv with its program resolved (the
// launcher executes a path, it does not search).
func confined(spec Spec) ([]string, error) {
	if spec.Sandbox == nil {
		return spec.Argv, nil
	}
	prog, err := exec.LookPath(spec.Argv[0])
	if err != nil {
		return nil, err
	}
	if prog, err = filepath.Abs(prog); err != nil {
		return nil, err
	}
	launcher := spec.Launcher
	if launcher == "" {
		if launcher, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("sandbox launcher: %w", err)
		}
	}
	return sandbox.Command(launcher, *spec.Sandbox, append([]string{prog}, spec.Argv[1:]...))
}

// start starts the child in a cgroup of its own where this host can make
// one, else without. A start into a cgroup that fails where one without
// works means the kernel or the sandbox refuses clone3 or the migration:
// the host stops trying for the rest of its life.
func (p *Process) start(spec Spec, newCmd func(cgroupFD int) *exec.Cmd) (*exec.Cmd, error) {
	if !spec.noCgroup && !cgroupsBroken.Load() {
		if h, err := hostCgroup(); err == nil {
			if dir, fd, err := h.newChild(); err == nil {
				cmd := newCmd(fd)
				err := cmd.Start()
				syscall.Close(fd)
				if err == nil {
					p.cgroup = dir
					return cmd, nil
				}
				removeCgroup(dir)
				cmd = newCmd(-1)
				if err := cmd.Start(); err != nil {
					return nil, err
				}
				cgroupsBroken.Store(true)
				return cmd, nil
			}
		}
	}
	cmd := newCmd(-1)
	return cmd, cmd.Start()
}

// SealHost makes this process non-dumpable; Start calls it before the first
// child, and a host may call it earlier (before it runs git, say). Children
// run as the same user and could otherwise read the host's /proc/PID/environ
// (the secrets it was started with, such as PLUGBOARD_HTTP_TOKEN), its
// memory, or attach a debugger to it; a user with CAP_SYS_PTRACE (root)
// still can. Children are dumpable again after their exec, as usual, and
// the host no longer writes core dumps.
func SealHost() { seal() }

var seal = sync.OnceFunc(func() {
	const prSetDumpable = 4 // PR_SET_DUMPABLE from <linux/prctl.h>
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetDumpable, 0, 0)
})

func environ(spec Spec, marker string) []string {
	var env []string
	if !spec.NoInheritEnv {
		env = os.Environ()
	}
	// exec.Cmd sets PWD only when Env is nil; without this the child would
	// inherit the host's PWD, which tools that trust $PWD would believe.
	if spec.Dir != "" {
		if abs, err := filepath.Abs(spec.Dir); err == nil {
			env = append(env, "PWD="+abs)
		}
	}
	env = append(env, spec.Env...)
	// Last, so it wins: the tree a child belongs to is not the caller's to
	// choose. A host that itself runs inside a tree passes its own markers on.
	chain := marker
	if outer := os.Getenv(TreeEnv); outer != "" {
		chain = outer + ":" + marker
	}
	return append(env, TreeEnv+"="+chain)
}

// pipes are created by hand rather than with Cmd.StdoutPipe because Cmd.Wait
// closes its pipes at exit, which would lose output still buffered in them.
type pipes struct {
	outR, outW, errR, errW *os.File
	inR, inW               *os.File // nil when stdin is /dev/null
}

func newPipes(withStdin bool) (*pipes, error) {
	pp := &pipes{}
	var err error
	if pp.outR, pp.outW, err = os.Pipe(); err != nil {
		return nil, err
	}
	if pp.errR, pp.errW, err = os.Pipe(); err != nil {
		pp.closeAll()
		return nil, err
	}
	if withStdin {
		if pp.inR, pp.inW, err = os.Pipe(); err != nil {
			pp.closeAll()
			return nil, err
		}
	}
	return pp, nil
}

// closeChildEnds drops the host's copies of the ends the child uses, so EOF
// arrives when the last process holding them goes.
func (pp *pipes) closeChildEnds() {
	for _, f := range []*os.File{pp.outW, pp.errW, pp.inR} {
		if f != nil {
			f.Close()
		}
	}
}

func (pp *pipes) closeAll() {
	pp.closeChildEnds()
	for _, f := range []*os.File{pp.outR, pp.errR, pp.inW} {
		if f != nil {
			f.Close()
		}
	}
}

// supervise forks the child and stays with it until it is reaped and its
// output delivered. It runs locked to its OS thread from the fork until the
// reap: that thread is the child's parent for Pdeathsig, so it must not exit
// or be handed to other goroutines (which could exit it) in between.
func (p *Process) supervise(start func() (*exec.Cmd, error), pp *pipes, stdin string, maxLine int, started chan<- error) {
	runtime.LockOSThread()
	cmd, err := start()
	if err != nil {
		runtime.UnlockOSThread()
		pp.closeAll()
		started <- err
		return
	}
	pp.closeChildEnds()
	p.pid = cmd.Process.Pid
	// Read now: the leader cannot be reaped before this goroutine reaps it,
	// so its /proc entry is still there even if it has already exited.
	p.identity, _ = Identity(p.pid)

	var readers sync.WaitGroup
	var outErr, errErr error
	readers.Add(2)
	go func() { defer readers.Done(); outErr = p.read(pp.outR, Stdout, maxLine) }()
	go func() { defer readers.Done(); errErr = p.read(pp.errR, Stderr, maxLine) }()
	var stdinDone chan struct{}
	if pp.inW != nil {
		stdinDone = make(chan struct{})
		go func() {
			defer close(stdinDone)
			// EPIPE just means the child stopped reading; Go reports it as
			// an error rather than dying of SIGPIPE on non-stdio fds.
			_, _ = io.WriteString(pp.inW, stdin)
			pp.inW.Close()
		}()
	}
	started <- nil

	var errs []error
	waitidErr := waitExited(p.pid)
	p.mu.Lock()
	if waitidErr == nil {
		// The leader is a zombie, so the group id is still ours: kill what
		// it left behind, and without a cgroup whatever of its tree the
		// scan finds (the group id is one of its clues).
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
		if p.cgroup == "" {
			killScan(p.pid, p.marker)
		}
	} else {
		errs = append(errs, fmt.Errorf("procsup: waitid %d: %w", p.pid, waitidErr))
	}
	p.reaped = true
	stoppedBy := p.stoppedBy
	p.mu.Unlock()
	waitErr := cmd.Wait()
	runtime.UnlockOSThread()
	if p.cgroup != "" {
		// Whatever the leader left, in its group or not, is in its cgroup.
		if _, err := killCgroup(p.cgroup, cgroupWait); err != nil {
			errs = append(errs, err)
		}
	}

	drained := make(chan struct{})
	go func() { readers.Wait(); close(drained) }()
	timer := time.NewTimer(drainTimeout)
	select {
	case <-drained:
	case <-timer.C:
		errs = append(errs, fmt.Errorf("procsup: output cut off: a descendant of %d that escaped its tree kept a pipe open %v after exit", p.pid, drainTimeout))
		// Closing unblocks the pending reads.
		pp.outR.Close()
		pp.errR.Close()
		<-drained
	}
	timer.Stop()
	pp.outR.Close()
	pp.errR.Close()
	if pp.inW != nil {
		pp.inW.Close() // unblocks a write to a stdin nobody reads
		<-stdinDone
	}

	res := Result{ExitCode: -1, StoppedBy: stoppedBy}
	if st := cmd.ProcessState; st != nil {
		if ws, ok := st.Sys().(syscall.WaitStatus); ok {
			switch {
			case ws.Exited():
				res.ExitCode = ws.ExitStatus()
			case ws.Signaled():
				res.Signal = ws.Signal().String()
			}
		}
	}
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) {
		errs = append(errs, fmt.Errorf("procsup: wait %d: %w", p.pid, waitErr))
	}
	for _, e := range []error{outErr, errErr} {
		if e != nil && !errors.Is(e, os.ErrClosed) {
			errs = append(errs, fmt.Errorf("procsup: read output of %d: %w", p.pid, e))
		}
	}
	res.Err = errors.Join(errs...)
	p.result = res
	close(p.done)
}

func (p *Process) read(f *os.File, stream Stream, maxLine int) error {
	return splitLines(f, maxLine, func(line []byte) {
		cp := make([]byte, len(line))
		copy(cp, line)
		p.deliverMu.Lock()
		defer p.deliverMu.Unlock()
		if p.onLine != nil {
			p.onLine(stream, cp)
		}
	})
}

// PID is the child's process id, which is also its process group id.
func (p *Process) PID() int { return p.pid }

// Identity is the child's identity token (see Identity), or "" if it could
// not be read.
func (p *Process) Identity() string { return p.identity }

// Handle names the child and its whole tree (identity, tree marker, cgroup)
// for KillTree: store it with the pid, so crash recovery or another host can
// end everything the child started. It is "" when the identity could not be
// read.
func (p *Process) Handle() string {
	if p.identity == "" {
		return ""
	}
	return handle{identity: p.identity, marker: p.marker, cgroup: p.cgroup}.String()
}

// Cgroup is the child's cgroup directory, or "" when it runs without one.
func (p *Process) Cgroup() string { return p.cgroup }

// Done is closed once the child has exited, what it left of its tree has
// been killed, and all its output has been delivered to OnLine (or, if a
// descendant that escaped the tree holds a pipe, 2 s after the exit).
func (p *Process) Done() <-chan struct{} { return p.done }

// Result is how the process ended. Before Done it has ExitCode -1 and Err
// ErrRunning.
func (p *Process) Result() Result {
	select {
	case <-p.done:
		return p.result
	default:
		return Result{ExitCode: -1, Err: ErrRunning}
	}
}

// Stop stops the process and returns once Done is closed. force sends
// SIGKILL now to its whole tree; otherwise SIGINT is sent to its process
// group (the agent's to pass on) and, if the process is still there after
// grace, SIGKILL to the tree. It is safe to call concurrently, repeatedly
// and after exit; later calls never send a second SIGINT, which some agents
// read as "quit now" rather than "wrap up".
func (p *Process) Stop(force bool, grace time.Duration) {
	if force {
		p.signal(syscall.SIGKILL, StopForce)
		<-p.done
		return
	}
	p.signal(syscall.SIGINT, StopGraceful)
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-p.done:
		return
	case <-timer.C:
	}
	p.signal(syscall.SIGKILL, "")
	<-p.done
}

func (p *Process) signal(sig syscall.Signal, by string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reaped {
		return
	}
	if sig == syscall.SIGINT {
		if p.interrupted {
			return
		}
		p.interrupted = true
	}
	switch {
	case by == StopForce:
		p.stoppedBy = StopForce
	case by == StopGraceful && p.stoppedBy == "":
		p.stoppedBy = StopGraceful
	}
	_ = syscall.Kill(-p.pid, sig)
	if sig == syscall.SIGKILL && p.cgroup != "" {
		// At once, even if the leader is stuck and cannot die yet; the
		// fallback's scan runs when the leader has exited.
		if f, err := os.OpenFile(filepath.Join(p.cgroup, "cgroup.kill"), os.O_WRONLY, 0); err == nil {
			f.Write([]byte("1"))
			f.Close()
		}
	}
}
