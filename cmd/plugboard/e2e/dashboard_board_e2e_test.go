package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/plugboard/plugboard/abi/tasks"
	plughost "github.com/plugboard/plugboard/host"
	"github.com/plugboard/plugboard/internal/testing/a11y"
	"github.com/plugboard/plugboard/internal/testing/browsertest"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// The board people work in: these tests drive the real page in headless
// Chromium against `plugboard serve --http` with real SHELL attempts in
// real git worktrees, the way a person uses it: with the mouse and the
// keyboard, signed in with a token of their own.

const boardSupervisorToken = "alice-supervisor-token-0123456789abcdef0123"

// boardServer serves a board with project "demo" to a SUPERVISOR "alice"
// who signs in with boardSupervisorToken; it returns the base URL, the
// data directory and the repository.
func boardServer(t *testing.T) (base, data, repo string) {
	t.Helper()
	plugins, _ := buildtest.Plugins(t, taskPlugins...)
	data, repo = dashboardBoard(t)
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("operator-token-0123456789abcdef0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	agents := writeJSON(t, filepath.Join(dir, "agents.json"),
		`{"agents": [{"id": "alice", "type": "SUPERVISOR", "token": "`+boardSupervisorToken+`"}]}`)
	srv := clitest.LaunchHTTP(t, httpEnv(), []string{"serve", "--http", "127.0.0.1:0", "--plugins", plugins, "--data", data,
		"--agents", agents, "--http-token-file", tokenFile})
	return "http://" + srv.Addr, data, repo
}

// signIn opens the page and signs in as alice.
func signIn(p *browsertest.Page, base string) {
	p.Go(base + "/")
	p.WaitVisible("#login")
	p.Type("#token", boardSupervisorToken)
	p.Click("#login button[type=submit]")
	p.WaitText("#who", "alice")
}

