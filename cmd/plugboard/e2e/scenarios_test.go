package e2e

import (
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

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/abi/tasks"
	plughost "github.com/plugboard/plugboard/host"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
	"github.com/plugboard/plugboard/internal/testing/pgtest"
)

// The scenario tests: one test per WHEN/THEN scenario of
// /work/shared/spec/spec-mcp-task-tools.md, named after it, each through
// `plugboard serve` over stdio with the built task plugins, a real git
// repository and real SHELL processes. Every successful result is also
// validated against its tool's outputSchema.

// scenarioStore is the store the pack runs on: "" is SQLite in each
// scenario's data directory; "postgres" a fresh database on the test
// binary's PostgreSQL cluster, set by TestScenarioPackOnPostgres for the
// copy of the pack it runs.
var scenarioStore = os.Getenv("PLUGBOARD_SCENARIO_STORE")

// TestScenarioPackOnPostgres runs the whole scenario pack again — every
// TestScenario*, the closed loop and the exactly-once test — with the
// board in PostgreSQL (--store postgres://…), in a copy of this test
// binary, and checks that each passed there too.
func TestScenarioPackOnPostgres(t *testing.T) {
	if scenarioStore != "" {
		t.Skip("this is the copy running the pack on " + scenarioStore)
	}
	if testing.Short() {
		t.Skip("runs the scenario pack a second time")
	}
	pgtest.Installed(t)
	const pack = "^(TestScenario|TestClosedLoop$|TestConcurrentCreateTaskExactlyOnce$)"
	cmd := exec.Command(os.Args[0], "-test.run", pack, "-test.count", "1", "-test.v", "-test.timeout", "15m")
	cmd.Env = append(os.Environ(), "PLUGBOARD_SCENARIO_STORE=postgres", "PLUGBOARD_REQUIRE_POSTGRES=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the scenario pack on PostgreSQL failed: %v\n%s", err, out)
	}
	passed := regexp.MustCompile(`(?m)^--- PASS: (TestScenario\w+|TestClosedLoop|TestConcurrentCreateTaskExactlyOnce) `).FindAll(out, -1)
	skipped := regexp.MustCompile(`(?m)^--- SKIP: TestScenario\w+`).FindAll(out, -1)
	if len(passed) < 30 || len(skipped) > 1 {
		t.Fatalf("the pack on PostgreSQL passed %d tests and skipped %d:\n%s", len(passed), len(skipped), out)
	}
	t.Logf("%d scenario tests passed on PostgreSQL", len(passed))
}

var taskPlugins = []string{"plugins/tasks-read", "plugins/tasks-write", "plugins/tasks-control", "plugins/tasks-workspace"}

// specScenario is one server over a board with project "demo" over repo "app".
type specScenario struct {
	t         *testing.T
	s         *server
	data      string
	repo      string
	projectID string
	repoID    string
	schemas   map[string]*jsonschema.Resolved
	tools     map[string]*mcp.Tool
}

type scenarioOptions struct {
	serveArgs   []string
	setupScript string
	attempt     func(b *plughost.Board, projectID string) string
}

var sharedCompiled = sync.OnceValue(func() string {
	d := filepath.Join(os.TempDir(), "plugboard-test-compiled")
	os.MkdirAll(d, 0o755)
	// The key the cache is signed with goes with it: a host with a key of
	// its own would discard every entry the others signed.
	os.MkdirAll(d+"-keys", 0o700)
	return d
})

// shareCompiled points data's compile cache, and the key that signs it, at
// the tests' shared ones, so each test does not compile the plugins anew.
func shareCompiled(t testing.TB, data string) {
	t.Helper()
	for name, target := range map[string]string{"compiled": sharedCompiled(), "keys": sharedCompiled() + "-keys"} {
		if _, err := os.Lstat(filepath.Join(data, name)); err == nil {
			continue
		}
		if err := os.Symlink(target, filepath.Join(data, name)); err != nil {
			t.Fatal(err)
		}
	}
}

