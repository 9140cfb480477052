package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plugboard/plugboard/internal/testing/a11y"
	"github.com/plugboard/plugboard/internal/testing/browsertest"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// The dashboard's tests drive the real page in headless Chromium against
// `plugboard serve --http`, the board in a real SQLite file, real git and
// real SHELL attempts. With PLUGBOARD_UPDATE_SCREENSHOTS=1 they write the
// README's screenshots into docs/screenshots; otherwise into a temporary
// directory.

// screenshotDir is where the tests' screenshots go (build/screenshots.sh
// runs the tests that call it). The repository root comes from buildtest, not
// from a path relative to the package's directory, which broke when these
// tests moved from cmd/plugboard to cmd/plugboard/e2e.
func screenshotDir(t *testing.T) string {
	if os.Getenv("PLUGBOARD_UPDATE_SCREENSHOTS") != "" {
		return filepath.Join(buildtest.Root(t), "docs", "screenshots")
	}
	return t.TempDir()
}

// dashboardBoard makes a git repository and a board with project "demo"
// over it.
func dashboardBoard(t *testing.T) (data, repo string) {
	t.Helper()
	repo = newRepo(t, "# app\n")
	data = t.TempDir()
	newProject(t, data, "", "demo", repo)
	return data, repo
}

// TestDashboardInBrowser walks the dashboard as a person on the operator's
// machine (loopback, no token): the board shows the project and a task
// made on the page; an attempt's log grows on screen while its SHELL run
// prints; approve from the review page merges into the repository; a
// refused request-changes shows the envelope's hint, a proper one queues
// the feedback; the decision log, inbox, plugins and hosts views show; the page is
// keyboard reachable, fits a phone, and logs no error.
func TestDashboardInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary, starts Chromium")
	}
	browsertest.Installed(t)
	plugins, _ := buildtest.Plugins(t, append(append([]string{}, taskPlugins...), "plugins/agents")...)
	data, repo := dashboardBoard(t)
	srv := clitest.LaunchHTTP(t, httpEnv(), []string{"serve", "--http", "127.0.0.1:0", "--plugins", plugins, "--data", data})
	base := "http://" + srv.Addr + "/"
	shots := screenshotDir(t)
	browser := browsertest.Start(t)
	p := browser.Page(t)
	p.SetTimeout(60 * time.Second)

	p.Go(base)
	p.WaitVisible("#board")
	// Keyboard: the first Tab reaches the skip link.
	p.Press("Tab")
	if !p.HasFocus("a.skip") {
		t.Error("the first Tab does not reach the skip link")
	}

	// A task made on the page lands in todo.
	script := "for i in 1 2 3 4 5 6; do echo line-$i; sleep 1; done; echo hello > hello.txt"
	p.Type("#new-title", "Write hello")
	p.Type("#new-description", script)
	p.Click("#create-task button[type=submit]")
	p.WaitText(`section[data-status="todo"]`, "Write hello")
	p.Screenshot(filepath.Join(shots, "board.png"))
	a11y.RequireClean(t, p, "board")

	// Its attempt's log grows on screen while the run prints.
	p.Click(`section[data-status="todo"] a.task`)
	p.WaitVisible("#start-attempt")
	p.Eval(`document.getElementById("executor").value = "SHELL"`, nil)
	p.Click("#start-attempt button[type=submit]")
	p.WaitText("#log", "line-1")
	var early int
	p.Eval(`document.querySelectorAll("#log .e").length`, &early)
	p.WaitText("#log", "line-5")
	var later int
	p.Eval(`document.querySelectorAll("#log .e").length`, &later)
	if later <= early {
		t.Errorf("the log did not grow on screen: %d entries, then %d", early, later)
	}
	p.Screenshot(filepath.Join(shots, "attempt.png"))
	p.WaitText("#state", "completed")
	p.WaitText("#changes", "hello.txt")
	p.WaitVisible("#diff section.pd-file")
	a11y.RequireClean(t, p, "attempt")

	// Review: approve merges into the repository.
	p.Go(base + "#/review")
	p.WaitVisible("[data-approve]")
	p.Screenshot(filepath.Join(shots, "review.png"))
	a11y.RequireClean(t, p, "review queue")
	p.Click("[data-approve]")
	p.WaitText("main", "Approved and merged")
	if out := git(t, repo, "show", "main:hello.txt"); strings.TrimSpace(out) != "hello" {
		t.Errorf("after approve, main:hello.txt = %q", out)
	}

	// A second task to send back: refused without feedback (the hint
	// shows), then queued with it.
	p.Go(base)
	p.WaitVisible("#board")
	p.Type("#new-title", "Second")
	p.Type("#new-description", "echo second > second.txt")
	p.Click("#create-task button[type=submit]")
	p.WaitText(`section[data-status="todo"]`, "Second")
	p.Click(`section[data-status="todo"] a.task`)
	p.WaitVisible("#start-attempt")
	p.Eval(`document.getElementById("executor").value = "SHELL"`, nil)
	p.Click("#start-attempt button[type=submit]")
	p.WaitText("#state", "completed")
	p.Go(base + "#/review")
	p.WaitVisible("[data-request-changes]")
	var sentBack string
	p.Eval(`document.querySelector("[data-request-changes]").dataset.requestChanges`, &sentBack)
	p.Click("[data-request-changes]")
	p.WaitText("#alert", "Hint:")
	if alert := p.Text("#alert"); !strings.Contains(alert, "feedback") {
		t.Errorf("the refused request shows %q, want its hint about feedback", alert)
	}
	p.Type(`textarea[id^="feedback-"]`, "echo again >> second.txt")
	p.Click("[data-request-changes]")
	p.WaitText("main", "Feedback sent")
	p.Go(base + "#/attempt/" + sentBack)
	p.WaitText("#transcript", "echo again")
	p.WaitText("#changes", "+2")

	// The operator's views.
	p.Go(base + "#/decisions")
	p.WaitText("#decisions", "create_task")
	p.Screenshot(filepath.Join(shots, "decisions.png"))
	a11y.RequireClean(t, p, "decision log")
	// Filtered by time: nothing finished in the future.
	p.Eval(`document.getElementById("f-since").value = "2099-01-01T00:00"`, nil)
	p.Click("#decision-filter button[type=submit]")
	for deadline := time.Now().Add(15 * time.Second); p.Count("#decisions tbody tr") != 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the decision log filtered to the future still lists %d rows", p.Count("#decisions tbody tr"))
		}
	}
	p.Go(base + "#/plugins")
	p.WaitText("main", "tasks-read")
	p.Screenshot(filepath.Join(shots, "plugins.png"))
	a11y.RequireClean(t, p, "plugins")
	p.Go(base + "#/inbox")
	p.WaitText("main", "Inbox")
	a11y.RequireClean(t, p, "inbox")
	// The one host serving this store is listed, alive, as this host.
	p.Go(base + "#/hosts")
	p.WaitText("#hosts tbody", "(this host)")
	if row := p.Text("#hosts tbody tr"); !strings.Contains(row, "alive") || !strings.Contains(row, "landlock (ABI") {
		t.Errorf("the hosts view shows this host as %q, want alive with its attempt sandbox (landlock)", row)
	}
	p.Screenshot(filepath.Join(shots, "hosts.png"))
	a11y.RequireClean(t, p, "hosts")

	if errs := p.ConsoleErrors(); len(errs) > 0 {
		t.Errorf("the page logged errors: %v", errs)
	}

	// At phone width the board is one column, still usable.
	phone := browsertest.Start(t, browsertest.Phone()).Page(t)
	phone.Go(base)
	phone.WaitText(`section[data-status="done"]`, "Write hello")
	var overflow bool
	phone.Eval(`document.documentElement.scrollWidth > window.innerWidth + 1`, &overflow)
	if overflow {
		t.Error("the board scrolls sideways at phone width")
	}
	phone.Screenshot(filepath.Join(shots, "board-phone.png"))
	a11y.RequireClean(t, phone, "board at phone width")
}

