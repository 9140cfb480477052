package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// The process trust boundary through `plugboard serve`: a real SHELL attempt
// plays the agent, and what it can see of the host (its secrets, its data
// directory) and what of it outlives a stop or the host itself is checked
// from the outside, through /proc.

// procServer is `plugboard serve --http` over a board with project "demo",
// with a client session.
type procServer struct {
	*httpServer
	t       *testing.T
	session *mcp.ClientSession
}

// serveBoard starts serve over HTTP with the task plugins on data (made by
// boardData), with env as its whole environment, and connects a client
// with token ("" for none).
func serveBoard(t *testing.T, data, token string, env []string, extra ...string) *procServer {
	t.Helper()
	dir, _ := buildtest.Plugins(t, taskPlugins...)
	// Compiled code is shared with the scenario tests' servers.
	shareCompiled(t, data)
	args := append([]string{"serve", "--http", "127.0.0.1:0", "--plugins", dir}, extra...)
	s := clitest.LaunchHTTP(t, env, args)
	session, _, err := connectHTTP(t, s.URL, token)
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, s.Stderr)
	}
	return &procServer{httpServer: s, t: t, session: session}
}

// ok calls a tool that must succeed and decodes its result.
func (p *procServer) ok(tool string, args map[string]any) obj {
	p.t.Helper()
	res := callTool(p.t, p.session, tool, args)
	if res.IsError {
		p.t.Fatalf("%s(%v) failed: %s", tool, args, clitest.Text(res))
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		p.t.Fatalf("%s structuredContent: %v", tool, err)
	}
	return obj(out)
}

// shell creates a task running script in project projectID and starts a
// SHELL attempt on it, returning the attempt id.
func (p *procServer) shell(projectID, script string) string {
	p.t.Helper()
	taskID := p.ok("create_task", map[string]any{"project_id": projectID, "title": "Process test", "description": script}).str("task_id")
	return p.ok("start_task_attempt", map[string]any{"task_id": taskID, "executor": "SHELL"}).str("attempt_id")
}

// logs returns the contents of the attempt's log entries, oldest first.
func (p *procServer) logs(attemptID string) []string {
	p.t.Helper()
	page := p.ok("tail_attempt_logs", map[string]any{"attempt_id": attemptID, "limit": 500})
	var lines []string
	for _, e := range page.list("entries") {
		lines = append(lines, e.str("content"))
	}
	return lines
}