func newScenario(t *testing.T, opts scenarioOptions) *specScenario {
	t.Helper()
	dir, _ := buildtest.Plugins(t, taskPlugins...)
	sc := &specScenario{t: t, data: t.TempDir()}
	// Compiled code is shared between the tests' servers (wazero's cache is
	// keyed by module content), so each test does not compile four plugins.
	shareCompiled(t, sc.data)
	sc.repo = filepath.Join(t.TempDir(), "app")
	os.MkdirAll(filepath.Join(sc.repo, "src"), 0o755)
	os.WriteFile(filepath.Join(sc.repo, "README.md"), []byte("# app\n"), 0o644)
	os.WriteFile(filepath.Join(sc.repo, "src", "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644)
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "initial"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = sc.repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	var storeURL string
	if scenarioStore == "postgres" {
		storeURL = pgtest.Shared(t).NewDatabase(t)
	}
	b, err := plughost.OpenBoard(context.Background(), plughost.BoardConfig{DataDir: sc.data, Store: storeURL})
	if err != nil {
		t.Fatal(err)
	}
	p, err := b.CreateProject(context.Background(), "demo", []plughost.RepoSpec{{Path: sc.repo, SetupScript: opts.setupScript}})
	if err != nil {
		t.Fatal(err)
	}
	sc.projectID, sc.repoID = p.ID, p.Repos[0].ID
	serveArgs := append([]string{"--data", sc.data}, opts.serveArgs...)
	if storeURL != "" {
		serveArgs = append(serveArgs, "--store", storeURL)
	}
	if opts.attempt != nil {
		serveArgs = append(serveArgs, "--attempt", opts.attempt(b, p.ID))
	}
	b.Close()
	sc.s = startServer(t, dir, serveArgs...)
	sc.listTools()
	return sc
}

// listTools reads the tools sc.s serves and resolves their output schemas,
// which every answer is checked against.
func (sc *specScenario) listTools() {
	t := sc.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := sc.s.session.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	sc.tools, sc.schemas = map[string]*mcp.Tool{}, map[string]*jsonschema.Resolved{}
	for _, tool := range list.Tools {
		sc.tools[tool.Name] = tool
		raw, _ := json.Marshal(tool.OutputSchema)
		var s jsonschema.Schema
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatalf("%s outputSchema: %v", tool.Name, err)
		}
		if sc.schemas[tool.Name], err = s.Resolve(nil); err != nil {
			t.Fatalf("%s outputSchema does not resolve: %v", tool.Name, err)
		}
	}
}

// call makes a tool call and returns its raw result.
func (sc *specScenario) raw(tool string, args map[string]any) *mcp.CallToolResult {
	sc.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return sc.s.call(sc.t, ctx, tool, args)
}

// ok calls a tool that must succeed, checks the result against the tool's
// outputSchema, and decodes it into a generic object.
func (sc *specScenario) ok(tool string, args map[string]any) obj {
	sc.t.Helper()
	res := sc.raw(tool, args)
	if res.IsError {
		sc.t.Fatalf("%s(%v) failed: %s", tool, args, clitest.Text(res))
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		sc.t.Fatalf("%s structuredContent: %v", tool, err)
	}
	if err := sc.schemas[tool].Validate(out); err != nil {
		sc.t.Fatalf("%s result does not validate against its outputSchema: %v\n%s", tool, err, b)
	}
	return obj(out)
}

// fail calls a tool that must answer an envelope with code.
func (sc *specScenario) fail(tool string, args map[string]any, code string) abi.Envelope {
	sc.t.Helper()
	env := clitest.EnvelopeOf(sc.t, sc.raw(tool, args))
	if env.Code != code {
		sc.t.Fatalf("%s(%v): code %s, want %s: %+v", tool, args, env.Code, code, env)
	}
	if env.Hint == "" {
		sc.t.Fatalf("%s: envelope %s has no hint", tool, code)
	}
	return env
}

// obj reads fields of a decoded JSON object.
type obj map[string]any

func (o obj) str(key string) string {
	s, _ := o[key].(string)
	return s
}

func (o obj) null(key string) bool {
	v, ok := o[key]
	return ok && v == nil
}

func (o obj) bool(key string) bool {
	b, _ := o[key].(bool)
	return b
}

func (o obj) num(key string) int64 {
	f, _ := o[key].(float64)
	return int64(f)
}

func (o obj) obj(key string) obj {
	m, _ := o[key].(map[string]any)
	return obj(m)
}

func (o obj) list(key string) []obj {
	items, _ := o[key].([]any)
	out := make([]obj, len(items))
	for i, it := range items {
		m, _ := it.(map[string]any)
		out[i] = obj(m)
	}
	return out
}

func (sc *specScenario) createTask(title, script string) string {
	sc.t.Helper()
	return sc.ok("create_task", map[string]any{"project_id": sc.projectID, "title": title, "description": script}).str("task_id")
}

func (sc *specScenario) startShell(taskID string) obj {
	sc.t.Helper()
	return sc.ok("start_task_attempt", map[string]any{"task_id": taskID, "executor": "SHELL",
		"repos": []any{map[string]any{"repo_id": sc.repoID}}})
}

// attempt creates a task running script and starts it, returning the
// attempt id.
func (sc *specScenario) attempt(script string) string {
	sc.t.Helper()
	return sc.startShell(sc.createTask("Scenario task", script)).str("attempt_id")
}

// waitStatus polls get_attempt_status until done(status) holds.
func (sc *specScenario) waitStatus(attemptID string, what string, done func(obj) bool) obj {
	sc.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := sc.ok("get_attempt_status", map[string]any{"attempt_id": attemptID})
		if done(st) {
			return st
		}
		if time.Now().After(deadline) {
			sc.t.Fatalf("attempt never became %s: %v", what, st)
		}
		time.Sleep(30 * time.Millisecond)
	}
}

func (sc *specScenario) waitSettled(attemptID string) obj {
	sc.t.Helper()
	return sc.waitStatus(attemptID, "settled", func(st obj) bool {
		return st.str("state") != "running" && st.str("task_status") != "inprogress"
	})
}

func (sc *specScenario) waitRunning(attemptID string) obj {
	sc.t.Helper()
	return sc.waitStatus(attemptID, "running with a session", func(st obj) bool {
		return st.str("state") == "running" && !st.null("latest_session_id")
	})
}

// waitLog polls the attempt's log until an entry's content is want.
func (sc *specScenario) waitLog(attemptID, want string) {
	sc.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		page := sc.ok("tail_attempt_logs", map[string]any{"attempt_id": attemptID, "limit": 200})
		for _, e := range page.list("entries") {
			if e.str("content") == want {
				return
			}
		}
		if time.Now().After(deadline) {
			sc.t.Fatalf("log never showed %q", want)
		}
		time.Sleep(30 * time.Millisecond)
	}
}

// gate is a file a script waits for, so a test decides when it finishes.
func gate(t *testing.T) (path string, open func()) {
	path = filepath.Join(t.TempDir(), "gate")
	return path, func() { os.WriteFile(path, nil, 0o644) }
}

func waitFor(path string) string {
	return fmt.Sprintf("while [ ! -e %s ]; do sleep 0.02; done", path)
}

var uuidRE = `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`

// ---- Requirement: MCP task tool set ----