// TestDashboardLoginOffLoopback: off loopback the page asks for a token;
// a wrong one is refused with a hint, the right one opens the board with a
// session cookie the page's script cannot read.
func TestDashboardLoginOffLoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary, starts Chromium")
	}
	browsertest.Installed(t)
	plugins, _ := buildtest.Plugins(t, taskPlugins...)
	data, _ := dashboardBoard(t)
	token := strings.Repeat("d4sh", 10)
	tokenFile := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tokenFile, []byte(token), 0o600)
	srv := clitest.LaunchHTTP(t, httpEnv(), []string{"serve", "--http", "0.0.0.0:0", "--http-token-file", tokenFile, "--plugins", plugins, "--data", data})
	port := srv.Addr[strings.LastIndex(srv.Addr, ":"):]
	base := "http://127.0.0.1" + port + "/"
	p := browsertest.Start(t).Page(t)

	p.Go(base)
	p.WaitVisible("#login")
	p.Screenshot(filepath.Join(screenshotDir(t), "login.png"))
	a11y.RequireClean(t, p, "sign-in")
	if p.Count("#board") != 0 {
		t.Fatal("the board shows before signing in")
	}
	p.Type("#token", "not-the-token")
	p.Click("#login button[type=submit]")
	p.WaitText("#alert", "not valid")
	p.Eval(`document.getElementById("token").value = ""`, nil)
	p.Type("#token", token)
	p.Click("#login button[type=submit]")
	p.WaitVisible("#board")
	var cookies string
	p.Eval(`document.cookie`, &cookies)
	if strings.Contains(cookies, "plugboard_session") {
		t.Errorf("the session cookie is readable by the page's script: %q", cookies)
	}
	p.Click("#logout")
	p.WaitVisible("#login")
}

