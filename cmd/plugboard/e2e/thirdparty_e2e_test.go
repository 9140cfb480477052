package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// Third-party plugins under the operator's control, end to end through the
// real binary (issue 14's acceptance): `plugboard serve --config FILE
// --plugins DIR --data DIR` serving the test plugins fetch, files and
// counter with a configuration file's plugins.settings, driven by the go-sdk
// client:
//
//   - HTTPS egress to a test server the host trusts through SSL_CERT_FILE:
//     an allowed host answers; a host not allowed, a redirect to one, a name
//     resolving to loopback without allow_private (fetch2, a pinned copy of
//     fetch from a source, under the prefix p2_) are refused naming the
//     setting; a body over the cap is resource_exhausted; a slow body ends
//     with the plugin's call_timeout; `audit tail --json` shows each request
//     in the row's http array;
//   - configuration values from ${ENV} and a secret file reach the plugin
//     (as request headers) and show nowhere else: not in the host's debug
//     log, board.db, any answer the client got, or `config check`;
//   - allowed_paths, a read-only and a writable mount, and the escape
//     corpus (.., absolute host path, symbolic and hard links out, NUL);
//   - a stateful plugin counts across calls; a pooled copy answers.

// tpAnswer is the fetch plugin's answer.
type tpAnswer struct {
	Status     int               `json:"status"`
	BodyLength int               `json:"body_length"`
	Body       string            `json:"body"`
	Headers    map[string]string `json:"headers"`
}

// tpFiles is the files plugin's answer.
type tpFiles struct {
	OK    bool     `json:"ok"`
	Error string   `json:"error"`
	Errno uint32   `json:"errno"`
	Text  string   `json:"text"`
	Names []string `json:"names"`
}

// tpOrigin is the HTTPS server the fetch plugin is allowed to reach. It
// records what each request carried, by path.
type tpOrigin struct {
	*httptest.Server
	other     string // the URL of a server no plugin may reach
	mu        sync.Mutex
	seen      map[string]http.Header
	slowEnded chan struct{} // closed when /slow's request is cancelled
}

func (o *tpOrigin) saw(path string) (http.Header, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	h, ok := o.seen[path]
	return h, ok
}

func (o *tpOrigin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o.mu.Lock()
	o.seen[r.URL.Path] = r.Header.Clone()
	o.mu.Unlock()
	switch p := r.URL.Path; {
	case p == "/hello":
		w.Header().Set("X-Method", r.Method)
		w.Write([]byte("hello"))
	case p == "/redirect-out":
		http.Redirect(w, r, o.other+"/landing", http.StatusFound)
	case p == "/big":
		// Twice the host's cap of 1 MiB per response.
		w.Write(bytes.Repeat([]byte("b"), 2<<20))
	case p == "/slow":
		w.Header().Set("Content-Length", "1000")
		w.Write([]byte("first"))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			close(o.slowEnded)
		case <-time.After(20 * time.Second):
		}
	default:
		w.Write([]byte("ok"))
	}
}

