package procsup

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// stopBound is a generous upper bound for "Stop returns": it only catches
// hangs, it does not measure anything.
const stopBound = 5 * time.Second

// collector records lines and checks that OnLine calls never overlap.
type collector struct {
	t        *testing.T
	inFlight atomic.Int32
	mu       sync.Mutex
	lines    map[Stream][]string
	notify   chan string // every line, for tests waiting for one
}

func newCollector(t *testing.T) *collector {
	return &collector{t: t, lines: map[Stream][]string{}, notify: make(chan string, 1024)}
}

func (c *collector) onLine(stream Stream, line []byte) {
	if c.inFlight.Add(1) != 1 {
		c.t.Errorf("concurrent OnLine calls")
	}
	defer c.inFlight.Add(-1)
	c.mu.Lock()
	c.lines[stream] = append(c.lines[stream], string(line))
	c.mu.Unlock()
	select {
	case c.notify <- string(line):
	default:
	}
}

func (c *collector) get(stream Stream) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.lines[stream]...)
}

// waitLine returns the first line, from either stream, that arrives within
// the bound.
func (c *collector) waitLine() string {
	c.t.Helper()
	select {
	case l := <-c.notify:
		return l
	case <-time.After(stopBound):
		c.t.Fatal("no output line")
		return ""
	}
}

func start(t *testing.T, spec Spec) (*Process, *collector) {
	t.Helper()
	c := newCollector(t)
	p, err := Start(context.Background(), spec, c.onLine)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(true, 0) })
	return p, c
}

func wait(t *testing.T, p *Process) Result {
	t.Helper()
	select {
	case <-p.Done():
		return p.Result()
	case <-time.After(stopBound):
		t.Fatal("process did not finish")
		return Result{}
	}
}

func stop(t *testing.T, p *Process, force bool, grace time.Duration) {
	t.Helper()
	returned := make(chan struct{})
	go func() { p.Stop(force, grace); close(returned) }()
	select {
	case <-returned:
	case <-time.After(grace + stopBound):
		t.Fatal("Stop did not return")
	}
	select {
	case <-p.Done():
	default:
		t.Fatal("Stop returned before Done")
	}
}

// waitGone polls because a killed process may stay a zombie for a moment
// and /proc may lag the signal.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(stopBound)
	for Alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still alive", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestLinesFromBothStreams(t *testing.T) {
	t.Parallel()
	p, c := start(t, Spec{Argv: []string{"bash", "-c", `
		for i in 1 2 3; do echo out$i; echo err$i >&2; done
		printf 'crlf\r\n'
		seq 1 2000 & seq 1 2000 >&2; wait
		printf 'tail'`}})
	res := wait(t, p)
	if res.ExitCode != 0 || res.Signal != "" || res.StoppedBy != "" || res.Err != nil {
		t.Fatalf("result = %+v", res)
	}
	var seq []string
	for i := 1; i <= 2000; i++ {
		seq = append(seq, strconv.Itoa(i))
	}
	wantOut := append(append([]string{"out1", "out2", "out3", "crlf"}, seq...), "tail")
	wantErr := append([]string{"err1", "err2", "err3"}, seq...)
	if got := c.get(Stdout); !reflect.DeepEqual(got, wantOut) {
		t.Errorf("stdout: got %d lines %q..., want %d", len(got), got[:min(len(got), 6)], len(wantOut))
	}
	if got := c.get(Stderr); !reflect.DeepEqual(got, wantErr) {
		t.Errorf("stderr: got %d lines %q..., want %d", len(got), got[:min(len(got), 6)], len(wantErr))
	}
}

