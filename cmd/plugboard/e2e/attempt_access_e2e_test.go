package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plugboard/plugboard/abi/tasks"
	plughost "github.com/plugboard/plugboard/host"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// The red team's finding: an attempt process, handed PLUGBOARD_DATA and
// running as the host's user, ran `plugboard` and was the local
// SUPERVISOR: it read the decision log and approved another task's
// attempt into main. Attempts now get an endpoint and a token of their
// own instead; a plugboard they run reaches the board only through them,
// as the attempt's WORKER.

// attemptScript is a SHELL attempt's script that runs the binary under
// test (bin) as an agent would, with the environment the board gave it,
// and prints one line per try: NAME code=N OUTPUT-ON-ONE-LINE. It then
// prints its access and waits for the test to release it (a file
// .release in its working directory), so the test can use the live token
// from outside too.
func attemptScript(bin, theirs string) string {
	return fmt.Sprintf(`PB=%q
try() {
  name=$1; shift
  out=$("$PB" "$@" 2>&1); code=$?
  printf '%%s code=%%d %%s\n' "$name" "$code" "$(printf '%%s' "$out" | tr '\n' ' ')"
}
try CONTEXT call get_context '{}'
try APPROVE call approve_attempt '{"attempt_id":"%s"}'
try STATUS call get_attempt_status '{"attempt_id":"%s"}'
try UNKNOWN call no_such_tool '{}'
try AUDIT audit tail
try TASKS task list demo
echo "URL=$PLUGBOARD_URL"
echo "TOKEN=$PLUGBOARD_TOKEN"
echo "DIR=$PWD"
echo "DATA=${PLUGBOARD_DATA:-none}"
echo READY
for i in $(seq 600); do [ -e .release ] && break; sleep 0.1; done
echo DONE
`, bin, theirs, theirs)
}

// sandboxReadArgs lets attempt processes run the binary under test, which
// lives outside the system directories an OS sandbox opens to them, when
// this binary has a sandbox.
func sandboxReadArgs(t *testing.T, bin string) []string {
	t.Helper()
	out, _ := exec.Command(bin, "serve", "-h").CombinedOutput()
	if !strings.Contains(string(out), "-sandbox-read") {
		return nil
	}
	return []string{"--sandbox-read", filepath.Dir(bin)}
}

// tried finds the script's line for name and returns its exit code and
// output.
func tried(t *testing.T, lines []string, name string) (int, string) {
	t.Helper()
	for _, l := range lines {
		if rest, ok := strings.CutPrefix(l, name+" code="); ok {
			var code int
			fmt.Sscanf(rest, "%d", &code)
			_, out, _ := strings.Cut(rest, " ")
			return code, out
		}
	}
	t.Fatalf("the attempt printed no %s line:\n%s", name, strings.Join(lines, "\n"))
	return 0, ""
}

// valueOf returns the value of the script's KEY=VALUE line.
func valueOf(t *testing.T, lines []string, key string) string {
	t.Helper()
	for _, l := range lines {
		if v, ok := strings.CutPrefix(l, key+"="); ok {
			return v
		}
	}
	t.Fatalf("the attempt printed no %s line:\n%s", key, strings.Join(lines, "\n"))
	return ""
}

