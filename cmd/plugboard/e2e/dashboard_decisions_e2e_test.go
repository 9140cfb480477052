package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/abi/tasks"
	plughost "github.com/plugboard/plugboard/host"
	"github.com/plugboard/plugboard/internal/testing/browsertest"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// The decision log and the dashboard's smaller views, driven in headless
// Chromium against `plugboard serve --http` (helpers in
// dashboard_e2e_test.go).

// holdEnv names the environment variable that keeps
// TestDashboardPollsLeaveNoRows's attempt page open longer (a Go duration,
// e.g. 2m) to measure what a page open that long writes to the decision
// log; unset, it holds the page 10 s.
const holdEnv = "PLUGBOARD_DASHBOARD_HOLD"

// decisionRowOverhead is store.DecisionRowOverhead: what a decision-log
// row costs beyond its payloads, which retention by size counts.
const decisionRowOverhead = 640

// dashboardReads are the read-only tools the dashboard's pages poll.
var dashboardReads = map[string]bool{"list_projects": true, "list_tasks": true, "get_task": true, "list_task_attempts": true,
	"list_executors": true, "get_attempt_status": true, "tail_attempt_logs": true, "tail_session_messages": true,
	"get_attempt_changes": true, "get_attempt_patch": true, "get_attempt_file": true, "review_queue": true}