func TestHugeLineIsChunked(t *testing.T) {
	t.Parallel()
	const size = 10 << 20
	const maxLine = 64 << 10
	var chunks, total, longest int
	var after []string
	p, err := Start(context.Background(), Spec{
		Argv:         []string{"bash", "-c", fmt.Sprintf(`head -c %d /dev/zero | tr '\0' a; printf '\nafter\n'`, size)},
		MaxLineBytes: maxLine,
	}, func(_ Stream, line []byte) {
		if len(line) > 0 && bytes.Count(line, []byte("a")) == len(line) {
			chunks++
			total += len(line)
			longest = max(longest, len(line))
			return
		}
		after = append(after, string(line))
	})
	if err != nil {
		t.Fatal(err)
	}
	res := wait(t, p)
	if res.ExitCode != 0 || res.Err != nil {
		t.Fatalf("result = %+v", res)
	}
	if total != size || longest != maxLine || chunks != size/maxLine {
		t.Errorf("got %d chunks, %d bytes, longest %d; want %d chunks of %d", chunks, total, longest, size/maxLine, maxLine)
	}
	// The "\n" right after an exact multiple of the chunk size ends the long
	// line: no empty line appears before "after".
	if !reflect.DeepEqual(after, []string{"after"}) {
		t.Errorf("lines after the long one: %q", after)
	}
}

func TestExitCodes(t *testing.T) {
	t.Parallel()
	for _, code := range []int{0, 3} {
		p, _ := start(t, Spec{Argv: []string{"sh", "-c", fmt.Sprintf("exit %d", code)}})
		res := wait(t, p)
		if res.ExitCode != code || res.Signal != "" || res.Err != nil {
			t.Errorf("exit %d: result = %+v", code, res)
		}
	}
}

func TestGracefulStop(t *testing.T) {
	t.Parallel()
	p, _ := start(t, Spec{Argv: []string{"sleep", "100"}})
	stop(t, p, false, 5*time.Second)
	res := p.Result()
	if res.ExitCode != -1 || res.Signal != "interrupt" || res.StoppedBy != StopGraceful {
		t.Errorf("result = %+v", res)
	}
}

func TestGracefulStopEscalates(t *testing.T) {
	t.Parallel()
	p, c := start(t, Spec{Argv: []string{"bash", "-c", `trap '' INT; echo ready; sleep 100`}})
	c.waitLine() // the trap is in place
	stop(t, p, false, 300*time.Millisecond)
	res := p.Result()
	if res.ExitCode != -1 || res.Signal != "killed" || res.StoppedBy != StopGraceful {
		t.Errorf("result = %+v", res)
	}
}

func TestForceStop(t *testing.T) {
	t.Parallel()
	p, _ := start(t, Spec{Argv: []string{"sleep", "100"}})
	stop(t, p, true, 0)
	res := p.Result()
	if res.ExitCode != -1 || res.Signal != "killed" || res.StoppedBy != StopForce {
		t.Errorf("result = %+v", res)
	}
}

func TestStopKillsGrandchild(t *testing.T) {
	t.Parallel()
	for _, force := range []bool{true, false} {
		t.Run(fmt.Sprintf("force=%v", force), func(t *testing.T) {
			t.Parallel()
			// bash runs the background sleep with SIGINT ignored, so in the
			// graceful case only the kill that follows the leader's exit
			// reaches it.
			p, c := start(t, Spec{Argv: []string{"bash", "-c", `sleep 100 & echo $!; wait`}})
			gpid, err := strconv.Atoi(c.waitLine())
			if err != nil {
				t.Fatal(err)
			}
			if !Alive(gpid) {
				t.Fatalf("grandchild %d not alive before Stop", gpid)
			}
			stop(t, p, force, 5*time.Second)
			waitGone(t, gpid)
		})
	}
}

func TestLeaderExitKillsGroup(t *testing.T) {
	t.Parallel()
	p, c := start(t, Spec{Argv: []string{"bash", "-c", `sleep 100 & echo $!`}})
	gpid, err := strconv.Atoi(c.waitLine())
	if err != nil {
		t.Fatal(err)
	}
	res := wait(t, p)
	if res.ExitCode != 0 || res.Err != nil {
		t.Errorf("result = %+v", res)
	}
	waitGone(t, gpid)
}

