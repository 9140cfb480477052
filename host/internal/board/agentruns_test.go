package board

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/store"
)

// fakeAgent writes an executors file with one profile, FAKE, whose program
// is script (run by bash), and returns its path. extra adds profile fields.
func fakeAgent(t *testing.T, script string, extra map[string]any, variant map[string]any) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	v := map[string]any{"argv": []string{"bash", path}, "resume": []string{"bash", path, "--resume", "{agent_session_id}"}, "stdin": "prompt"}
	for k, x := range variant {
		v[k] = x
	}
	p := map[string]any{"executor": "FAKE", "binary": "bash", "output_format": "lines", "variants": map[string]any{"DEFAULT": v}}
	for k, x := range extra {
		p[k] = x
	}
	b, _ := json.Marshal(map[string]any{"executors": []any{p}})
	file := filepath.Join(dir, "executors.json")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

func fakeFixture(t *testing.T, cfg Config) fixture {
	t.Helper()
	b := openBoard(t, cfg)
	repo := gitRepo(t, "app", map[string]string{"README.md": "hello\n"})
	p, err := b.CreateProject(context.Background(), "demo", []RepoSpec{{Path: repo}})
	if err != nil {
		t.Fatal(err)
	}
	return fixture{b: b, project: p, repo: repo}
}