// decisionRows reads every row of the decision log in data.
func decisionRows(t *testing.T, data string) []plughost.Decision {
	t.Helper()
	ctx := context.Background()
	st, err := plughost.DecisionLog(ctx, data, "")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rows, err := st.Decisions(ctx, plughost.DecisionFilter{Limit: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// rowSize is what a row counts against the decision log's size budget.
func rowSize(d plughost.Decision) int {
	return decisionRowOverhead + len(d.Input) + len(d.Result) + len(d.Error) + len(d.Title) + len(d.Body) + len(d.HTTP)
}

// startAttemptOnPage creates a task with script as its description on the
// board page and starts a SHELL attempt of it from the task page; the
// attempt page is left open.
func startAttemptOnPage(t *testing.T, p *browsertest.Page, base, title, script string) {
	t.Helper()
	p.Go(base)
	p.WaitVisible("#board")
	p.Type("#new-title", title)
	p.Type("#new-description", script)
	p.Click("#create-task button[type=submit]")
	p.WaitText(`section[data-status="todo"]`, title)
	p.Click(`section[data-status="todo"] a.task`)
	p.WaitVisible("#start-attempt")
	p.Eval(`document.getElementById("executor").value = "SHELL"`, nil)
	p.Click("#start-attempt button[type=submit]")
	p.WaitVisible("#log")
}

// TestDashboardPollsLeaveNoRows: an attempt page left open polls the log
// every second and the status every three, and the board page its tasks;
// none of those reads is a decision, so none is written to the decision
// log, while what the person did on the page (create_task,
// start_task_attempt) is. The page did poll: the run's lines reached the
// screen one by one. With PLUGBOARD_DASHBOARD_HOLD=2m it keeps the page
// open that long and logs the rows and bytes an hour the dashboard writes.
func TestDashboardPollsLeaveNoRows(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary, starts Chromium")
	}
	browsertest.Installed(t)
	hold := 10 * time.Second
	if v := os.Getenv(holdEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("%s=%q: %v", holdEnv, v, err)
		}
		hold = d
	}
	plugins, _ := buildtest.Plugins(t, taskPlugins...)
	data, _ := dashboardBoard(t)
	srv := clitest.LaunchHTTP(t, httpEnv(), []string{"serve", "--http", "127.0.0.1:0", "--plugins", plugins, "--data", data})
	base := "http://" + srv.Addr + "/"
	p := browsertest.Start(t).Page(t)
	p.SetTimeout(60 * time.Second)

	startAttemptOnPage(t, p, base, "Poll me", "for i in 1 2 3 4 5; do echo tick-$i; sleep 1; done")
	p.WaitText("#log", "tick-1")
	from := time.Now()
	p.WaitText("#log", "tick-5")
	p.WaitText("#state", "completed")
	time.Sleep(time.Until(from.Add(hold)))
	to := time.Now()
	time.Sleep(300 * time.Millisecond) // the log's writer lingers 20 ms

	var reads, readBytes, writes int
	tools := map[string]int{}
	lo, hi := plughost.FormatTime(from), plughost.FormatTime(to)
	for _, d := range decisionRows(t, data) {
		if d.AgentID != "local" {
			continue
		}
		tools[d.Tool]++
		if dashboardReads[d.Tool] && d.CreatedAt >= lo && d.CreatedAt <= hi {
			reads++
			readBytes += rowSize(d)
		}
		if !dashboardReads[d.Tool] {
			writes++
		}
	}
	hours := to.Sub(from).Hours()
	t.Logf("attempt page open %s: %d decision-log rows of the dashboard's reads (%d bytes): %.0f rows/h, %.0f bytes/h; rows by tool %v",
		to.Sub(from).Round(time.Second), reads, readBytes, float64(reads)/hours, float64(readBytes)/hours, tools)
	for tool := range dashboardReads {
		if tools[tool] != 0 {
			t.Errorf("the dashboard's reads wrote %d rows of %s; want none", tools[tool], tool)
		}
	}
	if tools["create_task"] != 1 || tools["start_task_attempt"] != 1 {
		t.Errorf("the person's writes: %d create_task and %d start_task_attempt rows, want 1 each (%d writes in all)",
			tools["create_task"], tools["start_task_attempt"], writes)
	}
	if lines := p.Count("#log .e"); lines < 5 || !strings.Contains(p.Text("#log"), "tick-5") {
		t.Errorf("the page shows %d log lines, want the run's five: it did not poll", lines)
	}
}

// dashSession is a session of the dashboard's API driven from Go: what a
// person does on a page, where a test needs it done beside the page it
// watches.
type dashSession struct {
	t      *testing.T
	base   string // http://ADDR
	cookie *http.Cookie
	csrf   string
}

// dashLogin signs in to the dashboard at base with token ("" on a loopback
// server without tokens).
func dashLogin(t *testing.T, base, token string) *dashSession {
	t.Helper()
	s := &dashSession{t: t, base: base}
	if token != "" {
		res, err := http.Post(base+"/ui/api/login", "application/json", strings.NewReader(`{"token":"`+token+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 200 || len(res.Cookies()) != 1 {
			t.Fatalf("dashboard sign-in: %d", res.StatusCode)
		}
		s.cookie = res.Cookies()[0]
	}
	code, me := s.do("GET", "/ui/api/me", "")
	if code != 200 || me["csrf"] == nil {
		t.Fatalf("me: %d %v", code, me)
	}
	s.csrf = me["csrf"].(string)
	return s
}

// do sends one request to the dashboard's API and decodes its answer.
func (s *dashSession) do(method, path, body string) (int, map[string]any) {
	s.t.Helper()
	req, err := http.NewRequest(method, s.base+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Plugboard-CSRF", s.csrf)
	}
	if s.cookie != nil {
		req.AddCookie(s.cookie)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		s.t.Fatalf("%s %s: %d %s", method, path, res.StatusCode, b)
	}
	return res.StatusCode, m
}

// call runs tool through the dashboard as the session's identity and
// returns the answer ({ok, result} or {ok: false, error}).
func (s *dashSession) call(tool string, args any) map[string]any {
	s.t.Helper()
	b, _ := json.Marshal(map[string]any{"tool": tool, "arguments": args})
	_, m := s.do("POST", "/ui/api/call", string(b))
	return m
}

// TestDashboardDecisionsView: the Decisions view opens a row to what was
// recorded of the call — the input with its sensitive fields masked, the
// result or the envelope (a plugin's secret masked in it), the HTTP
// requests the plugin made, the duration and the caller — and filters the
// log on the server by caller, tool, outcome (ok, or one error code) and a
// range of start times; a filter the server refuses shows its hint, and
// the API refuses a limit beyond its bound. A third-party tool marked
// read-only is still recorded when a person calls it from the dashboard:
// only the first-party reads are left out.
func TestDashboardDecisionsView(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary, starts Chromium")
	}
	browsertest.Installed(t)
	plugins, _ := buildtest.Plugins(t, append(append([]string{}, taskPlugins...), "testdata/plugins/flaky", "testdata/plugins/fetch")...)
	data, _ := dashboardBoard(t)
	dir := t.TempDir()
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello from origin") }))
	t.Cleanup(origin.Close)
	originHost := strings.TrimPrefix(origin.URL, "http://")
	const apiKey = "api-key-Vb81Qz0x"
	cfg := writeJSON(t, filepath.Join(dir, "plugboard.json"), `{"plugins": {"settings": {
  "fetch": {"config": {"api_key": "${PB_E2E_API_KEY}"}, "allowed_hosts": ["`+originHost+`"], "allow_private": true}
}}}`)
	const opToken, workerToken = "op-token-0123456789abcdef0123456789", "w1-token-0123456789abcdef0123456789"
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(opToken), 0o600); err != nil {
		t.Fatal(err)
	}
	agents := writeJSON(t, filepath.Join(dir, "agents.json"), `{"agents": [{"id": "w1", "type": "WORKER", "token": "`+workerToken+`"}]}`)
	srv := clitest.LaunchHTTP(t, httpEnv("PB_E2E_API_KEY="+apiKey), []string{"serve", "--http", "127.0.0.1:0", "--plugins", plugins,
		"--data", data, "--config", cfg, "--agents", agents, "--http-token-file", tokenFile})
	base := "http://" + srv.Addr

	// The rows: the operator's calls through the dashboard, and a WORKER's
	// refused call over MCP.
	op := dashLogin(t, base, opToken)
	if m := op.call("fetch", map[string]any{"url": origin.URL + "/hello"}); m["ok"] != true {
		t.Fatalf("fetch: %v", m)
	}
	const secret = "s3cret-Jq2mN8"
	if m := op.call("flaky_write", map[string]any{"mode": "fatal", "secret": secret, "token": secret}); m["ok"] != false {
		t.Fatalf("flaky_write fatal: %v", m)
	}
	if m := op.call("fetch", map[string]any{"url": origin.URL + "/leak", "leak": true}); m["ok"] != false {
		t.Fatalf("fetch leak: %v", m)
	}
	if m := op.call("flaky_read", map[string]any{"mode": "ok"}); m["ok"] != true {
		t.Fatalf("flaky_read: %v", m)
	}
	session, _, err := connectHTTP(t, srv.URL, workerToken)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "flaky_read", Arguments: map[string]any{"mode": "ok"}}); err != nil || !res.IsError {
		t.Fatalf("the WORKER's flaky_read: %+v, %v", res, err)
	}
	// The API's bounds; and a row that does not exist.
	if _, m := op.do("GET", "/ui/api/decision?id=0b6f7f5e-1c1e-4f5e-9a3b-2f1d4c5e6a7b", ""); m["ok"] != false ||
		!strings.Contains(fmt.Sprint(m["error"]), abi.CodeNotFound) {
		t.Errorf("an unknown row: %v, want not_found", m)
	}
	for _, q := range []string{"limit=501", "outcome=Not%20a%20code", "since=2025-01-01T00:00:00Z", "from=yesterday"} {
		if code, m := op.do("GET", "/ui/api/decisions?"+q, ""); code != http.StatusOK || m["ok"] != false ||
			!strings.Contains(fmt.Sprint(m["error"]), abi.CodeInvalidArgument) {
			t.Errorf("decisions?%s: %d %v, want invalid_argument", q, code, m)
		}
	}

	p := browsertest.Start(t).Page(t)
	p.Go(base + "/")
	p.WaitVisible("#login")
	p.Type("#token", opToken)
	p.Click("#login button[type=submit]")
	p.WaitVisible("#board")
	p.Go(base + "/#/decisions")
	p.WaitText("#decisions tbody", "flaky_write")
	if strings.Contains(p.Text("#decisions tbody"), "list_projects") {
		t.Error("the board page's list_projects is in the decision log")
	}
	if !strings.Contains(p.Text("#decisions tbody"), "flaky_read") {
		t.Error("a third-party read-only tool called from the dashboard was left out of the decision log")
	}

	// A fetch row opens to its HTTP request, its result, caller and duration.
	open := func(tool, outcome string) {
		t.Helper()
		p.Eval(`document.querySelector("#close-decision") && document.querySelector("#close-decision").click()`, nil)
		setFilter(p, "", tool, outcome, "", "")
		waitRows(t, p, func(rows []string) bool { return len(rows) == 1 && strings.Contains(rows[0], tool) })
		p.Click("#decisions tbody button[data-open]")
		p.WaitVisible("#decision-detail section")
	}
	open("fetch", "ok")
	p.WaitText("#d-http", originHost+"/hello")
	if row := p.Text("#d-http tbody"); !strings.Contains(row, "GET") || !strings.Contains(row, "200") {
		t.Errorf("the HTTP request shows as %q, want GET … 200", row)
	}
	if who := p.Text("#d-caller"); who != "local (SUPERVISOR)" {
		t.Errorf("caller %q", who)
	}
	if d := p.Text("#d-duration"); !strings.HasSuffix(d, " ms") {
		t.Errorf("duration %q", d)
	}
	if in := p.Text("#d-input"); !strings.Contains(in, origin.URL+"/hello") {
		t.Errorf("input %q", in)
	}
	p.Screenshot(filepath.Join(screenshotDir(t), "decision-row.png"))
	// flaky_read's row: its structured result (fetch, a plain Extism
	// module, answers text only, which the log does not keep).
	open("flaky_read", "ok")
	p.WaitText("#d-result", `"caller_id": "local"`)
	if p.Count("#d-http-none") != 1 {
		t.Error("flaky_read's row lists HTTP requests it never made")
	}

	// flaky_write's row: the envelope, the sensitive input masked.
	open("flaky_write", "conflict")
	p.WaitText("#d-error", abi.CodeConflict)
	if in := p.Text("#d-input"); strings.Contains(in, secret) || strings.Count(in, `"***"`) != 2 {
		t.Errorf("the input shows as %q: the secret and token fields should be ***", in)
	}
	if e := p.Text("#d-error"); !strings.Contains(e, "flaky conflicts") || !strings.Contains(e, "do not retry") {
		t.Errorf("the envelope shows as %q", e)
	}
	// fetch with leak: the plugin's secret is masked in the envelope.
	open("fetch", "error")
	p.WaitVisible("#d-error")
	if page := p.Text("#decision-detail"); strings.Contains(page, apiKey) || !strings.Contains(page, "***") {
		t.Errorf("the leaking call's row shows %q: the API key should be ***", page)
	}

	// Filters: caller, outcome by code, a time range, and all combined.
	p.Click("#close-decision")
	setFilter(p, "w1", "", "", "", "")
	waitRows(t, p, func(rows []string) bool { return len(rows) == 1 && strings.Contains(rows[0], "permission_denied") })
	setFilter(p, "", "", "permission_denied", "", "")
	waitRows(t, p, func(rows []string) bool { return len(rows) == 1 && strings.Contains(rows[0], "w1") })
	setFilter(p, "local", "", "ok", "", "")
	waitRows(t, p, func(rows []string) bool {
		for _, r := range rows {
			if !strings.Contains(r, "local") || !strings.Contains(r, "ok") {
				return false
			}
		}
		return len(rows) >= 2 // fetch, flaky_read (and create_task-free: none made)
	})
	setFilter(p, "", "", "", "2099-01-01T00:00", "")
	waitRows(t, p, func(rows []string) bool { return len(rows) == 0 })
	setFilter(p, "", "", "", "", "2001-01-01T00:00")
	waitRows(t, p, func(rows []string) bool { return len(rows) == 0 })
	setFilter(p, "", "", "", "2001-01-01T00:00", "2099-01-01T00:00")
	waitRows(t, p, func(rows []string) bool { return len(rows) == 5 })
	// A filter the server refuses shows why and what it takes.
	setFilter(p, "", "", "Not a code", "", "")
	p.WaitText("#alert", "Hint:")
	if a := p.Text("#alert"); !strings.Contains(a, "outcome") {
		t.Errorf("the refused filter shows %q", a)
	}
	if errs := p.ConsoleErrors(); len(errs) > 0 {
		t.Errorf("the page logged errors: %v", errs)
	}
}

