package e2e

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/plugboard/plugboard/internal/testing/browsertest"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// The session-abuse tests attack the dashboard's sign-in sessions of the
// real binary as the people around it would: whoever can write the board's
// store (another host's operator on a shared PostgreSQL, anyone with the
// SQLite file) forging or copying a session row; a WORKER signing in over
// and over to push the SUPERVISOR out; a sibling origin planting cookies
// before and after the victim signs in; a web page reaching the listener
// through a name that resolves to 127.0.0.1. Each asserts by effect: who
// the dashboard says is signed in, what it lets them do, which sessions
// still work.

// Tokens of the agents in these tests (32+ characters, as serve demands).
const (
	abuseBossToken   = "abuse-boss-token-0123456789abcdef0123456789"
	abuseWorkerToken = "abuse-worker-token-0123456789abcdef012345678"
)

// abuseAgents is an agents file with boss (SUPERVISOR) and worker1.
func abuseAgents(t *testing.T) string {
	return writeAgents(t, `{"agents": [
	  {"id": "boss", "type": "SUPERVISOR", "token": "`+abuseBossToken+`"},
	  {"id": "worker1", "type": "WORKER", "supervisor": "boss", "token": "`+abuseWorkerToken+`"}
	]}`)
}

// abuseServe starts serve over a board with project "demo" and the agents
// of abuseAgents, on addr (loopback unless said otherwise).
func abuseServe(t *testing.T, addr string) (srv *httpServer, data string) {
	t.Helper()
	plugins, _ := buildtest.Plugins(t, taskPlugins...)
	data, _ = dashboardBoard(t)
	return clitest.LaunchHTTP(t, httpEnv(), []string{"serve", "--http", addr, "--agents", abuseAgents(t),
		"--plugins", plugins, "--data", data}), data
}

// abuseDashboard speaks to one server's dashboard API as a script would.
type abuseDashboard struct {
	t    *testing.T
	base string // http://HOST:PORT
}

// do sends a request with the given session cookies (several when a
// browser would send several) and headers; it returns the status and the
// decoded JSON body.
func (d abuseDashboard) do(method, path, body string, header map[string]string, cookies ...string) (int, map[string]any) {
	d.t.Helper()
	req, err := http.NewRequest(method, d.base+path, strings.NewReader(body))
	if err != nil {
		d.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	// One Cookie header with every value, in the order given: what a
	// browser sends when cookies of one name but different paths apply.
	var parts []string
	for _, c := range cookies {
		parts = append(parts, "plugboard_session="+c)
	}
	if len(parts) > 0 {
		req.Header.Set("Cookie", strings.Join(parts, "; "))
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatal(err)
	}
	defer res.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(res.Body).Decode(&m)
	return res.StatusCode, m
}

// login signs in with token and returns the session cookie's value.
func (d abuseDashboard) login(token string) string {
	d.t.Helper()
	req, _ := http.NewRequest("POST", d.base+"/ui/api/login", strings.NewReader(`{"token":"`+token+`"}`))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatal(err)
	}
	defer res.Body.Close()
	for _, c := range res.Cookies() {
		if c.Name == "plugboard_session" && c.Value != "" {
			return c.Value
		}
	}
	b, _ := io.ReadAll(res.Body)
	d.t.Fatalf("sign-in: %d %s, no session cookie", res.StatusCode, b)
	return ""
}

// who is the identity the dashboard signs the cookies in as, "" for none.
func (d abuseDashboard) who(cookies ...string) string {
	d.t.Helper()
	_, m := d.do("GET", "/ui/api/me", "", nil, cookies...)
	if m["signed_in"] != true {
		return ""
	}
	id, _ := m["identity"].(string)
	return id
}

// csrf is the CSRF token the dashboard gives the session of cookie.
func (d abuseDashboard) csrf(cookie string) string {
	d.t.Helper()
	_, m := d.do("GET", "/ui/api/me", "", nil, cookie)
	s, _ := m["csrf"].(string)
	return s
}

