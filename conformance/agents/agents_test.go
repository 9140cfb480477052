package agents

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/abi/tasks"
	"github.com/plugboard/plugboard/conformance/scenario"
	plughost "github.com/plugboard/plugboard/host"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// cli is one coding-agent CLI under test and what it must say without
// credentials.
type cli struct {
	executor string
	// reason matches the CLI's own account of why a run without
	// credentials fails: its authentication error, or its network error
	// where the machine has no network.
	reason *regexp.Regexp
	// credential names the variable that, when the test's environment
	// has it, turns the runs into real ones that must complete.
	credential string
	// mayComplete: the CLI can complete a run without credentials (OpenCode
	// has a free model where the machine has network).
	mayComplete bool
	// notReason matches what must never be the reason (a refusal the
	// profile exists to avoid).
	notReason *regexp.Regexp
	// oneAtATime: the CLI's runs share one state database in the home
	// directory that does not take two writers (OpenCode's SQLite fails a
	// run with "database is locked"), so its runs here go one after the
	// other, as a user running one at a time would see them.
	oneAtATime bool
}

var clis = []cli{
	{executor: "CLAUDE_CODE", reason: regexp.MustCompile(`Not logged in`), credential: "ANTHROPIC_API_KEY",
		notReason: regexp.MustCompile(`cannot be used with root`)},
	{executor: "CODEX", reason: regexp.MustCompile(`(?i)Reconnecting|error sending request|failed to lookup address|stream disconnected|401|Unauthorized|api key|not logged in`),
		credential: "OPENAI_API_KEY"},
	{executor: "GEMINI", reason: regexp.MustCompile(`(?i)fetch failed|API key not valid|API_KEY_INVALID`), credential: "GEMINI_API_KEY",
		notReason: regexp.MustCompile(`trusted directory|Please set an Auth method`)},
	// OpenCode picks its provider from the credentials it finds: with
	// Gemini's dummy key in the environment it asks for Google's.
	{executor: "OPENCODE", reason: regexp.MustCompile(`(?i)Cannot connect to API|Unable to connect|fetch failed|ECONNREFUSED|Failed to fetch|API key is missing`),
		mayComplete: true, oneAtATime: true},
	{executor: "QWEN_CODE", reason: regexp.MustCompile(`No auth type is selected`)},
}

// flagRefused matches how the CLIs (yargs, commander, clap) reject a flag
// or its value.
var flagRefused = regexp.MustCompile(`(?i)unknown (option|argument|flag)|unrecognized (option|argument)|invalid (value|choice|values)|did you mean|unexpected argument|not enough arguments|Argument check failed|Choices:`)