// TestEscapedDescendantDoesNotHang: where no cgroup holds the tree, a
// descendant that leaves the session and clears its environment escapes the
// tree kill; if it keeps the output pipes open, Done still closes, with the
// output cut off.
func TestEscapedDescendantDoesNotHang(t *testing.T) {
	t.Parallel()
	// The pid file is written after setsid, so the leader exits only once
	// the descendant is out of the group and beyond the group kill.
	p, c := start(t, Spec{Dir: t.TempDir(), noCgroup: true, Argv: []string{"bash", "-c", `
		env -i setsid sh -c 'echo $$ > pid.tmp; mv pid.tmp pid; exec sleep 100' &
		while [ ! -e pid ]; do sleep 0.01; done
		cat pid`}})
	epid, err := strconv.Atoi(c.waitLine())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(epid, syscall.SIGKILL) })
	res := wait(t, p)
	if res.ExitCode != 0 || res.Err == nil || !strings.Contains(res.Err.Error(), "cut off") {
		t.Errorf("result = %+v, want exit 0 and an output cut-off error", res)
	}
}

// modes runs f with a cgroup per child (where this host can make one) and
// with the fallback.
func modes(t *testing.T, f func(t *testing.T, noCgroup bool)) {
	for _, noCgroup := range []bool{false, true} {
		t.Run(fmt.Sprintf("noCgroup=%v", noCgroup), func(t *testing.T) {
			t.Parallel()
			if !noCgroup {
				if _, err := hostCgroup(); err != nil {
					t.Skipf("no cgroup for children here: %v", err)
				}
			}
			f(t, noCgroup)
		})
	}
}

// detachedTree is a script that starts, each with its pid printed on a line
// of its own once it runs, a child that left the session (setsid), a double
// fork and a double fork that left the session, all ignoring SIGINT, and
// prints "ready" and sleeps.
const detachedTree = `trap '' INT
setsid sh -c 'echo $$; exec sleep 100' &
( sh -c 'echo $$; exec sleep 100' & )
( setsid sh -c 'sh -c "echo \$\$; exec sleep 100" & exit 0' & )
echo ready
trap - INT
sleep 100
`

// startTree starts detachedTree and returns the process with the pids of
// its three detached descendants.
func startTree(t *testing.T, noCgroup bool) (*Process, []int) {
	t.Helper()
	p, c := start(t, Spec{noCgroup: noCgroup, Argv: []string{"bash", "-c", detachedTree}})
	var pids []int
	for ready := false; !ready || len(pids) < 3; {
		line := c.waitLine()
		if line == "ready" {
			ready = true
			continue
		}
		pid, err := strconv.Atoi(line)
		if err != nil {
			t.Fatalf("tree printed %q", line)
		}
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		pids = append(pids, pid)
	}
	if len(pids) != 3 {
		t.Fatalf("tree started %d descendants, want 3", len(pids))
	}
	for _, pid := range pids {
		if !Alive(pid) {
			t.Fatalf("descendant %d not alive", pid)
		}
	}
	if got := p.Cgroup() != ""; got == noCgroup {
		t.Fatalf("Cgroup() = %q with noCgroup=%v", p.Cgroup(), noCgroup)
	}
	return p, pids
}

func TestLeaderExitKillsDetachedTree(t *testing.T) {
	t.Parallel()
	modes(t, func(t *testing.T, noCgroup bool) {
		p, pids := startTree(t, noCgroup)
		if err := syscall.Kill(p.PID(), syscall.SIGTERM); err != nil { // the leader alone
			t.Fatal(err)
		}
		if res := wait(t, p); res.Signal != "terminated" || res.Err != nil {
			t.Errorf("result = %+v", res)
		}
		for _, pid := range pids {
			waitGone(t, pid)
		}
		if cg := p.Cgroup(); cg != "" {
			if _, err := os.Stat(cg); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("cgroup %s left behind: %v", cg, err)
			}
		}
	})
}

func TestStopKillsDetachedTree(t *testing.T) {
	t.Parallel()
	for _, force := range []bool{true, false} {
		t.Run(fmt.Sprintf("force=%v", force), func(t *testing.T) {
			t.Parallel()
			modes(t, func(t *testing.T, noCgroup bool) {
				p, pids := startTree(t, noCgroup)
				stop(t, p, force, 5*time.Second)
				for _, pid := range pids {
					waitGone(t, pid)
				}
			})
		})
	}
}

