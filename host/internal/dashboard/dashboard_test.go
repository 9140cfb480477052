package dashboard

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/plugboard/plugboard/abi"
)

// fake is a dashboard whose tool calls are recorded.
func fake(t *testing.T, tokens map[string]string) (*Dashboard, *[]string) {
	t.Helper()
	var calls []string
	d := New(Options{
		Tokens: tokens,
		Local:  &abi.Caller{ID: "local", Role: "SUPERVISOR"},
		Callers: func(id string) *abi.Caller {
			if id == "worker-1" {
				return &abi.Caller{ID: id, Role: "WORKER"}
			}
			return nil
		},
		Call: func(_ context.Context, c *abi.Caller, tool string, _ json.RawMessage) (json.RawMessage, *abi.Envelope) {
			calls = append(calls, c.ID+":"+tool)
			if tool == "refused" {
				return nil, abi.NewEnvelope(abi.CodePermissionDenied, "no", "ask your supervisor")
			}
			return json.RawMessage(`{"fine":true}`), nil
		},
		Tools:   func(*abi.Caller) []Tool { return nil },
		Plugins: func(context.Context) any { return map[string]any{"plugins": []any{}} },
	})
	return d, &calls
}

func do(d http.Handler, method, path, body string, header map[string]string, cookies ...*http.Cookie) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		r.Header.Set(k, v)
	}
	for _, c := range cookies {
		r.AddCookie(c)
	}
	w := httptest.NewRecorder()
	d.ServeHTTP(w, r)
	return w
}

func decode(t *testing.T, w *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil {
		t.Fatalf("%d %s: %v", w.Code, w.Body, err)
	}
	return m
}

// TestOpenOnLoopbackWithoutToken: without a token the page opens as the
// operator, yet a state-changing request still needs the page's CSRF token.
func TestOpenOnLoopbackWithoutToken(t *testing.T) {
	d, calls := fake(t, nil)
	if w := do(d, "GET", "/", "", nil); w.Code != 200 || !strings.Contains(w.Body.String(), "/ui/app.js") ||
		w.Header().Get("X-Frame-Options") != "DENY" || !strings.Contains(w.Header().Get("Content-Security-Policy"), "frame-ancestors 'none'") {
		t.Fatalf("page: %d %v", w.Code, w.Header())
	}
	if w := do(d, "GET", "/ui/attempt.js", "", nil); w.Code != 200 || !strings.Contains(w.Body.String(), "tail_attempt_logs") {
		t.Fatalf("attempt.js: %d", w.Code)
	}
	// The page names its scripts by the assets' digest: those URLs are
	// cached for good, any other is revalidated.
	page := do(d, "GET", "/", "", nil).Body.String()
	versioned := "/ui/app.js?v=" + assetVersion
	if !strings.Contains(page, versioned) {
		t.Fatalf("the page does not name %s:\n%s", versioned, page)
	}
	if w := do(d, "GET", versioned, "", nil); w.Code != 200 || !strings.Contains(w.Header().Get("Cache-Control"), "immutable") {
		t.Fatalf("%s: %d %q", versioned, w.Code, w.Header().Get("Cache-Control"))
	}
	if w := do(d, "GET", "/ui/app.js", "", nil); w.Header().Get("Cache-Control") != "no-cache" || w.Header().Get("ETag") == "" {
		t.Fatalf("/ui/app.js unversioned: %q, ETag %q", w.Header().Get("Cache-Control"), w.Header().Get("ETag"))
	}
	me := decode(t, do(d, "GET", "/ui/api/me", "", nil))
	if me["signed_in"] != true || me["identity"] != "local" || me["operator"] != true || me["csrf"] == "" {
		t.Fatalf("me = %v", me)
	}
	if w := do(d, "POST", "/ui/api/call", `{"tool":"create_task"}`, nil); w.Code != 403 || len(*calls) != 0 {
		t.Fatalf("a call without the CSRF token: %d %s, calls %v", w.Code, w.Body, *calls)
	}
	w := do(d, "POST", "/ui/api/call", `{"tool":"create_task"}`, map[string]string{CSRFHeader: me["csrf"].(string)})
	if w.Code != 200 || decode(t, w)["ok"] != true || len(*calls) != 1 || (*calls)[0] != "local:create_task" {
		t.Fatalf("a call with it: %d %s, calls %v", w.Code, w.Body, *calls)
	}
}