// waitLog polls the attempt's log until a line is want, and returns every
// line.
func (p *procServer) waitLog(attemptID, want string) []string {
	p.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		lines := p.logs(attemptID)
		for _, l := range lines {
			if l == want {
				return lines
			}
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("log never showed %q; it holds:\n%s", want, strings.Join(lines, "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestSecurityProcessHostSecretsStayOut: serve runs with
// PLUGBOARD_HTTP_TOKEN in its environment, as the README recommends, and a
// SHELL attempt prints its whole environment. Neither the token nor its
// variable reaches the attempt (nor, so, its log); a variable the operator
// drops with --agent-env-drop is gone too, while one the operator adds with
// --agent-env and the board's own PLUGBOARD_ATTEMPT_ID are there.
func TestSecurityProcessHostSecretsStayOut(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	token := fmt.Sprintf("pb-secret-%016x%016x", rand.Uint64(), rand.Uint64())
	data, projectID := boardData(t)
	env := httpEnv(envHTTPToken+"="+token, "PB_HOST_ONLY_SECRET=host-only-"+token[10:20])
	s := serveBoard(t, data, token, env, "--data", data,
		"--agent-env", "PB_AGENT_ADDED=added-by-operator", "--agent-env-drop", "PB_HOST_ONLY_*")
	// The server does use the token: a request without it is refused.
	if _, _, err := connectHTTP(t, s.URL, ""); err == nil {
		t.Fatal("serve did not take PLUGBOARD_HTTP_TOKEN from its environment: a client without it connected")
	}

	id := s.shell(projectID, "env | sort\necho END-OF-ENV\n")
	lines := s.waitLog(id, "END-OF-ENV")
	all := strings.Join(lines, "\n")
	if strings.Contains(all, token) || strings.Contains(all, envHTTPToken) {
		t.Fatalf("the attempt saw the host's HTTP token:\n%s", all)
	}
	if strings.Contains(all, "PB_HOST_ONLY_SECRET") {
		t.Fatalf("a variable dropped with --agent-env-drop reached the attempt:\n%s", all)
	}
	for _, want := range []string{"PB_AGENT_ADDED=added-by-operator", "PLUGBOARD_ATTEMPT_ID=" + id} {
		found := false
		for _, l := range lines {
			found = found || l == want
		}
		if !found {
			t.Errorf("the attempt's environment lacks %q:\n%s", want, all)
		}
	}
	// The board's data directory is no longer handed to attempts: its
	// endpoint and an attempt token are (host/attemptaccess.go).
	if strings.Contains(all, "PLUGBOARD_DATA=") || !strings.Contains(all, "\nPLUGBOARD_URL=http://127.0.0.1:") ||
		!strings.Contains(all, "\nPLUGBOARD_TOKEN=") {
		t.Errorf("the attempt's environment names the data directory, or lacks PLUGBOARD_URL and PLUGBOARD_TOKEN:\n%s", all)
	}
	// PATH and HOME come from the host: agents need them.
	if !strings.Contains(all, "\nPATH=") || !strings.Contains(all, "\nHOME=") {
		t.Errorf("the attempt lost the host's PATH or HOME:\n%s", all)
	}
}

// treeScript starts, besides itself, four sleeps tagged with marker: a
// background child, a child that left the session with setsid, a double
// fork (its parent exits, so it is reparented) and a double fork that also
// called setsid; all four ignore SIGINT, SIGTERM and SIGHUP. It prints
// "ready" once all four run, then becomes a fifth tagged sleep.
func treeScript(marker string) string {
	return fmt.Sprintf(`trap '' INT TERM HUP
T=$(mktemp -d)
printf '#!/bin/sh\ntouch "$1"\nexec sleep %[1]s\n' > "$T/s"; chmod +x "$T/s"
"$T/s" "$T/1" &
setsid "$T/s" "$T/2" &
( ( exec "$T/s" "$T/3" ) & )
( setsid sh -c '"$0" "$1" & exit 0' "$T/s" "$T/4" & )
while [ ! -e "$T/1" ] || [ ! -e "$T/2" ] || [ ! -e "$T/3" ] || [ ! -e "$T/4" ]; do sleep 0.01; done
echo ready
trap - INT TERM HUP
exec sleep %[1]s
`, marker)
}

// waitMarked polls until n processes run "sleep MARKER" (treeScript says
// ready just before its own shell execs the last one), for at most 10 s,
// and returns those running.
func waitMarked(marker string, n int) []int {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if pids := markedPIDs(marker); len(pids) >= n {
			return pids
		}
	}
	return markedPIDs(marker)
}

// waitNone polls until no process runs "sleep MARKER", failing after
// timeout; it returns whether they were gone.
func waitNone(marker string, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for len(markedPIDs(marker)) > 0 {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// describePIDs says, for a failure message, which marked processes live and
// what they are.
func describePIDs(marker string) string {
	var b strings.Builder
	for _, pid := range markedPIDs(marker) {
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		cg, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		fmt.Fprintf(&b, "  %s  cgroup %s\n", strings.TrimSpace(string(stat)), strings.ReplaceAll(strings.TrimSpace(string(cg)), "\n", " | "))
	}
	return b.String()
}

// inPlugboardCgroup reports whether pid runs in a cgroup the host made for
// it (so the host's death alone must end it).
func inPlugboardCgroup(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	return err == nil && strings.Contains(string(b), "/plugboard-")
}

// TestSecurityProcessHostCrashLeavesNothing: SIGKILL of serve while a
// SHELL attempt runs a tree of five processes, some detached with setsid
// and double forks, all ignoring the polite signals. None survives: at
// once where the host gave the attempt a cgroup, and at worst after the
// restart's recovery, which also marks the attempt killed.
func TestSecurityProcessHostCrashLeavesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	marker := fmt.Sprintf("73.%06d", rand.IntN(1000000))
	t.Cleanup(func() { killMarked(marker) })
	data, projectID := boardData(t)
	s := serveBoard(t, data, "", httpEnv(), "--data", data)
	id := s.shell(projectID, treeScript(marker))
	s.waitLog(id, "ready")
	pids := waitMarked(marker, 5)
	if len(pids) != 5 {
		t.Fatalf("the attempt runs %d tagged processes, want 5:\n%s", len(pids), describePIDs(marker))
	}
	cgroup := inPlugboardCgroup(pids[0])

	if err := s.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-s.Exited
	if cgroup && !waitNone(marker, 5*time.Second) {
		t.Fatalf("processes of the attempt outlived the host (SIGKILL) although it gave them a cgroup:\n%s", describePIDs(marker))
	}
	if !cgroup {
		t.Logf("no cgroup for attempts on this machine: %d processes wait for the restart's recovery", len(markedPIDs(marker)))
	}

	s2 := serveBoard(t, data, "", httpEnv(), "--data", data)
	st := s2.ok("get_attempt_status", map[string]any{"attempt_id": id})
	if st.str("state") != "failed" || !strings.HasPrefix(st.str("failure_summary"), "killed") {
		t.Errorf("status after the crash = %v", st)
	}
	if !waitNone(marker, 10*time.Second) {
		t.Fatalf("processes of the attempt outlived the restart's recovery:\n%s", describePIDs(marker))
	}
}

// TestSecurityProcessStopEndsDetachedTree: stop_attempt (graceful, and
// force) on an attempt running the same tree ends every process of it, the
// setsid-detached and double-forked ones included, by the time it answers.
func TestSecurityProcessStopEndsDetachedTree(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	data, projectID := boardData(t)
	s := serveBoard(t, data, "", httpEnv(), "--data", data)
	for _, force := range []bool{false, true} {
		t.Run(fmt.Sprintf("force=%v", force), func(t *testing.T) {
			marker := fmt.Sprintf("74.%06d", rand.IntN(1000000))
			t.Cleanup(func() { killMarked(marker) })
			id := s.shell(projectID, treeScript(marker))
			s.waitLog(id, "ready")
			if n := len(waitMarked(marker, 5)); n != 5 {
				t.Fatalf("the attempt runs %d tagged processes, want 5:\n%s", n, describePIDs(marker))
			}
			res := s.ok("stop_attempt", map[string]any{"attempt_id": id, "force": force})
			if res.str("state") != "failed" || len(res.list("stopped_execution_process_ids")) == 0 {
				t.Errorf("stop_attempt = %v", res)
			}
			// A SIGKILL takes a moment to end its target; a survivor stays.
			if !waitNone(marker, 2*time.Second) {
				t.Fatalf("processes of the attempt outlived stop_attempt:\n%s", describePIDs(marker))
			}
		})
	}
}

// TestSecurityProcessRelativeDataIsAbsolute: serve given a relative data
// directory (--data, or $PLUGBOARD_DATA) hands attempts no data directory
// at all, relative or absolute: a plugboard the agent starts in its
// worktree works on the same board through the host's agent endpoint (as
// the attempt's WORKER), and neither opens the board's data directory nor
// makes a new board inside the worktree.
func TestSecurityProcessRelativeDataIsAbsolute(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	bin := buildtest.Binary(t)
	for _, how := range []string{"flag", "env"} {
		t.Run(how, func(t *testing.T) {
			data, projectID := boardData(t)
			wd, err := os.Getwd()
			if err != nil {
				t.Fatal(err)
			}
			rel, err := filepath.Rel(wd, data)
			if err != nil || filepath.IsAbs(rel) {
				t.Fatalf("no relative path to %s from %s: %q %v", data, wd, rel, err)
			}
			var s *procServer
			args := sandboxReadArgs(t, bin)
			if how == "flag" {
				s = serveBoard(t, data, "", httpEnv("PLUGBOARD_DATA="), append([]string{"--data", rel}, args...)...)
			} else {
				s = serveBoard(t, data, "", httpEnv("PLUGBOARD_DATA="+rel), args...)
			}
			id := s.shell(projectID, fmt.Sprintf("echo \"DATA=${PLUGBOARD_DATA-unset}\"\n%[1]q call get_context '{}'\n%[1]q project list --log-level error\necho DONE\n", bin))
			lines := s.waitLog(id, "DONE")
			all := strings.Join(lines, "\n")
			if !slices.Contains(lines, "DATA=unset") {
				t.Errorf("the attempt got a PLUGBOARD_DATA:\n%s", all)
			}
			if !strings.Contains(all, `"project_name": "demo"`) || !strings.Contains(all, `"attempt_id": "`+id+`"`) {
				t.Errorf("a plugboard started in the attempt does not reach the board's project through the host:\n%s", all)
			}
			if !strings.Contains(all, "no data directory is assumed") {
				t.Errorf("a board command started in the attempt did not refuse to assume a data directory:\n%s", all)
			}
			wt := filepath.Join(data, "worktrees", id)
			filepath.WalkDir(wt, func(p string, d os.DirEntry, err error) error {
				if err == nil && d.Name() == "board.db" {
					t.Errorf("the attempt's plugboard made a board inside the worktree: %s", p)
				}
				return nil
			})
		})
	}
}