// TestAttemptAccessNestedPlugboard: the host serves a board with one
// finished attempt awaiting review ("theirs"); a SHELL attempt runs the
// real binary with the environment the board gave it, and no data
// directory:
//
//   - it is given PLUGBOARD_URL and PLUGBOARD_TOKEN, not PLUGBOARD_DATA;
//   - `plugboard call get_context '{}'` answers its own attempt;
//   - `plugboard call approve_attempt` of the other attempt is refused
//     (permission_denied) and nothing is merged; reading the other
//     attempt is refused by scope;
//   - `plugboard audit tail` (the decision log) and the board commands
//     refuse to open a data directory;
//   - `plugboard serve` (stdio) started with that environment proxies the
//     host's tools as the attempt's WORKER: get_context listed and
//     answering, approve_attempt not listed;
//   - once the attempt's process has ended its token is refused (401), and
//     a nested plugboard says it cannot reach the board.
func TestAttemptAccessNestedPlugboard(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	bin := buildtest.Binary(t)
	repo := newRepo(t, "hello\n")
	data := t.TempDir()
	p := newProject(t, data, "", "demo", repo)
	s := serveBoard(t, data, "", cleanEnv(), append([]string{"--data", data}, sandboxReadArgs(t, bin)...)...)

	theirs := s.shell(p.ID, "echo theirs > theirs.txt")
	waitProcState(t, s, theirs, tasks.StateCompleted)
	theirTask := s.ok("get_attempt_status", map[string]any{"attempt_id": theirs}).str("task_id")
	mainBefore := strings.TrimSpace(git(t, repo, "rev-parse", "main"))

	mine := s.shell(p.ID, attemptScript(bin, theirs))
	lines := s.waitLog(mine, "READY")
	url, token, dir := valueOf(t, lines, "URL"), valueOf(t, lines, "TOKEN"), valueOf(t, lines, "DIR")
	if !strings.HasPrefix(url, "http://127.0.0.1:") || len(token) != 64 {
		t.Fatalf("the attempt got PLUGBOARD_URL=%q PLUGBOARD_TOKEN=%q, want the agent endpoint and a 64-hex token", url, token)
	}
	if got := valueOf(t, lines, "DATA"); got != "none" {
		t.Errorf("the attempt got PLUGBOARD_DATA=%s", got)
	}

	// (a) get_context answers the attempt itself.
	code, out := tried(t, lines, "CONTEXT")
	if code != 0 || !strings.Contains(out, `"attempt_id": "`+mine+`"`) || !strings.Contains(out, "inside attempt "+mine) {
		t.Errorf("get_context inside the attempt: exit %d: %s", code, out)
	}
	// (b) approving another task's attempt is refused, as is reading it.
	for _, name := range []string{"APPROVE", "STATUS"} {
		if code, out := tried(t, lines, name); code != 1 || !strings.Contains(out, `"code": "permission_denied"`) {
			t.Errorf("%s of another task's attempt: exit %d: %s; want permission_denied", name, code, out)
		}
	}
	if code, out := tried(t, lines, "UNKNOWN"); code != 1 || !strings.Contains(out, `"code": "tool_not_found"`) {
		t.Errorf("an unknown tool inside the attempt: exit %d: %s; want tool_not_found", code, out)
	}
	// (c) the decision log and the board commands open no data directory.
	for _, name := range []string{"AUDIT", "TASKS"} {
		if code, out := tried(t, lines, name); code != 2 || !strings.Contains(out, "inside attempt "+mine) || !strings.Contains(out, "--data") {
			t.Errorf("%s inside the attempt: exit %d: %s; want a refusal naming the attempt and --data", name, code, out)
		}
	}

	// A nested serve (stdio) is a proxy to the host, as the attempt.
	env := cleanEnv(plughost.EnvAttemptURL+"="+url, plughost.EnvAttemptToken+"="+token, "PLUGBOARD_ATTEMPT_ID="+mine)
	nested := dialServe(t, env, nil)
	names := toolNames(t, nested.session)
	if !slices.Contains(names, "get_context") || slices.Contains(names, "approve_attempt") || slices.Contains(names, "create_task") {
		t.Errorf("the nested serve lists %v: want get_context and none of approve_attempt, create_task", names)
	}
	var ctxOut tasks.ContextOut
	structured(t, callTool(t, nested.session, "get_context", map[string]any{}), &ctxOut)
	if ctxOut.AttemptID != mine || ctxOut.TaskID == theirTask || ctxOut.ProjectName != "demo" {
		t.Errorf("get_context through the nested serve = %+v, want attempt %s", ctxOut, mine)
	}
	res := callTool(t, nested.session, "approve_attempt", map[string]any{"attempt_id": theirs})
	if env := clitest.EnvelopeOf(t, res); env.Code != "permission_denied" || env.Details["agent_id"] != "attempt:"+mine {
		t.Errorf("approve_attempt through the nested serve: %+v", env)
	}
	if !strings.Contains(nested.stderr.String(), "plugboard: inside attempt "+mine+"; tools are the host's, as this attempt's WORKER identity") {
		t.Errorf("the nested serve did not say where its tools come from:\n%s", nested.stderr)
	}
	nested.session.Close()

	// (d) the process ends: its token with it.
	if err := os.WriteFile(filepath.Join(dir, ".release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s.waitLog(mine, "DONE")
	waitProcState(t, s, mine, tasks.StateCompleted)
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp := rawRequest(t, http.MethodPost, url, "", "Bearer "+token)
		if resp.StatusCode == http.StatusUnauthorized {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ended attempt's token still gets %d", resp.StatusCode)
		}
		time.Sleep(50 * time.Millisecond)
	}
	_, stderr, code := runPB(t, t.TempDir(), env, "call", "get_context", "{}")
	if code != 1 || !strings.Contains(stderr, "cannot reach the board") {
		t.Errorf("call with the ended attempt's token: exit %d, stderr %s", code, stderr)
	}

	// Nothing was merged: main did not move and the other task still
	// awaits review.
	if after := strings.TrimSpace(git(t, repo, "rev-parse", "main")); after != mainBefore {
		t.Errorf("main moved from %s to %s", mainBefore, after)
	}
	if st := s.ok("get_task", map[string]any{"task_id": theirTask}).str("status"); st == "done" {
		t.Errorf("the other task is %s", st)
	}
}

// waitProcState polls an attempt until it reaches state.
func waitProcState(t *testing.T, s *procServer, attemptID, state string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		st := s.ok("get_attempt_status", map[string]any{"attempt_id": attemptID})
		if st.str("state") == state {
			return
		}
		if time.Now().After(deadline) {
			b, _ := json.Marshal(st)
			t.Fatalf("attempt %s never reached %s: %s\nlog:\n%s", attemptID, state, b, strings.Join(s.logs(attemptID), "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestAttemptAccessUnreachable: inside an attempt whose endpoint is gone,
// call and serve fail at once with a message saying so, and open no data
// directory.
func TestAttemptAccessUnreachable(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	home := t.TempDir()
	env := cleanEnv(plughost.EnvAttemptURL+"=http://127.0.0.1:1/mcp", plughost.EnvAttemptToken+"="+strings.Repeat("ab", 32),
		"PLUGBOARD_ATTEMPT_ID=0b5c0000-0000-4000-8000-000000000000", "HOME="+home, "XDG_DATA_HOME="+filepath.Join(home, "xdg"))
	for _, args := range [][]string{{"call", "get_context", "{}"}, {"serve"}} {
		stdout, stderr, code := runPB(t, t.TempDir(), env, args...)
		if code != 1 || !strings.Contains(stderr, "inside attempt 0b5c0000-0000-4000-8000-000000000000") ||
			!strings.Contains(stderr, "cannot reach the board") || !strings.Contains(stderr, "http://127.0.0.1:1/mcp") {
			t.Errorf("%v: exit %d\nstdout %s\nstderr %s", args, code, stdout, stderr)
		}
	}
	if entries, _ := os.ReadDir(home); len(entries) > 0 {
		t.Errorf("a plugboard inside an attempt made %v in the home directory", entries)
	}
}