// TestAgentCLIs runs every variant of the five verified profiles against
// its real CLI through the real binary: a first run, a follow-up, and a
// stop, each checked for a refused flag, the CLI's reason in the
// normalised log and failure_summary, and processes left behind.
func TestAgentCLIs(t *testing.T) {
	if testing.Short() {
		t.Skip("installs five coding-agent CLIs from npm and runs them")
	}
	ctx := context.Background()
	root := buildtest.Root(t)
	clisDir, err := Install(ctx, root)
	if err != nil {
		t.Fatalf("%v\n(the agent CLI test needs npm and the npm registry; conformance/agents/install.sh installs the pinned CLIs)", err)
	}
	bin := buildtest.Binary(t)
	plugins, _ := buildtest.Plugins(t, "plugins/tasks-read", "plugins/tasks-control")
	// The built-in profiles, as the board lists them.
	profiles, err := plughost.OpenBoard(ctx, plughost.BoardConfig{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	executors, err := profiles.ListExecutors(ctx)
	profiles.Close()
	if err != nil {
		t.Fatal(err)
	}

	work := t.TempDir()
	data := filepath.Join(work, "data")
	home := filepath.Join(work, "home")
	repo := filepath.Join(work, "app")
	for _, d := range []string{home, repo} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	gitInit(t, repo)
	// IS_SANDBOX comes only from the flag below: a machine that sets it
	// (some CI sandboxes do) would hide the refusal checked here.
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "IS_SANDBOX=") })
	env = append(env,
		"PATH="+filepath.Join(clisDir, "node_modules", ".bin")+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "XDG_DATA_HOME="+filepath.Join(home, ".local", "share"),
		"NO_COLOR=1")
	if os.Getenv("GEMINI_API_KEY") == "" {
		// A dummy key gets Gemini past its own key check to the network
		// call: the first place a missing trust or a bad flag shows.
		env = append(env, "GEMINI_API_KEY=plugboard-test-dummy-key")
	}
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("plugboard %s: %v\n%s", strings.Join(args, " "), err, stderrOf(err))
		}
		return strings.TrimSpace(string(out))
	}
	// OpenCode creates and migrates its database on its first start, and
	// two first starts at once race: one fails with "Failed query: CREATE
	// TABLE …" before it reaches the network. A user's machine has the
	// database from the CLI's first use; so does this home, made the way
	// the CLI makes it, before the runs start side by side.
	prime := exec.Command(filepath.Join(clisDir, "node_modules", ".bin", "opencode"), "session", "list")
	prime.Env, prime.Dir = env, home
	if out, err := prime.CombinedOutput(); err != nil {
		t.Fatalf("opencode session list (creating its database): %v\n%s", err, out)
	}
	run("project", "create", "agents", "--repo", repo, "--data", data)
	newTask := func(title string) string {
		return run("task", "create", "agents", title, "--description", "Reply with the word hello and change nothing.", "--data", data)
	}

	if os.Geteuid() == 0 {
		t.Run("claude-as-root-refused-with-the-setting", func(t *testing.T) {
			// Without IS_SANDBOX declared, DEFAULT is refused at once,
			// naming the setting; the CLI's bare refusal never shows.
			task := newTask("root refusal")
			cmd := exec.Command(bin, "call", "start_task_attempt",
				fmt.Sprintf(`{"task_id":%q,"executor":"CLAUDE_CODE","variant":"DEFAULT"}`, task),
				"--data", data, "--plugins", plugins)
			cmd.Env = env
			out, _ := cmd.CombinedOutput()
			if !strings.Contains(string(out), "invalid_argument") || !strings.Contains(string(out), "--agent-env IS_SANDBOX=1") {
				t.Fatalf("CLAUDE_CODE DEFAULT as root without IS_SANDBOX: want an invalid_argument envelope naming --agent-env IS_SANDBOX=1, got:\n%s", out)
			}
		})
	}

	type job struct {
		cli     cli
		variant string
		task    string
	}
	var jobs []job
	stopTasks := map[string]string{}
	for _, c := range clis {
		i := slices.IndexFunc(executors.Executors, func(e tasks.Executor) bool { return e.Executor == c.executor })
		if i < 0 {
			t.Fatalf("no built-in profile %s", c.executor)
		}
		if profiles.ExecutorVerifiedWith(c.executor) == "" {
			t.Errorf("%s records no CLI version it was verified with", c.executor)
		}
		for _, v := range executors.Executors[i].Variants {
			jobs = append(jobs, job{cli: c, variant: v, task: newTask(c.executor + " " + v)})
		}
		stopTasks[c.executor] = newTask(c.executor + " stop")
	}

	// One server for every run, as a user runs it: the operator declares
	// attempts sandboxed so Claude's unattended variant may run as root
	// (docs/DECISIONS.md); limits shorter than the defaults keep a CLI that
	// retries for ever (Codex without network) inside the test's time, yet
	// leave a CLI starting on a loaded 2-core machine time to reach the
	// network (Gemini and OpenCode print nothing until they do).
	var serverLog clitest.SyncBuffer
	sess, err := scenario.DialGoSDK(ctx, scenario.Endpoint{Binary: bin, Env: env, Stderr: &serverLog,
		Args: []string{"serve", "--data", data, "--plugins", plugins, "--agent-env", "IS_SANDBOX=1",
			"--agent-inactivity-timeout", "2m", "--agent-run-timeout", "6m"}}, nil)
	if err != nil {
		t.Fatalf("start plugboard serve: %v", err)
	}
	defer func() {
		sess.Close()
		if t.Failed() {
			t.Logf("server log:\n%s", serverLog.String())
		}
	}()
	mc := &mcpClient{s: sess}

	// Every run at once: the CLIs mostly wait on the network, and
	// t.Parallel would hold them to -parallel (the number of cores). t.Run
	// may be called from several goroutines.
	turns := map[string]*sync.Mutex{}
	for _, c := range clis {
		turns[c.executor] = &sync.Mutex{}
	}
	// takeTurn holds a oneAtATime CLI's turn for the length of a subtest.
	takeTurn := func(c cli) func() {
		if !c.oneAtATime {
			return func() {}
		}
		turns[c.executor].Lock()
		return turns[c.executor].Unlock
	}
	t.Run("runs", func(t *testing.T) {
		var wg sync.WaitGroup
		defer wg.Wait()
		for i, j := range jobs {
			wg.Go(func() {
				// Starts spread over half a minute: eighteen Node CLIs
				// starting at once would starve the test packages running
				// beside this one on a 2-core machine.
				time.Sleep(time.Duration(i) * 1500 * time.Millisecond)
				t.Run(j.cli.executor+"/"+j.variant, func(t *testing.T) {
					defer takeTurn(j.cli)()
					started := mc.call(t, "start_task_attempt", map[string]any{"task_id": j.task, "executor": j.cli.executor, "variant": j.variant})
					attempt := started.str("attempt_id")
					checkRun(t, mc, j.cli, attempt, "first run")
					mc.call(t, "follow_up", map[string]any{"action": "send", "attempt_id": attempt, "prompt": "Say hello once more."})
					checkRun(t, mc, j.cli, attempt, "follow-up")
				})
			})
		}
		for _, c := range clis {
			wg.Go(func() {
				// After every run has started and had time to set its CLI
				// up: a stop during a CLI's first start can kill it half-way
				// through creating its own state (OpenCode's database
				// migration), which then fails the runs beside it — a
				// CLI's problem, not the profile's, and not what this
				// checks.
				time.Sleep(time.Duration(len(jobs))*1500*time.Millisecond + 10*time.Second)
				t.Run(c.executor+"/stop", func(t *testing.T) {
					defer takeTurn(c)()
					started := mc.call(t, "start_task_attempt", map[string]any{"task_id": stopTasks[c.executor], "executor": c.executor})
					attempt := started.str("attempt_id")
					time.Sleep(3 * time.Second) // let the CLI get going (or, for some, end)
					mc.call(t, "stop_attempt", map[string]any{"attempt_id": attempt})
					deadline := time.Now().Add(15 * time.Second)
					for {
						left := processesOf(attempt)
						if len(left) == 0 {
							break
						}
						if time.Now().After(deadline) {
							t.Fatalf("after stop_attempt, processes of attempt %s are still running: %v", attempt, left)
						}
						time.Sleep(200 * time.Millisecond)
					}
					st := waitEnded(t, mc, attempt)
					if st.str("state") == "running" {
						t.Fatalf("attempt still running after stop: %v", st)
					}
				})
			})
		}
	})
}