// openStore opens the board's SQLite file as someone with the file would.
func openStore(t *testing.T, data string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(data, "board.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// copySessionRow copies the session row stored under the digest from to
// the digest to, column for column, whatever columns the table has: a
// store writer copying another's session under a cookie of their own.
func copySessionRow(t *testing.T, db *sql.DB, from, to string) {
	t.Helper()
	rows, err := db.Query(`SELECT * FROM dashboard_sessions WHERE id_hash = ?`, from)
	if err != nil {
		t.Fatal(err)
	}
	cols, _ := rows.Columns()
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if !rows.Next() {
		rows.Close()
		t.Fatalf("no session row under %s", from)
	}
	if err := rows.Scan(ptrs...); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	for i, c := range cols {
		if c == "id_hash" {
			vals[i] = to
		}
	}
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ")
	if _, err := db.Exec(`INSERT INTO dashboard_sessions (`+strings.Join(cols, ", ")+`) VALUES (`+marks+`)`, vals...); err != nil {
		t.Fatal(err)
	}
}

// TestAbuseSessionsForgedRowsSignNoOneIn: a WORKER who can write the store
// (here the SQLite file; on a shared PostgreSQL, another host's operator)
// copies the SUPERVISOR's session row under a cookie of its own, and
// rewrites its own row to name the SUPERVISOR and the SUPERVISOR's token
// digest. Neither cookie signs anyone in as the SUPERVISOR, nor reads what
// only the operator reads; the SUPERVISOR's own session still works.
func TestAbuseSessionsForgedRowsSignNoOneIn(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	srv, data := abuseServe(t, "127.0.0.1:0")
	d := abuseDashboard{t, "http://" + srv.Addr}
	boss, worker := d.login(abuseBossToken), d.login(abuseWorkerToken)
	if got := d.who(boss); got != "boss" {
		t.Fatalf("the SUPERVISOR's own session signs in as %q", got)
	}
	db := openStore(t, data)

	// A copy of the SUPERVISOR's row under a cookie the attacker chose.
	copied := "copied-cookie-chosen-by-the-attacker-0123456789"
	copySessionRow(t, db, digestHex(boss), digestHex(copied))
	if got := d.who(copied); got == "boss" {
		t.Error("a copy of the SUPERVISOR's session row under the attacker's cookie signs in as boss")
	}
	if code, _ := d.do("GET", "/ui/api/decisions", "", nil, copied); code == http.StatusOK {
		t.Error("the copied row reads the decision log")
	}

	// The WORKER's own row rewritten to name the SUPERVISOR and carry its
	// token's digest (which the store shows in the SUPERVISOR's row).
	if _, err := db.Exec(`UPDATE dashboard_sessions SET
		identity = (SELECT identity FROM dashboard_sessions WHERE id_hash = ?),
		token_hash = (SELECT token_hash FROM dashboard_sessions WHERE id_hash = ?)
		WHERE id_hash = ?`, digestHex(boss), digestHex(boss), digestHex(worker)); err != nil {
		t.Fatal(err)
	}
	if got := d.who(worker); got == "boss" {
		t.Error("the WORKER's row rewritten to name the SUPERVISOR signs in as boss")
	}
	if code, _ := d.do("GET", "/ui/api/decisions", "", nil, worker); code == http.StatusOK {
		t.Error("the rewritten row reads the decision log")
	}

	if got := d.who(boss); got != "boss" {
		t.Errorf("after the forgeries the SUPERVISOR's session signs in as %q", got)
	}
}

// TestAbuseSessionsSignInFloodKeepsOthers: a WORKER signs in 260 times
// (more than the dashboard ever kept in all). The SUPERVISOR's session
// survives; the WORKER's newest works, its oldest was the one let go, and
// the store holds a bounded number of its sessions.
func TestAbuseSessionsSignInFloodKeepsOthers(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	srv, data := abuseServe(t, "127.0.0.1:0")
	d := abuseDashboard{t, "http://" + srv.Addr}
	boss := d.login(abuseBossToken)
	first := d.login(abuseWorkerToken)
	last := first
	for range 260 {
		last = d.login(abuseWorkerToken)
	}
	if got := d.who(boss); got != "boss" {
		t.Errorf("after the WORKER's 260 sign-ins the SUPERVISOR's session signs in as %q, want boss", got)
	}
	if got := d.who(last); got != "worker1" {
		t.Errorf("the WORKER's newest session signs in as %q", got)
	}
	if got := d.who(first); got != "" {
		t.Errorf("the WORKER's oldest session still signs in as %q: its own sessions are not capped", got)
	}
	var n int
	if err := openStore(t, data).QueryRow(`SELECT COUNT(*) FROM dashboard_sessions WHERE identity = 'worker1'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n >= 100 {
		t.Errorf("the store keeps %d of the WORKER's sessions", n)
	}
}

// abuseTossPage is a page on another port of the same host name: cookies
// ignore ports, so what it sets reaches the dashboard too. It plants the
// cookies it is given: name=value; path=….
func abuseTossPage(t *testing.T, cookies map[string]string) string {
	t.Helper()
	var js strings.Builder
	for path, value := range cookies {
		fmt.Fprintf(&js, "document.cookie = %q;\n", "plugboard_session="+value+"; path="+path)
	}
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><link rel="icon" href="data:,"><title>sibling</title><p id="done">planted</p><script>%s</script>`, js.String())
	}))
	t.Cleanup(evil.Close)
	return "http://localhost:" + evil.URL[strings.LastIndex(evil.URL, ":")+1:] + "/"
}

