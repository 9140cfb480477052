package pluginsrc

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestParse(t *testing.T) {
	base := t.TempDir()
	for _, c := range []struct {
		in   string
		kind Kind
		want string
	}{
		{"plugins/x.wasm", File, filepath.Join(base, "plugins/x.wasm")},
		{"/abs/x.wasm", File, "/abs/x.wasm"},
		{"https://example.com/x.wasm#frag", HTTPS, "https://example.com/x.wasm"},
		{"oci://ghcr.io/org/echo:1.0", OCI, "oci://ghcr.io/org/echo:1.0"},
		{"oci://localhost:5000/a/b/c@sha256:" + strings.Repeat("ab", 32), OCI, "oci://localhost:5000/a/b/c@sha256:" + strings.Repeat("ab", 32)},
		{"oci://docker.io/echo:2", OCI, "oci://docker.io/library/echo:2"},
	} {
		src, err := Parse(c.in, base)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.in, err)
			continue
		}
		if src.Kind != c.kind || src.String() != c.want {
			t.Errorf("Parse(%q) = %v %q, want %v %q", c.in, src.Kind, src.String(), c.kind, c.want)
		}
	}
	for in, want := range map[string]string{
		"":                                "is empty",
		"http://example.com/x.wasm":       "plain http",
		"ftp://example.com/x.wasm":        "unknown scheme",
		"https://user:pw@example.com/x":   "credentials",
		"oci://ghcr.io/org/echo":          "no :TAG",
		"oci://ghcr.io":                   "no repository",
		"oci://ghcr.io/Org/echo:1":        "repository",
		"oci://ghcr.io/org/echo@sha256:1": "digest",
		"https:///x.wasm":                 "host",
	} {
		_, err := Parse(in, base)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an error saying %q", in, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "pw") {
			t.Errorf("Parse(%q): the error shows the password: %v", in, err)
		}
	}
}

// registryServer is an OCI distribution registry in a test: manifests and
// blobs of one repository, behind anonymous bearer tokens when auth is
// set.
type registryServer struct {
	*httptest.Server
	mu        sync.Mutex
	repo      string
	manifests map[string][]byte // by tag and by digest
	blobs     map[string][]byte // by digest
	auth      bool
	requests  []string
}

func newRegistry(t *testing.T, repo string, auth bool) *registryServer {
	r := &registryServer{repo: repo, manifests: map[string][]byte{}, blobs: map[string][]byte{}, auth: auth}
	r.Server = httptest.NewTLSServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

func (r *registryServer) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests = append(r.requests, req.URL.Path)
	if req.URL.Path == "/token" {
		if req.URL.Query().Get("scope") != "repository:"+r.repo+":pull" || req.URL.Query().Get("service") != "test-registry" {
			http.Error(w, "bad scope "+req.URL.RawQuery, http.StatusBadRequest)
			return
		}
		json.NewEncoder(w).Encode(map[string]string{"token": "anon-token"})
		return
	}
	if r.auth && req.Header.Get("Authorization") != "Bearer anon-token" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="`+r.URL+`/token",service="test-registry",scope="repository:`+r.repo+`:pull"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	prefix := "/v2/" + r.repo + "/"
	rest, ok := strings.CutPrefix(req.URL.Path, prefix)
	if !ok {
		http.NotFound(w, req)
		return
	}
	switch kind, ref, _ := strings.Cut(rest, "/"); kind {
	case "manifests":
		if !strings.Contains(req.Header.Get("Accept"), mediaOCIManifest) {
			http.Error(w, "no OCI Accept", http.StatusNotAcceptable)
			return
		}
		b, ok := r.manifests[ref]
		if !ok {
			http.NotFound(w, req)
			return
		}
		w.Header().Set("Content-Type", mediaOCIManifest)
		w.Write(b)
	case "blobs":
		b, ok := r.blobs[ref]
		if !ok {
			http.NotFound(w, req)
			return
		}
		w.Write(b)
	default:
		http.NotFound(w, req)
	}
}