func TestScenarioToolsAreDiscoverable(t *testing.T) {
	sc := newScenario(t, scenarioOptions{})
	want := []string{"list_projects", "list_repos", "list_executors", "list_tasks", "get_task", "create_task",
		"update_task", "delete_task", "list_task_attempts", "start_task_attempt", "get_attempt_status",
		"tail_session_messages", "tail_attempt_logs", "get_attempt_changes", "get_attempt_patch", "get_attempt_file",
		"follow_up", "stop_attempt", "review_queue", "approve_attempt", "request_changes"}
	var got []string
	for name := range sc.tools {
		got = append(got, name)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("tools = %v\nwant %v (get_context only inside an attempt)", got, want)
	}
}

// ---- Requirement: Attempt terminology and identifiers ----

func TestScenarioAttemptIdIsUsableForFollowUp(t *testing.T) {
	sc := newScenario(t, scenarioOptions{})
	task := sc.createTask("Follow up", "echo first")
	started := sc.startShell(task)
	sc.waitSettled(started.str("attempt_id"))
	attempts := sc.ok("list_task_attempts", map[string]any{"task_id": task})
	id := attempts.list("attempts")[0].str("attempt_id")
	if !matches(uuidRE, id) || id != started.str("attempt_id") {
		t.Fatalf("attempt_id %q from list_task_attempts", id)
	}
	res := sc.ok("follow_up", map[string]any{"action": "send", "attempt_id": id, "prompt": "echo second"})
	if res.str("attempt_id") != id || res.str("execution_process_id") == "" {
		t.Fatalf("follow_up = %v", res)
	}
	sc.waitSettled(id)
	msgs := sc.ok("tail_session_messages", map[string]any{"attempt_id": id})
	if n := len(msgs.list("messages")); n != 2 {
		t.Fatalf("%d turns after the follow-up, want 2", n)
	}
}

func TestScenarioNoWorkspaceIdAliasInMCPSchemas(t *testing.T) {
	sc := newScenario(t, scenarioOptions{})
	for name, tool := range sc.tools {
		for _, part := range []any{tool.InputSchema, tool.OutputSchema, tool.Description} {
			b, _ := json.Marshal(part)
			if strings.Contains(string(b), "workspace_id") {
				t.Errorf("%s mentions workspace_id: %s", name, b)
			}
		}
	}
	id := sc.attempt("echo hi")
	sc.waitSettled(id)
	task := sc.ok("list_tasks", map[string]any{"project_id": sc.projectID}).list("tasks")[0].str("task_id")
	for tool, args := range map[string]map[string]any{
		"list_task_attempts": {"task_id": task}, "get_attempt_status": {"attempt_id": id},
		"list_tasks": {"project_id": sc.projectID}, "get_task": {"task_id": task},
		"tail_attempt_logs": {"attempt_id": id}, "get_attempt_changes": {"attempt_id": id},
	} {
		b, _ := json.Marshal(sc.ok(tool, args))
		if strings.Contains(string(b), "workspace_id") || !strings.Contains(string(b), "attempt_id") {
			t.Errorf("%s response names no attempt_id or names workspace_id: %s", tool, b)
		}
	}
}

// ---- Requirement: list_tasks provides attempt summary ----

func TestScenarioTaskListIncludesLatestAttemptInfo(t *testing.T) {
	sc := newScenario(t, scenarioOptions{})
	task := sc.createTask("Twice", "echo run")
	first := sc.startShell(task).str("attempt_id")
	sc.waitSettled(first)
	second := sc.startShell(task).str("attempt_id")
	st := sc.waitSettled(second)
	tasks := sc.ok("list_tasks", map[string]any{"project_id": sc.projectID}).list("tasks")
	if len(tasks) != 1 {
		t.Fatalf("tasks = %v", tasks)
	}
	got := tasks[0]
	if got.str("latest_attempt_id") != second || got.str("latest_session_id") != st.str("latest_session_id") ||
		got.str("latest_session_executor") != "SHELL" || got.str("latest_workspace_branch") == "" ||
		got.bool("has_in_progress_attempt") || got.bool("last_attempt_failed") {
		t.Fatalf("summary = %v (latest attempt %s)", got, second)
	}
}

// ---- Requirement: list_task_attempts returns attempt details ----

func TestScenarioAttemptsReturnedWithSessionSummary(t *testing.T) {
	sc := newScenario(t, scenarioOptions{})
	task := sc.createTask("Summary", "echo run")
	id := sc.startShell(task).str("attempt_id")
	st := sc.waitSettled(id)
	res := sc.ok("list_task_attempts", map[string]any{"task_id": task})
	a := res.list("attempts")[0]
	for _, field := range []string{"attempt_id", "workspace_branch", "created_at", "updated_at", "latest_session_id", "latest_session_executor"} {
		if a.str(field) == "" {
			t.Errorf("attempt lacks %s: %v", field, a)
		}
	}
	if _, err := time.Parse(time.RFC3339, a.str("created_at")); err != nil {
		t.Errorf("created_at %q: %v", a.str("created_at"), err)
	}
	if res.str("latest_attempt_id") != id || res.str("latest_session_id") != st.str("latest_session_id") {
		t.Fatalf("top-level summary = %v", res)
	}
}

func TestScenarioAttemptHasNoSessionsInList(t *testing.T) {
	path, open := gate(t)
	sc := newScenario(t, scenarioOptions{setupScript: waitFor(path)})
	task := sc.createTask("Setup first", "echo agent")
	id := sc.startShell(task).str("attempt_id")
	res := sc.ok("list_task_attempts", map[string]any{"task_id": task})
	if !res.list("attempts")[0].null("latest_session_id") || !res.null("latest_session_id") || res.str("latest_attempt_id") != id {
		t.Fatalf("while the setup script runs: %v", res)
	}
	open()
	sc.waitSettled(id)
}

// ---- Requirement: follow_up targeting ----