// TestLoginSessionCookieAndRoles: with tokens, the API needs a session; a
// wrong token gets none; the cookie is HttpOnly and SameSite=Strict; the
// session acts as its identity; a WORKER cannot read the operator's views;
// a refused call answers with the envelope's message and hint; logout ends
// the session.
func TestLoginSessionCookieAndRoles(t *testing.T) {
	d, calls := fake(t, map[string]string{"operator-token": "local", "worker-token": "worker-1"})
	if m := decode(t, do(d, "GET", "/ui/api/me", "", nil)); m["signed_in"] != false || m["login_required"] != true {
		t.Fatalf("me before login = %v", m)
	}
	if w := do(d, "POST", "/ui/api/call", `{"tool":"list_projects"}`, nil); w.Code != 401 || len(*calls) != 0 {
		t.Fatalf("call without a session: %d", w.Code)
	}
	if w := do(d, "POST", "/ui/api/login", `{"token":"guess"}`, nil); w.Code != 401 || len(w.Result().Cookies()) != 0 {
		t.Fatalf("wrong token: %d %v", w.Code, w.Result().Cookies())
	}
	login := func(token string) (*http.Cookie, string) {
		w := do(d, "POST", "/ui/api/login", `{"token":"`+token+`"}`, nil)
		cookies := w.Result().Cookies()
		if w.Code != 200 || len(cookies) != 1 {
			t.Fatalf("login: %d %v", w.Code, cookies)
		}
		c := cookies[0]
		if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Name != CookieName || c.Path != "/" {
			t.Fatalf("cookie = %+v", c)
		}
		me := decode(t, do(d, "GET", "/ui/api/me", "", nil, c))
		return c, me["csrf"].(string)
	}
	worker, csrf := login("worker-token")
	if w := do(d, "POST", "/ui/api/call", `{"tool":"list_projects"}`, map[string]string{CSRFHeader: csrf}, worker); w.Code != 200 || (*calls)[0] != "worker-1:list_projects" {
		t.Fatalf("worker call: %d %v", w.Code, *calls)
	}
	if w := do(d, "POST", "/ui/api/call", `{"tool":"x"}`, map[string]string{CSRFHeader: "other"}, worker); w.Code != 403 {
		t.Fatalf("wrong CSRF token: %d", w.Code)
	}
	for _, view := range []string{"plugins", "hosts", "decisions", "inbox"} {
		if w := do(d, "GET", "/ui/api/"+view, "", nil, worker); w.Code != 403 {
			t.Fatalf("worker reading %s: %d", view, w.Code)
		}
	}
	m := decode(t, do(d, "POST", "/ui/api/call", `{"tool":"refused"}`, map[string]string{CSRFHeader: csrf}, worker))
	env, _ := m["error"].(map[string]any)
	if m["ok"] != false || env["hint"] != "ask your supervisor" || env["code"] != "permission_denied" {
		t.Fatalf("refused call = %v", m)
	}
	operator, _ := login("operator-token")
	if w := do(d, "GET", "/ui/api/plugins", "", nil, operator); w.Code != 200 {
		t.Fatalf("operator reading plugins: %d %s", w.Code, w.Body)
	}
	if w := do(d, "POST", "/ui/api/logout", `{}`, map[string]string{CSRFHeader: csrf}, worker); w.Code != 200 {
		t.Fatalf("logout: %d", w.Code)
	}
	if w := do(d, "GET", "/ui/api/tools", "", nil, worker); w.Code != 401 {
		t.Fatalf("after logout: %d", w.Code)
	}
}

