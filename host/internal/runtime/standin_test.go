package runtime_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/runtime"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// TestEgressStandIn runs the fetch plugin against HTTP stand-ins: a request
// its allowed hosts let through goes to the stand-in (a local server, on
// loopback, with the plugin not allowed private addresses), which sees the
// host meant; what the plugin may reach is what it may reach without
// stand-ins.
func TestEgressStandIn(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins")
	}
	_, wasm := buildtest.Plugins(t, "testdata/plugins/fetch")
	code, err := os.ReadFile(wasm["fetch"])
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	// other is another loopback server: a redirect target the stand-in
	// must not open, and a host reached directly (with allow_private) that
	// redirects to a host with a stand-in.
	var otherHits atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/to-api" {
			http.Redirect(w, r, "https://api.example.com/v1/hop?n=2", http.StatusFound)
			return
		}
		otherHits.Add(1)
		w.Write([]byte("other"))
	}))
	defer other.Close()
	otherHost := hostPort(t, other.URL)

	type seen struct{ host, uri string }
	var mu sync.Mutex
	var got []seen
	standIn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, seen{r.Host, r.URL.RequestURI()})
		mu.Unlock()
		switch r.URL.Path {
		case "/redirect-loopback":
			http.Redirect(w, r, other.URL+"/", http.StatusFound)
			return
		case "/redirect-rel":
			http.Redirect(w, r, "/v1/after?x=1", http.StatusFound)
			return
		}
		w.Write([]byte("stand-in"))
	}))
	defer standIn.Close()
	standInHost := hostPort(t, standIn.URL)
	lastSeen := func() seen {
		mu.Lock()
		defer mu.Unlock()
		if len(got) == 0 {
			return seen{}
		}
		return got[len(got)-1]
	}
	hits := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(got)
	}
	tlsStandIn := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("tls " + r.Host + " " + r.URL.RequestURI()))
	}))
	defer tlsStandIn.Close()

	cacheDir := t.TempDir()
	newEngine := func(standIns map[string]*url.URL) *runtime.Engine {
		e, err := runtime.New(ctx, runtime.Config{CacheDir: cacheDir, CacheKey: testKey, HTTPStandIns: standIns})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close(ctx) })
		return e
	}
	target, _ := url.Parse(standIn.URL)
	tlsTarget, _ := url.Parse(tlsStandIn.URL)
	withStandIns := newEngine(map[string]*url.URL{
		"api.example.com":      target,
		"Other.Example":        target,
		"secure.example:443":   tlsTarget,
		"api.example.com:8443": tlsTarget,
	})
	without := newEngine(nil)
	compileWith := func(t *testing.T, e *runtime.Engine, hosts ...string) *runtime.Plugin {
		t.Helper()
		p, err := e.CompileWith(ctx, "fetch", code, runtime.PluginOptions{HTTP: &runtime.Egress{AllowedHosts: hosts}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close(ctx) })
		return p
	}

	t.Run("an allowed host with a stand-in reaches it, which sees the host meant, path and query", func(t *testing.T) {
		p := compileWith(t, withStandIns, "api.example.com", "secure.example")
		var recs []runtime.HTTPRecord
		opts := runtime.CallOptions{HTTP: func(r runtime.HTTPRecord) { recs = append(recs, r) }}
		// https to the host meant, plain http to the stand-in.
		a, err := fetch(t, ctx, p, args("url", "https://api.example.com/v1/x?q=1&r=a%2Fb"), opts)
		if err != nil || a.Status != 200 || a.Body != "stand-in" {
			t.Fatalf("answer %+v, %v", a, err)
		}
		if s := lastSeen(); s != (seen{"api.example.com", "/v1/x?q=1&r=a%2Fb"}) {
			t.Errorf("the stand-in saw %+v", s)
		}
		a, err = fetch(t, ctx, p, args("url", "http://API.example.com./plain", "method", "POST", "body", "b"), opts)
		if err != nil || a.Body != "stand-in" {
			t.Fatalf("answer %+v, %v", a, err)
		}
		if s := lastSeen(); s != (seen{"API.example.com.", "/plain"}) {
			t.Errorf("the stand-in saw %+v", s)
		}
		// The record keeps the URL meant and names the stand-in.
		want := "https://api.example.com/v1/x (stand-in " + standIn.URL + ")"
		if len(recs) != 2 || recs[0].URL != want || recs[0].Host != "api.example.com" || recs[0].Status != 200 || recs[0].Err != "" {
			t.Errorf("records %+v, want URL %q", recs, want)
		}
		// A relative redirect stays with the host meant, so with its
		// stand-in.
		a, err = fetch(t, ctx, p, args("url", "https://api.example.com/redirect-rel"), runtime.CallOptions{})
		if err != nil || a.Body != "stand-in" {
			t.Fatalf("answer %+v, %v", a, err)
		}
		if s := lastSeen(); s != (seen{"api.example.com", "/v1/after?x=1"}) {
			t.Errorf("after the redirect the stand-in saw %+v", s)
		}
		// An https stand-in, verified for its own name.
		a, err = fetch(t, ctx, p, args("url", "https://secure.example/s?k=v"), runtime.CallOptions{})
		if err != nil || a.Body != "tls secure.example /s?k=v" {
			t.Errorf("https stand-in: %+v, %v", a, err)
		}
	})

	t.Run("a redirect hop to a host with a stand-in goes to it", func(t *testing.T) {
		e := withStandIns
		p, err := e.CompileWith(ctx, "fetch", code, runtime.PluginOptions{HTTP: &runtime.Egress{
			AllowedHosts: []string{otherHost, "api.example.com"}, AllowPrivate: true}})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close(ctx)
		var recs []runtime.HTTPRecord
		a, err := fetch(t, ctx, p, args("url", other.URL+"/to-api"), runtime.CallOptions{HTTP: func(r runtime.HTTPRecord) { recs = append(recs, r) }})
		if err != nil || a.Body != "stand-in" {
			t.Fatalf("answer %+v, %v", a, err)
		}
		if s := lastSeen(); s != (seen{"api.example.com", "/v1/hop?n=2"}) {
			t.Errorf("the stand-in saw %+v", s)
		}
		if len(recs) != 1 || recs[0].URL != other.URL+"/to-api (stand-in "+standIn.URL+")" {
			t.Errorf("records %+v", recs)
		}
	})

	t.Run("a host not allowed is refused as without stand-ins", func(t *testing.T) {
		p := compileWith(t, withStandIns, "api.example.com")
		q := compileWith(t, without, "api.example.com")
		before := hits()
		for _, u := range []string{
			"https://other.example/x?k=1",   // a stand-in, not allowed
			"https://api.example.com:8443/", // a stand-in for that port, not allowed
			"http://api.example.com:8080/",  // the port-less stand-in, on a port not allowed
		} {
			_, err := fetch(t, ctx, p, args("url", u), runtime.CallOptions{})
			env := envelope(t, err)
			_, err = fetch(t, ctx, q, args("url", u), runtime.CallOptions{})
			want := envelope(t, err)
			if env.Code != abi.CodePermissionDenied || env.Message != want.Message || env.Hint != want.Hint ||
				!reflect.DeepEqual(env.Details, want.Details) || !strings.Contains(env.Hint, "plugins.settings.fetch.allowed_hosts") {
				t.Errorf("%s: got %+v, want %+v", u, env, want)
			}
		}
		if hits() != before {
			t.Error("a refused request reached the stand-in")
		}
	})

	t.Run("a redirect from the stand-in to another loopback port is refused", func(t *testing.T) {
		// Allowed by name, refused by address: the stand-in's exemption
		// is its own address only.
		p := compileWith(t, withStandIns, "api.example.com", otherHost)
		_, err := fetch(t, ctx, p, args("url", "https://api.example.com/redirect-loopback"), runtime.CallOptions{})
		env := envelope(t, err)
		if env.Code != abi.CodePermissionDenied || !strings.Contains(env.Message, "loopback") ||
			!strings.Contains(env.Hint, "plugins.settings.fetch.allow_private") {
			t.Errorf("got %+v", env)
		}
		// Not allowed by name.
		p = compileWith(t, withStandIns, "api.example.com")
		_, err = fetch(t, ctx, p, args("url", "https://api.example.com/redirect-loopback"), runtime.CallOptions{})
		env = envelope(t, err)
		if env.Code != abi.CodePermissionDenied || !strings.Contains(env.Message, "a redirect from https://api.example.com/redirect-loopback") ||
			!strings.Contains(env.Hint, "allowed_hosts") {
			t.Errorf("got %+v", env)
		}
		if n := otherHits.Load(); n != 0 {
			t.Errorf("the other loopback server got %d requests", n)
		}
	})

	t.Run("the stand-in's own address is refused when the plugin asks for it", func(t *testing.T) {
		// Allowed by name, not allowed private: refused, also right after
		// a request through the stand-in left a connection to it idle.
		p := compileWith(t, withStandIns, "api.example.com", standInHost)
		if a, err := fetch(t, ctx, p, args("url", "https://api.example.com/first"), runtime.CallOptions{}); err != nil || a.Body != "stand-in" {
			t.Fatalf("answer %+v, %v", a, err)
		}
		before := hits()
		_, err := fetch(t, ctx, p, args("url", standIn.URL+"/direct"), runtime.CallOptions{})
		if env := envelope(t, err); env.Code != abi.CodePermissionDenied || !strings.Contains(env.Message, "loopback") {
			t.Errorf("got %+v", env)
		}
		if hits() != before {
			t.Error("the direct request reached the stand-in")
		}
	})
}