// browserSession is the value of the session cookie the browser holds for
// url at path "/" (the one the dashboard sets), or "".
func browserSession(t *testing.T, p *browsertest.Page, url string) string {
	t.Helper()
	var got []*network.Cookie
	err := chromedp.Do(p.Context(), chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		res, err := cdp.Call(ctx, tg, network.GetCookies, network.GetCookiesParams{URLs: []string{url}})
		got = res.Cookies
		return err
	}))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range got {
		if c.Name == "plugboard_session" && c.Path == "/" {
			return c.Value
		}
	}
	return ""
}

// dashboardShows waits until the dashboard's page shows the sign-in form
// ("") or someone signed in (the header's identity).
func dashboardShows(t *testing.T, p *browsertest.Page) string {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var s string
		p.Eval(`document.getElementById("login") ? "(login)" : (document.getElementById("who") || {}).textContent || ""`, &s)
		switch {
		case s == "(login)":
			return ""
		case s != "":
			return s
		case time.Now().After(deadline):
			t.Fatalf("the dashboard shows neither the sign-in form nor who is signed in: %q", p.Text("body"))
		}
	}
}

// TestAbuseSessionsCookieTossingBeforeSignIn: a page on another port of
// localhost (cookies ignore ports; a sibling subdomain can do the same
// with Domain=) plants session cookies in the victim's browser before the
// victim signs in: a value it made up at path "/" (fixation) and its own
// live WORKER session at "/ui/api", which the browser sends first. The
// dashboard does not open as the WORKER (it says the browser carries a
// session the page did not start); the SUPERVISOR signs in and is the
// SUPERVISOR, with a new session (neither planted value), and the page's
// requests, planted cookie and all, act as the SUPERVISOR; the planted
// WORKER session is ended by that sign-in; the WORKER's CSRF token does
// not pass for the victim.
func TestAbuseSessionsCookieTossingBeforeSignIn(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary, starts Chromium")
	}
	browsertest.Installed(t)
	srv, _ := abuseServe(t, "127.0.0.1:0")
	port := srv.Addr[strings.LastIndex(srv.Addr, ":"):]
	d := abuseDashboard{t, "http://localhost" + port}
	attacker := d.login(abuseWorkerToken)
	attackerCSRF := d.csrf(attacker)
	const fixated = "fixated-session-value-the-attacker-knows-0123"

	p := browsertest.Start(t).Page(t)
	p.SetTimeout(30 * time.Second)
	p.Go(abuseTossPage(t, map[string]string{"/": fixated, "/ui/api": attacker}))
	p.WaitVisible("#done")

	dashboard := "http://localhost" + port + "/"
	p.Go(dashboard)
	if who := dashboardShows(t, p); who != "" {
		t.Errorf("before the victim signs in, the dashboard opens as %q: a planted session signs the victim in", who)
		p.Click("#logout")
		p.WaitVisible("#login")
	} else if p.Count("#foreign-session") == 0 {
		t.Error("the sign-in form does not say the browser carried a session the page did not start")
	}
	p.Type("#token", abuseBossToken)
	p.Click("#login button[type=submit]")
	p.WaitText("#who", "boss")
	victim := browserSession(t, p, dashboard)
	if victim == "" || victim == fixated || victim == attacker {
		t.Fatalf("after sign-in the browser's session cookie is %q: not a new one", victim)
	}
	if got := d.who(victim); got != "boss" {
		t.Errorf("the victim's new session signs in as %q", got)
	}
	if got := d.who(fixated); got != "" {
		t.Errorf("the fixated value signs in as %q", got)
	}
	if got := d.who(attacker); got != "" {
		t.Errorf("the planted WORKER session outlives the victim's sign-in, as %q", got)
	}
	if code, _ := d.do("POST", "/ui/api/call", `{"tool":"list_projects"}`, map[string]string{"X-Plugboard-CSRF": attackerCSRF}, victim); code != http.StatusForbidden {
		t.Errorf("the victim's session with the attacker's CSRF token: %d, want 403", code)
	}
	// The page's requests carry the planted cookie first and are still
	// the victim's.
	var acted map[string]any
	p.Eval(`fetch("/ui/api/me").then(r => r.json())`, &acted)
	if acted["identity"] != "boss" {
		t.Errorf("the victim's page, carrying the planted cookie, acts as %v", acted["identity"])
	}
}

