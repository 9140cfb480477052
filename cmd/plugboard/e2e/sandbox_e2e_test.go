package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plugboard/plugboard/abi/tasks"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// The agent boundary, attacked as issue 23's red team did: the host runs as
// an ordinary unprivileged user (when the tests run as root, as uid 65534),
// with a bearer token and a plugin secret in its environment, and a SHELL
// attempt — the agent — tries each attack of the table from inside
// its sandbox. Each is refused, and the host runs nothing planted.

// unprivileged is the user the host under test runs as: the test's own
// when it is not root, else nobody (65534).
type unprivileged struct {
	cred *syscall.Credential // nil: the test's own user
	uid  int
}

func hostUser() unprivileged {
	if os.Geteuid() != 0 {
		return unprivileged{uid: os.Geteuid()}
	}
	return unprivileged{cred: &syscall.Credential{Uid: 65534, Gid: 65534}, uid: 65534}
}

// own gives path (recursively) to u.
func (u unprivileged) own(t *testing.T, path string) {
	t.Helper()
	if u.cred == nil {
		return
	}
	err := filepath.WalkDir(path, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(u.cred.Uid), int(u.cred.Gid))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// command runs the binary as u with env.
func (u unprivileged) command(bin string, env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	if u.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred}
	}
	return cmd
}

// sandboxWorld is a board the unprivileged host serves: its data directory,
// the user's repository, a home, and the environment the host runs with.
type sandboxWorld struct {
	user             unprivileged
	bin, plugins     string
	work, data, repo string
	home, config     string
	hostEnv          []string
}

const (
	testHTTPToken    = "plugboard-sandbox-test-token-0123456789abcdef"
	testPluginSecret = "plugboard-sandbox-test-plugin-secret-42"
)

func newSandboxWorld(t *testing.T) *sandboxWorld {
	t.Helper()
	w := &sandboxWorld{user: hostUser(), bin: buildtest.Binary(t)}
	built, _ := buildtest.Plugins(t, append([]string{"plugins/echo"}, taskPlugins...)...)
	// Not t.TempDir(): its 0700 root directory would shut the unprivileged
	// host out of its own files.
	work, err := os.MkdirTemp("", "plugboard-sandbox-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(work) })
	if err := os.Chmod(work, 0o755); err != nil {
		t.Fatal(err)
	}
	w.work, w.data, w.home = work, filepath.Join(work, "data"), filepath.Join(work, "home")
	w.repo = filepath.Join(work, "app")
	for _, d := range []string{w.home, w.repo} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(w.repo, "README.md"), []byte("hello\n"), 0o644)
	git(t, w.repo, "init", "-q", "-b", "main")
	git(t, w.repo, "add", "-A")
	git(t, w.repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "initial")
	os.WriteFile(filepath.Join(w.home, ".gitconfig"), []byte("[user]\n\tname = agent\n\temail = agent@example.com\n"), 0o644)
	// The plugins too: the test's temporary directories are closed to
	// other users.
	w.plugins = filepath.Join(work, "plugins")
	os.MkdirAll(w.plugins, 0o755)
	wasm, _ := filepath.Glob(filepath.Join(built, "*.wasm"))
	for _, f := range wasm {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(w.plugins, filepath.Base(f)), b, 0o644)
	}
	w.config = filepath.Join(work, "plugboard.json")
	os.WriteFile(w.config, []byte(`{"plugins":{"settings":{"echo":{"config":{"greeting":"${PB_TEST_PLUGIN_SECRET}"}}}}}`), 0o644)
	w.user.own(t, work)
	w.hostEnv = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + w.home, "LANG=C",
		"PLUGBOARD_HTTP_TOKEN=" + testHTTPToken, "PB_TEST_PLUGIN_SECRET=" + testPluginSecret}
	if out, err := w.user.command(w.bin, w.hostEnv, "project", "create", "app", "--repo", w.repo, "--data", w.data).CombinedOutput(); err != nil {
		t.Fatalf("project create: %v\n%s", err, out)
	}
	return w
}

// serve starts the host as the unprivileged user over stdio.
func (w *sandboxWorld) serve(t *testing.T, extra ...string) *hostProc {
	t.Helper()
	args := append([]string{"serve", "--plugins", w.plugins, "--data", w.data, "--config", w.config, "--log-level", "debug"}, extra...)
	return connectHost(t, w.user.command(w.bin, w.hostEnv, args...))
}