func TestStopAfterExit(t *testing.T) {
	t.Parallel()
	p, _ := start(t, Spec{Argv: []string{"true"}})
	wait(t, p)
	stop(t, p, false, time.Second)
	stop(t, p, true, 0)
	if res := p.Result(); res.ExitCode != 0 || res.StoppedBy != "" {
		t.Errorf("result = %+v", res)
	}
}

func TestConcurrentStop(t *testing.T) {
	t.Parallel()
	p, _ := start(t, Spec{Argv: []string{"bash", "-c", `trap '' INT; sleep 100`}})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.Stop(i%3 == 0, 200*time.Millisecond)
		}()
	}
	returned := make(chan struct{})
	go func() { wg.Wait(); close(returned) }()
	select {
	case <-returned:
	case <-time.After(stopBound):
		t.Fatal("concurrent Stop calls did not return")
	}
	if res := p.Result(); res.Signal == "" || res.StoppedBy == "" {
		t.Errorf("result = %+v", res)
	}
}

func TestStdin(t *testing.T) {
	t.Parallel()
	p, c := start(t, Spec{Argv: []string{"cat"}, Stdin: "a\nb\n"})
	wait(t, p)
	if got := c.get(Stdout); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("stdout = %q", got)
	}

	// More than a pipe buffer, so the writer must keep up with the reader.
	big := strings.Repeat("x", 1<<20)
	p, c = start(t, Spec{Argv: []string{"wc", "-c"}, Stdin: big})
	wait(t, p)
	if got := c.get(Stdout); len(got) != 1 || strings.TrimSpace(got[0]) != strconv.Itoa(len(big)) {
		t.Errorf("wc -c = %q", got)
	}

	// A child that never reads a large stdin must not hang Done.
	p, _ = start(t, Spec{Argv: []string{"true"}, Stdin: big})
	wait(t, p)

	// No Stdin: /dev/null, so cat sees EOF at once.
	p, c = start(t, Spec{Argv: []string{"cat"}})
	wait(t, p)
	if got := c.get(Stdout); len(got) != 0 {
		t.Errorf("stdout = %q", got)
	}
}