// TestAbuseSessionsCookieTossingAfterSignIn: the victim (SUPERVISOR) is
// signed in when a page on another port of localhost plants the WORKER's
// live session at "/ui/api", which the browser sends before the victim's.
// The victim's browser, now presenting two live sessions, acts as neither
// — never as the WORKER: the dashboard asks to sign in, and that sign-in
// ends the planted session.
func TestAbuseSessionsCookieTossingAfterSignIn(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary, starts Chromium")
	}
	browsertest.Installed(t)
	srv, _ := abuseServe(t, "127.0.0.1:0")
	port := srv.Addr[strings.LastIndex(srv.Addr, ":"):]
	d := abuseDashboard{t, "http://localhost" + port}
	dashboard := "http://localhost" + port + "/"

	p := browsertest.Start(t).Page(t)
	p.SetTimeout(30 * time.Second)
	p.Go(dashboard)
	p.WaitVisible("#login")
	p.Type("#token", abuseBossToken)
	p.Click("#login button[type=submit]")
	p.WaitText("#who", "boss")
	victim := browserSession(t, p, dashboard)

	attacker := d.login(abuseWorkerToken)
	p.Go(abuseTossPage(t, map[string]string{"/ui/api": attacker}))
	p.WaitVisible("#done")
	if got := d.who(attacker, victim); got != "" {
		t.Errorf("the planted session first, the victim's second: signed in as %q, want neither", got)
	}
	p.Go(dashboard)
	if who := dashboardShows(t, p); who != "" {
		t.Errorf("with a second live session planted, the dashboard opens as %q, want the sign-in form", who)
	} else {
		p.Type("#token", abuseBossToken)
		p.Click("#login button[type=submit]")
	}
	p.WaitText("#who", "boss")
	if got := d.who(attacker); got != "" {
		t.Errorf("the planted session outlives the victim's sign-in, as %q", got)
	}
}

// dnsServer is a real DNS server on a UDP port of 127.0.0.1 that answers
// every A question for name with 127.0.0.1 (TTL 0, as a rebinding server
// does), AAAA with no answer, anything else with NXDOMAIN. It counts the
// questions it answered.
type dnsServer struct {
	addr    string
	queries atomic.Int64
}

func startDNS(t *testing.T, name string) *dnsServer {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	s := &dnsServer{addr: pc.LocalAddr().String()}
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if resp := s.answer(buf[:n], name); resp != nil {
				_, _ = pc.WriteTo(resp, from)
			}
		}
	}()
	return s
}

