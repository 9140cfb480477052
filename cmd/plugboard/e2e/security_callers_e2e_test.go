package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/abi/tasks"
	plughost "github.com/plugboard/plugboard/host"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// The caller-security tests attack the real binary where issue 11 found a
// caller reaching more than its role and its own work allow (item 4: a
// WORKER read another task's attempt), and where the HTTP transport gave
// way under abuse (item 8: sessions never freed, trickled bodies held, a
// web page driving a token-less loopback server, short tokens, two
// Authorization headers, REST impersonation attempts left unrecorded).

// Tokens of the agents in these tests: at least 32 characters, as the
// server now demands.
const (
	secBossToken    = "sec-boss-token-0123456789abcdef0123456789"
	secWorker1Token = "sec-worker1-token-0123456789abcdef01234567"
	secWorker2Token = "sec-worker2-token-0123456789abcdef01234567"
	secLocalToken   = "sec-local-token-0123456789abcdef0123456789"
)

// scopeWorld is a board with two tasks, each with a finished SHELL attempt
// that wrote a file and a log line: worker1's ("mine") and another's
// ("theirs").
type scopeWorld struct {
	data, projectID          string
	mineTask, mineAttempt    string
	theirTask, theirAttempt  string
	theirSession, theirProcs string
}

func newScopeWorld(t *testing.T) scopeWorld {
	t.Helper()
	data, projectID := boardData(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b, err := plughost.OpenBoard(ctx, plughost.BoardConfig{DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	run := func(title, script string) (string, string, tasks.StatusOut) {
		task, err := b.CreateTask(ctx, tasks.CreateTaskArgs{ProjectID: projectID, Title: title, Description: script})
		if err != nil {
			t.Fatal(err)
		}
		started, err := b.StartTaskAttempt(ctx, tasks.StartArgs{TaskID: task.TaskID, Executor: "shell"})
		if err != nil {
			t.Fatal(err)
		}
		for {
			st, err := b.GetAttemptStatus(ctx, tasks.AttemptIn{AttemptID: started.AttemptID})
			if err != nil {
				t.Fatal(err)
			}
			if st.State == tasks.StateCompleted {
				return task.TaskID, started.AttemptID, st
			}
			if st.State == tasks.StateFailed || ctx.Err() != nil {
				t.Fatalf("attempt %s did not complete: %+v", title, st)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	w := scopeWorld{data: data, projectID: projectID}
	w.mineTask, w.mineAttempt, _ = run("mine", "echo mine-content > out.txt; echo mine-log")
	var theirs tasks.StatusOut
	w.theirTask, w.theirAttempt, theirs = run("theirs", "echo theirs-secret > out.txt; echo theirs-secret-log")
	w.theirSession, w.theirProcs = *theirs.LatestSessionID, *theirs.LatestExecutionProcessID
	return w
}

// writeAgents writes an agents file and returns its path.
func writeAgents(t *testing.T, body string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "agents.json")
	if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// workerAllow is the default WORKER allow list plus the task and list
// reads: the tool rules let worker1 call them, so what refuses another
// task's data below is its scope, not the tool rules.
const workerAllow = `["mail_*", "agent_get_status", "agent_get_task", "log_decision", "get_attempt_*", "tail_*", "get_context",
	"get_task", "list_task_attempts", "list_tasks", "list_projects"]`

// TestSecurityCallersWorkerReachesOnlyItsOwnWork (issue 11 item 4):
// worker1, whose agents-file entry names its task and attempt, asks for
// another task's attempt status, logs, transcript, changes, patch and
// file, over MCP and REST, and is refused with permission_denied (nothing
// of the other attempt in the answer); it still reads its own; list tools
// show it only its own task; it cannot read another agent's mail. The
// supervisor reads everything.
func TestSecurityCallersWorkerReachesOnlyItsOwnWork(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	dir, _ := buildtest.Plugins(t, "plugins/tasks-read", "plugins/tasks-workspace", "plugins/agents")
	w := newScopeWorld(t)
	agents := writeAgents(t, `{"agents": [
	  {"id": "boss", "type": "SUPERVISOR", "token": "`+secBossToken+`"},
	  {"id": "worker1", "type": "WORKER", "supervisor": "boss", "token": "`+secWorker1Token+`",
	   "task_id": "`+w.mineTask+`", "attempt_id": "`+w.mineAttempt+`"},
	  {"id": "worker2", "type": "WORKER", "supervisor": "boss", "token": "`+secWorker2Token+`"}
	], "permissions": {"WORKER": {"allow": `+workerAllow+`}}}`)
	s := startHTTPServer(t, dir, httpEnv(), "--agents", agents, "--data", w.data)
	worker, _, err := connectHTTP(t, s.URL, secWorker1Token)
	if err != nil {
		t.Fatal(err)
	}
	boss, _, err := connectHTTP(t, s.URL, secBossToken)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	call := func(sess *mcp.ClientSession, tool string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		return callSession(t, ctx, sess, tool, args)
	}
	reads := []struct {
		tool string
		args func(task, attempt string) map[string]any
	}{
		{"get_attempt_status", func(_, a string) map[string]any { return map[string]any{"attempt_id": a} }},
		{"tail_attempt_logs", func(_, a string) map[string]any { return map[string]any{"attempt_id": a} }},
		{"tail_session_messages", func(_, a string) map[string]any { return map[string]any{"attempt_id": a} }},
		{"get_attempt_changes", func(_, a string) map[string]any { return map[string]any{"attempt_id": a} }},
		{"get_attempt_patch", func(_, a string) map[string]any { return map[string]any{"attempt_id": a} }},
		{"get_attempt_file", func(_, a string) map[string]any { return map[string]any{"attempt_id": a, "path": "app/out.txt"} }},
		{"get_task", func(tk, _ string) map[string]any { return map[string]any{"task_id": tk} }},
		{"list_task_attempts", func(tk, _ string) map[string]any { return map[string]any{"task_id": tk} }},
	}
	for _, r := range reads {
		// Another task's attempt: refused, and nothing of it in the answer.
		res := call(worker, r.tool, r.args(w.theirTask, w.theirAttempt))
		if !res.IsError {
			t.Errorf("worker1 %s on another task's attempt succeeded: %s", r.tool, shorten(clitest.Text(res), 300))
			continue
		}
		env := clitest.EnvelopeOf(t, res)
		if env.Code != abi.CodePermissionDenied || env.Details["agent_id"] != "worker1" ||
			!strings.Contains(env.Hint, w.mineAttempt) || strings.Contains(clitest.Text(res), "theirs-secret") {
			t.Errorf("worker1 %s on another task's attempt: %+v", r.tool, env)
		}
		// Its own: answered.
		if res := call(worker, r.tool, r.args(w.mineTask, w.mineAttempt)); res.IsError {
			t.Errorf("worker1 %s on its own attempt: %s", r.tool, clitest.Text(res))
		}
		// The supervisor reaches both.
		if res := call(boss, r.tool, r.args(w.theirTask, w.theirAttempt)); res.IsError {
			t.Errorf("boss %s on the other attempt: %s", r.tool, clitest.Text(res))
		}
	}
	// The other attempt's session and process, named directly.
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"tail_session_messages", map[string]any{"session_id": w.theirSession}},
		{"tail_attempt_logs", map[string]any{"attempt_id": w.mineAttempt, "execution_process_id": w.theirProcs}},
	} {
		if res := call(worker, c.tool, c.args); !res.IsError || strings.Contains(clitest.Text(res), "theirs-secret") {
			t.Errorf("worker1 %s %v: %s", c.tool, c.args, shorten(clitest.Text(res), 300))
		}
	}
	// The boss reads the other file's content, so the refusal above is
	// the scope's doing.
	var file struct {
		Content string `json:"content"`
	}
	structured(t, call(boss, "get_attempt_file", map[string]any{"attempt_id": w.theirAttempt, "path": "app/out.txt"}), &file)
	if file.Content != "theirs-secret\n" {
		t.Errorf("boss get_attempt_file = %+v", file)
	}

	// List tools show worker1 only its own work.
	var tasks struct {
		Tasks []struct {
			TaskID string `json:"task_id"`
		} `json:"tasks"`
		Count int `json:"count"`
	}
	structured(t, call(worker, "list_tasks", map[string]any{"project_id": w.projectID}), &tasks)
	if tasks.Count != 1 || len(tasks.Tasks) != 1 || tasks.Tasks[0].TaskID != w.mineTask {
		t.Errorf("worker1 list_tasks = %+v, want only its own task", tasks)
	}
	structured(t, call(boss, "list_tasks", map[string]any{"project_id": w.projectID}), &tasks)
	if tasks.Count != 2 {
		t.Errorf("boss list_tasks = %+v, want both tasks", tasks)
	}
	var projects struct {
		Projects []struct {
			ProjectID string `json:"project_id"`
		} `json:"projects"`
	}
	structured(t, call(worker, "list_projects", map[string]any{}), &projects)
	if len(projects.Projects) != 1 || projects.Projects[0].ProjectID != w.projectID {
		t.Errorf("worker1 list_projects = %+v, want the project of its task", projects)
	}

	// REST goes through the same check.
	status, r := rest(t, s, secWorker1Token, `{"agentId":"worker1","toolName":"get_attempt_status","input":{"attempt_id":"`+w.theirAttempt+`"}}`)
	if status != http.StatusOK || r.Success || r.Error == nil || r.Error.Code != abi.CodePermissionDenied {
		t.Errorf("REST worker1 get_attempt_status of another task: %d %v %s", status, r.Error, r.Data)
	}
	if status, r = rest(t, s, secWorker1Token, `{"agentId":"worker1","toolName":"get_attempt_status","input":{"attempt_id":"`+w.mineAttempt+`"}}`); !r.Success {
		t.Errorf("REST worker1 get_attempt_status of its own: %d %+v", status, r)
	}

	// Mail: worker1 cannot read a mail to worker2, nor see it listed.
	var sent struct {
		MailID string `json:"mail_id"`
	}
	structured(t, call(boss, "mail_send", map[string]any{"to_agent_id": "worker2", "subject": "for worker2", "body": "private"}), &sent)
	if env := clitest.EnvelopeOf(t, call(worker, "mail_read", map[string]any{"mail_id": sent.MailID})); env.Code != abi.CodePermissionDenied {
		t.Errorf("worker1 read worker2's mail: %+v", env)
	}
	if res := call(worker, "mail_list_inbox", map[string]any{"include_read": true}); strings.Contains(clitest.Text(res), sent.MailID) {
		t.Errorf("worker1's inbox lists worker2's mail: %s", clitest.Text(res))
	}
}

// TestSecurityCallersScopeGrant: an agents-file "scope" grants a WORKER
// more than its own work (a list of task ids), and "all" everything.
func TestSecurityCallersScopeGrant(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	dir, _ := buildtest.Plugins(t, "plugins/tasks-read")
	w := newScopeWorld(t)
	agents := writeAgents(t, `{"agents": [
	  {"id": "boss", "type": "SUPERVISOR", "token": "`+secBossToken+`"},
	  {"id": "worker1", "type": "WORKER", "supervisor": "boss", "token": "`+secWorker1Token+`",
	   "attempt_id": "`+w.mineAttempt+`", "scope": ["`+w.theirTask+`"]},
	  {"id": "worker2", "type": "WORKER", "supervisor": "boss", "token": "`+secWorker2Token+`", "scope": "all"}
	], "permissions": {"WORKER": {"allow": `+workerAllow+`}}}`)
	s := startHTTPServer(t, dir, httpEnv(), "--agents", agents, "--data", w.data)
	for _, tok := range []string{secWorker1Token, secWorker2Token} {
		for _, a := range []string{w.mineAttempt, w.theirAttempt} {
			_, r := rest(t, s, tok, fmt.Sprintf(`{"agentId":%q,"toolName":"get_attempt_status","input":{"attempt_id":%q}}`,
				map[string]string{secWorker1Token: "worker1", secWorker2Token: "worker2"}[tok], a))
			if !r.Success {
				t.Errorf("granted read of %s refused: %+v", a, r.Error)
			}
		}
	}
}

// page sends what a web page's fetch() can send without a CORS preflight:
// a POST with a "simple" Content-Type, from origin.
func page(t *testing.T, url, origin, contentType, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Accept", "application/json, text/event-stream")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestSecurityCallersWebPageCannotDriveTheServer (issue 11 item 8): a
// token-less loopback server, and a web page on another local port
// (http://localhost:OTHERPORT) posting text/plain bodies, which a browser
// sends without asking first. Before, the page created a task and started
// a SHELL attempt running `id`. Now the foreign origin gets 403 and the
// non-JSON body 415, on the REST door and on /mcp, and nothing reaches the
// board.
func TestSecurityCallersWebPageCannotDriveTheServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	dir, _ := buildtest.Plugins(t, "plugins/tasks-read", "plugins/tasks-write", "plugins/tasks-control")
	data, projectID := boardData(t)
	s := startHTTPServer(t, dir, httpEnv(), "--data", data)
	_, port, _ := net.SplitHostPort(s.Addr)
	n, _ := strconv.Atoi(port)
	other := strconv.Itoa(n + 1)
	execute := s.URL + "/execute"
	create := `{"agentId":"local","toolName":"create_task","input":{"project_id":"` + projectID + `","title":"pwned","description":"id > pwned.txt"}}`
	for _, c := range []struct {
		origin, contentType string
		want                int
	}{
		{"http://localhost:" + other, "text/plain;charset=UTF-8", http.StatusForbidden},
		{"http://127.0.0.1:" + other, "application/json", http.StatusForbidden},
		{"http://localhost:" + port, "text/plain;charset=UTF-8", http.StatusUnsupportedMediaType},
		{"", "application/x-www-form-urlencoded", http.StatusUnsupportedMediaType},
		{"", "multipart/form-data; boundary=x", http.StatusUnsupportedMediaType},
		{"null", "text/plain", http.StatusForbidden},
	} {
		if status, body := page(t, execute, c.origin, c.contentType, create); status != c.want {
			t.Errorf("page at %q posting %s to /mcp/execute: %d %s, want %d", c.origin, c.contentType, status, shorten(body, 200), c.want)
		}
		if status, body := page(t, s.URL, c.origin, c.contentType, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"page","version":"1"}}}`); status != c.want {
			t.Errorf("page at %q posting %s to /mcp: %d %s, want %d", c.origin, c.contentType, status, shorten(body, 200), c.want)
		}
	}
	// Nothing reached the board.
	_, r := rest(t, s, "", `{"agentId":"local","toolName":"list_tasks","input":{"project_id":"`+projectID+`"}}`)
	var list tasks.TasksOut
	if !r.Success || json.Unmarshal(r.Data, &list) != nil || list.Count != 0 {
		t.Fatalf("after the page's attempts the board has tasks: %v %s", r.Error, r.Data)
	}
	// A task the user made: the page cannot start an attempt on it.
	_, r = rest(t, s, "", `{"agentId":"local","toolName":"create_task","input":{"project_id":"`+projectID+`","title":"real"}}`)
	var task struct {
		TaskID string `json:"task_id"`
	}
	if !r.Success || json.Unmarshal(r.Data, &task) != nil || task.TaskID == "" {
		t.Fatalf("the user's own create_task: %+v", r)
	}
	start := `{"agentId":"local","toolName":"start_task_attempt","input":{"task_id":"` + task.TaskID + `","executor":"SHELL"}}`
	if status, body := page(t, execute, "http://localhost:"+other, "text/plain", start); status != http.StatusForbidden {
		t.Errorf("page start_task_attempt: %d %s", status, shorten(body, 200))
	}
	_, r = rest(t, s, "", `{"agentId":"local","toolName":"list_task_attempts","input":{"task_id":"`+task.TaskID+`"}}`)
	var attempts tasks.AttemptsOut
	if !r.Success || json.Unmarshal(r.Data, &attempts) != nil || len(attempts.Attempts) != 0 {
		t.Errorf("the page started an attempt: %v %s", r.Error, r.Data)
	}
	// The server's own origin with a JSON body is served.
	if status, body := page(t, execute, "http://127.0.0.1:"+port, "application/json; charset=utf-8",
		`{"agentId":"local","toolName":"list_projects","input":{}}`); status != http.StatusOK {
		t.Errorf("own origin, JSON: %d %s", status, shorten(body, 200))
	}
}

// trickle opens a connection to addr, sends head, then one byte of body
// every interval, and returns how long the server kept the connection
// open (until it closed it, or until limit).
func trickle(addr, head string, interval, limit time.Duration) (time.Duration, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	begin := time.Now()
	if _, err := io.WriteString(conn, head); err != nil {
		return 0, err
	}
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		_ = conn.SetReadDeadline(begin.Add(limit))
		_, _ = io.Copy(io.Discard, conn) // returns when the server closes
	}()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-closed:
			return time.Since(begin), nil
		case <-tick.C:
			_, _ = conn.Write([]byte(" ")) // fails once the server has gone
		}
	}
}

// TestSecurityCallersTrickledBodiesTimeOut (issue 11 item 8): authenticated
// connections that send their headers and then trickle the body one byte
// at a time, and others that trickle the headers. Before, 500 such
// connections were held past 95 s; now each is closed once the read
// timeout (2 s here) is spent, and the server still answers.
func TestSecurityCallersTrickledBodiesTimeOut(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	dir, _ := buildtest.Plugins(t, "plugins/echo")
	const readTimeout = 2 * time.Second
	s := startHTTPServer(t, dir, httpEnv(), "--http-token", secLocalToken, "--http-read-timeout", readTimeout.String())
	bodyHead := "POST /mcp HTTP/1.1\r\nHost: " + s.Addr + "\r\nAuthorization: Bearer " + secLocalToken +
		"\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100000\r\n\r\n{"
	restHead := "POST /mcp/execute HTTP/1.1\r\nHost: " + s.Addr + "\r\nAuthorization: Bearer " + secLocalToken +
		"\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n"
	headerHead := "POST /mcp HTTP/1.1\r\nHost: " + s.Addr + "\r\nX-Slow: "
	const perKind = 40
	limit := 20 * time.Second
	type result struct {
		kind string
		held time.Duration
		err  error
	}
	results := make(chan result, 3*perKind)
	var wg sync.WaitGroup
	for _, k := range []struct{ kind, head string }{{"body", bodyHead}, {"chunked REST body", restHead}, {"headers", headerHead}} {
		for range perKind {
			wg.Go(func() {
				held, err := trickle(s.Addr, k.head, 200*time.Millisecond, limit)
				results <- result{k.kind, held, err}
			})
		}
	}
	wg.Wait()
	close(results)
	worst := map[string]time.Duration{}
	for r := range results {
		if r.err != nil {
			t.Errorf("%s: %v", r.kind, r.err)
			continue
		}
		worst[r.kind] = max(worst[r.kind], r.held)
	}
	t.Logf("read timeout %v: %d connections per kind; longest held: %v", readTimeout, perKind, worst)
	for kind, held := range worst {
		if held > readTimeout+3*time.Second {
			t.Errorf("a connection trickling its %s was held %v (read timeout %v)", kind, held, readTimeout)
		}
	}
	// Legitimate clients are unaffected.
	session, _, err := connectHTTP(t, s.URL, secLocalToken)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := session.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "still here"}}); err != nil || res.IsError {
		t.Fatalf("echo after the attack: %v %v", err, res)
	}
}

// initialize opens a raw MCP session with token and returns its id.
func initialize(client *http.Client, url, token string) (string, error) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"flood","version":"1"}}}`))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("initialize: status %d", resp.StatusCode)
	}
	return resp.Header.Get("Mcp-Session-Id"), nil
}

