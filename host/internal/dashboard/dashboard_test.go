package dashboard

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
	if w := do(d, "GET", "/ui/app.js", "", nil); w.Code != 200 || !strings.Contains(w.Body.String(), "tail_attempt_logs") {
		t.Fatalf("app.js: %d", w.Code)
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
