package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plugboard/plugboard/abi/tasks"
	plughost "github.com/plugboard/plugboard/host"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// The dashboard's server side of a live board, driven with a plain HTTP
// client against `plugboard serve --http`: the event stream
// (GET /ui/api/events), the whole board (GET /ui/api/board) and the
// operator's project set-up (POST /ui/api/projects, projects/repos).

// sseEvent is one event of a stream.
type sseEvent struct {
	name string
	data map[string]any
}

// eventStream is an open GET /ui/api/events.
type eventStream struct {
	res    *http.Response
	events chan sseEvent
	// ended is closed when the server ends the stream.
	ended chan struct{}
}

// openEvents opens the event stream with query as s's identity; it returns
// the refusal's status and envelope when the server refuses it.
func (s *dashSession) openEvents(query string) (*eventStream, int, map[string]any) {
	s.t.Helper()
	req, err := http.NewRequest("GET", s.base+"/ui/api/events?"+query, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	if s.cookie != nil {
		req.AddCookie(s.cookie)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	if res.StatusCode != 200 {
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return nil, res.StatusCode, m
	}
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		s.t.Errorf("events: Content-Type %q", ct)
	}
	if cc := res.Header.Get("Cache-Control"); cc != "no-store" {
		s.t.Errorf("events: Cache-Control %q", cc)
	}
	es := &eventStream{res: res, events: make(chan sseEvent, 256), ended: make(chan struct{})}
	s.t.Cleanup(func() { res.Body.Close() })
	go func() {
		defer close(es.ended)
		sc := bufio.NewScanner(res.Body)
		var name string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				var m map[string]any
				_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &m)
				select {
				case es.events <- sseEvent{name, m}:
				default:
				}
				name = ""
			}
		}
	}()
	return es, 200, nil
}

// await returns the first event named name whose data ok accepts, within d.
func (es *eventStream) await(t *testing.T, name string, d time.Duration, ok func(map[string]any) bool) (sseEvent, bool) {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case e := <-es.events:
			if e.name == name && (ok == nil || ok(e.data)) {
				return e, true
			}
		case <-es.ended:
			return sseEvent{}, false
		case <-timeout:
			return sseEvent{}, false
		}
	}
}