// answer builds the response to one query (RFC 1035 §4.1), or nil for a
// packet that is not a single-question query.
func (s *dnsServer) answer(q []byte, name string) []byte {
	if len(q) < 12 || binary.BigEndian.Uint16(q[4:]) != 1 {
		return nil
	}
	var labels []string
	i := 12
	for i < len(q) && q[i] != 0 {
		l := int(q[i])
		if l > 63 || i+1+l > len(q) {
			return nil
		}
		labels = append(labels, string(q[i+1:i+1+l]))
		i += 1 + l
	}
	if i+5 > len(q) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(q[i+1:])
	question := q[12 : i+5]
	s.queries.Add(1)
	resp := make([]byte, 12, 64)
	copy(resp, q[:2])
	flags := uint16(0x8400) | uint16(q[2]&0x01)<<8 // QR, AA, the query's RD
	match := strings.EqualFold(strings.Join(labels, "."), name)
	if !match {
		flags |= 3 // NXDOMAIN
	}
	binary.BigEndian.PutUint16(resp[2:], flags)
	binary.BigEndian.PutUint16(resp[4:], 1)
	resp = append(resp, question...)
	if match && qtype == 1 {
		binary.BigEndian.PutUint16(resp[6:], 1)
		resp = append(resp, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 0, 0, 4, 127, 0, 0, 1)
	}
	return resp
}

// resolvingClient is an HTTP client that resolves names through dns, as a
// machine whose resolver the attacker's name server answers.
func resolvingClient(dns *dnsServer) *http.Client {
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", dns.addr)
	}}
	return &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{Resolver: r}).DialContext, DisableKeepAlives: true}}
}