func (f fixture) startFake(t *testing.T, prompt string) StartResult {
	t.Helper()
	task := f.task(t, "fake", prompt)
	res, err := f.b.StartTaskAttempt(context.Background(), StartArgs{TaskID: task.TaskID, Executor: "FAKE"})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestInactivityTimeoutIgnoresRetries: an agent that only prints retry
// notices is stopped at its inactivity timeout and recorded failed, with
// the timeout and its last notice as the reason.
func TestInactivityTimeoutIgnoresRetries(t *testing.T) {
	script := "n=0; while true; do n=$((n+1)); echo \"Reconnecting... $n/5 (stream disconnected)\" >&2; sleep 0.05; done\n"
	f := fakeFixture(t, Config{ExecutorsFile: fakeAgent(t, script, map[string]any{"inactivity_timeout": "700ms"}, nil)})
	res := f.startFake(t, "work")
	st := settle(t, f.b, res.AttemptID)
	if st.State != StateFailed || st.FailureSummary == nil {
		t.Fatalf("status = %+v", st)
	}
	for _, want := range []string{"no progress for 700ms", "inactivity timeout", "Reconnecting..."} {
		if !strings.Contains(*st.FailureSummary, want) {
			t.Errorf("failure_summary %q lacks %q", *st.FailureSummary, want)
		}
	}
	p, _ := f.b.store.GetProcess(context.Background(), *st.LatestExecutionProcessID)
	if p.Status != store.ProcFailed {
		t.Errorf("process status %s, want failed (a timeout is not a stop someone asked for)", p.Status)
	}
}

// TestRunTimeout: an agent that keeps making progress still ends at the
// run timeout.
func TestRunTimeout(t *testing.T) {
	script := "while true; do echo working; sleep 0.05; done\n"
	f := fakeFixture(t, Config{ExecutorsFile: fakeAgent(t, script, nil, nil), AgentRunTimeout: 600e6, AgentInactivityTimeout: 60e9})
	res := f.startFake(t, "work")
	st := settle(t, f.b, res.AttemptID)
	if st.State != StateFailed || st.FailureSummary == nil || !strings.Contains(*st.FailureSummary, "ran longer than the run timeout (600ms)") {
		t.Fatalf("status = %+v", st)
	}
}

// TestFailureSummaryCarriesAgentReason: the agent's last error is in
// failure_summary after the exit code.
func TestFailureSummaryCarriesAgentReason(t *testing.T) {
	script := "echo starting; echo 'Error: Not logged in · Please run /login' >&2; exit 1\n"
	f := fakeFixture(t, Config{ExecutorsFile: fakeAgent(t, script, nil, nil)})
	res := f.startFake(t, "work")
	st := settle(t, f.b, res.AttemptID)
	if st.FailureSummary == nil || *st.FailureSummary != "failed (exit_code=1): Error: Not logged in · Please run /login" {
		t.Fatalf("failure_summary = %v", st.FailureSummary)
	}
}

// TestResumeMissingRunsFresh: a follow-up whose agent session the CLI
// cannot find is run again fresh, told the conversation so far.
func TestResumeMissingRunsFresh(t *testing.T) {
	script := `prompt=$(cat)
if [ "$1" = "--resume" ]; then echo "No saved session found with title \"$2\"." >&2; exit 1; fi
echo '{"session_id":"agent-1"}'
echo "GOT: $prompt"
echo "final answer for: $(echo "$prompt" | head -c 40)"
`
	f := fakeFixture(t, Config{ExecutorsFile: fakeAgent(t, script, map[string]any{"resume_missing": []string{"No saved session found"}}, nil)})
	res := f.startFake(t, "first task")
	settle(t, f.b, res.AttemptID)
	ctx := context.Background()
	se, err := f.b.store.LatestSession(ctx, res.AttemptID)
	if err != nil || se.AgentSessionID != "agent-1" {
		t.Fatalf("session = %+v, %v", se, err)
	}
	if _, err := f.b.FollowUp(ctx, FollowUpArgs{Action: ActionSend, AttemptID: res.AttemptID, Prompt: "second prompt"}); err != nil {
		t.Fatal(err)
	}
	// An agent polls get_attempt_status until the state is no longer
	// running: between the failed resume and the fresh run it must never
	// read failed, or the agent stops there with the CLI's resume error.
	var st StatusResult
	for deadline := time.Now().Add(20 * time.Second); ; {
		st, err = f.b.GetAttemptStatus(ctx, AttemptArgs{AttemptID: res.AttemptID})
		if err != nil {
			t.Fatal(err)
		}
		if st.State != StateRunning && st.State != StateIdle {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("attempt still running: %+v", st)
		}
	}
	if st.State != StateCompleted {
		t.Fatalf("the first state after running that a poller reads: %+v (want completed, by the fresh run)", st)
	}
	settle(t, f.b, res.AttemptID)
	procs, err := f.b.Store().AttemptProcesses(ctx, res.AttemptID)
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string
	for _, p := range procs {
		cmds = append(cmds, p.Status+": "+p.Command)
	}
	if len(procs) != 3 || !strings.Contains(cmds[1], "--resume agent-1") || strings.Contains(cmds[2], "--resume") {
		t.Fatalf("want first run, failed resume, fresh run; got:\n%s", strings.Join(cmds, "\n"))
	}
	page, err := f.b.TailAttemptLogs(ctx, LogsArgs{AttemptID: res.AttemptID, Channel: "raw", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	log := strings.Join(entryContents(t, page.Entries), "\n")
	for _, want := range []string{"could not be resumed", "first task", "second prompt"} {
		if !strings.Contains(log, want) {
			t.Errorf("the fresh run was not told %q:\n%s", want, log)
		}
	}
}

// TestRootRequiresEnv: a variant whose CLI refuses root without a variable
// is refused at once as root, naming the setting, and runs once the
// operator sets it.
func TestRootRequiresEnv(t *testing.T) {
	root := true
	file := fakeAgent(t, "cat >/dev/null; echo ok\n", nil, map[string]any{"root_requires_env": "IS_SANDBOX"})
	t.Setenv("IS_SANDBOX", "")
	f := fakeFixture(t, Config{ExecutorsFile: file, RunningAsRoot: &root})
	task := f.task(t, "fake", "p")
	_, err := f.b.StartTaskAttempt(context.Background(), StartArgs{TaskID: task.TaskID, Executor: "FAKE"})
	env := envelope(t, err, abi.CodeInvalidArgument)
	if !strings.Contains(env.Hint, "--agent-env IS_SANDBOX=1") || !strings.Contains(env.Message, "cannot run as root") {
		t.Fatalf("envelope = %+v", env)
	}
	if list, _ := f.b.ListTaskAttempts(context.Background(), TaskArgs{TaskID: task.TaskID}); len(list.Attempts) != 0 {
		t.Fatalf("a refused start created an attempt: %+v", list)
	}

	f2 := fakeFixture(t, Config{ExecutorsFile: file, RunningAsRoot: &root, AgentEnv: AgentEnv{Set: []string{"IS_SANDBOX=1"}}})
	res := f2.startFake(t, "p")
	if st := settle(t, f2.b, res.AttemptID); st.State != StateCompleted {
		t.Fatalf("with IS_SANDBOX=1 declared: %+v", st)
	}
}

// TestProfileEnvPrecedence: a profile's env wins over the host's, and the
// operator's --agent-env over the profile's.
func TestProfileEnvPrecedence(t *testing.T) {
	t.Setenv("FROM_HOST", "host")
	t.Setenv("OVERRIDDEN", "host")
	got := agentEnviron(os.Environ(), AgentEnv{Set: []string{"OPERATOR=op", "BOTH=op"}},
		map[string]string{"OVERRIDDEN": "profile", "BOTH": "profile", "PROFILE_ONLY": "p"})
	for _, want := range []string{"FROM_HOST=host", "OVERRIDDEN=profile", "BOTH=op", "PROFILE_ONLY=p", "OPERATOR=op"} {
		if !slices.Contains(got, want) {
			t.Errorf("environment lacks %s", want)
		}
	}
	seen := map[string]bool{}
	for _, kv := range got {
		k, _, _ := strings.Cut(kv, "=")
		if seen[k] {
			t.Errorf("%s appears twice", k)
		}
		seen[k] = true
	}
}