func TestScenarioFollowUpByAttemptId(t *testing.T) {
	sc := newScenario(t, scenarioOptions{})
	id := sc.attempt("echo first")
	st := sc.waitSettled(id)
	res := sc.ok("follow_up", map[string]any{"action": "send", "attempt_id": id, "prompt": "echo by-attempt"})
	if res.str("session_id") != st.str("latest_session_id") {
		t.Fatalf("follow_up resolved session %s, latest is %s", res.str("session_id"), st.str("latest_session_id"))
	}
	sc.waitSettled(id)
	sc.waitLog(id, "by-attempt")
}

// ---- Requirement: Attempt status tool ----

func TestScenarioAttemptHasNoSessionsOrProcesses(t *testing.T) {
	var attemptID string
	sc := newScenario(t, scenarioOptions{attempt: func(b *plughost.Board, projectID string) string {
		// An attempt recorded without any session or process yet (the
		// moment between its creation and its first process).
		attemptID = idleAttempt(t, b, projectID)
		return ""
	}})
	st := sc.ok("get_attempt_status", map[string]any{"attempt_id": attemptID})
	if st.str("state") != "idle" || !st.null("latest_session_id") || !st.null("latest_execution_process_id") || !st.null("failure_summary") {
		t.Fatalf("status = %v", st)
	}
}