// push stores module as the wasm layer of tag (with a config blob and, if
// extra, a second layer of another type) and returns the manifest's
// digest.
func (r *registryServer) push(tag string, module []byte, layerType string, extra bool) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	config := []byte("{}")
	r.blobs["sha256:"+Sum(config)] = config
	r.blobs["sha256:"+Sum(module)] = module
	layers := []descriptor{{MediaType: layerType, Digest: "sha256:" + Sum(module), Size: int64(len(module))}}
	if extra {
		readme := []byte("# readme")
		r.blobs["sha256:"+Sum(readme)] = readme
		layers = append([]descriptor{{MediaType: "text/markdown", Digest: "sha256:" + Sum(readme), Size: int64(len(readme))}}, layers...)
	}
	m, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": mediaOCIManifest,
		"config": descriptor{MediaType: "application/vnd.wasm.config.v0+json", Digest: "sha256:" + Sum(config), Size: 2},
		"layers": layers})
	digest := "sha256:" + Sum(m)
	r.manifests[tag] = m
	r.manifests[digest] = m
	return digest
}

func (r *registryServer) ref(tagOrDigest string) Source {
	host := strings.TrimPrefix(r.URL, "https://")
	sep := ":"
	if strings.HasPrefix(tagOrDigest, "sha256:") {
		sep = "@"
	}
	src, err := Parse("oci://"+host+"/"+r.repo+sep+tagOrDigest, "")
	if err != nil {
		panic(err)
	}
	return src
}

func TestFetchOCI(t *testing.T) {
	module := []byte("\x00asm\x01\x00\x00\x00 module one")
	for _, c := range []struct {
		name      string
		auth      bool
		layerType string
		extra     bool
	}{
		{"anonymous, wasm layer among others", false, WasmLayerTypes[0], true},
		{"bearer token, module layer type", true, WasmLayerTypes[1], true},
		{"single layer of another type", false, "application/octet-stream", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			reg := newRegistry(t, "org/echo", c.auth)
			digest := reg.push("1.0", module, c.layerType, c.extra)
			f := &Fetcher{Client: reg.Client()}
			for _, ref := range []string{"1.0", digest} {
				b, err := f.Fetch(context.Background(), reg.ref(ref))
				if err != nil {
					t.Fatalf("%s: %v (requests %v)", ref, err, reg.requests)
				}
				if string(b) != string(module) {
					t.Fatalf("%s: got %q", ref, b)
				}
			}
		})
	}

	t.Run("refusals", func(t *testing.T) {
		reg := newRegistry(t, "org/echo", false)
		reg.push("1.0", module, WasmLayerTypes[0], false)
		f := &Fetcher{Client: reg.Client()}
		// A blob whose bytes are not its digest's.
		reg.mu.Lock()
		reg.blobs["sha256:"+Sum(module)] = []byte("tampered")
		reg.mu.Unlock()
		if _, err := f.Fetch(context.Background(), reg.ref("1.0")); err == nil || !strings.Contains(err.Error(), "not the sha256:") {
			t.Errorf("tampered layer: %v", err)
		}
		// A digest reference whose manifest is another.
		other := "sha256:" + strings.Repeat("0", 64)
		reg.mu.Lock()
		reg.manifests[other] = reg.manifests["1.0"]
		reg.mu.Unlock()
		if _, err := f.Fetch(context.Background(), reg.ref(other)); err == nil || !strings.Contains(err.Error(), "manifest") {
			t.Errorf("manifest digest: %v", err)
		}
		if _, err := f.Fetch(context.Background(), reg.ref("2.0")); err == nil || !strings.Contains(err.Error(), "404") {
			t.Errorf("unknown tag: %v", err)
		}
		// Too big.
		small := &Fetcher{Client: reg.Client(), MaxBytes: 4}
		if _, err := small.Fetch(context.Background(), reg.ref("1.0")); err == nil || !strings.Contains(err.Error(), "cap") {
			t.Errorf("size cap: %v", err)
		}
		// Untrusted certificate: the default client refuses the test CA.
		if _, err := new(Fetcher).Fetch(context.Background(), reg.ref("1.0")); err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Errorf("untrusted certificate: %v", err)
		}
	})
}

func TestFetchHTTPS(t *testing.T) {
	var body = []byte("module bytes")
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/echo.wasm":
			w.Write(body)
		case "/moved":
			http.Redirect(w, r, "/echo.wasm", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	f := &Fetcher{Client: srv.Client()}
	for _, p := range []string{"/echo.wasm", "/moved"} {
		src, _ := Parse(srv.URL+p, "")
		b, err := f.Fetch(context.Background(), src)
		if err != nil || string(b) != string(body) {
			t.Errorf("%s: %q, %v", p, b, err)
		}
	}
	src, _ := Parse(srv.URL+"/missing.wasm", "")
	if _, err := f.Fetch(context.Background(), src); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("missing: %v", err)
	}
	src, _ = Parse(srv.URL+"/echo.wasm", "")
	if _, err := (&Fetcher{Client: srv.Client(), MaxBytes: 3}).Fetch(context.Background(), src); err == nil || !strings.Contains(err.Error(), "cap") {
		t.Errorf("size cap: %v", err)
	}
}