// seedTasks makes tasks in project "demo" of the board in data, in the
// order given (their ProjectID is filled in), and returns them.
func seedTasks(t *testing.T, data string, seeds ...tasks.CreateTaskArgs) []tasks.Task {
	t.Helper()
	ctx := context.Background()
	b, err := plughost.OpenBoard(ctx, plughost.BoardConfig{DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	project, err := b.FindProject(ctx, "demo")
	if err != nil {
		t.Fatal(err)
	}
	out := make([]tasks.Task, len(seeds))
	for i, a := range seeds {
		a.ProjectID = project.ID
		if out[i], err = b.CreateTask(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// noLeakedValues fails when the page's text shows a value the script meant
// to leave out or to draw: "null", "undefined", "[object …]".
func noLeakedValues(t *testing.T, p *browsertest.Page, view string) {
	t.Helper()
	var leaked []string
	p.Eval(`[...document.querySelectorAll("main *")].filter((e) => !e.children.length && /^(null|undefined)$|\[object /.test(e.textContent.trim())).map((e) => e.tagName + ": " + e.textContent.trim())`, &leaked)
	var opts []string
	p.Eval(`[...document.querySelectorAll("main option")].map((o) => o.textContent).filter((t) => /\[object |^(null|undefined)$/.test(t))`, &opts)
	var text string
	p.Eval(`[...document.querySelector("main").childNodes].map((n) => n.nodeType === 3 ? n.textContent : "").join("")`, &text)
	if len(leaked)+len(opts) > 0 || strings.Contains(text, "null") {
		t.Errorf("the %s view shows values it should not: %v %v %q", view, leaked, opts, text)
	}
	var loose []string
	p.Eval(`[...document.querySelectorAll("main, main *")].flatMap((e) => [...e.childNodes].filter((n) => n.nodeType === 3 && /^(null|undefined)$|\[object /.test(n.textContent.trim())).map((n) => e.tagName + ": " + n.textContent.trim()))`, &loose)
	if len(loose) > 0 {
		t.Errorf("the %s view shows values it should not: %v", view, loose)
	}
}

// center returns the centre of the element sel matches, in CSS pixels.
func center(t *testing.T, p *browsertest.Page, sel string) (x, y float64) {
	t.Helper()
	var r []float64
	p.Eval(`(() => { const b = document.querySelector(`+"`"+sel+"`"+`).getBoundingClientRect(); return [b.x + b.width / 2, b.y + b.height / 2]; })()`, &r)
	if len(r) != 2 {
		t.Fatalf("no element %s", sel)
	}
	return r[0], r[1]
}

// drag presses the left button at from, moves the mouse to to in steps and
// releases it there: real input events, as a person's mouse makes them.
func drag(t *testing.T, p *browsertest.Page, fromSel, toSel string) {
	t.Helper()
	x0, y0 := center(t, p, fromSel)
	x1, y1 := center(t, p, toSel)
	held := func(p *input.DispatchMouseEventParams) { p.Button, p.Buttons = input.MouseButtonLeft, 1 }
	acts := []chromedp.Action[chromedp.Void]{chromedp.MouseEvent(chromedp.MouseMoved, x0, y0),
		chromedp.MouseEvent(chromedp.MousePressed, x0, y0, held, chromedp.ClickCount(1))}
	for i := 1; i <= 12; i++ {
		f := float64(i) / 12
		acts = append(acts, chromedp.MouseEvent(chromedp.MouseMoved, x0+(x1-x0)*f, y0+(y1-y0)*f, held))
	}
	acts = append(acts, chromedp.MouseEvent(chromedp.MouseReleased, x1, y1, chromedp.ButtonLeft, chromedp.ClickCount(1)))
	if err := chromedp.Do(p.Context(), acts...); err != nil {
		t.Fatalf("drag %s to %s: %v", fromSel, toSel, err)
	}
}

// TestDashboardDragCardBetweenColumns: a card dragged with the mouse from
// To do to In progress changes the task's status through update_task, and
// the decision log records that alice did it; Shift+ArrowRight on a
// focused card moves it one column on; a second page open on the board
// sees both moves without a reload; the title and description are edited
// on the task page; cancel and delete ask first.
func TestDashboardDragCardBetweenColumns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary, starts Chromium")
	}
	browsertest.Installed(t)
	base, data, _ := boardServer(t)
	s := dashLogin(t, base, boardSupervisorToken)
	created := s.call("create_task", map[string]any{"project_id": projectID(t, s), "title": "Drag me", "description": "echo dragged"})
	if created["ok"] != true {
		t.Fatalf("create_task: %v", created)
	}
	taskID := created["result"].(map[string]any)["task_id"].(string)
	card := `a.task[data-task="` + taskID + `"]`

	browser := browsertest.Start(t)
	p := browser.Page(t)
	p.SetTimeout(30 * time.Second)
	signIn(p, base)
	p.WaitVisible(`section[data-status="todo"] ` + card)
	watcher := browser.Page(t)
	watcher.SetTimeout(30 * time.Second)
	signIn(watcher, base)
	watcher.WaitVisible(`section[data-status="todo"] ` + card)
	watcher.Eval(`window.notReloaded = true`, nil)

	drag(t, p, card, `section[data-status="inprogress"] h2`)
	p.WaitVisible(`section[data-status="inprogress"] ` + card)
	waitStatus(t, s, taskID, "inprogress")
	var byAlice bool
	time.Sleep(300 * time.Millisecond) // the log's writer lingers 20 ms
	for _, d := range decisionRows(t, data) {
		if d.Tool == "update_task" && d.AgentID == "alice" && d.Status == "ok" && strings.Contains(string(d.Input), `"inprogress"`) {
			byAlice = true
		}
	}
	if !byAlice {
		t.Error("the decision log has no update_task by alice to inprogress")
	}
	// The other page is told: the card moves there too, no reload.
	watcher.WaitVisible(`section[data-status="inprogress"] ` + card)

	// The keyboard moves a card too.
	p.Focus(`section[data-status="inprogress"] ` + card)
	p.Press("Shift+ArrowRight")
	p.WaitVisible(`section[data-status="inreview"] ` + card)
	watcher.WaitVisible(`section[data-status="inreview"] ` + card)
	waitStatus(t, s, taskID, "inreview")
	var same bool
	watcher.Eval(`window.notReloaded === true`, &same)
	if !same {
		t.Error("the watching page reloaded instead of being told")
	}

	// A click (no drag) opens the task; edit, cancel (confirmed), delete.
	p.Click(card)
	p.WaitVisible("#edit-task")
	a11y.RequireClean(t, p, "task")
	noLeakedValues(t, p, "task")
	if n := p.Count("#variant option"); n < 1 {
		t.Errorf("the variant menu has %d options", n)
	}
	p.Eval(`document.getElementById("edit-title").value = ""`, nil)
	p.Type("#edit-title", "Dragged and renamed")
	p.Click("#edit-task button[type=submit]")
	p.WaitText("h1", "Dragged and renamed")
	watcher.WaitText(card, "Dragged and renamed")
	p.Click("#cancel-task")
	p.WaitVisible("#confirm")
	p.Click("#confirm-no")
	p.WaitGone("#confirm")
	if got := taskStatus(t, s, taskID); got != "inreview" {
		t.Fatalf("declining the confirmation changed the task to %q", got)
	}
	p.Click("#cancel-task")
	p.Click("#confirm-yes")
	p.WaitText("#task-status-now", "cancelled")
	watcher.WaitVisible(`section[data-status="cancelled"] ` + card)
	p.Click("#delete-task")
	p.Click("#confirm-yes")
	p.WaitVisible("#board")
	watcher.WaitGone(card)
	if got := s.call("get_task", map[string]any{"task_id": taskID}); got["ok"] != false {
		t.Errorf("the deleted task is still there: %v", got)
	}
	if errs := append(p.ConsoleErrors(), watcher.ConsoleErrors()...); len(errs) > 0 {
		t.Errorf("the pages logged errors: %v", errs)
	}
}

func projectID(t *testing.T, s *dashSession) string {
	t.Helper()
	got := s.call("list_projects", map[string]any{})
	ps := got["result"].(map[string]any)["projects"].([]any)
	return ps[0].(map[string]any)["project_id"].(string)
}

// waitStatus waits until the task's status is want (the page moves the
// card at once and calls update_task then).
func waitStatus(t *testing.T, s *dashSession, taskID, want string) {
	t.Helper()
	got := ""
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if got = taskStatus(t, s, taskID); got == want {
			return
		}
	}
	t.Fatalf("the task is %q, want %q", got, want)
}

func taskStatus(t *testing.T, s *dashSession, taskID string) string {
	t.Helper()
	got := s.call("get_task", map[string]any{"task_id": taskID})
	if got["ok"] != true {
		t.Fatalf("get_task: %v", got)
	}
	return got["result"].(map[string]any)["status"].(string)
}

// TestDashboardLogStreamsWithoutPolling: an attempt started from the page
// streams its log lines into the open page as the SHELL run prints them,
// with no reload; the board's card shows it running with its elapsed
// time; once the run is over and nothing changes, the page sends no
// request at all (it is told, it does not poll).
func TestDashboardLogStreamsWithoutPolling(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary, starts Chromium")
	}
	browsertest.Installed(t)
	base, _, _ := boardServer(t)
	browser := browsertest.Start(t)
	board := browser.Page(t)
	board.SetTimeout(60 * time.Second)
	signIn(board, base)
	board.WaitVisible("#board")

	p := browser.Page(t)
	p.SetTimeout(60 * time.Second)
	signIn(p, base)
	startAttemptOnPage(t, p, base+"/", "Stream me", "for i in 1 2 3 4 5 6; do echo stream-$i; sleep 1; done")
	p.Eval(`window.notReloaded = true`, nil)
	p.WaitText("#log", "stream-1")
	var first int
	p.Eval(`document.querySelectorAll("#log .e").length`, &first)
	// The board page, open all along, shows the card running, with a clock.
	board.WaitVisible(`a.task.is-running .elapsed`)
	p.WaitText("#log", "stream-6")
	p.WaitText("#state", "completed")
	var same bool
	p.Eval(`window.notReloaded === true`, &same)
	if !same {
		t.Error("the attempt page reloaded")
	}
	var lines int
	p.Eval(`document.querySelectorAll("#log .e").length`, &lines)
	if lines <= first {
		t.Errorf("the log did not grow on the open page: %d lines, then %d", first, lines)
	}
	board.WaitGone(`a.task.is-running`)

	// Quiet: nothing changes, so the pages ask nothing.
	time.Sleep(time.Second)
	count := `performance.getEntriesByType("resource").filter((e) => e.name.includes("/ui/api/") && !e.name.includes("/ui/api/events")).length`
	var before, after, boardBefore, boardAfter int
	p.Eval(count, &before)
	board.Eval(count, &boardBefore)
	time.Sleep(4 * time.Second)
	p.Eval(count, &after)
	board.Eval(count, &boardAfter)
	if after != before || boardAfter != boardBefore {
		t.Errorf("the pages polled while nothing changed: attempt page %d → %d requests, board %d → %d", before, after, boardBefore, boardAfter)
	}
	if errs := append(p.ConsoleErrors(), board.ConsoleErrors()...); len(errs) > 0 {
		t.Errorf("the pages logged errors: %v", errs)
	}
}

// TestDashboardReviewLineComments: an attempt that changed three files is
// reviewed on its page: each file's diff shows (unified and split, with
// line numbers); a comment on a line of one of them, with the overall
// feedback, is sent by Request changes, and the agent's next turn is that
// feedback with the file, the line and the quoted code.
func TestDashboardReviewLineComments(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary, starts Chromium")
	}
	browsertest.Installed(t)
	base, _, _ := boardServer(t)
	s := dashLogin(t, base, boardSupervisorToken)
	script := "printf '# app\\nmore\\n' > README.md; printf 'package main\\n\\nfunc main() {\\n\\tprintln(\"hi\")\\n}\\n' > main.go; printf 'a: 1\\nb: 2\\n' > conf.yaml"
	created := s.call("create_task", map[string]any{"project_id": projectID(t, s), "title": "Three files", "description": script})
	taskID := created["result"].(map[string]any)["task_id"].(string)
	started := s.call("start_task_attempt", map[string]any{"task_id": taskID, "executor": "SHELL"})
	if started["ok"] != true {
		t.Fatalf("start_task_attempt: %v", started)
	}
	attemptID := started["result"].(map[string]any)["attempt_id"].(string)

	p := browsertest.Start(t).Page(t)
	p.SetTimeout(60 * time.Second)
	signIn(p, base)
	p.Go(base + "/#/attempt/" + attemptID + "/review")
	p.WaitText("#state", "completed")
	p.WaitText("#changes", "3 files")
	deadline := time.Now().Add(30 * time.Second)
	for p.Count("#diff section.pd-file") != 3 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	var paths []string
	p.Eval(`[...document.querySelectorAll("#diff section.pd-file")].map((s) => s.dataset.path).sort()`, &paths)
	if strings.Join(paths, " ") != "app/README.md app/conf.yaml app/main.go" {
		t.Fatalf("the diff shows files %v, want the three changed", paths)
	}
	if v := p.Text(`#diff section.pd-file[data-path="app/main.go"]`); !strings.Contains(v, `println("hi")`) {
		t.Errorf("main.go's diff does not show its code: %q", v)
	}
	// Split layout, then back: line numbers on both sides.
	p.Click(`#review button[data-mode="split"]`)
	p.WaitVisible(`#diff table.pd-split`)
	p.Click(`#review button[data-mode="unified"]`)
	p.WaitVisible(`#diff table.pd-unified`)

	// A line comment on main.go line 4.
	btn := `#diff section.pd-file[data-path="app/main.go"] button.pd-add-comment[aria-label="Comment on app/main.go line 4"]`
	p.Click(btn)
	p.Type(`#diff section.pd-file[data-path="app/main.go"] textarea`, "print to stderr instead")
	p.Eval(`[...document.querySelectorAll('#diff section.pd-file[data-path="app/main.go"] button')].find((b) => b.textContent.trim() === "Save").click()`, nil)
	p.WaitText("#comment-count", "1 line comment")
	p.Type("#review-summary", "Nearly there.")
	p.Screenshot(filepath.Join(screenshotDir(t), "diff.png"))
	a11y.RequireClean(t, p, "attempt review with a line comment")
	noLeakedValues(t, p, "attempt")
	p.Click("#review-request-changes")
	p.WaitText("main", "Feedback")

	// The agent's next turn is the feedback, comment and code included.
	var prompt string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		got := s.call("tail_session_messages", map[string]any{"attempt_id": attemptID})
		if got["ok"] != true {
			t.Fatalf("tail_session_messages: %v", got)
		}
		msgs := got["result"].(map[string]any)["messages"].([]any)
		if len(msgs) >= 2 {
			prompt = msgs[len(msgs)-1].(map[string]any)["prompt"].(string)
			break
		}
	}
	for _, want := range []string{"Nearly there.", "app/main.go:4 (new): print to stderr instead", `println("hi")`} {
		if !strings.Contains(prompt, want) {
			t.Errorf("the agent's follow-up lacks %q:\n%s", want, prompt)
		}
	}
	// The conversation shows it as the next turn.
	p.WaitText("#transcript", "print to stderr instead")
	if errs := p.ConsoleErrors(); len(errs) > 0 {
		t.Errorf("the page logged errors: %v", errs)
	}
}

