package procsup

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHostDeathKillsTree: the test binary re-runs itself as a host that
// starts a tree with detached descendants and dies by SIGKILL. With a
// cgroup, the watchdog ends the tree at once; without, the tree waits for
// KillTree with the handle the host would have stored, which ends it.
func TestHostDeathKillsTree(t *testing.T) {
	if mode := os.Getenv("PROCSUP_TEST_TREE_HOST"); mode != "" {
		lines := make(chan string, 16)
		p, err := Start(context.Background(), Spec{noCgroup: mode == "fallback", Argv: []string{"bash", "-c", detachedTree}},
			func(_ Stream, line []byte) { lines <- string(line) })
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		var pids []string
		for ready := false; !ready || len(pids) < 3; {
			if l := <-lines; l == "ready" {
				ready = true
			} else {
				pids = append(pids, l)
			}
		}
		fmt.Printf("%d %s\n%s\n", p.PID(), p.Handle(), strings.Join(pids, " "))
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
	t.Parallel()
	modes(t, func(t *testing.T, noCgroup bool) {
		mode := "cgroup"
		if noCgroup {
			mode = "fallback"
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestHostDeathKillsTree$")
		cmd.Env = append(os.Environ(), "PROCSUP_TEST_TREE_HOST="+mode)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(out)
		first, _ := r.ReadString('\n')
		second, _ := r.ReadString('\n')
		_ = cmd.Wait()
		pidText, handleText, _ := strings.Cut(strings.TrimSpace(first), " ")
		leader, err := strconv.Atoi(pidText)
		if err != nil || handleText == "" {
			t.Fatalf("host printed %q %q", first, second)
		}
		var pids []int
		for f := range strings.FieldsSeq(second) {
			pid, _ := strconv.Atoi(f)
			pids = append(pids, pid)
			t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		}
		h := parseHandle(handleText)
		if h.marker == "" || (h.cgroup == "") != noCgroup {
			t.Fatalf("handle %q", handleText)
		}
		if noCgroup {
			// Nothing ends them but recovery.
			time.Sleep(100 * time.Millisecond)
			if !slices.ContainsFunc(pids, Alive) {
				t.Fatal("the detached descendants died with the host; the test shows nothing")
			}
			if sent, err := KillTree(leader, handleText); !sent || err != nil {
				t.Fatalf("KillTree: sent=%v err=%v", sent, err)
			}
		}
		for _, pid := range pids {
			waitGone(t, pid)
		}
		if !noCgroup {
			deadline := time.Now().Add(stopBound)
			for {
				if _, err := os.Stat(filepath.Dir(h.cgroup)); os.IsNotExist(err) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the dead host's cgroup directory %s is still there", filepath.Dir(h.cgroup))
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	})
}

// TestKillTreeGuards: KillTree signals nothing for a handle from an earlier
// boot, an empty one, or a plain identity whose pid was reused, and never
// writes cgroup.kill outside a child cgroup this package made.
func TestKillTreeGuards(t *testing.T) {
	t.Parallel()
	p, _ := start(t, Spec{noCgroup: true, Argv: []string{"sleep", "100"}})
	for _, h := range []string{
		"",
		"00000000-0000-0000-0000-000000000000/1 tree=" + p.marker, // another boot
		p.Identity() + "0", // the pid now names another process
	} {
		if sent, err := KillTree(p.PID(), h); sent || err != nil {
			t.Errorf("KillTree(%q): sent=%v err=%v", h, sent, err)
		}
	}
	select {
	case <-p.Done():
		t.Fatal("killed through a guarded handle")
	case <-time.After(100 * time.Millisecond):
	}
	// A stale identity with this tree's marker still finds the tree: the
	// marker names nothing else.
	if sent, err := KillTree(p.PID(), handle{identity: p.Identity() + "0", marker: p.marker}.String()); !sent || err != nil {
		t.Fatalf("KillTree by marker: sent=%v err=%v", sent, err)
	}
	if res := wait(t, p); res.Signal != "killed" {
		t.Errorf("result = %+v", res)
	}

	mounts, err := cgroup2Mounts()
	if err != nil || len(mounts) == 0 {
		t.Skip("no cgroup2 mount")
	}
	m := mounts[0]
	for dir, want := range map[string]bool{
		filepath.Join(m, "plugboard-1-2", "p3"):      true,
		filepath.Join(m, "x", "plugboard-1-2", "p3"): true,
		m:                                      false,
		filepath.Join(m, "plugboard-1-2"):      false,
		filepath.Join(m, "system.slice", "p3"): false,
		m + "/plugboard-1-2/p3/../p4":          false,
		"/tmp/plugboard-1-2/p3":                false,
		"plugboard-1-2/p3":                     false,
	} {
		if got := validChildCgroup(dir); got != want {
			t.Errorf("validChildCgroup(%q) = %v, want %v", dir, got, want)
		}
	}
}

func TestHandleRoundTrip(t *testing.T) {
	t.Parallel()
	for _, h := range []handle{
		{identity: "b/1"},
		{identity: "b/1", marker: "ab"},
		{identity: "b/1", marker: "ab", cgroup: "/sys/fs/cgroup/a b/plugboard-1-2/p3"},
		{identity: "b/1", cgroup: "/c/plugboard-1-2/p3"},
	} {
		if got := parseHandle(h.String()); got != h {
			t.Errorf("parseHandle(%q) = %+v, want %+v", h.String(), got, h)
		}
	}
}

// TestNoInheritEnv: with NoInheritEnv the child gets Env and its tree
// marker, nothing of the host's environment.
func TestNoInheritEnv(t *testing.T) {
	t.Setenv(TreeEnv, "outer")
	t.Setenv("PROCSUP_HOST_SECRET", "s3cret")
	for _, inherit := range []bool{false, true} {
		p, c := start(t, Spec{NoInheritEnv: !inherit, Env: []string{"A=1"}, Argv: []string{"env"}})
		wait(t, p)
		got := c.get(Stdout)
		slices.Sort(got)
		if !inherit {
			want := []string{"A=1", TreeEnv + "=outer:" + p.marker}
			if !slices.Equal(got, want) {
				t.Errorf("environment = %q, want %q", got, want)
			}
			continue
		}
		if !slices.Contains(got, "PROCSUP_HOST_SECRET=s3cret") || !slices.Contains(got, "A=1") {
			t.Errorf("inherited environment = %q", got)
		}
	}
}

// TestHostIsSealed: once a child has started, the host is not dumpable, so
// children of the same user cannot read its environment or memory.
func TestHostIsSealed(t *testing.T) {
	t.Parallel()
	p, _ := start(t, Spec{Argv: []string{"true"}})
	wait(t, p)
	const prGetDumpable = 3
	if d, _, _ := syscall.RawSyscall(syscall.SYS_PRCTL, prGetDumpable, 0, 0); d != 0 {
		t.Errorf("host dumpable = %d after starting a child, want 0", d)
	}
}