// setFilter fills the Decisions view's filter form and submits it.
func setFilter(p *browsertest.Page, caller, tool, outcome, from, to string) {
	b, _ := json.Marshal([]string{caller, tool, outcome, from, to})
	p.Eval(`(() => { const v = `+string(b)+`; ["f-agent", "f-tool", "f-outcome", "f-since", "f-until"].forEach((id, i) => document.getElementById(id).value = v[i]); })()`, nil)
	p.Click("#decision-filter button[type=submit]")
}

// waitRows waits until the Decisions view's rows (their text) satisfy ok.
func waitRows(t *testing.T, p *browsertest.Page, ok func(rows []string) bool) {
	t.Helper()
	var rows []string
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		p.Eval(`[...document.querySelectorAll("#decisions tbody tr")].map((r) => r.innerText)`, &rows)
		if ok(rows) {
			return
		}
	}
	t.Fatalf("the decision log's rows did not come as expected: %q", rows)
}

// missingExecutors is an executors file with a profile whose CLI is never
// installed and whose id sorts before every built-in: the executor menu
// lists it first.
const missingExecutors = `{"executors": [{"executor": "AAA_MISSING", "binary": "plugboard-no-such-cli", "output_format": "lines",
  "variants": {"DEFAULT": {"argv": ["plugboard-no-such-cli", "{prompt}"]}}}]}`