func TestDirAndEnv(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p, c := start(t, Spec{Dir: dir, Env: []string{"PROCSUP_X=1", "PROCSUP_X=2"}, Argv: []string{"sh", "-c", `pwd -P; echo "$PWD"; echo "$PROCSUP_X"`}})
	wait(t, p)
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.get(Stdout), []string{real, dir, "2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestStartFailure(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, spec := range []Spec{
		{Dir: dir, Argv: []string{"procsup-no-such-program"}},
		{Dir: filepath.Join(dir, "missing"), Argv: []string{"true"}},
		{Argv: nil},
	} {
		p, err := Start(context.Background(), spec, nil)
		if err == nil {
			p.Stop(true, 0)
			t.Errorf("%+v: no error", spec)
			continue
		}
		if len(spec.Argv) > 0 && (!strings.Contains(err.Error(), spec.Argv[0]) || !strings.Contains(err.Error(), spec.Dir)) {
			t.Errorf("error %q does not name program %q and dir %q", err, spec.Argv[0], spec.Dir)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Start(ctx, Spec{Argv: []string{"true"}}, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled ctx: err = %v", err)
	}
}

func TestResultBeforeDone(t *testing.T) {
	t.Parallel()
	p, _ := start(t, Spec{Argv: []string{"sleep", "100"}})
	if res := p.Result(); !errors.Is(res.Err, ErrRunning) || res.ExitCode != -1 {
		t.Errorf("result = %+v", res)
	}
}

// Linux sends Pdeathsig when the thread that forked the child exits. A
// goroutine that returns while locked to its thread makes the runtime end
// that thread, so a child forked from the caller's thread would die here.
func TestStarterThreadExitDoesNotKillChild(t *testing.T) {
	t.Parallel()
	var p *Process
	var err error
	started := make(chan struct{})
	go func() {
		defer close(started)
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		p, err = Start(context.Background(), Spec{Argv: []string{"sleep", "100"}}, nil)
	}()
	<-started
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(true, 0)
	time.Sleep(300 * time.Millisecond)
	select {
	case <-p.Done():
		t.Fatalf("child died with its starter's thread: %+v", p.Result())
	default:
	}
	if !Alive(p.PID()) {
		t.Fatal("child not alive")
	}
}

// The test binary re-runs itself as a host that starts a child and exits.
func TestHostDeathKillsChild(t *testing.T) {
	if os.Getenv("PROCSUP_TEST_HOST") == "1" {
		p, err := Start(context.Background(), Spec{Argv: []string{"sleep", "100"}}, nil)
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println(p.PID())
		os.Exit(0)
	}
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHostDeathKillsChild$")
	cmd.Env = append(os.Environ(), "PROCSUP_TEST_HOST=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	_ = cmd.Wait()
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("host printed %q", line)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	waitGone(t, pid)
}

func TestAliveAndKillGroup(t *testing.T) {
	t.Parallel()
	if Alive(0) || Alive(-1) {
		t.Error("Alive of a non-pid")
	}
	if !Alive(os.Getpid()) {
		t.Error("own process not alive")
	}
	if err := KillGroup(0); err == nil {
		t.Error("KillGroup(0) accepted")
	}

	// An orphan-like group started outside the package, as left by a
	// crashed host.
	cmd := exec.Command("bash", "-c", `sleep 100 & echo $!; wait`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	gpid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("bash printed %q", line)
	}
	pid := cmd.Process.Pid
	if !Alive(pid) || !Alive(gpid) {
		t.Fatal("group not alive")
	}
	if err := KillGroup(pid); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waitGone(t, gpid)
	if Alive(pid) {
		t.Error("leader alive after KillGroup")
	}
	if err := KillGroup(pid); err != nil {
		t.Errorf("KillGroup of a gone group: %v", err)
	}
}

func TestKillGroupIf(t *testing.T) {
	t.Parallel()
	p, c := start(t, Spec{Argv: []string{"bash", "-c", `sleep 100 & echo $!; wait`}})
	gpid, err := strconv.Atoi(c.waitLine())
	if err != nil {
		t.Fatal(err)
	}
	id := p.Identity()
	if id == "" {
		t.Fatal("no identity")
	}
	if now, err := Identity(p.PID()); err != nil || now != id {
		t.Fatalf("Identity = %q, %v; want %q", now, err, id)
	}

	// A stale identity (the pid reused by another process) must not kill.
	sent, err := KillGroupIf(p.PID(), id+"0")
	if sent || err != nil {
		t.Fatalf("stale identity: sent=%v err=%v", sent, err)
	}
	if sent, err := KillGroupIf(p.PID(), ""); sent || err != nil {
		t.Fatalf("empty identity: sent=%v err=%v", sent, err)
	}
	select {
	case <-p.Done():
		t.Fatal("killed with a stale identity")
	case <-time.After(100 * time.Millisecond):
	}

	sent, err = KillGroupIf(p.PID(), id)
	if !sent || err != nil {
		t.Fatalf("matching identity: sent=%v err=%v", sent, err)
	}
	if res := wait(t, p); res.Signal != "killed" {
		t.Errorf("result = %+v", res)
	}
	waitGone(t, gpid)
}

// Not parallel: the goroutine count must not move under other tests.
func TestNoGoroutineLeak(t *testing.T) {
	// The cgroup directory and its watchdog (one goroutine waiting for it)
	// are the host's, made at the first start, not a process's.
	hostCgroup()
	base := runtime.NumGoroutine()
	for _, spec := range []Spec{
		{Argv: []string{"sh", "-c", "echo out; echo err >&2"}, Stdin: "ignored"},
		{Argv: []string{"sleep", "100"}},
	} {
		p, err := Start(context.Background(), spec, func(Stream, []byte) {})
		if err != nil {
			t.Fatal(err)
		}
		go p.Stop(false, 100*time.Millisecond)
		wait(t, p)
	}
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, started with %d:\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