// runAttempt creates a task whose SHELL script is script, starts it and
// waits until its processes end; it returns the attempt.
func (w *sandboxWorld) runAttempt(t *testing.T, h *hostProc, title, script string) tasks.StartOut {
	t.Helper()
	var projects struct {
		Projects []struct {
			ProjectID string `json:"project_id"`
		} `json:"projects"`
	}
	if env := h.call(t, "list_projects", map[string]any{}, &projects); env != nil || len(projects.Projects) == 0 {
		t.Fatalf("list_projects: %+v %+v", env, projects)
	}
	var task tasks.Task
	if env := h.call(t, "create_task", map[string]any{"project_id": projects.Projects[0].ProjectID, "title": title, "description": script}, &task); env != nil {
		t.Fatalf("create_task: %+v", env)
	}
	var started tasks.StartOut
	if env := h.call(t, "start_task_attempt", map[string]any{"task_id": task.TaskID, "executor": "SHELL"}, &started); env != nil {
		t.Fatalf("start_task_attempt: %+v", env)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		var st struct {
			State          string  `json:"state"`
			FailureSummary *string `json:"failure_summary"`
		}
		if env := h.call(t, "get_attempt_status", map[string]any{"attempt_id": started.AttemptID}, &st); env != nil {
			t.Fatalf("get_attempt_status: %+v", env)
		}
		if st.State != "running" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("attempt %s still running", title)
		}
	}
	return started
}

// report reads what the attack script wrote in its worktree: NAME=DENIED
// or NAME=ALLOWED lines.
func (w *sandboxWorld) report(t *testing.T, attemptID string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(w.data, "worktrees", attemptID, "app", "report.txt"))
	if err != nil {
		t.Fatalf("the attack script left no report: %v", err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			out[k] = v
		}
	}
	return out
}

// hostFiles lists the regular files under the data directory's host-only
// parts: every cache, the key, the database.
func (w *sandboxWorld) hostFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	filepath.WalkDir(w.data, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(w.data, p)
		if d.IsDir() && (rel == "worktrees" || rel == "tmp") {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			files = append(files, p)
		}
		return nil
	})
	return files
}

func TestSandboxHoldsAgainstTheAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and plugins, runs attempts")
	}
	w := newSandboxWorld(t)
	h := w.serve(t)
	// Warm the caches the agent will go after: compiled code, instrumented
	// modules, the key.
	if env := h.call(t, "echo", map[string]any{"text": "warm"}, nil); env != nil {
		t.Fatalf("echo: %+v", env)
	}
	victim := w.runAttempt(t, h, "victim", "echo victim > victim.txt && git add -A && git commit -qm victim")

	mark := filepath.Join(w.work, "planted-filter-ran")
	var script strings.Builder
	fmt.Fprintf(&script, `r=report.txt; export HOSTPID=$PPID
try() { n=$1; shift; if ( "$@" ) >/dev/null 2>&1; then echo "$n=ALLOWED" >> $r; else echo "$n=DENIED" >> $r; fi; }
env > env.txt
printf '* filter=pwn diff=pwn\n' > .gitattributes
try host_git_config sh -c 'printf "[filter \"pwn\"]\n\tclean = sh -c \"touch %[1]s; cat\"\n[diff \"pwn\"]\n\ttextconv = sh -c \"touch %[1]s; cat\"\n" >> %[2]s/gitdirs/$PLUGBOARD_ATTEMPT_ID/app/config'
try list_data ls %[2]s
try read_board_db cat %[2]s/board.db
try user_repo_git_config sh -c 'echo "[core] fsmonitor = touch %[1]s" >> %[3]s/.git/config'
try host_environ sh -c 'cat /proc/$HOSTPID/environ | grep -q .'
try signal_host kill -0 $PPID
try nested_approve sh -c '%[4]s call approve_attempt "{\"attempt_id\":\"%[5]s\"}" > nested_approve.txt 2>&1'
try nested_approve_with_data sh -c '%[4]s call approve_attempt "{\"attempt_id\":\"%[5]s\"}" --data %[2]s > nested_approve_with_data.txt 2>&1'
%[4]s call get_context '{}' > nested_context.txt 2>&1
`, mark, w.data, w.repo, w.bin, victim.AttemptID)
	files := w.hostFiles(t)
	for i, f := range files {
		fmt.Fprintf(&script, "try host_file_%d sh -c 'printf x >> %s'\n", i, f)
	}
	attacker := w.runAttempt(t, h, "attacker", script.String())
	rep := w.report(t, attacker.AttemptID)
	if len(rep) < 8+len(files) {
		t.Fatalf("the attack script ran %d of its %d attacks: %v", len(rep), 8+len(files), rep)
	}
	for name, got := range rep {
		if got != "DENIED" {
			what := name
			if strings.HasPrefix(name, "host_file_") {
				var i int
				fmt.Sscanf(name, "host_file_%d", &i)
				what = files[i]
			}
			t.Errorf("attack %s (%s): %s", name, what, got)
		}
	}
	if len(files) < 3 {
		t.Errorf("only %d host files to attack (cache, key, database expected): %v", len(files), files)
	}

	// The supervisor reviews the attacker's work: the host's git runs over
	// the planted attributes and runs no driver.
	for _, tool := range []string{"get_attempt_changes", "get_attempt_patch"} {
		if env := h.call(t, tool, map[string]any{"attempt_id": attacker.AttemptID}, nil); env != nil {
			t.Fatalf("%s: %+v", tool, env)
		}
	}
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("the host ran a command the agent planted")
	}
	// The nested plugboard reached the board as the attempt's own WORKER:
	// its own context answers, another task's approval is refused by the
	// host, and with --data it cannot even open the store.
	worktree := filepath.Join(w.data, "worktrees", attacker.AttemptID, "app")
	for file, want := range map[string]string{
		"nested_context.txt":           attacker.AttemptID,
		"nested_approve.txt":           "permission_denied",
		"nested_approve_with_data.txt": "permission denied",
	} {
		b, _ := os.ReadFile(filepath.Join(worktree, file))
		if !strings.Contains(string(b), want) {
			t.Errorf("%s: want %q in:\n%s", file, want, b)
		}
	}
	// Nothing reached main: the victim's attempt was not approved.
	if log := git(t, w.repo, "-c", "safe.directory=*", "log", "--oneline", "main"); strings.Contains(log, "victim") {
		t.Fatalf("the nested plugboard approved another task's attempt into main:\n%s", log)
	}

	// The agent's environment held no secret of the host's or a plugin's,
	// and no way into the data directory.
	env, err := os.ReadFile(filepath.Join(w.data, "worktrees", attacker.AttemptID, "app", "env.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{testHTTPToken, testPluginSecret, "PB_TEST_PLUGIN_SECRET", "PLUGBOARD_DATA", "PLUGBOARD_HTTP_TOKEN"} {
		if strings.Contains(string(env), secret) {
			t.Errorf("the agent's environment holds %q:\n%s", secret, env)
		}
	}
	for _, want := range []string{"PLUGBOARD_URL=", "PLUGBOARD_TOKEN=", "PLUGBOARD_ATTEMPT_ID=" + attacker.AttemptID} {
		if !strings.Contains(string(env), want) {
			t.Errorf("the agent's environment lacks %s:\n%s", want, env)
		}
	}

	// Other local accounts: the data directory and the database are the
	// host's user's alone.
	for path, want := range map[string]fs.FileMode{w.data: 0o700, filepath.Join(w.data, "board.db"): 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %04o, want %04o", path, fi.Mode().Perm(), want)
		}
	}
}

// TestSandboxRefusalNamesTheOptOut: where the sandbox cannot be set up, an
// attempt does not start, and the error names the opt-out; config check
// says which mode is in force.
func TestSandboxRefusalNamesTheOptOut(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and plugins")
	}
	w := newSandboxWorld(t)
	// The kernel is asked for a Landlock ABI it cannot have: as on a kernel
	// without Landlock, the probe finds none.
	w.hostEnv = append(w.hostEnv, "PLUGBOARD_TEST_LANDLOCK_ABI=0")
	h := w.serve(t)
	var projects struct {
		Projects []struct {
			ProjectID string `json:"project_id"`
		} `json:"projects"`
	}
	h.call(t, "list_projects", map[string]any{}, &projects)
	var task tasks.Task
	if env := h.call(t, "create_task", map[string]any{"project_id": projects.Projects[0].ProjectID, "title": "t", "description": "true"}, &task); env != nil {
		t.Fatalf("create_task: %+v", env)
	}
	env := h.call(t, "start_task_attempt", map[string]any{"task_id": task.TaskID, "executor": "SHELL"}, nil)
	if env == nil || env.Code != "unavailable" || !strings.Contains(env.Hint, `sandbox.mode "off"`) {
		t.Fatalf("start without a sandbox: want unavailable naming sandbox.mode \"off\", got %+v", env)
	}
	if entries, _ := os.ReadDir(filepath.Join(w.data, "worktrees")); len(entries) != 0 {
		t.Fatalf("a refused start left worktrees: %v", entries)
	}
	out, _ := w.user.command(w.bin, w.hostEnv, "config", "check", w.config).CombinedOutput()
	if !strings.Contains(string(out), "sandbox: unavailable") {
		t.Fatalf("config check does not say the sandbox is unavailable:\n%s", out)
	}
	out, _ = w.user.command(w.bin, w.hostEnv[:len(w.hostEnv)-1], "config", "check", w.config).CombinedOutput()
	if !strings.Contains(string(out), "sandbox: landlock") {
		t.Fatalf("config check does not say the sandbox is landlock:\n%s", out)
	}
}