// TestDashboardTaskPage: the task page's executor menu marks which
// executors are installed and preselects an installed one, though one that
// is not sorts first, so Start works as the page opens; the attempts
// table shows each attempt's state (list_task_attempts has none; the page
// reads each attempt's status).
func TestDashboardTaskPage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary, starts Chromium")
	}
	browsertest.Installed(t)
	plugins, _ := buildtest.Plugins(t, taskPlugins...)
	data, _ := dashboardBoard(t)
	execs := writeJSON(t, filepath.Join(t.TempDir(), "executors.json"), missingExecutors)
	srv := clitest.LaunchHTTP(t, httpEnv(), []string{"serve", "--http", "127.0.0.1:0", "--plugins", plugins, "--data", data, "--executors", execs})
	base := "http://" + srv.Addr + "/"
	p := browsertest.Start(t).Page(t)
	p.SetTimeout(60 * time.Second)

	p.Go(base)
	p.WaitVisible("#board")
	p.Type("#new-title", "Pick an executor")
	p.Type("#new-description", "echo picked")
	p.Click("#create-task button[type=submit]")
	p.WaitText(`section[data-status="todo"]`, "Pick an executor")
	p.Click(`section[data-status="todo"] a.task`)
	p.WaitVisible("#start-attempt")
	var options []struct {
		Value, Text string
		Selected    bool
	}
	p.Eval(`[...document.querySelectorAll("#executor option")].map((o) => ({value: o.value, text: o.textContent, selected: o.selected}))`, &options)
	if len(options) < 2 || options[0].Value != "AAA_MISSING" {
		t.Fatalf("the menu %+v does not list the missing executor first: the check below would prove nothing", options)
	}
	for _, o := range options {
		switch {
		case o.Value == "AAA_MISSING" && (o.Selected || !strings.Contains(o.Text, "not installed")):
			t.Errorf("the missing executor shows as %+v, want marked not installed and not selected", o)
		case o.Value == "SHELL" && (!o.Selected || !strings.Contains(o.Text, "(installed)")):
			t.Errorf("SHELL shows as %+v, want marked installed and selected (the first installed)", o)
		}
	}
	// Start as the page opened: the preselected executor runs.
	p.Click("#start-attempt button[type=submit]")
	p.WaitText("#state", "completed")
	p.WaitText("#log", "picked")
	p.Click("#status a[href^='#/task/']")
	p.WaitVisible("#attempts")
	p.WaitText("#attempts td.state", "completed")
	if errs := p.ConsoleErrors(); len(errs) > 0 {
		t.Errorf("the page logged errors: %v", errs)
	}
}