func TestLockAndResolve(t *testing.T) {
	dir := t.TempDir()
	lockFile := filepath.Join(dir, LockFileName)
	l, err := ReadLock(lockFile)
	if err != nil || len(l.Plugins) != 0 {
		t.Fatalf("missing lockfile: %v %v", l, err)
	}
	body := []byte("version one")
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) }))
	defer srv.Close()
	f := &Fetcher{Client: srv.Client()}
	src, _ := Parse(srv.URL+"/p.wasm", "")
	cache := CacheIn(filepath.Join(dir, "data"))
	ctx := context.Background()

	// Not pinned: refused, naming the actual sha256 and the fix.
	_, err = Resolve(ctx, f, cache, "p", src, l, lockFile, "plugboard plugin lock p")
	var mm *MismatchError
	if !errors.As(err, &mm) || mm.Actual != Sum(body) || mm.Expected != "" {
		t.Fatalf("unpinned: %v", err)
	}
	for _, want := range []string{"plugin p", "expected sha256 none", "actual sha256 " + Sum(body), "plugboard plugin lock p"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("unpinned error %q lacks %q", err, want)
		}
	}

	// Pinned: resolved into the cache; written and read back.
	l.Plugins["p"] = Entry{Source: src.String(), SHA256: Sum(body), Size: int64(len(body))}
	if err := l.Write(lockFile); err != nil {
		t.Fatal(err)
	}
	if l, err = ReadLock(lockFile); err != nil || l.Plugins["p"].SHA256 != Sum(body) {
		t.Fatalf("read back: %v %v", l, err)
	}
	path, err := Resolve(ctx, f, cache, "p", src, l, lockFile, "")
	if err != nil || path != cache.Path(Sum(body)) {
		t.Fatalf("pinned: %q %v", path, err)
	}

	// The source changes: the cached copy still serves what was pinned,
	// without the network; a fresh cache refuses the new bytes.
	body = []byte("version two")
	srv.Close()
	if path, err = Resolve(ctx, f, cache, "p", src, l, lockFile, ""); err != nil || path != cache.Path(Sum([]byte("version one"))) {
		t.Fatalf("cached, server gone: %q %v", path, err)
	}
	srv2 := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) }))
	defer srv2.Close()
	src2, _ := Parse(srv2.URL+"/p.wasm", "")
	l.Plugins["p"] = Entry{Source: src2.String(), SHA256: Sum([]byte("version one"))}
	_, err = Resolve(ctx, &Fetcher{Client: srv2.Client()}, CacheIn(t.TempDir()), "p", src2, l, lockFile, "")
	if !errors.As(err, &mm) || mm.Expected != Sum([]byte("version one")) || mm.Actual != Sum(body) {
		t.Fatalf("changed: %v", err)
	}

	// A local file is read every time: a rebuilt file is refused even with
	// the old bytes cached.
	file := filepath.Join(dir, "local.wasm")
	os.WriteFile(file, []byte("local one"), 0o644)
	fsrc, _ := Parse(file, "")
	// Recorded relative to the lockfile's directory: the checkout can move.
	if got := Recorded(fsrc, lockFile); got != "local.wasm" {
		t.Errorf("Recorded(%s) = %q, want local.wasm", fsrc, got)
	}
	if got := Recorded(Source{Kind: File, Path: "/elsewhere/x.wasm"}, lockFile); got != "/elsewhere/x.wasm" {
		t.Errorf("Recorded outside the tree = %q", got)
	}
	l.Plugins["local"] = Entry{Source: "local.wasm", SHA256: Sum([]byte("local one"))}
	if _, err := Resolve(ctx, nil, cache, "local", fsrc, l, lockFile, ""); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(file, []byte("local two"), 0o644)
	if _, err := Resolve(ctx, nil, cache, "local", fsrc, l, lockFile, ""); !errors.As(err, &mm) {
		t.Fatalf("rebuilt local file: %v", err)
	}

	// A lock entry for another source does not pin this one.
	l.Plugins["local"] = Entry{Source: "/elsewhere.wasm", SHA256: Sum([]byte("local two"))}
	if _, err := Resolve(ctx, nil, cache, "local", fsrc, l, lockFile, ""); !errors.As(err, &mm) || !strings.Contains(err.Error(), "/elsewhere.wasm") {
		t.Fatalf("other source: %v", err)
	}

	// A malformed lockfile is an error naming it.
	os.WriteFile(lockFile, []byte(`{"version":1,"plugins":{"x":{"source":"s","sha256":"nope"}}}`), 0o644)
	if _, err := ReadLock(lockFile); err == nil || !strings.Contains(err.Error(), "plugins.x.sha256") {
		t.Errorf("bad lockfile: %v", err)
	}
}