// checkRun waits for the attempt's current run to end and checks how.
func checkRun(t *testing.T, mc *mcpClient, c cli, attempt, what string) {
	t.Helper()
	st := waitEnded(t, mc, attempt)
	state, summary := st.str("state"), st.str("failure_summary")
	logs := mc.logs(t, attempt, "normalized")
	raw := mc.logs(t, attempt, "raw")
	t.Logf("%s: state %s, failure_summary %q", what, state, summary)
	if m := flagRefused.FindString(raw); m != "" {
		t.Errorf("%s: the CLI refused a flag (%q) — raw log:\n%s", what, m, cut(raw))
	}
	if c.notReason != nil && (c.notReason.MatchString(summary) || c.notReason.MatchString(raw)) {
		t.Errorf("%s: the run hit %q, which the profile exists to avoid — raw log:\n%s", what, c.notReason, cut(raw))
	}
	if c.credential != "" && os.Getenv(c.credential) != "" {
		if state != "completed" {
			t.Errorf("%s: with %s set the run should complete; state %s, failure_summary %q", what, c.credential, state, summary)
		}
		return
	}
	if state == "completed" && c.mayComplete {
		return
	}
	if state != "failed" {
		t.Fatalf("%s: state %s, want failed (no credentials)", what, state)
	}
	if !c.reason.MatchString(summary) {
		t.Errorf("%s: failure_summary %q does not carry the CLI's reason (%s)", what, summary, c.reason)
	}
	if !c.reason.MatchString(logs) {
		t.Errorf("%s: the normalised log does not carry the CLI's reason (%s):\n%s", what, c.reason, cut(logs))
	}
}