// idleAttempt records an attempt row with no session and no process.
func idleAttempt(t *testing.T, b *plughost.Board, projectID string) string {
	t.Helper()
	ctx := context.Background()
	task, err := b.CreateTask(ctx, tasks.CreateTaskArgs{ProjectID: projectID, Title: "Idle"})
	if err != nil {
		t.Fatal(err)
	}
	id, err := b.RecordIdleAttempt(ctx, task.TaskID, "pb/idle", os.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestScenarioAttemptIsRunning(t *testing.T) {
	path, open := gate(t)
	sc := newScenario(t, scenarioOptions{})
	id := sc.attempt(waitFor(path))
	st := sc.ok("get_attempt_status", map[string]any{"attempt_id": id})
	if st.str("state") != "running" || st.str("latest_execution_process_id") == "" {
		t.Fatalf("status = %v", st)
	}
	open()
	sc.waitSettled(id)
}

func TestScenarioAttemptIsFailed(t *testing.T) {
	sc := newScenario(t, scenarioOptions{})
	id := sc.attempt("echo failing; exit 7")
	st := sc.waitSettled(id)
	if st.str("state") != "failed" || st.str("failure_summary") != "failed (exit_code=7)" {
		t.Fatalf("status = %v", st)
	}
}

// ---- Requirement: Attempt log tail tool ----

// logScript prints n numbered lines.
func logScript(n int) string { return fmt.Sprintf("for i in $(seq 1 %d); do echo line-$i; done", n) }

func TestScenarioDefaultTailLoad(t *testing.T) {
	sc := newScenario(t, scenarioOptions{})
	id := sc.attempt(logScript(80))
	sc.waitSettled(id)
	page := sc.ok("tail_attempt_logs", map[string]any{"attempt_id": id})
	entries := page.list("entries")
	if len(entries) != 50 || entries[49].str("content") != "line-80" || entries[0].str("content") != "line-31" {
		t.Fatalf("default page: %d entries, first %v last %v", len(entries), entries[0], entries[len(entries)-1])
	}
	for i := 1; i < len(entries); i++ {
		if entries[i].num("entry_index") != entries[i-1].num("entry_index")+1 {
			t.Fatalf("not chronological at %d", i)
		}
	}
	if !page.obj("page").bool("has_more") {
		t.Fatal("has_more false with 30 older entries")
	}
}

func TestScenarioLoadOlderHistory(t *testing.T) {
	sc := newScenario(t, scenarioOptions{})
	id := sc.attempt(logScript(120))
	sc.waitSettled(id)
	first := sc.ok("tail_attempt_logs", map[string]any{"attempt_id": id, "limit": 50})
	cursor := first.obj("page")["next_cursor"]
	second := sc.ok("tail_attempt_logs", map[string]any{"attempt_id": id, "limit": 50, "cursor": cursor})
	e := second.list("entries")
	if len(e) != 50 || e[49].num("entry_index") != int64(cursor.(float64))-1 || e[0].str("content") != "line-21" {
		t.Fatalf("older page: %d entries from %v", len(e), e[0])
	}
	if second.obj("page").null("next_cursor") || !second.obj("page").bool("has_more") {
		t.Fatalf("no new cursor with 20 older entries: %v", second.obj("page"))
	}
	third := sc.ok("tail_attempt_logs", map[string]any{"attempt_id": id, "limit": 50, "cursor": second.obj("page")["next_cursor"]})
	if len(third.list("entries")) != 20 || third.obj("page").bool("has_more") || !third.obj("page").null("next_cursor") {
		t.Fatalf("oldest page: %v", third.obj("page"))
	}
}

func TestScenarioNoProcessYieldsEmptyHistory(t *testing.T) {
	var attemptID string
	sc := newScenario(t, scenarioOptions{attempt: func(b *plughost.Board, projectID string) string {
		attemptID = idleAttempt(t, b, projectID)
		return ""
	}})
	page := sc.ok("tail_attempt_logs", map[string]any{"attempt_id": attemptID})
	if len(page.list("entries")) != 0 || page.obj("page").bool("has_more") {
		t.Fatalf("page = %v", page)
	}
}

// ---- Requirement: Attempt changes snapshot tool ----

func manyFiles(n int) string {
	return fmt.Sprintf("for i in $(seq 1 %d); do echo $i > gen-$i.txt; done", n)
}

func TestScenarioGuardBlocksFileList(t *testing.T) {
	sc := newScenario(t, scenarioOptions{serveArgs: []string{"--guard", "safe"}})
	id := sc.attempt(manyFiles(201))
	sc.waitSettled(id)
	res := sc.ok("get_attempt_changes", map[string]any{"attempt_id": id})
	if !res.bool("blocked") || res.str("blocked_reason") != "threshold_exceeded" || len(res.list("files")) != 0 ||
		res.obj("summary").num("file_count") != 201 || res.str("hint") == "" {
		t.Fatalf("changes = %v", res)
	}
}

func TestScenarioForceBypassesGuard(t *testing.T) {
	sc := newScenario(t, scenarioOptions{serveArgs: []string{"--guard", "safe"}})
	id := sc.attempt(manyFiles(201))
	sc.waitSettled(id)
	res := sc.ok("get_attempt_changes", map[string]any{"attempt_id": id, "force": true})
	files := res.list("files")
	if res.bool("blocked") || len(files) != 201 || !strings.HasPrefix(files[0].str("path"), "app/") {
		t.Fatalf("forced changes: blocked=%v, %d files", res.bool("blocked"), len(files))
	}
}

// ---- Requirement: Schema field documentation ----

func TestScenarioFieldDocsArePresent(t *testing.T) {
	sc := newScenario(t, scenarioOptions{})
	tool := sc.tools["list_task_attempts"]
	for _, schema := range []any{tool.InputSchema, tool.OutputSchema} {
		b, _ := json.Marshal(schema)
		var s map[string]any
		json.Unmarshal(b, &s)
		walkProperties(t, "list_task_attempts", s)
	}
}

// walkProperties fails on any property without a description.
func walkProperties(t *testing.T, where string, s map[string]any) {
	t.Helper()
	props, _ := s["properties"].(map[string]any)
	for name, p := range props {
		ps, _ := p.(map[string]any)
		if d, _ := ps["description"].(string); strings.TrimSpace(d) == "" {
			t.Errorf("%s.%s has no description", where, name)
		}
		walkProperties(t, where+"."+name, ps)
	}
	if items, ok := s["items"].(map[string]any); ok {
		walkProperties(t, where+"[]", items)
	}
	for _, key := range []string{"oneOf", "anyOf", "allOf"} {
		branches, _ := s[key].([]any)
		for _, br := range branches {
			if bs, ok := br.(map[string]any); ok {
				walkProperties(t, where, bs)
			}
		}
	}
}

// ---- Requirement: Workspace context data ----

func TestScenarioContextReturnsUnifiedAttemptData(t *testing.T) {
	var attemptID string
	sc := newScenario(t, scenarioOptions{attempt: func(b *plughost.Board, projectID string) string {
		attemptID = idleAttempt(t, b, projectID)
		return attemptID
	}})
	if sc.tools["get_context"] == nil {
		t.Fatal("get_context not listed inside an attempt")
	}
	ctx := sc.ok("get_context", map[string]any{})
	if ctx.str("attempt_id") != attemptID || ctx.str("workspace_branch") == "" || ctx.str("project_id") != sc.projectID ||
		ctx.str("project_name") != "demo" || ctx.str("task_title") != "Idle" || ctx.str("task_status") == "" {
		t.Fatalf("context = %v", ctx)
	}
}

// ---- Requirement: MCP follow-up tool ----

func TestScenarioSendFollowUpByAttemptId(t *testing.T) {
	sc := newScenario(t, scenarioOptions{})
	id := sc.attempt("echo one")
	sc.waitSettled(id)
	res := sc.ok("follow_up", map[string]any{"action": "send", "attempt_id": id, "prompt": "echo two"})
	if res.str("execution_process_id") == "" {
		t.Fatalf("send = %v", res)
	}
	sc.waitSettled(id)
	sc.waitLog(id, "two")
}

func TestScenarioSendFollowUpBySessionId(t *testing.T) {
	sc := newScenario(t, scenarioOptions{})
	id := sc.attempt("echo one")
	st := sc.waitSettled(id)
	res := sc.ok("follow_up", map[string]any{"action": "send", "session_id": st.str("latest_session_id"), "prompt": "echo by-session"})
	if res.str("execution_process_id") == "" || res.str("attempt_id") != id {
		t.Fatalf("send = %v", res)
	}
	sc.waitSettled(id)
	sc.waitLog(id, "by-session")
}

func TestScenarioQueueFollowUpByAttemptId(t *testing.T) {
	path, open := gate(t)
	sc := newScenario(t, scenarioOptions{})
	id := sc.attempt(waitFor(path))
	sc.waitRunning(id)
	res := sc.ok("follow_up", map[string]any{"action": "queue", "attempt_id": id, "prompt": "echo queued-run"})
	q := res.obj("queue")
	if !q.bool("queued") || q.str("prompt") != "echo queued-run" || !q.bool("process_running") {
		t.Fatalf("queue = %v", res)
	}
	open()
	sc.waitLog(id, "queued-run")
}

func TestScenarioQueueFollowUpBySessionId(t *testing.T) {
	path, open := gate(t)
	sc := newScenario(t, scenarioOptions{})
	id := sc.attempt(waitFor(path))
	st := sc.waitRunning(id)
	res := sc.ok("follow_up", map[string]any{"action": "queue", "session_id": st.str("latest_session_id"), "prompt": "echo queued-by-session"})
	if !res.obj("queue").bool("queued") || res.str("session_id") != st.str("latest_session_id") {
		t.Fatalf("queue = %v", res)
	}
	open()
	sc.waitLog(id, "queued-by-session")
}

func TestScenarioCancelQueuedFollowUp(t *testing.T) {
	path, open := gate(t)
	sc := newScenario(t, scenarioOptions{})
	id := sc.attempt(waitFor(path) + "; echo done")
	st := sc.waitRunning(id)
	sc.ok("follow_up", map[string]any{"action": "queue", "attempt_id": id, "prompt": "echo never"})
	res := sc.ok("follow_up", map[string]any{"action": "cancel", "session_id": st.str("latest_session_id")})
	if res.obj("queue").bool("queued") {
		t.Fatalf("cancel = %v", res)
	}
	open()
	st = sc.waitSettled(id)
	if st.str("state") != "completed" {
		t.Fatalf("cancel stopped the running process: %v", st)
	}
	if n := len(sc.ok("tail_session_messages", map[string]any{"attempt_id": id}).list("messages")); n != 1 {
		t.Fatalf("%d turns: the cancelled message ran", n)
	}
}

func TestScenarioAttemptHasNoSessions(t *testing.T) {
	path, open := gate(t)
	sc := newScenario(t, scenarioOptions{setupScript: waitFor(path)})
	id := sc.attempt("echo agent")
	sc.fail("follow_up", map[string]any{"action": "send", "attempt_id": id, "prompt": "echo x"}, abi.CodeNoSessionYet)
	open()
	sc.waitSettled(id)
}

// ---- Requirement: Agent-guided tool descriptions ----

func TestScenarioToolDescriptionContainsGuidanceHeadings(t *testing.T) {
	sc := newScenario(t, scenarioOptions{})
	for name, tool := range sc.tools {
		last := -1
		for _, h := range []string{"Use when:", "Required:", "Optional:", "Next:", "Avoid:"} {
			i := strings.Index(tool.Description, h)
			if i <= last {
				t.Errorf("%s: heading %q missing or out of order:\n%s", name, h, tool.Description)
			}
			last = i
		}
	}
}

// ---- Requirement: Mode-specific schemas ----

func TestScenarioFollowUpSendRequiresPromptBySchema(t *testing.T) {
	sc := newScenario(t, scenarioOptions{})
	b, _ := json.Marshal(sc.tools["follow_up"].InputSchema)
	var s jsonschema.Schema
	json.Unmarshal(b, &s)
	resolved, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	id := "0b6f3ad4-2f58-4e8d-9a51-3f6f0b1a2c3d"
	if resolved.Validate(map[string]any{"action": "send", "attempt_id": id}) == nil {
		t.Fatalf("schema accepts send without prompt: %s", b)
	}
	if err := resolved.Validate(map[string]any{"action": "send", "attempt_id": id, "prompt": "p"}); err != nil {
		t.Fatalf("schema refuses a valid send: %v", err)
	}
	if resolved.Validate(map[string]any{"action": "cancel", "attempt_id": id, "prompt": "p"}) == nil {
		t.Fatal("schema accepts cancel with prompt")
	}
	// A client that ignores the schema gets missing_required naming prompt.
	env := sc.fail("follow_up", map[string]any{"action": "send", "attempt_id": id}, abi.CodeMissingRequired)
	if env.Details["field"] != "prompt" {
		t.Fatalf("envelope = %+v", env)
	}
}

// ---- Requirement: Mutual exclusion for ambiguous targeting ----

func TestScenarioRejectDualTargeting(t *testing.T) {
	sc := newScenario(t, scenarioOptions{})
	id := sc.attempt("echo x")
	st := sc.waitSettled(id)
	env := sc.fail("follow_up", map[string]any{"action": "send", "attempt_id": id, "session_id": st.str("latest_session_id"),
		"prompt": "p"}, abi.CodeAmbiguousTarget)
	if !strings.Contains(env.Hint, "exactly one") {
		t.Fatalf("hint %q", env.Hint)
	}
}

// ---- Requirement: Normalized pagination semantics ----

func TestScenarioRejectMixedPaginationModes(t *testing.T) {
	sc := newScenario(t, scenarioOptions{})
	id := sc.attempt("echo x")
	sc.waitSettled(id)
	env := sc.fail("tail_attempt_logs", map[string]any{"attempt_id": id, "cursor": 5, "after_entry_index": 1}, abi.CodeMixedPagination)
	if !strings.Contains(env.Hint, "cursor") || !strings.Contains(env.Hint, "after_entry_index") {
		t.Fatalf("hint %q", env.Hint)
	}
}

// ---- Requirement: Executor discovery tool ----

func TestScenarioExecutorIdentifiersAreUsable(t *testing.T) {
	sc := newScenario(t, scenarioOptions{})
	execs := sc.ok("list_executors", map[string]any{}).list("executors")
	var shell obj
	for _, e := range execs {
		if _, ok := e["supports_mcp"].(bool); !ok {
			t.Errorf("%v lacks supports_mcp", e)
		}
		if e.str("executor") == "SHELL" {
			shell = e
		}
	}
	if shell == nil || !shell.bool("available") {
		t.Fatalf("SHELL not listed as available: %v", execs)
	}
	task := sc.createTask("Use listed executor", "echo ok")
	res := sc.ok("start_task_attempt", map[string]any{"task_id": task, "executor": shell.str("executor"),
		"repos": []any{map[string]any{"repo_id": sc.repoID}}})
	if res.str("executor") != "SHELL" {
		t.Fatalf("start = %v", res)
	}
	sc.waitSettled(res.str("attempt_id"))
	// Input is normalised: lower-case with dashes works too.
	res = sc.ok("start_task_attempt", map[string]any{"task_id": task, "executor": "shell",
		"repos": []any{map[string]any{"repo_id": sc.repoID}}})
	sc.waitSettled(res.str("attempt_id"))
}

// ---- Requirement: Stop attempt tool ----

func TestScenarioStopARunningAttempt(t *testing.T) {
	sc := newScenario(t, scenarioOptions{})
	id := sc.attempt("echo started; sleep 60")
	sc.waitLog(id, "started")
	res := sc.ok("stop_attempt", map[string]any{"attempt_id": id})
	if res.str("state") == "running" {
		t.Fatalf("stop = %v", res)
	}
	st := sc.ok("get_attempt_status", map[string]any{"attempt_id": id})
	if st.str("state") == "running" || st.str("task_status") != "inreview" {
		t.Fatalf("status after stop = %v", st)
	}
}

// ---- Requirement: Session transcript tail tool ----

func TestScenarioTailTranscriptForLatestSessionInAttempt(t *testing.T) {
	sc := newScenario(t, scenarioOptions{})
	id := sc.attempt("echo turn-0")
	st := sc.waitSettled(id)
	for i := 1; i <= 3; i++ {
		sc.ok("follow_up", map[string]any{"action": "send", "attempt_id": id, "prompt": fmt.Sprintf("echo turn-%d", i)})
		sc.waitSettled(id)
	}
	res := sc.ok("tail_session_messages", map[string]any{"attempt_id": id, "limit": 2})
	msgs := res.list("messages")
	if res.str("session_id") != st.str("latest_session_id") || len(msgs) != 2 || msgs[1].str("prompt") != "echo turn-3" ||
		msgs[1].str("summary") != "turn-3" || res.obj("page").null("next_cursor") {
		t.Fatalf("transcript = %v", res)
	}
	older := sc.ok("tail_session_messages", map[string]any{"attempt_id": id, "limit": 2, "cursor": res.obj("page")["next_cursor"]})
	if m := older.list("messages"); len(m) != 2 || m[0].str("prompt") != "echo turn-0" {
		t.Fatalf("older transcript = %v", older)
	}
}

// ---- Requirement: Bounded attempt artifact retrieval tools ----

func TestScenarioArtifactRetrievalIsSizeBounded(t *testing.T) {
	sc := newScenario(t, scenarioOptions{})
	id := sc.attempt("head -c 600000 /dev/zero | tr '\\0' 'x' > big.txt")
	sc.waitSettled(id)
	res := sc.ok("get_attempt_file", map[string]any{"attempt_id": id, "path": "app/big.txt", "max_bytes": 600000})
	if !res.bool("blocked") || res.str("blocked_reason") != "size_exceeded" || res.str("hint") == "" {
		t.Fatalf("oversized read = %v", res)
	}
	res = sc.ok("get_attempt_file", map[string]any{"attempt_id": id, "path": "app/big.txt"})
	if res.bool("blocked") || !res.bool("truncated") || len(res.str("content")) != 65536 || res.num("size") != 600000 {
		t.Fatalf("default read: blocked=%v truncated=%v %d bytes", res.bool("blocked"), res.bool("truncated"), len(res.str("content")))
	}
	res = sc.ok("get_attempt_file", map[string]any{"attempt_id": id, "path": "app/../../etc/passwd"})
	if !res.bool("blocked") || res.str("blocked_reason") != "path_outside_workspace" {
		t.Fatalf("escape = %v", res)
	}
	patch := sc.ok("get_attempt_patch", map[string]any{"attempt_id": id, "paths": []any{"app/big.txt"}})
	if !patch.bool("truncated") || len(patch.str("patch")) > 204800 {
		t.Fatalf("patch: truncated=%v, %d bytes", patch.bool("truncated"), len(patch.str("patch")))
	}
}

// ---- Requirement: Actionable MCP error envelope ----

func TestScenarioMissingSessionYieldsActionableHint(t *testing.T) {
	path, open := gate(t)
	sc := newScenario(t, scenarioOptions{setupScript: waitFor(path)})
	id := sc.attempt("echo agent")
	env := sc.fail("follow_up", map[string]any{"action": "queue", "attempt_id": id, "prompt": "p"}, abi.CodeNoSessionYet)
	if !env.Retryable || !strings.Contains(env.Hint, "get_attempt_status") || !strings.Contains(env.Hint, "latest_session_id") {
		t.Fatalf("envelope = %+v", env)
	}
	open()
	sc.waitSettled(id)
}

// ---- Requirement: request_id idempotency ----

func TestScenarioCreateTaskRetryReturnsSameTaskId(t *testing.T) {
	sc := newScenario(t, scenarioOptions{})
	args := map[string]any{"project_id": sc.projectID, "title": "Once", "request_id": "req-create-1"}
	a := sc.ok("create_task", args).str("task_id")
	b := sc.ok("create_task", args).str("task_id")
	if a == "" || a != b {
		t.Fatalf("task ids %q and %q", a, b)
	}
	if n := len(sc.ok("list_tasks", map[string]any{"project_id": sc.projectID}).list("tasks")); n != 1 {
		t.Fatalf("%d tasks after a retried create", n)
	}
}

func TestScenarioStartTaskAttemptRetryReturnsSameAttemptId(t *testing.T) {
	sc := newScenario(t, scenarioOptions{})
	task := sc.createTask("Once", "echo once")
	args := map[string]any{"task_id": task, "executor": "SHELL", "request_id": "req-start-1",
		"repos": []any{map[string]any{"repo_id": sc.repoID}}}
	a := sc.ok("start_task_attempt", args).str("attempt_id")
	b := sc.ok("start_task_attempt", args).str("attempt_id")
	if a == "" || a != b {
		t.Fatalf("attempt ids %q and %q", a, b)
	}
	sc.waitSettled(a)
	if n := len(sc.ok("list_task_attempts", map[string]any{"task_id": task}).list("attempts")); n != 1 {
		t.Fatalf("%d attempts after a retried start", n)
	}
}

func TestScenarioRequestIdReuseWithDifferentPayloadIsRejected(t *testing.T) {
	sc := newScenario(t, scenarioOptions{})
	sc.ok("create_task", map[string]any{"project_id": sc.projectID, "title": "First", "request_id": "req-reuse"})
	env := sc.fail("create_task", map[string]any{"project_id": sc.projectID, "title": "Second", "request_id": "req-reuse"},
		abi.CodeIdempotencyConflict)
	if !strings.Contains(env.Hint, "request_id") {
		t.Fatalf("hint %q", env.Hint)
	}
}

func matches(pattern, s string) bool { return regexp.MustCompile(pattern).MatchString(s) }

// ---- The guide's closed loop ----

// TestClosedLoop follows closed-loop-agent-guide: create task → start
// attempt (SHELL) → status → tail logs incrementally with
// after_entry_index → changes → patch → file → follow_up queue → stop.
func TestClosedLoop(t *testing.T) {
	sc := newScenario(t, scenarioOptions{})
	script := `echo "step 1: edit README"; printf '# app\n\nEdited by the agent.\n' > README.md
echo "step 2: add a file"; mkdir -p docs && echo "notes" > docs/notes.md
for i in $(seq 1 200); do echo "working $i"; sleep 0.05; done`
	task := sc.ok("create_task", map[string]any{"project_id": sc.projectID, "title": "Closed loop", "description": script,
		"request_id": "loop-1"}).str("task_id")
	start := sc.ok("start_task_attempt", map[string]any{"task_id": task, "executor": "SHELL",
		"repos": []any{map[string]any{"repo_id": sc.repoID}}, "request_id": "loop-2"})
	id := start.str("attempt_id")
	st := sc.waitRunning(id)
	if st.str("latest_execution_process_id") == "" {
		t.Fatalf("status = %v", st)
	}
	// Incremental tail: each poll returns only entries after the last seen.
	seen := map[int64]bool{}
	var last any
	for polls := 0; len(seen) < 20; polls++ {
		args := map[string]any{"attempt_id": id, "limit": 50}
		if last != nil {
			args["after_entry_index"] = last
		}
		page := sc.ok("tail_attempt_logs", args)
		for _, e := range page.list("entries") {
			i := e.num("entry_index")
			if seen[i] {
				t.Fatalf("entry %d returned twice", i)
			}
			if last != nil && float64(i) <= last.(float64) {
				t.Fatalf("entry %d not after %v", i, last)
			}
			seen[i] = true
		}
		if v := page.obj("page")["last_index"]; v != nil {
			last = v
		}
		if polls > 400 {
			t.Fatalf("only %d entries after %d polls", len(seen), polls)
		}
		time.Sleep(50 * time.Millisecond)
	}
	changes := sc.ok("get_attempt_changes", map[string]any{"attempt_id": id})
	var paths []string
	for _, f := range changes.list("files") {
		paths = append(paths, f.str("path"))
	}
	if changes.bool("blocked") || !slices.Contains(paths, "app/README.md") || !slices.Contains(paths, "app/docs/notes.md") {
		t.Fatalf("changes = %v", changes)
	}
	patch := sc.ok("get_attempt_patch", map[string]any{"attempt_id": id, "paths": []any{"app/README.md"}})
	if !strings.Contains(patch.str("patch"), "+Edited by the agent.") {
		t.Fatalf("patch = %v", patch)
	}
	file := sc.ok("get_attempt_file", map[string]any{"attempt_id": id, "path": "app/docs/notes.md"})
	if file.str("content") != "notes\n" {
		t.Fatalf("file = %v", file)
	}
	queued := sc.ok("follow_up", map[string]any{"action": "queue", "attempt_id": id, "prompt": "echo next", "request_id": "loop-3"})
	if !queued.obj("queue").bool("queued") {
		t.Fatalf("queue = %v", queued)
	}
	stop := sc.ok("stop_attempt", map[string]any{"attempt_id": id})
	if stop.str("state") == "running" {
		t.Fatalf("stop = %v", stop)
	}
	st = sc.ok("get_attempt_status", map[string]any{"attempt_id": id})
	if st.str("state") != "failed" || !strings.HasPrefix(st.str("failure_summary"), "killed") || st.str("task_status") != "inreview" ||
		st.bool("queued_follow_up") {
		t.Fatalf("final status = %v", st)
	}
}

// TestConcurrentCreateTaskExactlyOnce: 50 parallel identical create_task
// calls with one request_id create one task, and every answer names it.
func TestConcurrentCreateTaskExactlyOnce(t *testing.T) {
	sc := newScenario(t, scenarioOptions{})
	args := map[string]any{"project_id": sc.projectID, "title": "Exactly once", "request_id": "parallel-1"}
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		ids = map[string]int{}
	)
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				res, err := sc.s.session.CallTool(ctx, &mcp.CallToolParams{Name: "create_task", Arguments: args})
				cancel()
				if err != nil {
					t.Error(err)
					return
				}
				b, _ := json.Marshal(res.StructuredContent)
				if res.IsError {
					b = []byte(clitest.Text(res))
				}
				var out struct {
					TaskID string `json:"task_id"`
					Code   string `json:"code"`
				}
				json.Unmarshal(b, &out)
				if res.IsError && out.Code == abi.CodeRequestInProgress {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				if res.IsError {
					t.Errorf("create_task: %s", b)
					return
				}
				mu.Lock()
				ids[out.TaskID]++
				mu.Unlock()
				return
			}
		}()
	}
	wg.Wait()
	if len(ids) != 1 {
		t.Fatalf("task ids = %v", ids)
	}
	if n := len(sc.ok("list_tasks", map[string]any{"project_id": sc.projectID}).list("tasks")); n != 1 {
		t.Fatalf("%d tasks", n)
	}
}