// TestDashboardAttacks attacks the dashboard of the real binary as a web
// page on the same machine would: through a rebound host name, from
// another origin, and without the page's CSRF token. Each is refused and
// the board is unchanged; the page's own request goes through.
func TestDashboardAttacks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	plugins, _ := buildtest.Plugins(t, taskPlugins...)
	data, _ := dashboardBoard(t)
	srv := clitest.LaunchHTTP(t, httpEnv(), []string{"serve", "--http", "127.0.0.1:0", "--plugins", plugins, "--data", data})
	base := "http://" + srv.Addr
	send := func(method, path, body string, header map[string]string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		for k, v := range header {
			if k == "Host" {
				req.Host = v
				continue
			}
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	port := srv.Addr[strings.LastIndex(srv.Addr, ":"):]
	if code, _ := send("GET", "/", "", map[string]string{"Host": "evil.example" + port}); code != http.StatusForbidden {
		t.Errorf("the page through a rebound name: %d, want 403", code)
	}
	code, body := send("GET", "/ui/api/me", "", nil)
	var me struct{ CSRF string }
	if code != 200 || json.Unmarshal([]byte(body), &me) != nil || me.CSRF == "" {
		t.Fatalf("me: %d %s", code, body)
	}
	var projects struct {
		Result struct {
			Projects []struct {
				ProjectID string `json:"project_id"`
			} `json:"projects"`
		} `json:"result"`
	}
	code, body = send("POST", "/ui/api/call", `{"tool":"list_projects"}`, map[string]string{"X-Plugboard-CSRF": me.CSRF})
	if code != 200 || json.Unmarshal([]byte(body), &projects) != nil || len(projects.Result.Projects) != 1 {
		t.Fatalf("list_projects: %d %s", code, body)
	}
	create := `{"tool":"create_task","arguments":{"project_id":"` + projects.Result.Projects[0].ProjectID + `","title":"planted"}}`
	for _, attack := range []struct {
		name   string
		header map[string]string
		ctype  string
	}{
		{"another origin", map[string]string{"Origin": "http://evil.example", "X-Plugboard-CSRF": me.CSRF}, ""},
		{"no CSRF token", nil, ""},
		{"a wrong CSRF token", map[string]string{"X-Plugboard-CSRF": "guess"}, ""},
		{"a form post", map[string]string{"X-Plugboard-CSRF": me.CSRF}, "application/x-www-form-urlencoded"},
	} {
		h := map[string]string{}
		for k, v := range attack.header {
			h[k] = v
		}
		if attack.ctype != "" {
			h["Content-Type"] = attack.ctype
		}
		if code, body := send("POST", "/ui/api/call", create, h); code < 400 {
			t.Errorf("%s: %d %s, want refused", attack.name, code, body)
		}
	}
	code, body = send("POST", "/ui/api/call", `{"tool":"list_tasks","arguments":{"project_id":"`+projects.Result.Projects[0].ProjectID+`"}}`,
		map[string]string{"X-Plugboard-CSRF": me.CSRF})
	if code != 200 || strings.Contains(body, "planted") {
		t.Errorf("after the attacks the board holds: %d %s", code, body)
	}
}

// TestDashboardSessionAcrossHosts: two hosts with their own data
// directories share one store (here one SQLite file); a sign-in on host A
// opens the dashboard on host B (behind a load balancer without sticky
// routing), a sign-out on B ends it on A, and a session survives host A's
// restart. The store holds the session only as a digest of its cookie.
func TestDashboardSessionAcrossHosts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	plugins, _ := buildtest.Plugins(t, taskPlugins...)
	dataA, _ := dashboardBoard(t)
	shared := filepath.Join(dataA, "board.db")
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(strings.Repeat("s3ss", 10)), 0o600); err != nil {
		t.Fatal(err)
	}
	serve := func(data string) *httpServer {
		return clitest.LaunchHTTP(t, httpEnv(), []string{"serve", "--http", "127.0.0.1:0", "--http-token-file", tokenFile,
			"--plugins", plugins, "--data", data, "--store", shared})
	}
	hostA, hostB := serve(dataA), serve(t.TempDir())
	send := func(srv *httpServer, method, path, body string, header map[string]string, cookie *http.Cookie) (*http.Response, map[string]any) {
		t.Helper()
		req, err := http.NewRequest(method, "http://"+srv.Addr+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		if cookie != nil {
			req.AddCookie(cookie)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(res.Body).Decode(&m)
		return res, m
	}
	login := func(srv *httpServer) *http.Cookie {
		t.Helper()
		res, m := send(srv, "POST", "/ui/api/login", `{"token":"`+strings.Repeat("s3ss", 10)+`"}`, nil, nil)
		if res.StatusCode != 200 || len(res.Cookies()) != 1 {
			t.Fatalf("login: %d %v", res.StatusCode, m)
		}
		return res.Cookies()[0]
	}
	me := func(srv *httpServer, c *http.Cookie) map[string]any {
		t.Helper()
		_, m := send(srv, "GET", "/ui/api/me", "", nil, c)
		return m
	}

	cookie := login(hostA)
	onB := me(hostB, cookie)
	if onB["signed_in"] != true || onB["identity"] != "local" {
		t.Fatalf("host B with host A's session: %v", onB)
	}
	// The session's row may still be in the write-ahead log: read both.
	db, err := os.ReadFile(shared)
	if err != nil {
		t.Fatal(err)
	}
	wal, err := os.ReadFile(shared + "-wal")
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if stored := string(db) + string(wal); !strings.Contains(stored, digestHex(cookie.Value)) {
		t.Error("the store does not hold the session's digest: the check below would prove nothing")
	} else if strings.Contains(stored, cookie.Value) {
		t.Error("the store holds the session cookie itself")
	}
	if res, m := send(hostB, "POST", "/ui/api/logout", `{}`, map[string]string{"X-Plugboard-CSRF": onB["csrf"].(string)}, cookie); res.StatusCode != 200 {
		t.Fatalf("sign-out on B: %d %v", res.StatusCode, m)
	}
	if res, _ := send(hostA, "GET", "/ui/api/tools", "", nil, cookie); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("host A after the sign-out on B: %d, want 401", res.StatusCode)
	}

	cookie = login(hostA)
	_ = hostA.Cmd.Process.Signal(os.Interrupt)
	select {
	case <-hostA.Exited:
	case <-time.After(30 * time.Second):
		t.Fatal("host A did not stop")
	}
	restarted := serve(dataA)
	if m := me(restarted, cookie); m["signed_in"] != true {
		t.Fatalf("the session after host A restarted: %v", m)
	}
}

// digestHex is the hex SHA-256 the dashboard stores a cookie as.
func digestHex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