func TestThirdPartyPlugins(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	pluginDir, wasm := buildtest.Plugins(t, "testdata/plugins/fetch", "testdata/plugins/files", "testdata/plugins/counter")
	dir := t.TempDir()
	// fetch2 and counter2: the same modules from a source (each names
	// itself in its manifest, so a copy in the folder would clash), pinned
	// in plugboard.lock.
	if err := os.Mkdir(filepath.Join(dir, "extra"), 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, wasm["fetch"], filepath.Join(dir, "extra", "fetch2.wasm"))
	copyFile(t, wasm["counter"], filepath.Join(dir, "extra", "counter2.wasm"))

	// The servers: origin, which fetch may reach, and other, which no
	// plugin may; both use httptest's certificate, which the host trusts
	// through SSL_CERT_FILE.
	var otherHits []string
	var otherMu sync.Mutex
	other := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherMu.Lock()
		otherHits = append(otherHits, r.URL.Path)
		otherMu.Unlock()
		w.Write([]byte("other"))
	}))
	t.Cleanup(other.Close)
	origin := &tpOrigin{other: other.URL, seen: map[string]http.Header{}, slowEnded: make(chan struct{})}
	origin.Server = httptest.NewTLSServer(origin)
	t.Cleanup(origin.Close)
	originHost := strings.TrimPrefix(origin.URL, "https://") // 127.0.0.1:PORT
	_, originPort, _ := strings.Cut(originHost, ":")
	caFile := filepath.Join(dir, "test-ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: origin.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}

	// The secrets: one from the environment, one from a file.
	const envSecret, fileSecret = "env-secret-Qz7v1Kp", "file-secret-Mw3x8Rj"
	secrets := []string{envSecret, fileSecret}
	if err := os.WriteFile(filepath.Join(dir, "token.secret"), []byte(fileSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// The mounts and what lies outside them.
	const marker = "OUTSIDE-MARKER-5b0e9d"
	outside := filepath.Join(dir, "outside")
	outsideFile := filepath.Join(outside, "secret.txt")
	for _, d := range []string{outside, filepath.Join(dir, "ro"), filepath.Join(dir, "rw")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(outsideFile, marker)
	for _, m := range []string{"ro", "rw"} {
		mnt := filepath.Join(dir, m)
		writeFile(filepath.Join(mnt, "hello.txt"), "hello from "+m)
		for link, target := range map[string]string{
			"link_out": filepath.Join("..", "outside", "secret.txt"),
			"link_abs": outsideFile,
			"link_in":  "hello.txt",
		} {
			if err := os.Symlink(target, filepath.Join(mnt, link)); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Link(outsideFile, filepath.Join(mnt, "hard")); err != nil {
			t.Fatalf("hard link: %v", err)
		}
	}

	cfg := writeJSON(t, filepath.Join(dir, "plugboard.json"), `{"plugins": {"settings": {
  "fetch": {
    "config": {"api_key": "${PB_E2E_API_KEY}", "token": {"secret_file": "token.secret"}},
    "allowed_hosts": ["`+originHost+`"], "allow_private": true, "call_timeout": "2s"
  },
  "fetch2": {"source": "extra/fetch2.wasm", "prefix": "p2_", "allowed_hosts": ["localhost:`+originPort+`", "`+originHost+`"]},
  "files": {"allowed_paths": [{"path": "ro", "mount": "/data"}, {"path": "rw", "mount": "/rw", "writable": true}]},
  "counter": {"stateful": true},
  "counter2": {"source": "extra/counter2.wasm", "prefix": "pooled_", "max_instances": 2}
}}}`)
	env := cleanEnv("SSL_CERT_FILE="+caFile, "PB_E2E_API_KEY="+envSecret)
	data := filepath.Join(dir, "data")

	// config check names what is configured, and no secret.
	out, errOut, code := runPB(t, dir, env, "config", "check", cfg)
	if code != 0 || !strings.Contains(out, "fetch: config (2 values, 2 secrets), 1 allowed host, allow_private, call_timeout") ||
		!strings.Contains(out, "fetch2: file source") || !strings.Contains(out, "files: 2 allowed paths") ||
		!strings.Contains(out, "counter: stateful") {
		t.Fatalf("config check: exit %d\n%s%s", code, out, errOut)
	}
	for _, s := range secrets {
		if strings.Contains(out+errOut, s) {
			t.Errorf("config check shows a secret:\n%s%s", out, errOut)
		}
	}
	out, errOut, code = runPB(t, dir, env, "plugin", "lock", "--config", cfg, "--data", data)
	if code != 0 || !strings.Contains(out, "fetch2") || !strings.Contains(out, "counter2") {
		t.Fatalf("plugin lock: exit %d\n%s%s", code, out, errOut)
	}

	s := startServe(t, env, "--config", cfg, "--plugins", pluginDir, "--data", data, "--log-level", "debug")
	if names := listedTools(t, s); !slices.Equal(names, []string{"count", "fetch", "files_list", "files_probe", "files_read", "files_write", "p2_fetch", "pooled_count"}) {
		t.Fatalf("tools %v", names)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Every answer the client got, to look for secrets and the marker.
	var (
		gotMu sync.Mutex
		got   strings.Builder
	)
	callErr := func(tool string, args map[string]any) (*mcp.CallToolResult, error) {
		res, err := s.session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		b, _ := json.Marshal(res)
		gotMu.Lock()
		got.Write(b)
		got.WriteByte('\n')
		gotMu.Unlock()
		return res, err
	}
	call := func(t *testing.T, tool string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := callErr(tool, args)
		if err != nil {
			t.Fatalf("call %s: protocol error %v", tool, err)
		}
		return res
	}
	fetch := func(t *testing.T, tool string, args map[string]any) tpAnswer {
		t.Helper()
		res := call(t, tool, args)
		if res.IsError {
			t.Fatalf("%s %v: %s", tool, args, clitest.Text(res))
		}
		var a tpAnswer
		if err := json.Unmarshal([]byte(clitest.Text(res)), &a); err != nil {
			t.Fatalf("%s answer %q: %v", tool, clitest.Text(res), err)
		}
		return a
	}
	refused := func(t *testing.T, tool string, args map[string]any) abi.Envelope {
		t.Helper()
		return clitest.EnvelopeOf(t, call(t, tool, args))
	}
	noOther := func(t *testing.T) {
		t.Helper()
		otherMu.Lock()
		defer otherMu.Unlock()
		if len(otherHits) != 0 {
			t.Errorf("a server no plugin may reach got requests: %v", otherHits)
		}
	}

	t.Run("https egress", func(t *testing.T) {
		a := fetch(t, "fetch", map[string]any{"url": origin.URL + "/hello"})
		if a.Status != 200 || a.Body != "hello" || a.BodyLength != 5 || a.Headers["x-method"] != "GET" {
			t.Errorf("allowed request: %+v", a)
		}
		a = fetch(t, "fetch", map[string]any{"url": origin.URL + "/hello", "method": "POST", "body": "payload"})
		if a.Status != 200 || a.Headers["x-method"] != "POST" {
			t.Errorf("allowed POST: %+v", a)
		}

		otherURL := other.URL + "/direct"
		env := refused(t, "fetch", map[string]any{"url": otherURL})
		if env.Code != abi.CodePermissionDenied || !strings.Contains(env.Message, otherURL) || !strings.Contains(env.Message, "plugin fetch") ||
			!strings.Contains(env.Hint, "plugins.settings.fetch.allowed_hosts") {
			t.Errorf("host not allowed: %+v", env)
		}

		env = refused(t, "fetch", map[string]any{"url": origin.URL + "/redirect-out"})
		if env.Code != abi.CodePermissionDenied || !strings.Contains(env.Message, other.URL+"/landing") ||
			!strings.Contains(env.Message, "redirect") || !strings.Contains(env.Hint, "plugins.settings.fetch.allowed_hosts") {
			t.Errorf("redirect to a host not allowed: %+v", env)
		}
		if _, ok := origin.saw("/redirect-out"); !ok {
			t.Error("the redirecting request never reached the origin")
		}
		noOther(t)

		// fetch2 may name the origin (localhost resolves to loopback) but
		// has no allow_private.
		for _, u := range []string{"https://localhost:" + originPort + "/p2-name", origin.URL + "/p2-addr"} {
			env = refused(t, "p2_fetch", map[string]any{"url": u})
			if env.Code != abi.CodePermissionDenied || !strings.Contains(env.Message, "plugin fetch2") ||
				!strings.Contains(env.Message, "loopback") || strings.Contains(env.Message, "not among its allowed hosts") ||
				!strings.Contains(env.Hint, "plugins.settings.fetch2.allow_private") {
				t.Errorf("%s without allow_private: %+v", u, env)
			}
		}
		if env.Details["address"] != "127.0.0.1" {
			t.Errorf("refused address %v, want 127.0.0.1", env.Details["address"])
		}
		for _, p := range []string{"/p2-name", "/p2-addr"} {
			if _, ok := origin.saw(p); ok {
				t.Errorf("%s reached the origin", p)
			}
		}

		env = refused(t, "fetch", map[string]any{"url": origin.URL + "/big"})
		if env.Code != abi.CodeResourceExhausted || env.Details["limit"] != "http_response" || env.Details["max_bytes"] != float64(1<<20) ||
			!strings.Contains(env.Message, "1048576 bytes") || !strings.Contains(env.Message, origin.URL+"/big") {
			t.Errorf("body over the cap: %+v", env)
		}

		begin := time.Now()
		env = refused(t, "fetch", map[string]any{"url": origin.URL + "/slow"})
		took := time.Since(begin)
		if env.Code != abi.CodePluginTimeout && env.Code != abi.CodeCancelled {
			t.Errorf("slow body: %+v", env)
		}
		// fetch's call_timeout is 2s: not much sooner (something else
		// ended it), and not much later.
		if took < 1500*time.Millisecond || took > 8*time.Second {
			t.Errorf("slow body answered after %v, call_timeout 2s", took)
		}
		select {
		case <-origin.slowEnded:
		case <-time.After(5 * time.Second):
			t.Error("the slow request was not cancelled at the origin")
		}
	})

	t.Run("config values and secrets", func(t *testing.T) {
		// The values reach the plugin, which sends them as headers.
		if a := fetch(t, "fetch", map[string]any{"url": origin.URL + "/config"}); a.Status != 200 {
			t.Errorf("fetch /config: %+v", a)
		}
		h, ok := origin.saw("/config")
		if !ok || h.Get("X-Api-Key") != envSecret || h.Get("X-Token") != fileSecret {
			t.Errorf("origin saw X-Api-Key %q and X-Token %q", h.Get("X-Api-Key"), h.Get("X-Token"))
		}
		// A secret in the call's own input (the URL's path) is masked in
		// the decision log (checked below).
		if a := fetch(t, "fetch", map[string]any{"url": origin.URL + "/s/" + envSecret}); a.Status != 200 {
			t.Errorf("secret in the path: %+v", a)
		}
		// The plugin logs both values and fails naming them.
		env := refused(t, "fetch", map[string]any{"url": origin.URL + "/hello", "leak": true})
		if env.Code != abi.CodePluginFailed || !strings.Contains(env.Message, "upstream refused key *** and token ***") {
			t.Errorf("leaking call: %+v", env)
		}
	})

	t.Run("files", func(t *testing.T) {
		files := func(t *testing.T, tool string, args map[string]any) tpFiles {
			t.Helper()
			res := call(t, tool, args)
			if res.IsError {
				t.Fatalf("%s %v: %s", tool, args, clitest.Text(res))
			}
			if strings.Contains(clitest.Text(res), marker) {
				t.Errorf("%s %q revealed the outside file: %s", tool, args, clitest.Text(res))
			}
			var a tpFiles
			if err := json.Unmarshal([]byte(clitest.Text(res)), &a); err != nil {
				t.Fatalf("%s answer %q: %v", tool, clitest.Text(res), err)
			}
			return a
		}
		read := func(t *testing.T, p string) tpFiles { return files(t, "files_read", map[string]any{"path": p}) }
		write := func(t *testing.T, p, s string) tpFiles {
			return files(t, "files_write", map[string]any{"path": p, "text": s})
		}
		rawOpen := func(t *testing.T, mount, rel string) tpFiles {
			return files(t, "files_probe", map[string]any{"op": "raw_open", "path": mount, "to": rel})
		}

		for _, m := range []struct{ mount, host string }{{"/data", "ro"}, {"/rw", "rw"}} {
			if a := read(t, m.mount+"/hello.txt"); !a.OK || a.Text != "hello from "+m.host {
				t.Errorf("read %s/hello.txt: %+v", m.mount, a)
			}
			if a := read(t, m.mount+"/link_in"); !a.OK || a.Text != "hello from "+m.host {
				t.Errorf("a link staying inside %s: %+v", m.mount, a)
			}
			if a := rawOpen(t, m.mount, "hello.txt"); !a.OK {
				t.Errorf("raw open inside %s: %+v", m.mount, a)
			}
			// The escape corpus.
			for _, p := range []string{
				m.mount + "/../outside/secret.txt", outsideFile, m.mount + outsideFile,
				m.mount + "/link_out", m.mount + "/link_abs", m.mount + "/hard", m.mount + "/hard\x00", m.mount + "/link_out\x00.txt",
			} {
				if a := read(t, p); a.OK || a.Error == "" {
					t.Errorf("read %q: %+v", p, a)
				}
			}
			for _, rel := range []string{
				"../outside/secret.txt", outsideFile, "link_out", "link_abs", "hard", "hello.txt\x00", "hello.txt\x00../outside/secret.txt",
			} {
				if a := rawOpen(t, m.mount, rel); a.OK || a.Errno == 0 {
					t.Errorf("raw open %q under %s: %+v", rel, m.mount, a)
				}
			}
		}

		// Writing: in the writable mount only, never through a link out.
		if a := write(t, "/rw/new.txt", "written"); !a.OK {
			t.Errorf("write in /rw: %+v", a)
		}
		if b, err := os.ReadFile(filepath.Join(dir, "rw", "new.txt")); err != nil || string(b) != "written" {
			t.Errorf("rw/new.txt: %q, %v", b, err)
		}
		if a := read(t, "/rw/new.txt"); !a.OK || a.Text != "written" {
			t.Errorf("read back: %+v", a)
		}
		for _, p := range []string{"/data/new.txt", "/data/hello.txt"} {
			if a := write(t, p, "changed"); a.OK || a.Error == "" {
				t.Errorf("write %s in the read-only mount: %+v", p, a)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "ro", "new.txt")); err == nil {
			t.Error("ro/new.txt was created")
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "ro", "hello.txt")); string(b) != "hello from ro" {
			t.Errorf("ro/hello.txt is now %q", b)
		}
		for _, p := range []string{"/rw/link_out", "/rw/link_abs", "/rw/hard"} {
			if a := write(t, p, "PWNED"); a.OK {
				t.Errorf("write %s: %+v", p, a)
			}
		}
		if b, _ := os.ReadFile(outsideFile); string(b) != marker {
			t.Errorf("the outside file is now %q", b)
		}
	})

	t.Run("state", func(t *testing.T) {
		type counts struct{ Global, Var int }
		// count may run outside the test's goroutine: it reports, never
		// stops the test.
		count := func(tool string, sleepMS int) (counts, bool) {
			var c counts
			res, err := callErr(tool, map[string]any{"sleep_ms": sleepMS})
			if err != nil || res.IsError {
				t.Errorf("%s: %v %s", tool, err, clitest.Text(res))
				return c, false
			}
			if err := json.Unmarshal([]byte(clitest.Text(res)), &c); err != nil {
				t.Errorf("%s answer %q: %v", tool, clitest.Text(res), err)
				return c, false
			}
			return c, true
		}
		for i := 1; i <= 3; i++ {
			if c, ok := count("count", 0); ok && c != (counts{i, i}) {
				t.Errorf("stateful call %d: %+v", i, c)
			}
		}
		// Overlapping calls of the stateful plugin are serialised on its
		// one instance: 4 and 5, in some order.
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			overlap []int
		)
		for range 2 {
			wg.Go(func() {
				if c, ok := count("count", 200); ok {
					mu.Lock()
					overlap = append(overlap, c.Global)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if slices.Sort(overlap); !slices.Equal(overlap, []int{4, 5}) {
			t.Errorf("overlapping stateful calls counted %v, want 4 and 5", overlap)
		}
		// The pooled copy (max_instances 2) answers overlapping calls;
		// which instance serves a call is not defined, so its counts are
		// only bounded.
		for range 3 {
			wg.Go(func() {
				if c, ok := count("pooled_count", 200); ok && (c.Global < 1 || c.Global > 3 || c.Var != c.Global) {
					t.Errorf("pooled call: %+v", c)
				}
			})
		}
		wg.Wait()
	})

	// Stop the server: its log is complete and board.db settled.
	s.session.Close()
	stderr := s.stderr.String()

	t.Run("decision log", func(t *testing.T) {
		out, errOut, code := runPB(t, dir, env, "audit", "tail", "--json", "--limit", "200", "--data", data)
		if code != 0 {
			t.Fatalf("audit tail: exit %d\n%s%s", code, out, errOut)
		}
		type request struct {
			Method, URL, Error string
			Status             int
			Bytes              int64
		}
		var reqs []request
		tools := map[string]int{}
		sc := bufio.NewScanner(strings.NewReader(out))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var row struct {
				Tool      string          `json:"tool"`
				ErrorCode string          `json:"error_code"`
				HTTP      json.RawMessage `json:"http"`
			}
			if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
				t.Fatalf("row %s: %v", sc.Bytes(), err)
			}
			tools[row.Tool]++
			if len(row.HTTP) == 0 {
				continue
			}
			var rr []request
			if err := json.Unmarshal(row.HTTP, &rr); err != nil {
				t.Fatalf("http of a %s row: %s: %v", row.Tool, row.HTTP, err)
			}
			reqs = append(reqs, rr...)
		}
		if tools["fetch"] != 9 || tools["p2_fetch"] != 2 || tools["files_read"] == 0 || tools["count"] != 5 || tools["pooled_count"] != 3 {
			t.Errorf("rows by tool: %v", tools)
		}
		find := func(method, url string) (request, bool) {
			for _, r := range reqs {
				if r.Method == method && r.URL == url {
					return r, true
				}
			}
			return request{}, false
		}
		for _, w := range []struct {
			method, url string
			status      int
			bytes       int64
			err         string // "": the request succeeded
		}{
			{"GET", origin.URL + "/hello", 200, 5, ""},
			{"POST", origin.URL + "/hello", 200, 5, ""},
			{"GET", origin.URL + "/config", 200, 2, ""},
			{"GET", origin.URL + "/s/***", 200, 2, ""},
			{"GET", other.URL + "/direct", 0, 0, "is not among its allowed hosts"},
			{"GET", origin.URL + "/redirect-out", 0, 0, "(a redirect from " + origin.URL + "/redirect-out)"},
			{"GET", "https://localhost:" + originPort + "/p2-name", 0, 0, "a loopback address"},
			{"GET", origin.URL + "/p2-addr", 0, 0, "a loopback address"},
			{"GET", origin.URL + "/big", 200, 1<<20 + 1, "over its cap of 1048576 bytes"},
			{"GET", origin.URL + "/slow", 200, 5, "did not finish before its deadline"},
		} {
			r, ok := find(w.method, w.url)
			if !ok {
				t.Errorf("no record of %s %s in the decision log; records: %+v", w.method, w.url, reqs)
				continue
			}
			if r.Status != w.status || r.Bytes != w.bytes || w.err == "" && r.Error != "" || !strings.Contains(r.Error, w.err) {
				t.Errorf("record of %s %s: %+v", w.method, w.url, r)
			}
		}
		for _, sec := range secrets {
			if strings.Contains(out+errOut, sec) {
				t.Errorf("audit tail shows a secret")
			}
		}
	})

	t.Run("no secret anywhere", func(t *testing.T) {
		// The plugin's log line reached the host's log, masked.
		if !strings.Contains(stderr, "with key *** and token ***") {
			t.Errorf("the plugin's log line is not in the host's log, masked:\n%s", stderr)
		}
		// The data directory: board.db (and its WAL, if any) holds the
		// rows, masked.
		var db []byte
		filepath.WalkDir(data, func(p string, e fs.DirEntry, err error) error {
			if err == nil && !e.IsDir() && strings.HasPrefix(e.Name(), "board.db") {
				b, _ := os.ReadFile(p)
				db = append(db, b...)
			}
			return nil
		})
		if !bytes.Contains(db, []byte(origin.URL+"/s/***")) {
			t.Errorf("board.db lacks the masked URL: %d bytes read", len(db))
		}
		answers := got.String()
		if !strings.Contains(answers, "upstream refused key ***") {
			t.Error("the answers lack the masked envelope")
		}
		for _, sec := range secrets {
			for where, text := range map[string]string{"the host's log": stderr, "board.db": string(db), "an answer to the client": answers} {
				if strings.Contains(text, sec) {
					t.Errorf("%s shows the secret %q", where, sec)
				}
			}
		}
		if strings.Contains(answers, marker) {
			t.Error("an answer revealed the outside file")
		}
	})
}
