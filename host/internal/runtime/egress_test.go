package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/runtime"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// toolText calls tool with args and returns the text of the result's first
// content item.
func toolText(ctx context.Context, p *runtime.Plugin, tool, args string, opts runtime.CallOptions) (string, error) {
	out, err := p.Call(ctx, abi.ExportCall, request(tool, args), opts)
	if err != nil {
		return "", err
	}
	var res struct {
		Content []struct{ Text string } `json:"content"`
	}
	if err := json.Unmarshal(out, &res); err != nil || len(res.Content) == 0 {
		return "", err
	}
	return res.Content[0].Text, nil
}

type fetchAnswer struct {
	Status     int               `json:"status"`
	BodyLength int               `json:"body_length"`
	Body       string            `json:"body"`
	Headers    map[string]string `json:"headers"`
}

func fetch(t *testing.T, ctx context.Context, p *runtime.Plugin, args string, opts runtime.CallOptions) (fetchAnswer, error) {
	t.Helper()
	text, err := toolText(ctx, p, "fetch", args, opts)
	var a fetchAnswer
	if err == nil {
		if jerr := json.Unmarshal([]byte(text), &a); jerr != nil {
			t.Fatalf("answer %q: %v", text, jerr)
		}
	}
	return a, err
}

func hostPort(t *testing.T, rawURL string) string {
	t.Helper()
	u := strings.TrimPrefix(strings.TrimPrefix(rawURL, "https://"), "http://")
	if _, _, err := net.SplitHostPort(u); err != nil {
		t.Fatal(err)
	}
	return u
}