// ping sends a ping on session id and returns the status.
func ping(client *http.Client, url, token, id string) (int, error) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"ping"}`))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Session-Id", id)
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// rssKiB is the resident set of process pid (Linux), or 0.
func rssKiB(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}

// TestSecurityCallersSessionsBounded (issue 11 item 8): one identity
// opens thousands of sessions and never closes them. Before, 30,000
// initialize calls added 324 MB that were never freed; now each identity
// keeps at most its cap of sessions (the least recently used goes), the
// server's memory stops growing with the flood, and idle sessions expire.
func TestSecurityCallersSessionsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	dir, _ := buildtest.Plugins(t, "plugins/echo")
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}

	t.Run("capped per identity", func(t *testing.T) {
		// The default cap: nothing configured. The runtime traces each
		// garbage collection (the live heap it leaves); plugins are not
		// compiled in the background, so the figures are the sessions'.
		s := startHTTPServer(t, dir, httpEnv("GODEBUG=gctrace=1"), "--agents", agentsFileLong(t), "--http-token", secLocalToken, "--warm=false")
		const flood = 3000
		const defaultCap = 64
		ids := make([]string, flood)
		var mu sync.Mutex
		rss := map[int]int{0: rssKiB(s.Cmd.Process.Pid)}
		next := 0
		var wg sync.WaitGroup
		var failed error
		for range 4 {
			wg.Go(func() {
				for {
					mu.Lock()
					i := next
					next++
					mu.Unlock()
					if i >= flood {
						return
					}
					id, err := initialize(client, s.URL, secLocalToken)
					mu.Lock()
					ids[i] = id
					if err != nil && failed == nil {
						failed = err
					}
					if (i+1)%500 == 0 {
						rss[i+1] = rssKiB(s.Cmd.Process.Pid)
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if failed != nil {
			t.Fatal(failed)
		}
		alive := 0
		for _, id := range ids {
			status, err := ping(client, s.URL, secLocalToken, id)
			if err != nil {
				t.Fatal(err)
			}
			if status == http.StatusOK {
				alive++
			}
		}
		marks := slices.Sorted(func(yield func(int) bool) {
			for k := range rss {
				if !yield(k) {
					return
				}
			}
		})
		var line []string
		for _, k := range marks {
			line = append(line, fmt.Sprintf("%d→%d KiB", k, rss[k]))
		}
		live := liveHeaps(s.Stderr.String())
		t.Logf("%d initialize calls from one identity: %d sessions alive (cap %d); server RSS after N calls: %s; "+
			"live heap after each of %d collections (MB): first %v, last %v, largest %d",
			flood, alive, defaultCap, strings.Join(line, ", "), len(live), live[:min(5, len(live))], live[max(0, len(live)-5):], slices.Max(append(live, 0)))
		if alive != defaultCap {
			t.Errorf("%d sessions alive after %d initialize calls, want the cap %d", alive, flood, defaultCap)
		}
		// Sessions are freed as fast as they are made: the live heap stays
		// at a few MB (without a cap, 3000 sessions leave 18 MB live and
		// the RSS 50 MB higher; before, closed sessions were kept too).
		if len(live) == 0 {
			t.Errorf("no garbage collection traced during %d initialize calls", flood)
		} else if largest := slices.Max(live); largest > 8 {
			t.Errorf("the live heap reached %d MB during the flood; sessions are not being freed", largest)
		}
		// Another identity is not crowded out by the flood.
		if _, _, err := connectHTTP(t, s.URL, secBossToken); err != nil {
			t.Errorf("another identity cannot connect after the flood: %v", err)
		}
	})

	t.Run("idle sessions expire", func(t *testing.T) {
		s := startHTTPServer(t, dir, httpEnv(), "--http-token", secLocalToken, "--http-session-idle", "2s")
		id, err := initialize(client, s.URL, secLocalToken)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		if status, err := ping(client, s.URL, secLocalToken, id); err != nil || status != http.StatusOK {
			t.Fatalf("a session in use: %d %v", status, err)
		}
		time.Sleep(3500 * time.Millisecond)
		if status, err := ping(client, s.URL, secLocalToken, id); err != nil || status != http.StatusNotFound {
			t.Errorf("a session idle past its TTL: %d %v, want 404", status, err)
		}
	})
}

// liveHeaps returns the live heap (MB) each garbage collection left, from
// GODEBUG=gctrace=1 lines ("gc 7 @0.1s 2%: ... 4->5->2 MB, ...").
func liveHeaps(stderr string) []int {
	var out []int
	for line := range strings.Lines(stderr) {
		if !strings.HasPrefix(line, "gc ") {
			continue
		}
		f := strings.Fields(line)
		for i := 0; i+1 < len(f); i++ {
			if f[i+1] == "MB," && strings.Count(f[i], "->") == 2 {
				n, err := strconv.Atoi(f[i][strings.LastIndex(f[i], ">")+1:])
				if err == nil {
					out = append(out, n)
				}
				break
			}
		}
	}
	return out
}

// agentsFileLong is an agents file with boss and worker1 holding long
// tokens.
func agentsFileLong(t *testing.T) string {
	return writeAgents(t, `{"agents": [
	  {"id": "boss", "type": "SUPERVISOR", "token": "`+secBossToken+`"},
	  {"id": "worker1", "type": "WORKER", "supervisor": "boss", "token": "`+secWorker1Token+`"}
	]}`)
}

// serveOutcome runs serve with args and env until it exits or prints its
// URL (then it is stopped), and returns its exit code (-1 when it served)
// and stderr.
func serveOutcome(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, buildtest.Binary(t), append([]string{"serve", "--plugins", t.TempDir(), "--data", t.TempDir()}, args...)...)
	cmd.Env = env
	stderr := &clitest.SyncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	for {
		select {
		case <-exited:
			return cmd.ProcessState.ExitCode(), stderr.String()
		case <-time.After(20 * time.Millisecond):
		}
		if clitest.HTTPURLLine.MatchString(stderr.String()) {
			_ = cmd.Process.Kill()
			<-exited
			return -1, stderr.String()
		}
	}
}

// TestSecurityCallersShortTokensRefused (issue 11 item 8): a bearer token
// shorter than 32 characters — from --http-token, its file, the
// environment or an agents file — stops serve at start-up (exit 2) with a
// message naming where it came from.
func TestSecurityCallersShortTokensRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	short := "short-token-0123456789abcdef012" // 31 characters
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(short+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	agents := writeAgents(t, `{"agents": [{"id": "w1", "type": "WORKER", "token": "`+short+`"}]}`)
	for _, c := range []struct {
		name string
		env  []string
		args []string
		want []string
	}{
		{"flag", httpEnv(), []string{"--http", "127.0.0.1:0", "--http-token", short}, []string{"--http-token", "32"}},
		{"file", httpEnv(), []string{"--http", "127.0.0.1:0", "--http-token-file", file}, []string{file, "32"}},
		{"environment", httpEnv(envHTTPToken + "=" + short), []string{"--http", "127.0.0.1:0"}, []string{envHTTPToken, "32"}},
		{"agents file", httpEnv(), []string{"--http", "127.0.0.1:0", "--agents", agents}, []string{agents, `"w1"`, "token", "32"}},
	} {
		code, stderr := serveOutcome(t, c.env, c.args...)
		if code != 2 {
			t.Errorf("%s: a %d-character token: exit %d, want 2\n%s", c.name, len(short), code, stderr)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%s: the message does not name %q:\n%s", c.name, w, stderr)
			}
		}
	}
	// 32 characters is enough.
	if code, stderr := serveOutcome(t, httpEnv(), "--http", "127.0.0.1:0", "--http-token", short+"x"); code != -1 {
		t.Errorf("a 32-character token: exit %d\n%s", code, stderr)
	}
}

// TestSecurityCallersTwoAuthorizationHeaders (issue 11 item 8): a request
// carrying two Authorization headers — which one a proxy or a handler reads
// is anyone's guess — is refused (400), whichever comes first.
func TestSecurityCallersTwoAuthorizationHeaders(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	dir, _ := buildtest.Plugins(t, "plugins/echo")
	s := startHTTPServer(t, dir, httpEnv(), "--agents", agentsFileLong(t))
	for _, pair := range [][2]string{{secWorker1Token, secBossToken}, {secBossToken, secWorker1Token}, {secBossToken, secBossToken}} {
		for _, c := range []struct{ url, body string }{
			{s.URL, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`},
			{s.URL + "/execute", `{"agentId":"boss","toolName":"echo","input":{"text":"as boss"}}`},
		} {
			req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(c.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Add("Authorization", "Bearer "+pair[0])
			req.Header.Add("Authorization", "Bearer "+pair[1])
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("two Authorization headers to %s: %d %s, want 400", c.url, resp.StatusCode, shorten(string(b), 200))
			}
		}
	}
	// One header still works.
	if status, r := rest(t, s, secBossToken, `{"agentId":"boss","toolName":"echo","input":{"text":"hi"}}`); status != http.StatusOK || !r.Success {
		t.Errorf("one Authorization header: %d %+v", status, r)
	}
}