func TestParseHTTPStandIn(t *testing.T) {
	for in, want := range map[string][2]string{
		"api.example.com=http://127.0.0.1:8080":    {"api.example.com", "http://127.0.0.1:8080"},
		"API.Example.com.=http://127.0.0.1:8080/":  {"api.example.com", "http://127.0.0.1:8080"},
		"api.example.com:8443=https://LocalHost:9": {"api.example.com:8443", "https://localhost:9"},
		"[::1]:9000=http://[::1]:8080":             {"[::1]:9000", "http://[::1]:8080"},
		"10.0.0.1=http://127.0.0.1":                {"10.0.0.1", "http://127.0.0.1"},
	} {
		host, target, err := runtime.ParseHTTPStandIn(in)
		if err != nil || host != want[0] || target.String() != want[1] {
			t.Errorf("%q: %q, %v, %v; want %q", in, host, target, err, want)
		}
	}
	for in, why := range map[string]string{
		"api.example.com":                           "HOST=URL",
		"=http://127.0.0.1:8080":                    "empty host",
		"*.example.com=http://127.0.0.1:8080":       "wildcard",
		"https://api.example.com=http://h:1":        "not a URL",
		"api.example.com:0=http://127.0.0.1:8080":   "port",
		"api.example.com=":                          "http://",
		"api.example.com=127.0.0.1:8080":            "http://",
		"api.example.com=ftp://127.0.0.1:8080":      "http://",
		"api.example.com=http://127.0.0.1:8080/v1":  "path",
		"api.example.com=http://127.0.0.1:8080?a=1": "query",
		"api.example.com=http://127.0.0.1:8080#f":   "fragment",
		"api.example.com=http://u:p@127.0.0.1:8080": "user info",
		"api.example.com=http://:8080":              "no host",
		"api.example.com=http://127.0.0.1:99999":    "port",
		"api.example.com=http://127.0.0.1:":         "empty port",
		"api.example.com=http:opaque":               "no host",
	} {
		host, target, err := runtime.ParseHTTPStandIn(in)
		if err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%q: %q, %v, %v; want an error saying %q", in, host, target, err, why)
		}
		if err != nil && strings.Contains(err.Error(), "u:p@") {
			t.Errorf("%q: the error shows the password: %v", in, err)
		}
	}
}

// TestHTTPStandInConfig: New refuses stand-ins it cannot honour exactly.
func TestHTTPStandInConfig(t *testing.T) {
	ok, _ := url.Parse("http://127.0.0.1:8080")
	withPath, _ := url.Parse("http://127.0.0.1:8080/v1")
	for name, c := range map[string]struct {
		m   map[string]*url.URL
		why string
	}{
		"wildcard":   {map[string]*url.URL{"*.example.com": ok}, "wildcard"},
		"path":       {map[string]*url.URL{"api.example.com": withPath}, "path"},
		"nil":        {map[string]*url.URL{"api.example.com": nil}, "no URL"},
		"twice":      {map[string]*url.URL{"api.example.com": ok, "API.example.com.": ok}, "same host"},
		"url as key": {map[string]*url.URL{"https://api.example.com": ok}, "not a URL"},
	} {
		e, err := runtime.New(context.Background(), runtime.Config{HTTPStandIns: c.m})
		if err == nil {
			e.Close(context.Background())
		}
		if err == nil || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s: %v, want an error saying %q", name, err, c.why)
		}
	}
}