// waitEnded polls get_attempt_status until the attempt's run has ended.
func waitEnded(t *testing.T, mc *mcpClient, attempt string) result {
	t.Helper()
	deadline := time.Now().Add(8 * time.Minute)
	for {
		st := mc.call(t, "get_attempt_status", map[string]any{"attempt_id": attempt})
		if s := st.str("state"); s != "running" && s != "idle" {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("attempt %s still %s after 8 minutes", attempt, st.str("state"))
		}
		time.Sleep(time.Second)
	}
}

// processesOf lists the pids of live processes started for attempt: every
// process the board starts carries PLUGBOARD_ATTEMPT_ID in its environment,
// and so do its descendants unless they clear it.
func processesOf(attempt string) []string {
	marker := []byte("PLUGBOARD_ATTEMPT_ID=" + attempt + "\x00")
	entries, _ := os.ReadDir("/proc")
	var pids []string
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && bytes.Contains(b, marker) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

type mcpClient struct{ s *mcp.ClientSession }

type result map[string]any

func (r result) str(key string) string {
	s, _ := r[key].(string)
	return s
}

func (mc *mcpClient) call(t *testing.T, tool string, args map[string]any) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := mc.s.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var text string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text += tc.Text
		}
	}
	if res.IsError {
		t.Fatalf("%s %v: %s", tool, args, text)
	}
	var out result
	if b, err := json.Marshal(res.StructuredContent); err == nil && res.StructuredContent != nil {
		json.Unmarshal(b, &out)
	} else if err := json.Unmarshal([]byte(text), &out); err != nil {
		t.Fatalf("%s: result is not JSON: %s", tool, text)
	}
	return out
}

// logs returns the attempt's latest log page on channel as text, one
// entry per line.
func (mc *mcpClient) logs(t *testing.T, attempt, channel string) string {
	t.Helper()
	page := mc.call(t, "tail_attempt_logs", map[string]any{"attempt_id": attempt, "channel": channel, "limit": 500})
	entries, _ := page["entries"].([]any)
	var b strings.Builder
	for _, e := range entries {
		m, _ := e.(map[string]any)
		if entry, ok := m["entry"].(map[string]any); ok { // a raw or normalised entry nested in its row
			m = entry
		}
		fmt.Fprintf(&b, "%v %v\n", m["entry_type"], m["content"])
	}
	return b.String()
}

func gitInit(t *testing.T, dir string) {
	t.Helper()
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"-c", "user.name=test", "-c", "user.email=test@example.com", "commit", "-q", "--allow-empty", "-m", "initial"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

func cut(s string) string {
	if len(s) > 6000 {
		return s[:3000] + "\n…\n" + s[len(s)-3000:]
	}
	return s
}