// TestSessionsSharedAndRevoked: dashboards sharing one Sessions (hosts
// sharing a store) honour each other's sign-in and sign-out; a session
// made with a token the operator has since removed, or that now names
// another identity, is refused and ended; the sessions hold neither the
// cookie nor the token.
func TestSessionsSharedAndRevoked(t *testing.T) {
	shared := &memorySessions{m: map[string]Session{}}
	tokens := map[string]string{"worker-token": "worker-1"}
	a := New(Options{Tokens: tokens, Sessions: shared, Local: &abi.Caller{ID: "local"}, Tools: func(*abi.Caller) []Tool { return nil }})
	b := New(Options{Tokens: tokens, Sessions: shared, Local: &abi.Caller{ID: "local"}, Tools: func(*abi.Caller) []Tool { return nil }})
	login := func(d *Dashboard) *http.Cookie {
		w := do(d, "POST", "/ui/api/login", `{"token":"worker-token"}`, nil)
		if w.Code != 200 || len(w.Result().Cookies()) != 1 {
			t.Fatalf("login: %d %s", w.Code, w.Body)
		}
		return w.Result().Cookies()[0]
	}
	cookie := login(a)
	me := decode(t, do(b, "GET", "/ui/api/me", "", nil, cookie))
	if me["signed_in"] != true || me["identity"] != "worker-1" {
		t.Fatalf("B with A's cookie: %v", me)
	}
	for _, s := range shared.m {
		if s.IDHash == cookie.Value || strings.Contains(s.TokenHash, "worker-token") || s.TokenHash == "" {
			t.Fatalf("the session holds the cookie or the token: %+v", s)
		}
	}
	if w := do(b, "POST", "/ui/api/logout", `{}`, map[string]string{CSRFHeader: me["csrf"].(string)}, cookie); w.Code != 200 {
		t.Fatalf("logout on B: %d", w.Code)
	}
	if w := do(a, "GET", "/ui/api/tools", "", nil, cookie); w.Code != 401 {
		t.Fatalf("A after the sign-out on B: %d", w.Code)
	}

	cookie = login(a)
	revoked := New(Options{Tokens: map[string]string{"new-token": "worker-1"}, Sessions: shared, Local: &abi.Caller{ID: "local"}})
	if w := do(revoked, "GET", "/ui/api/tools", "", nil, cookie); w.Code != 401 {
		t.Fatalf("a session whose token was removed: %d", w.Code)
	}
	if len(shared.m) != 0 {
		t.Fatalf("the revoked session was not ended: %v", shared.m)
	}
	cookie = login(a)
	renamed := New(Options{Tokens: map[string]string{"worker-token": "someone-else"}, Sessions: shared, Local: &abi.Caller{ID: "local"}})
	if w := do(renamed, "GET", "/ui/api/tools", "", nil, cookie); w.Code != 401 {
		t.Fatalf("a session whose token now names another identity: %d", w.Code)
	}
}

// cookieHeader is one Cookie header carrying each value as the session
// cookie, in order, as a browser sends cookies of one name and several
// paths.
func cookieHeader(values ...string) map[string]string {
	var parts []string
	for _, v := range values {
		parts = append(parts, CookieName+"="+v)
	}
	return map[string]string{"Cookie": strings.Join(parts, "; ")}
}

// TestForgedSessionRowsSignNoOneIn: whoever writes the sessions' store
// copies the operator's session under a cookie of their own, or rewrites
// the worker's session to name the operator and its token: neither signs
// in, the rows are ended, and the operator's own session still works.
func TestForgedSessionRowsSignNoOneIn(t *testing.T) {
	shared := &memorySessions{m: map[string]Session{}}
	d := New(Options{Tokens: map[string]string{"operator-token": "local", "worker-token": "worker-1"}, Sessions: shared,
		Local: &abi.Caller{ID: "local"}})
	login := func(token string) string {
		w := do(d, "POST", "/ui/api/login", `{"token":"`+token+`"}`, nil)
		if w.Code != 200 || len(w.Result().Cookies()) != 1 {
			t.Fatalf("login: %d %s", w.Code, w.Body)
		}
		return w.Result().Cookies()[0].Value
	}
	who := func(cookie string) any {
		return decode(t, do(d, "GET", "/ui/api/me", "", cookieHeader(cookie)))["identity"]
	}
	operator, worker := login("operator-token"), login("worker-token")

	copied := shared.m[digest(operator)]
	copied.IDHash = digest("chosen-by-the-attacker")
	shared.m[copied.IDHash] = copied
	if got := who("chosen-by-the-attacker"); got != nil {
		t.Errorf("a copy of the operator's row under another cookie signs in as %v", got)
	}
	if _, kept := shared.m[copied.IDHash]; kept {
		t.Error("the copied row was not ended")
	}

	rewritten := shared.m[digest(worker)]
	rewritten.Identity, rewritten.TokenHash = "local", shared.m[digest(operator)].TokenHash
	shared.m[rewritten.IDHash] = rewritten
	if got := who(worker); got != nil {
		t.Errorf("the worker's row rewritten to name the operator signs in as %v", got)
	}
	if got := who(operator); got != "local" {
		t.Errorf("the operator's own session signs in as %v", got)
	}

	old := shared.m[digest(operator)]
	old.Created = old.Created.Add(-sessionLifetime - time.Minute)
	old.MAC = old.mac(d.tokens[sha256.Sum256([]byte("operator-token"))].key)
	shared.m[old.IDHash] = old
	if got := who(operator); got != nil {
		t.Errorf("a session past its lifetime, kept seen, signs in as %v", got)
	}
}