// rebindRequests are what a rebound page sends: the dashboard's page and
// API, and the MCP endpoint.
var rebindRequests = []struct{ method, path, body string }{
	{"GET", "/", ""},
	{"GET", "/ui/api/me", ""},
	{"POST", "/ui/api/call", `{"tool":"list_projects"}`},
	{"POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"rebound","version":"1"}}}`},
}

// TestAbuseSessionsDNSRebinding: a name the attacker's DNS server resolves
// to 127.0.0.1 reaches the loopback listener (token-less: the most it
// could drive), through a real resolver (Go's, over UDP to that server)
// and through Chromium's own resolution (--host-resolver-rules): the
// dashboard and the MCP endpoint refuse every request naming it (403), the
// page's script reads nothing and the board is unchanged, while the same
// requests to localhost are served. On a token-protected wildcard listener
// a rebound name gets nothing without the token.
func TestAbuseSessionsDNSRebinding(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary, starts Chromium")
	}
	const evil = "rebind.evil.test"
	dns := startDNS(t, evil)
	client := resolvingClient(dns)
	send := func(c *http.Client, url, method, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
		}
		res, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, url, err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}

	plugins, _ := buildtest.Plugins(t, taskPlugins...)
	data, _ := dashboardBoard(t)
	srv := clitest.LaunchHTTP(t, httpEnv(), []string{"serve", "--http", "127.0.0.1:0", "--plugins", plugins, "--data", data})
	port := srv.Addr[strings.LastIndex(srv.Addr, ":"):]

	t.Run("resolver", func(t *testing.T) {
		for _, r := range rebindRequests {
			if code, body := send(client, "http://"+evil+port+r.path, r.method, r.body); code != http.StatusForbidden {
				t.Errorf("%s %s through the rebound name: %d %.200s, want 403", r.method, r.path, code, body)
			}
			if code, body := send(client, "http://localhost"+port+r.path, r.method, r.body); r.path != "/ui/api/call" && code != http.StatusOK {
				t.Errorf("%s %s through localhost: %d %.200s, want 200", r.method, r.path, code, body)
			}
		}
		if dns.queries.Load() == 0 {
			t.Fatal("the DNS server was never asked: the requests did not go through the rebinding resolver")
		}
	})

	t.Run("chromium", func(t *testing.T) {
		browsertest.Installed(t)
		ctx := rebindingBrowser(t, "MAP "+evil+" 127.0.0.1")
		run := func(a chromedp.Action[chromedp.Void]) {
			t.Helper()
			c, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			if err := chromedp.Do(c, a); err != nil {
				t.Fatal(err)
			}
		}
		eval := func(js string) string {
			t.Helper()
			c, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			v, err := chromedp.Run(c, chromedp.Evaluate[string](js, chromedp.EvalAwaitPromise))
			if err != nil {
				t.Fatalf("%s: %v", js, err)
			}
			return v
		}
		// The page as the rebound name serves it, then its script's
		// same-origin requests.
		run(chromedp.Navigate("http://" + evil + port + "/"))
		if body := eval(`document.body.innerText`); !strings.Contains(body, "forbidden_host") {
			t.Errorf("the dashboard through the rebound name shows %.300q, want the forbidden_host refusal", body)
		}
		for _, r := range rebindRequests {
			js := fmt.Sprintf(`fetch(%q, {method: %q, headers: {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "X-Plugboard-CSRF": "any"}%s}).then(r => r.status + " " + r.statusText)`,
				r.path, r.method, map[bool]string{true: fmt.Sprintf(", body: %q", r.body)}[r.body != ""])
			if got := eval(js); !strings.HasPrefix(got, "403") {
				t.Errorf("the rebound page's %s %s: %s, want 403", r.method, r.path, got)
			}
		}
		create := `fetch("/ui/api/call", {method: "POST", headers: {"Content-Type": "application/json", "X-Plugboard-CSRF": "any"},
			body: JSON.stringify({tool: "create_task", arguments: {project_id: "x", title: "rebound"}})}).then(r => String(r.status))`
		if got := eval(create); got != "403" {
			t.Errorf("the rebound page's create_task: %s, want 403", got)
		}
		// The same browser reaches the dashboard through localhost, and
		// the board holds nothing the rebound page tried.
		run(chromedp.Navigate("http://localhost" + port + "/"))
		run(chromedp.WaitVisible("#board"))
		me := eval(`fetch("/ui/api/me").then(r => r.json()).then(m => m.csrf)`)
		tasks := eval(fmt.Sprintf(`fetch("/ui/api/call", {method: "POST", headers: {"Content-Type": "application/json", "X-Plugboard-CSRF": %q},
			body: JSON.stringify({tool: "list_projects"})}).then(r => r.text())`, me))
		if !strings.Contains(tasks, "demo") || strings.Contains(tasks, "rebound") {
			t.Errorf("the board through localhost: %.300s", tasks)
		}
	})

	t.Run("wildcard_listener_with_token", func(t *testing.T) {
		wild, _ := abuseServe(t, "0.0.0.0:0")
		wport := wild.Addr[strings.LastIndex(wild.Addr, ":"):]
		base := "http://" + evil + wport
		if code, _ := send(client, base+"/mcp", "POST", rebindRequests[3].body); code != http.StatusUnauthorized && code != http.StatusForbidden {
			t.Errorf("MCP through the rebound name without the token: %d, want 401 or 403", code)
		}
		if code, body := send(client, base+"/ui/api/me", "GET", ""); code == http.StatusOK && !strings.Contains(body, `"signed_in":false`) {
			t.Errorf("the dashboard's me through the rebound name: %d %s", code, body)
		}
		if code, _ := send(client, base+"/ui/api/call", "POST", `{"tool":"list_projects"}`); code != http.StatusUnauthorized && code != http.StatusForbidden {
			t.Errorf("a dashboard call through the rebound name: %d, want 401 or 403", code)
		}
	})
}

// rebindingBrowser starts a headless Chromium whose resolver follows rules
// (--host-resolver-rules), for the test; the browser's own resolution path
// then sends the rebound name's requests to 127.0.0.1.
func rebindingBrowser(t *testing.T, rules string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:0:0], chromedp.DefaultExecAllocatorOptions[:]...)
	opts = append(opts,
		chromedp.ExecPath(browsertest.Binary()),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("host-resolver-rules", rules),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(ctx) }()
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("starting Chromium: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("Chromium did not start")
	}
	return ctx
}