func args(kv ...string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func TestEgress(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins")
	}
	_, wasm := buildtest.Plugins(t, "testdata/plugins/fetch")
	code, err := os.ReadFile(wasm["fetch"])
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	logs := &clitest.SyncBuffer{}
	e, err := runtime.New(ctx, runtime.Config{CacheDir: t.TempDir(), CacheKey: testKey,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	compileWith := func(t *testing.T, opts runtime.PluginOptions) *runtime.Plugin {
		t.Helper()
		p, err := e.CompileWith(ctx, "fetch", code, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close(ctx) })
		return p
	}

	var gotKey sync.Map
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotKey.Store(r.URL.Path, r.Header.Get("X-Api-Key"))
		switch r.URL.Path {
		case "/redirect-out":
			http.Redirect(w, r, "https://not-allowed.example/next", http.StatusFound)
			return
		case "/redirect-in":
			http.Redirect(w, r, "/hello", http.StatusFound)
			return
		case "/big":
			w.Write(bytes.Repeat([]byte("x"), 5000))
			return
		case "/slow":
			w.Header().Set("Content-Length", "100")
			w.Write([]byte("first"))
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
			return
		case "/status":
			w.WriteHeader(http.StatusTeapot)
		}
		w.Header().Add("X-Test", "a")
		w.Header().Add("X-Test", "b")
		w.Write([]byte("hello"))
	}))
	defer tlsSrv.Close()
	tlsHost := hostPort(t, tlsSrv.URL)
	plainSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("plain"))
	}))
	defer plainSrv.Close()
	_, plainPort, _ := net.SplitHostPort(hostPort(t, plainSrv.URL))

	open := compileWith(t, runtime.PluginOptions{
		Config: map[string]string{"api_key": "k-123"},
		HTTP:   &runtime.Egress{AllowedHosts: []string{tlsHost}, AllowPrivate: true},
	})

	t.Run("an allowed host answers, over TLS verified against the system roots", func(t *testing.T) {
		a, err := fetch(t, ctx, open, args("url", tlsSrv.URL+"/hello"), runtime.CallOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if a.Status != 200 || a.BodyLength != 5 || a.Body != "hello" || a.Headers["x-test"] != "a,b" {
			t.Errorf("answer %+v", a)
		}
		// config_get read the operator's value, which went out as a header.
		if k, _ := gotKey.Load("/hello"); k != "k-123" {
			t.Errorf("server saw X-Api-Key %q", k)
		}
		a, err = fetch(t, ctx, open, args("url", tlsSrv.URL+"/status"), runtime.CallOptions{})
		if err != nil || a.Status != http.StatusTeapot {
			t.Errorf("a 418 is a response: %+v, %v", a, err)
		}
		// A redirect to an allowed host is followed.
		a, err = fetch(t, ctx, open, args("url", tlsSrv.URL+"/redirect-in"), runtime.CallOptions{})
		if err != nil || a.Body != "hello" {
			t.Errorf("redirect inside: %+v, %v", a, err)
		}
	})

	t.Run("the call's configuration overlays the operator's", func(t *testing.T) {
		_, err := fetch(t, ctx, open, args("url", tlsSrv.URL+"/overlay"), runtime.CallOptions{Config: map[string]string{"api_key": "other"}})
		if k, _ := gotKey.Load("/overlay"); err != nil || k != "other" {
			t.Errorf("server saw %q, %v", k, err)
		}
	})

	t.Run("a host not allowed is refused, naming the URL, the plugin and the setting", func(t *testing.T) {
		p := compileWith(t, runtime.PluginOptions{HTTP: &runtime.Egress{AllowedHosts: []string{"api.example.com"}, AllowPrivate: true}})
		_, err := fetch(t, ctx, p, args("url", tlsSrv.URL+"/x?token=q1"), runtime.CallOptions{})
		env := envelope(t, err)
		if env.Code != abi.CodePermissionDenied || !strings.Contains(env.Message, tlsSrv.URL+"/x") ||
			!strings.Contains(env.Message, "plugin fetch") || !strings.Contains(env.Hint, "plugins.settings.fetch.allowed_hosts") ||
			!strings.Contains(env.Hint, `"`+tlsHost+`"`) {
			t.Errorf("got %+v", env)
		}
		if strings.Contains(env.Message+env.Hint, "q1") {
			t.Errorf("the query string leaked: %+v", env)
		}
		if _, seen := gotKey.Load("/x"); seen {
			t.Error("the refused request reached the server")
		}
		// Without an egress policy every request is refused.
		none := compileWith(t, runtime.PluginOptions{})
		_, err = fetch(t, ctx, none, args("url", "https://api.example.com/v1"), runtime.CallOptions{})
		if env := envelope(t, err); env.Code != abi.CodePermissionDenied || !strings.Contains(env.Message, "egress is off") ||
			!strings.Contains(env.Hint, "plugins.settings.fetch.allowed_hosts") {
			t.Errorf("no policy: %+v", env)
		}
		// Schemes other than http and https.
		_, err = fetch(t, ctx, open, args("url", "file:///etc/passwd"), runtime.CallOptions{})
		if env := envelope(t, err); env.Code != abi.CodePermissionDenied && env.Code != abi.CodeInvalidArgument {
			t.Errorf("file URL: %+v", env)
		}
		// A port other than the one allowed.
		_, err = fetch(t, ctx, open, args("url", "https://127.0.0.1:1/"), runtime.CallOptions{})
		if env := envelope(t, err); env.Code != abi.CodePermissionDenied {
			t.Errorf("other port: %+v", env)
		}
	})

	t.Run("a redirect to a host not allowed is refused", func(t *testing.T) {
		_, err := fetch(t, ctx, open, args("url", tlsSrv.URL+"/redirect-out"), runtime.CallOptions{})
		env := envelope(t, err)
		if env.Code != abi.CodePermissionDenied || !strings.Contains(env.Message, "https://not-allowed.example/next") ||
			!strings.Contains(env.Message, "redirect") || !strings.Contains(env.Hint, "allowed_hosts") {
			t.Errorf("got %+v", env)
		}
	})

	t.Run("a name allowed but resolving to loopback is refused without allow_private", func(t *testing.T) {
		p := compileWith(t, runtime.PluginOptions{HTTP: &runtime.Egress{AllowedHosts: []string{"localhost:" + plainPort}}})
		_, err := fetch(t, ctx, p, args("url", "http://localhost:"+plainPort+"/"), runtime.CallOptions{})
		env := envelope(t, err)
		if env.Code != abi.CodePermissionDenied || !strings.Contains(env.Message, "loopback") ||
			!strings.Contains(env.Hint, "plugins.settings.fetch.allow_private") {
			t.Errorf("got %+v", env)
		}
		// An address literal likewise.
		p = compileWith(t, runtime.PluginOptions{HTTP: &runtime.Egress{AllowedHosts: []string{"127.0.0.1:" + plainPort, "169.254.169.254"}}})
		for _, u := range []string{"http://127.0.0.1:" + plainPort + "/", "http://169.254.169.254/latest/meta-data/"} {
			_, err = fetch(t, ctx, p, args("url", u), runtime.CallOptions{})
			if env := envelope(t, err); env.Code != abi.CodePermissionDenied || !strings.Contains(env.Hint, "allow_private") {
				t.Errorf("%s: %+v", u, env)
			}
		}
		// With allow_private the same name is reached.
		p = compileWith(t, runtime.PluginOptions{HTTP: &runtime.Egress{AllowedHosts: []string{"localhost:" + plainPort}, AllowPrivate: true}})
		a, err := fetch(t, ctx, p, args("url", "http://localhost:"+plainPort+"/"), runtime.CallOptions{})
		if err != nil || a.Body != "plain" {
			t.Errorf("allow_private: %+v, %v", a, err)
		}
	})

	t.Run("a body over the cap is resource_exhausted", func(t *testing.T) {
		p := compileWith(t, runtime.PluginOptions{HTTP: &runtime.Egress{AllowedHosts: []string{tlsHost}, AllowPrivate: true, MaxResponseBytes: 1000}})
		_, err := fetch(t, ctx, p, args("url", tlsSrv.URL+"/big"), runtime.CallOptions{})
		env := envelope(t, err)
		if env.Code != abi.CodeResourceExhausted || env.Details["limit"] != "http_response" ||
			env.Details["max_bytes"] != int64(1000) || env.Details["url"] != tlsSrv.URL+"/big" {
			t.Errorf("got %+v", env)
		}
		a, err := fetch(t, ctx, p, args("url", tlsSrv.URL+"/hello"), runtime.CallOptions{})
		if err != nil || a.Body != "hello" {
			t.Errorf("under the cap: %+v, %v", a, err)
		}
	})

	t.Run("a slow body ends with the call's deadline or cancellation", func(t *testing.T) {
		cctx, cancel := context.WithTimeout(ctx, 400*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := fetch(t, cctx, open, args("url", tlsSrv.URL+"/slow"), runtime.CallOptions{})
		if env := envelope(t, err); env.Code != abi.CodePluginTimeout {
			t.Errorf("got %+v", env)
		}
		if took := time.Since(start); took > 1500*time.Millisecond {
			t.Errorf("ended after %v, deadline was 400ms", took)
		}
		cctx, cancelNow := context.WithCancel(ctx)
		time.AfterFunc(200*time.Millisecond, cancelNow)
		_, err = fetch(t, cctx, open, args("url", tlsSrv.URL+"/slow"), runtime.CallOptions{})
		if env := envelope(t, err); env.Code != abi.CodeCancelled {
			t.Errorf("cancelled: %+v", env)
		}
		// The operator's per-request timeout, inside a longer deadline.
		p := compileWith(t, runtime.PluginOptions{HTTP: &runtime.Egress{AllowedHosts: []string{tlsHost}, AllowPrivate: true, Timeout: 200 * time.Millisecond}})
		cctx, cancel = context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		start = time.Now()
		_, err = fetch(t, cctx, p, args("url", tlsSrv.URL+"/slow"), runtime.CallOptions{})
		if env := envelope(t, err); env.Code != abi.CodeUnavailable || !env.Retryable {
			t.Errorf("egress timeout: %+v", env)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("egress timeout took %v", took)
		}
	})

	t.Run("the HTTP hook records each request", func(t *testing.T) {
		var recs []runtime.HTTPRecord
		opts := runtime.CallOptions{HTTP: func(r runtime.HTTPRecord) { recs = append(recs, r) }}
		if _, err := fetch(t, ctx, open, args("url", tlsSrv.URL+"/hello?token=q2", "method", "POST", "body", "b"), opts); err != nil {
			t.Fatal(err)
		}
		fetch(t, ctx, open, args("url", "https://elsewhere.example/p?k=q3"), opts)
		if len(recs) != 2 {
			t.Fatalf("records %+v", recs)
		}
		r := recs[0]
		if r.Method != "POST" || r.Host != tlsHost || r.URL != tlsSrv.URL+"/hello" || r.Status != 200 || r.Bytes != 5 ||
			r.Err != "" || r.Duration <= 0 {
			t.Errorf("allowed request: %+v", r)
		}
		r = recs[1]
		if r.Method != "GET" || r.Host != "elsewhere.example" || r.URL != "https://elsewhere.example/p" || r.Status != 0 ||
			!strings.Contains(r.Err, "may not reach") {
			t.Errorf("refused request: %+v", r)
		}
		// A request the call's deadline cuts short is recorded too, with
		// what came before it and the envelope the call ends with.
		recs = nil
		cctx, cancel := context.WithTimeout(ctx, 400*time.Millisecond)
		defer cancel()
		_, err := fetch(t, cctx, open, args("url", tlsSrv.URL+"/slow"), opts)
		if env := envelope(t, err); env.Code != abi.CodePluginTimeout {
			t.Errorf("slow: %+v", env)
		}
		if len(recs) != 1 || recs[0].URL != tlsSrv.URL+"/slow" || recs[0].Status != 200 || recs[0].Bytes != 5 ||
			!strings.Contains(recs[0].Err, "did not finish before its deadline") {
			t.Errorf("interrupted request: %+v", recs)
		}
	})

	t.Run("secrets are masked in envelopes, guest log lines and records", func(t *testing.T) {
		const secret = "s3cr3t-VALUE"
		p := compileWith(t, runtime.PluginOptions{
			Config:  map[string]string{"api_key": secret},
			Secrets: []string{secret, "zq"},
			HTTP:    &runtime.Egress{AllowedHosts: []string{tlsHost}, AllowPrivate: true},
		})
		_, err := fetch(t, ctx, p, `{"url":"https://x.example/zq","leak":true}`, runtime.CallOptions{})
		env := envelope(t, err)
		b, _ := json.Marshal(env)
		if env.Code != abi.CodePluginFailed || strings.Contains(string(b), secret) || !strings.Contains(env.Message, "***") {
			t.Errorf("envelope %s", b)
		}
		if l := logs.String(); strings.Contains(l, secret) || !strings.Contains(l, "with key ***") {
			t.Errorf("log:\n%s", l)
		}
		// A secret in the URL of a refused request: message, hint, details
		// and the record are masked, a short secret ("zq") too.
		var recs []runtime.HTTPRecord
		_, err = fetch(t, ctx, p, args("url", "https://zq.example/"+secret+"/v1"),
			runtime.CallOptions{HTTP: func(r runtime.HTTPRecord) { recs = append(recs, r) }})
		env = envelope(t, err)
		b, _ = json.Marshal(env)
		if env.Code != abi.CodePermissionDenied || strings.Contains(string(b), secret) || strings.Contains(string(b), "zq") ||
			!strings.Contains(env.Message, "https://***.example/***/v1") {
			t.Errorf("refusal %s", b)
		}
		if len(recs) != 1 || strings.Contains(recs[0].URL+recs[0].Err+recs[0].Host, secret) {
			t.Errorf("records %+v", recs)
		}
	})
}

func TestRedact(t *testing.T) {
	for _, c := range []struct {
		in      string
		secrets []string
		want    string
	}{
		{"key=abcd1234 again abcd1234", []string{"abcd1234"}, "key=*** again ***"},
		{"x=ab", []string{"ab"}, "x=***"},
		{"a", []string{"a"}, "***"},
		{"token abcdef", []string{"abc", "abcdef"}, "token ***"},
		{"nothing", []string{""}, "nothing"},
		{`{"k":"a\"b"}`, []string{`a"b`}, `{"k":"***"}`},
		{"https://h/?q=a+b%2Fc", []string{"a b/c"}, "https://h/?q=***"},
	} {
		if got := runtime.Redact(c.in, c.secrets); got != c.want {
			t.Errorf("Redact(%q, %q) = %q, want %q", c.in, c.secrets, got, c.want)
		}
	}
	r := runtime.NewRedactor([]string{"pw"})
	env := r.Envelope(&abi.Envelope{Code: abi.CodePluginFailed, Message: "pw", Hint: "pw",
		Details: map[string]any{"console_tail": "pw!", "list": []any{"pw", 1}, "n": 3}})
	b, _ := json.Marshal(env)
	if strings.Contains(string(b), "pw") {
		t.Errorf("envelope %s", b)
	}
}