// TestSessionsCappedPerIdentity: a worker signing in far more often than
// its cap keeps its newest sessions and ends its own oldest; the operator's
// session, older than all of them, stays.
func TestSessionsCappedPerIdentity(t *testing.T) {
	d, _ := fake(t, map[string]string{"operator-token": "local", "worker-token": "worker-1"})
	login := func(token string) *http.Cookie {
		w := do(d, "POST", "/ui/api/login", `{"token":"`+token+`"}`, nil)
		if w.Code != 200 {
			t.Fatalf("login: %d %s", w.Code, w.Body)
		}
		return w.Result().Cookies()[0]
	}
	operator := login("operator-token")
	first := login("worker-token")
	last := first
	for range maxSessionsPerIdentity + 10 {
		last = login("worker-token")
	}
	me := func(c *http.Cookie) any { return decode(t, do(d, "GET", "/ui/api/me", "", nil, c))["identity"] }
	if got := me(operator); got != "local" {
		t.Errorf("the operator after the worker's sign-ins: %v", got)
	}
	if got := me(last); got != "worker-1" {
		t.Errorf("the worker's newest session: %v", got)
	}
	if got := me(first); got != nil {
		t.Errorf("the worker's oldest session: %v, want ended", got)
	}
}

// TestPlantedSessionCookies: a request presenting two live sessions (one
// planted by another site beside the browser's own) is signed in as
// neither; a sign-in mints a new session whatever cookie it brings, ends
// every session the request presented, and answers the new session's CSRF
// token for the page to keep; a sign-out ends all it presents.
func TestPlantedSessionCookies(t *testing.T) {
	d, _ := fake(t, map[string]string{"operator-token": "local", "worker-token": "worker-1"})
	login := func(token string, header map[string]string) (string, string) {
		w := do(d, "POST", "/ui/api/login", `{"token":"`+token+`"}`, header)
		if w.Code != 200 || len(w.Result().Cookies()) != 1 {
			t.Fatalf("login: %d %s", w.Code, w.Body)
		}
		csrf, _ := decode(t, w)["csrf"].(string)
		return w.Result().Cookies()[0].Value, csrf
	}
	me := func(values ...string) map[string]any {
		return decode(t, do(d, "GET", "/ui/api/me", "", cookieHeader(values...)))
	}
	planted, _ := login("worker-token", nil)
	victim, _ := login("operator-token", nil)
	if m := me(planted, victim); m["signed_in"] != false {
		t.Errorf("two live sessions presented sign in as %v", m["identity"])
	}
	if m := me(victim); m["identity"] != "local" {
		t.Errorf("the victim's session alone: %v", m)
	}

	const fixated = "a-value-the-attacker-chose"
	fresh, csrf := login("operator-token", cookieHeader(planted, fixated, victim))
	if fresh == fixated || fresh == planted || fresh == victim || csrf == "" {
		t.Fatalf("sign-in kept a presented value or gave no CSRF token: %q %q", fresh, csrf)
	}
	for _, c := range []string{planted, victim, fixated} {
		if m := me(c); m["signed_in"] != false {
			t.Errorf("a session the sign-in request presented still signs in as %v", m["identity"])
		}
	}
	if m := me(planted, fresh); m["identity"] != "local" || m["csrf"] != csrf {
		t.Errorf("the new session beside the dead planted one: %v", m)
	}
	many := []string{fresh, "a", "b", "c", "d"}
	if m := me(many...); m["signed_in"] != false {
		t.Errorf("a request with %d session cookies signs in as %v", len(many), m["identity"])
	}
	other, _ := login("worker-token", nil)
	if w := do(d, "POST", "/ui/api/logout", `{}`, map[string]string{CSRFHeader: csrf, "Cookie": CookieName + "=" + fresh}); w.Code != 200 {
		t.Fatalf("logout: %d", w.Code)
	}
	if m := me(fresh); m["signed_in"] != false {
		t.Error("the session signed out still signs in")
	}
	if m := me(other); m["identity"] != "worker-1" {
		t.Errorf("another browser's session after this one signed out: %v", m)
	}
}