// TestDashboardWorkerSeesOwnWork: a WORKER signing in (its agents-file
// token) sees its own task and its attempt, through the tools it may call,
// not an empty board under a permission error; nor another task, nor the
// Review view and the controls it may not use. Its page's polls
// (agent_get_task, the attempt's log and status) write no decision-log row.
func TestDashboardWorkerSeesOwnWork(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary, starts Chromium")
	}
	browsertest.Installed(t)
	plugins, _ := buildtest.Plugins(t, append(append([]string{}, taskPlugins...), "plugins/agents")...)
	data, _ := dashboardBoard(t)
	mine := seedTasks(t, data, tasks.CreateTaskArgs{Title: "The worker's task", Description: "echo worker-line"},
		tasks.CreateTaskArgs{Title: "Someone else's task"})[0]
	dir := t.TempDir()
	const opToken, workerToken = "op-token-0123456789abcdef0123456789", "w1-token-0123456789abcdef0123456789"
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(opToken), 0o600); err != nil {
		t.Fatal(err)
	}
	agents := writeJSON(t, filepath.Join(dir, "agents.json"),
		`{"agents": [{"id": "w1", "type": "WORKER", "task_id": "`+mine.TaskID+`", "token": "`+workerToken+`"}]}`)
	srv := clitest.LaunchHTTP(t, httpEnv(), []string{"serve", "--http", "127.0.0.1:0", "--plugins", plugins, "--data", data,
		"--agents", agents, "--http-token-file", tokenFile})
	base := "http://" + srv.Addr

	// The operator starts the worker's attempt.
	started := dashLogin(t, base, opToken).call("start_task_attempt", map[string]any{"task_id": mine.TaskID, "executor": "SHELL"})
	if started["ok"] != true {
		t.Fatalf("start_task_attempt: %v", started)
	}
	attemptID := started["result"].(map[string]any)["attempt_id"].(string)

	p := browsertest.Start(t).Page(t)
	p.SetTimeout(60 * time.Second)
	p.Go(base + "/")
	p.WaitVisible("#login")
	p.Type("#token", workerToken)
	p.Click("#login button[type=submit]")
	p.WaitText("#own-work", "The worker's task")
	p.WaitVisible("#own-attempt")
	if v := p.Text("main"); strings.Contains(v, "Someone else's") {
		t.Errorf("the WORKER's board shows another task: %q", v)
	}
	var alert bool
	p.Eval(`document.getElementById("alert").hidden`, &alert)
	if !alert {
		t.Errorf("the WORKER's board shows an error: %q", p.Text("#alert"))
	}
	var hidden []bool
	p.Eval(`["#/review", "#/decisions"].map((h) => document.querySelector('#nav a[href="' + h + '"]').hidden)`, &hidden)
	if len(hidden) != 2 || !hidden[0] || !hidden[1] {
		t.Errorf("the WORKER's nav offers Review or Decisions (hidden: %v)", hidden)
	}
	p.Click("#own-attempt")
	p.WaitText("#log", "worker-line")
	p.WaitText("#state", "completed")
	if p.Count("#stop") != 0 || p.Count("#follow-up") != 0 {
		t.Error("the WORKER's attempt page offers Stop or Follow-up, which it may not call")
	}
	p.Eval(`document.getElementById("alert").hidden`, &alert)
	if !alert {
		t.Errorf("the WORKER's attempt page shows an error: %q", p.Text("#alert"))
	}
	time.Sleep(3500 * time.Millisecond) // a status poll or more
	if errs := p.ConsoleErrors(); len(errs) > 0 {
		t.Errorf("the page logged errors: %v", errs)
	}
	for _, d := range decisionRows(t, data) {
		if d.AgentID == "w1" {
			t.Errorf("the WORKER's page wrote a decision-log row: %s %s", d.Tool, d.Status)
		}
	}
	if !strings.HasPrefix(p.URL(), base+"/#/attempt/"+attemptID) {
		t.Errorf("the attempt link led to %s", p.URL())
	}
}