func errCode(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// TestDashboardEventsBoardAndSetUp: a board stream opens with ready and
// is told of a task created through the dashboard and of one created by
// `plugboard task create` in another process, within a second; an
// attempt stream is told its logs grew while a SHELL run prints; a WORKER
// may not watch an attempt outside its scope; the ninth stream of one
// identity is refused with 429; a signed-out session's stream ends; the
// board snapshot returns all 500 tasks of a project, and only its own to a
// scoped WORKER; the operator's project set-up is refused to a WORKER and
// for a path that is no repository (nothing created), and recorded as who
// did it when it succeeds.
func TestDashboardEventsBoardAndSetUp(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	plugins, _ := buildtest.Plugins(t, taskPlugins...)
	repo := newRepo(t, "# app\n")
	data := t.TempDir()
	ctx := context.Background()
	b, err := plughost.OpenBoard(ctx, plughost.BoardConfig{DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	project, err := b.CreateProject(ctx, "demo", []plughost.RepoSpec{{Path: repo}})
	if err != nil {
		t.Fatal(err)
	}
	var all []tasks.Task
	for i := range 500 {
		td, err := b.CreateTask(ctx, tasks.CreateTaskArgs{ProjectID: project.ID, Title: fmt.Sprintf("Task %03d", i),
			Description: "sleep 1; for i in 1 2 3 4; do echo tick-$i; sleep 0.5; done"})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, td)
	}
	b.Close()
	mine, other := all[0], all[1]
	dir := t.TempDir()
	const aliceToken, workerToken = "alice-token-0123456789abcdef0123456789", "w1-token-0123456789abcdef0123456789"
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("op-token-0123456789abcdef0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	agents := writeJSON(t, filepath.Join(dir, "agents.json"), `{"permissions": {"WORKER": {"add": ["list_tasks"]}}, "agents": [
  {"id": "alice", "type": "SUPERVISOR", "token": "`+aliceToken+`"},
  {"id": "w1", "type": "WORKER", "task_id": "`+mine.TaskID+`", "token": "`+workerToken+`"}]}`)
	srv := clitest.LaunchHTTP(t, httpEnv(), []string{"serve", "--http", "127.0.0.1:0", "--plugins", plugins, "--data", data,
		"--agents", agents, "--http-token-file", tokenFile})
	base := "http://" + srv.Addr
	alice, w1 := dashLogin(t, base, aliceToken), dashLogin(t, base, workerToken)

	// A signed-out session's stream ends (its session is re-read every
	// 30 s): signed out now, checked at the end.
	leaver := dashLogin(t, base, workerToken)
	gone, code, env := leaver.openEvents("project_id=" + project.ID)
	if gone == nil {
		t.Fatalf("the WORKER's board stream: %d %v", code, env)
	}
	if _, ok := gone.await(t, "ready", 5*time.Second, nil); !ok {
		t.Fatal("no ready event")
	}
	if code, m := leaver.do("POST", "/ui/api/logout", "{}"); code != 200 {
		t.Fatalf("logout: %d %v", code, m)
	}
	signedOut := time.Now()

	// The board snapshot, whole, and only what the WORKER reaches.
	code, m := alice.do("GET", "/ui/api/board?project_id="+project.ID, "")
	res, _ := m["result"].(map[string]any)
	if code != 200 || m["ok"] != true || res["count"] != float64(500) || res["truncated"] != false || len(res["tasks"].([]any)) != 500 {
		t.Fatalf("alice's board: %d ok=%v count=%v truncated=%v", code, m["ok"], res["count"], res["truncated"])
	}
	first := res["tasks"].([]any)[0].(map[string]any)
	for _, k := range []string{"task_id", "title", "status", "created_at", "updated_at", "has_in_progress_attempt", "last_attempt_failed", "running"} {
		if _, ok := first[k]; !ok {
			t.Errorf("a board task has no %q: %v", k, first)
		}
	}
	_, m = w1.do("GET", "/ui/api/board?project_id="+project.ID, "")
	res, _ = m["result"].(map[string]any)
	if m["ok"] != true || res["count"] != float64(1) || res["tasks"].([]any)[0].(map[string]any)["task_id"] != mine.TaskID {
		t.Errorf("the WORKER's board: %v", m)
	}
	if _, m = alice.do("GET", "/ui/api/board?project_id=00000000-0000-4000-8000-000000000000", ""); errCode(m) != "not_found" ||
		m["error"].(map[string]any)["hint"] != "pick a project from list_projects" {
		t.Errorf("an unknown project's board: %v", m)
	}

	// The board stream: ready, then told of tasks made by the dashboard
	// and by another process.
	board, code, env := alice.openEvents("project_id=" + project.ID)
	if board == nil {
		t.Fatalf("the board stream: %d %v", code, env)
	}
	if e, ok := board.await(t, "ready", 5*time.Second, nil); !ok || e.data["project_id"] != project.ID || e.data["attempt_id"] != nil {
		t.Fatalf("ready: %v %v", ok, e.data)
	}
	isProject := func(d map[string]any) bool { return d["project_id"] == project.ID }
	// The first call of a plugin compiles it: that one is not timed.
	if m := alice.call("create_task", map[string]any{"project_id": project.ID, "title": "Made on the page"}); m["ok"] != true {
		t.Fatalf("create_task: %v", m)
	}
	if _, ok := board.await(t, "board", 5*time.Second, isProject); !ok {
		t.Fatal("no board event after create_task")
	}
	time.Sleep(600 * time.Millisecond)
	for len(board.events) > 0 {
		<-board.events
	}
	called := time.Now()
	if m := alice.call("update_task", map[string]any{"task_id": other.TaskID, "title": "Renamed on the page"}); m["ok"] != true {
		t.Fatalf("update_task: %v", m)
	}
	t.Logf("update_task took %s", time.Since(called).Round(time.Millisecond))
	from := time.Now()
	if _, ok := board.await(t, "board", time.Second, isProject); !ok {
		t.Fatal("no board event within a second of update_task")
	}
	t.Logf("board event %s after update_task answered", time.Since(from).Round(time.Millisecond))
	from = time.Now()
	if _, stderr, code := runPB(t, "", append(os.Environ(), "PLUGBOARD_DATA="), "task", "create", "demo", "Made by the CLI", "--data", data); code != 0 {
		t.Fatalf("task create: %s", stderr)
	}
	if _, ok := board.await(t, "board", time.Second, isProject); !ok {
		t.Fatal("no board event within a second of `plugboard task create`")
	}
	t.Logf("board event %s after `plugboard task create` exited", time.Since(from).Round(time.Millisecond))

	// The attempt stream: told the logs grew while the run prints.
	started := alice.call("start_task_attempt", map[string]any{"task_id": mine.TaskID, "executor": "SHELL"})
	if started["ok"] != true {
		t.Fatalf("start_task_attempt: %v", started)
	}
	attemptID := started["result"].(map[string]any)["attempt_id"].(string)
	att, code, env := alice.openEvents("attempt_id=" + attemptID)
	if att == nil {
		t.Fatalf("the attempt stream: %d %v", code, env)
	}
	if e, ok := att.await(t, "ready", 5*time.Second, nil); !ok || e.data["attempt_id"] != attemptID || e.data["project_id"] != nil {
		t.Fatalf("ready: %v %v", ok, e.data)
	}
	hasWhat := func(kind string) func(map[string]any) bool {
		return func(d map[string]any) bool {
			w, _ := d["what"].([]any)
			return d["attempt_id"] == attemptID && slices.Contains(w, any(kind))
		}
	}
	if _, ok := att.await(t, "attempt", 10*time.Second, hasWhat("logs")); !ok {
		t.Fatal("no attempt event with logs while the run printed")
	}
	if _, ok := att.await(t, "attempt", 15*time.Second, hasWhat("state")); !ok {
		t.Error("no attempt event with state when the run ended")
	}
	if _, ok := board.await(t, "board", 2*time.Second, isProject); !ok {
		t.Error("the board stream was not told of the attempt")
	}

	// A WORKER may not watch another task's attempt; ids are checked.
	otherStarted := alice.call("start_task_attempt", map[string]any{"task_id": other.TaskID, "executor": "SHELL"})
	if otherStarted["ok"] != true {
		t.Fatalf("start_task_attempt: %v", otherStarted)
	}
	otherAttempt := otherStarted["result"].(map[string]any)["attempt_id"].(string)
	if es, code, m := w1.openEvents("attempt_id=" + otherAttempt); es != nil || (code != 403 && code != 404) || m["ok"] != false {
		t.Errorf("the WORKER watching another's attempt: %d %v", code, m)
	}
	if es, code, m := w1.openEvents("attempt_id=not-a-uuid"); es != nil || code != 400 || errCode(m) != "invalid_argument" {
		t.Errorf("a bad attempt_id: %d %v", code, m)
	}

	// At most 8 streams per identity: alice has 2 open.
	for i := 0; i < 6; i++ {
		if es, code, m := alice.openEvents("project_id=" + project.ID); es == nil {
			t.Fatalf("stream %d: %d %v", i+3, code, m)
		}
	}
	if es, code, m := alice.openEvents("project_id=" + project.ID); es != nil || code != 429 {
		t.Errorf("the 9th stream: %d %v", code, m)
	} else if e := m["error"].(map[string]any); e["retryable"] != true || !strings.Contains(e["hint"].(string), "close other dashboard tabs") {
		t.Errorf("the 9th stream's envelope: %v", e)
	}

	// Project set-up: the operator's only, checked, recorded.
	projectsBefore := len(alice.call("list_projects", map[string]any{})["result"].(map[string]any)["projects"].([]any))
	repo2 := newRepo(t, "# two\n")
	if code, m := w1.do("POST", "/ui/api/projects", `{"name":"w1's","repos":[{"path":"`+repo2+`"}]}`); code != 403 || errCode(m) != "permission_denied" {
		t.Errorf("a WORKER creating a project: %d %v", code, m)
	}
	if _, m := alice.do("POST", "/ui/api/projects", `{"name":"nowhere","repos":[{"path":"/no/such/repository"}]}`); errCode(m) != "invalid_argument" {
		t.Errorf("a project of a missing path: %v", m)
	}
	if n := len(alice.call("list_projects", map[string]any{})["result"].(map[string]any)["projects"].([]any)); n != projectsBefore {
		t.Errorf("refused set-ups changed the projects: %d, was %d", n, projectsBefore)
	}
	_, m = alice.do("POST", "/ui/api/projects", `{"name":"second","repos":[{"path":"`+repo2+`","display_name":"two"}]}`)
	created, _ := m["result"].(map[string]any)
	if m["ok"] != true || created["name"] != "second" || created["project_id"] == nil {
		t.Fatalf("create a project: %v", m)
	}
	repo3 := newRepo(t, "# three\n")
	if _, m := alice.do("POST", "/ui/api/projects/repos", `{"project_id":"`+created["project_id"].(string)+`","path":"`+repo3+`"}`); m["ok"] != true {
		t.Errorf("add a repository: %v", m)
	}
	if _, m := alice.do("POST", "/ui/api/projects/repos", `{"project_id":"`+created["project_id"].(string)+`","path":"relative/path"}`); errCode(m) != "invalid_argument" {
		t.Errorf("add a relative path: %v", m)
	}

	// The signed-out stream ended within a minute of signing out.
	select {
	case <-gone.ended:
	case <-time.After(time.Until(signedOut.Add(time.Minute))):
		t.Error("the signed-out session's stream is still open a minute later")
	}
	t.Logf("the signed-out stream ended %s after signing out", time.Since(signedOut).Round(time.Second))

	var recorded int
	for _, d := range decisionRows(t, data) {
		if d.AgentID == "alice" && (strings.HasPrefix(d.Title, "Created project second") || strings.HasPrefix(d.Title, "Added a repository")) {
			recorded++
		}
	}
	if recorded != 2 {
		t.Errorf("%d decision-log rows of alice's set-ups, want 2", recorded)
	}
}

// TestDashboardEventsEndOnShutdown: SIGTERM to serve with an event stream
// open ends the stream at once (http.Server.Shutdown alone would wait for
// it) and the process well before its 10 s grace.
func TestDashboardEventsEndOnShutdown(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	plugins, _ := buildtest.Plugins(t, taskPlugins...)
	data, _ := dashboardBoard(t)
	srv := clitest.LaunchHTTP(t, httpEnv(), []string{"serve", "--http", "127.0.0.1:0", "--plugins", plugins, "--data", data})
	base := "http://" + srv.Addr
	s := dashLogin(t, base, "")
	projects := s.call("list_projects", map[string]any{})["result"].(map[string]any)["projects"].([]any)
	projectID := projects[0].(map[string]any)["project_id"].(string)
	es, code, m := s.openEvents("project_id=" + projectID)
	if es == nil {
		t.Fatalf("the stream: %d %v", code, m)
	}
	if _, ok := es.await(t, "ready", 5*time.Second, nil); !ok {
		t.Fatal("no ready event")
	}
	from := time.Now()
	if err := srv.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-es.ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the stream is still open 5 s after SIGTERM")
	}
	ended := time.Since(from)
	// Without the dashboard closing its streams, serve would wait out
	// its 10 s grace for them.
	select {
	case <-srv.Exited:
	case <-time.After(8 * time.Second):
		t.Fatal("serve still runs 8 s after SIGTERM with an event stream open")
	}
	t.Logf("after SIGTERM the stream ended in %s, serve exited in %s", ended.Round(time.Millisecond), time.Since(from).Round(time.Millisecond))
}