// TestDashboardSearch500Tasks: a project of 500 tasks shows whole; the
// search narrows it as one types, the status and running filters combine
// with it, and the filtered board is a link that opens filtered.
func TestDashboardSearch500Tasks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary, starts Chromium")
	}
	browsertest.Installed(t)
	plugins, _ := buildtest.Plugins(t, taskPlugins...)
	data, _ := dashboardBoard(t)
	var seeds []tasks.CreateTaskArgs
	for i := range 500 {
		title := fmt.Sprintf("Task %03d", i)
		if i%50 == 7 {
			title += " needle"
		}
		seeds = append(seeds, tasks.CreateTaskArgs{Title: title})
	}
	seedTasks(t, data, seeds...)
	srv := clitest.LaunchHTTP(t, httpEnv(), []string{"serve", "--http", "127.0.0.1:0", "--plugins", plugins, "--data", data})
	base := "http://" + srv.Addr + "/"
	p := browsertest.Start(t).Page(t)
	p.SetTimeout(30 * time.Second)
	p.Go(base)
	p.WaitText("#match-count", "500 tasks")
	if n := p.Count("#board a.task"); n != 500 {
		t.Fatalf("the board shows %d cards, want 500", n)
	}
	a11y.RequireClean(t, p, "board of 500 tasks")
	noLeakedValues(t, p, "board")
	visible := `document.querySelectorAll("#board a.task:not([hidden])").length`
	p.Press("/")
	if !p.HasFocus("#search") {
		t.Fatal(`"/" does not focus the search`)
	}
	// chromedp sends the key's character as an event of its own, which
	// lands in the field the key focused (a person's "/" does not).
	p.Eval(`document.getElementById("search").value = ""`, nil)
	p.Type("#search", "needle")
	p.WaitText("#match-count", "10 of 500 tasks")
	var n int
	p.Eval(visible, &n)
	if n != 10 {
		t.Errorf("the search shows %d cards, want 10", n)
	}
	p.Eval(`(() => { const s = document.getElementById("f-running"); s.checked = true; s.dispatchEvent(new Event("input")); })()`, nil)
	p.WaitText("#match-count", "0 of 500 tasks")
	p.Eval(`(() => { const s = document.getElementById("f-running"); s.checked = false; s.dispatchEvent(new Event("input")); })()`, nil)
	p.WaitText("#match-count", "10 of 500 tasks")
	if u := p.URL(); !strings.Contains(u, "q=needle") {
		t.Errorf("the filtered board's address does not say the filter: %s", u)
	}
	// The link opens filtered, in a new page.
	q := browsertest.Start(t).Page(t)
	q.SetTimeout(30 * time.Second)
	q.Go(p.URL())
	q.WaitText("#match-count", "10 of 500 tasks")
	if v := q.Value("#search"); v != "needle" {
		t.Errorf("the linked board's search box says %q", v)
	}
}