// TestSecurityCallersRESTMismatchRecorded (issue 11 item 8): worker1's
// token with agentId "boss" on POST /mcp/execute is refused (403) and the
// attempt is in the decision log, under the identity that made it.
func TestSecurityCallersRESTMismatchRecorded(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	dir, _ := buildtest.Plugins(t, "plugins/echo")
	data := t.TempDir()
	s := startHTTPServer(t, dir, httpEnv(), "--agents", agentsFileLong(t), "--data", data)
	status, r := rest(t, s, secWorker1Token, `{"agentId":"boss","toolName":"echo","input":{"text":"impersonated","secret":"x"}}`)
	if status != http.StatusForbidden || r.Error == nil || r.Error.Code != abi.CodePermissionDenied {
		t.Fatalf("impersonation: %d %+v", status, r)
	}
	var found *plughost.Decision
	deadline := time.Now().Add(10 * time.Second)
	for found == nil {
		out, err := exec.Command(buildtest.Binary(t), "audit", "tail", "--data", data, "--agent", "worker1", "--json").CombinedOutput()
		if err != nil {
			t.Fatalf("audit tail: %v\n%s", err, out)
		}
		for line := range strings.Lines(string(out)) {
			var d plughost.Decision
			if json.Unmarshal([]byte(line), &d) == nil && d.Tool == "echo" && d.ErrorCode == abi.CodePermissionDenied {
				found = &d
			}
		}
		if found == nil {
			if time.Now().After(deadline) {
				t.Fatalf("no decision-log entry for the mismatch; worker1's entries:\n%s", out)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if found.AgentType != "WORKER" || !strings.Contains(string(found.Error), "boss") || strings.Contains(string(found.Input), "impersonated") {
		t.Errorf("entry = %+v (error %s, input %s)", found, found.Error, found.Input)
	}
}