func TestParseChallenge(t *testing.T) {
	got := parseChallenge(`realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull"`)
	if got["realm"] != "https://auth.example/token" || got["service"] != "registry.example" || got["scope"] != "repository:a/b:pull" {
		t.Errorf("%v", got)
	}
}

// TestFetchRedirects: redirects are checked before they are followed:
// never to plain http (no request reaches it), credentials only to the
// first request's origin (a same-origin redirect keeps the registry's
// token, another port of the same host does not get it), and a chain is
// bounded.
func TestFetchRedirects(t *testing.T) {
	module := []byte("\x00asm\x01\x00\x00\x00 redirected")
	var mu sync.Mutex
	seen := map[string][]string{} // server → Authorization of each request
	record := func(name string, r *http.Request) {
		mu.Lock()
		seen[name] = append(seen[name], r.Header.Get("Authorization"))
		mu.Unlock()
	}
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		record("plain", r)
		w.Write(module)
	}))
	defer plain.Close()
	other := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		record("other", r)
		w.Write(module)
	}))
	defer other.Close()

	reg := newRegistry(t, "org/echo", true)
	reg.push("1.0", module, WasmLayerTypes[0], false)
	blob := "/v2/org/echo/blobs/sha256:" + Sum(module)
	var target string // where the registry sends the blob; "" serves it
	inner := reg.Config.Handler
	reg.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		to := target
		mu.Unlock()
		switch {
		case r.URL.Path == blob && to != "" && r.Header.Get("Authorization") != "":
			http.Redirect(w, r, to, http.StatusTemporaryRedirect)
		case r.URL.Path == "/same/blob":
			record("same", r)
			r.URL.Path = blob
			inner.ServeHTTP(w, r)
		case r.URL.Path == "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		default:
			inner.ServeHTTP(w, r)
		}
	})
	// The registry's and the other server's certificates are the same
	// (httptest's): one client trusts both.
	f := &Fetcher{Client: reg.Client()}
	fetch := func(to string) ([]byte, error) {
		mu.Lock()
		target = to
		mu.Unlock()
		return f.Fetch(context.Background(), reg.ref("1.0"))
	}

	if _, err := fetch(plain.URL + "/blob?sig=s3cr3t"); err == nil || !strings.Contains(err.Error(), "redirected to "+plain.URL+"/blob, which is not https") ||
		strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("to plain http: %v", err)
	}
	if b, err := fetch(other.URL + "/blob"); err != nil || string(b) != string(module) {
		t.Errorf("to another origin: %q, %v", b, err)
	}
	if b, err := fetch(reg.URL + "/same/blob"); err != nil || string(b) != string(module) {
		t.Errorf("to the same origin: %q, %v", b, err)
	}
	mu.Lock()
	if len(seen["plain"]) != 0 {
		t.Errorf("plain http received %d requests", len(seen["plain"]))
	}
	if len(seen["other"]) != 1 || seen["other"][0] != "" {
		t.Errorf("another origin received Authorization %q, want one request without", seen["other"])
	}
	if len(seen["same"]) != 1 || seen["same"][0] != "Bearer anon-token" {
		t.Errorf("the same origin received Authorization %q, want the token", seen["same"])
	}
	mu.Unlock()

	src, _ := Parse(reg.URL+"/loop", "")
	if _, err := f.Fetch(context.Background(), src); err == nil || !strings.Contains(err.Error(), "10th redirect") {
		t.Errorf("redirect loop: %v", err)
	}
}

func TestOrigin(t *testing.T) {
	for in, want := range map[string]string{
		"https://Registry.example:443/v2/": "https://registry.example:443",
		"https://registry.example/v2/":     "https://registry.example:443",
		"https://registry.example:8443/x":  "https://registry.example:8443",
		"http://registry.example/x":        "http://registry.example:80",
		"https://[::1]/x":                  "https://[::1]:443",
	} {
		u, _ := url.Parse(in)
		if got := origin(u); got != want {
			t.Errorf("origin(%s) = %s, want %s", in, got, want)
		}
	}
}