// TestSignedCachesWithSandboxOff: the second line, through the binary. With
// the sandbox off (the operator's opt-out) an agent can write the host's
// caches; it swaps echo's cached instrumented module for another plugin's
// and shuffles wazero's machine-code files. After a restart echo still
// answers as echo: every swapped entry fails its MAC and is compiled again,
// never run. (An agent that also reads the key can forge entries: with the
// sandbox off that is a stated residual risk, see SECURITY.md.)
func TestSignedCachesWithSandboxOff(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and plugins, runs an attempt")
	}
	w := newSandboxWorld(t)
	h := w.serve(t, "--sandbox", "off")
	var echoed struct {
		Text string `json:"text"`
	}
	if env := h.call(t, "echo", map[string]any{"text": "before"}, &echoed); env != nil {
		t.Fatalf("echo: %+v", env)
	}
	// Every plugin compiled and cached before the agent runs.
	for _, tool := range []string{"list_projects", "get_task", "create_task", "get_attempt_file"} {
		h.call(t, tool, map[string]any{}, nil)
	}
	// The compilations run in the background (first calls are
	// interpreted meanwhile): wait for them to land on disk, which takes
	// longer on a loaded machine.
	var instrumented, machine []string
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		instrumented, _ = filepath.Glob(filepath.Join(w.data, "compiled", "key-*", "instrumented", "*.wasm"))
		machine, _ = filepath.Glob(filepath.Join(w.data, "compiled", "key-*", "wazero-*", "*"))
		if len(instrumented) >= 2 && len(machine) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("caches not filled within 90 s: %d instrumented, %d machine-code files", len(instrumented), len(machine))
		}
	}
	echoWasm, err := os.ReadFile(filepath.Join(w.plugins, "echo.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(echoWasm)
	echoEntry := ""
	for _, f := range instrumented {
		if strings.HasPrefix(filepath.Base(f), hex.EncodeToString(sum[:])) {
			echoEntry = f
		}
	}
	if echoEntry == "" {
		t.Fatalf("no instrumented entry for echo among %v", instrumented)
	}
	other := instrumented[0]
	if other == echoEntry {
		other = instrumented[1]
	}
	// The agent: echo's entry becomes another plugin's, and every machine-code
	// file takes its neighbour's content (sidecars included).
	var script strings.Builder
	fmt.Fprintf(&script, "cp %q %q\n", other, echoEntry)
	for i, f := range machine {
		fmt.Fprintf(&script, "cp %q %q.swap\n", machine[(i+1)%len(machine)], f)
	}
	for _, f := range machine {
		fmt.Fprintf(&script, "mv %q.swap %q\n", f, f)
	}
	script.WriteString("echo planted > report.txt\n")
	attacker := w.runAttempt(t, h, "plant", script.String())
	if b, _ := os.ReadFile(filepath.Join(w.data, "worktrees", attacker.AttemptID, "app", "report.txt")); !strings.Contains(string(b), "planted") {
		t.Fatalf("the unconfined agent could not plant its files: %q", b)
	}
	if got, _ := os.ReadFile(echoEntry); !bytes.Equal(got, mustRead(t, other)) {
		t.Fatal("echo's cache entry was not replaced: the attack did not happen")
	}
	h.session.Close()
	h.cmd.Wait()

	h = w.serve(t, "--sandbox", "off")
	if env := h.call(t, "echo", map[string]any{"text": "after"}, &echoed); env != nil || echoed.Text != "after" {
		t.Fatalf("echo after the caches were planted: %+v, %+v", echoed, env)
	}
	if env := h.call(t, "list_projects", map[string]any{}, nil); env != nil {
		t.Fatalf("list_projects after the caches were planted: %+v", env)
	}
	if log := h.stderr.String(); !strings.Contains(log, "not signed by this host") {
		t.Fatalf("the host did not report the planted instrumented module:\n%s", log)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
