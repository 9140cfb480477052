package e2e

import (
	"database/sql"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/abi/tasks"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/pgtest"
)

// Abuse of plugin sources and of the PostgreSQL store, through the real
// binary. Each test attacks one boundary and asserts by its effect: which
// requests reached a server and what they carried; what a caller was told
// and what the store holds afterwards.

// seenRequest is one request a test server received: what a man in the
// middle of a plain-http hop would read.
type seenRequest struct {
	Path          string
	Authorization string
}

// recorder is an HTTP(S) server that records every request and answers
// it with handle (404 when nil).
type recorder struct {
	*httptest.Server
	mu     sync.Mutex
	seen   []seenRequest
	handle http.HandlerFunc
}

func newRecorder(t *testing.T, tls bool, handle http.HandlerFunc) *recorder {
	r := &recorder{handle: handle}
	h := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.seen = append(r.seen, seenRequest{Path: req.URL.Path, Authorization: req.Header.Get("Authorization")})
		r.mu.Unlock()
		if r.handle == nil {
			http.NotFound(w, req)
			return
		}
		r.handle(w, req)
	})
	if tls {
		r.Server = httptest.NewTLSServer(h)
	} else {
		r.Server = httptest.NewServer(h)
	}
	t.Cleanup(r.Close)
	return r
}

// requests returns the requests received for paths starting with prefix.
func (r *recorder) requests(prefix string) []seenRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []seenRequest
	for _, s := range r.seen {
		if strings.HasPrefix(s.Path, prefix) {
			out = append(out, s)
		}
	}
	return out
}

// TestAbuseSourceRedirects: a registry (or a URL's origin) that redirects
// a fetch must not make the host speak plain http — not one request, so
// neither the registry's bearer token nor the fact of the fetch crosses
// the network in clear — and a redirect to another origin, even over
// https (a registry's blob CDN), must not carry the registry's token.
//
// The registry asks for an anonymous bearer token (served on its own
// realm) and redirects its blob: to a plain-http server, to an https
// "CDN" of another origin on the same host name (another port: Go's
// client compares host names only), and the https URL source redirects to
// plain http. Every module is intact (its digest would hold), so only the
// requests seen tell the leak.
func TestAbuseSourceRedirects(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a plugin and the binary")
	}
	_, wasm := buildtest.Plugins(t, "plugins/echo")
	module, err := os.ReadFile(wasm["echo"])
	if err != nil {
		t.Fatal(err)
	}
	const token = "registry-bearer-token-7734"
	blobDigest := digestOf(module)
	serveModule := func(w http.ResponseWriter, r *http.Request) { w.Write(module) }
	plain := newRecorder(t, false, serveModule)
	cdn := newRecorder(t, true, serveModule)
	config := []byte("{}")
	manifest, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": map[string]any{"mediaType": "application/vnd.wasm.config.v0+json", "digest": digestOf(config), "size": len(config)},
		"layers": []map[string]any{{"mediaType": "application/vnd.wasm.content.layer.v1+wasm", "digest": blobDigest, "size": len(module)}}})
	// blobTo is where the registry sends each repository's blob.
	blobTo := map[string]string{"org/toplain": plain.URL, "org/tocdn": cdn.URL}
	var registry *recorder
	registry = newRecorder(t, true, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/token":
			json.NewEncoder(w).Encode(map[string]string{"token": token})
			return
		case r.URL.Path == "/echo.wasm":
			http.Redirect(w, r, plain.URL+"/echo.wasm", http.StatusFound)
			return
		case r.Header.Get("Authorization") != "Bearer "+token:
			w.Header().Set("WWW-Authenticate", `Bearer realm="`+registry.URL+`/token",service="abuse"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		for repo, to := range blobTo {
			switch r.URL.Path {
			case "/v2/" + repo + "/manifests/1.0":
				w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
				w.Write(manifest)
				return
			case "/v2/" + repo + "/blobs/" + blobDigest:
				http.Redirect(w, r, to+"/blobs/"+blobDigest+"?X-Signature=s3cr3t", http.StatusTemporaryRedirect)
				return
			}
		}
		http.NotFound(w, r)
	})

	dir := t.TempDir()
	caFile := filepath.Join(dir, "test-ca.pem")
	// Every httptest TLS server has the same certificate: one CA file
	// trusts the registry and the CDN.
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: registry.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	env := cleanEnv("SSL_CERT_FILE="+caFile, "PLUGBOARD_DATA="+filepath.Join(dir, "data"))
	cfg := writeJSON(t, filepath.Join(dir, "plugboard.json"), `{}`)
	host := strings.TrimPrefix(registry.URL, "https://")

	t.Run("OCI blob redirected to plain http", func(t *testing.T) {
		out, errOut, code := runPB(t, dir, env, "plugin", "add", "toplain", "oci://"+host+"/org/toplain:1.0", "--config", cfg)
		if seen := plain.requests("/blobs/"); len(seen) != 0 {
			t.Errorf("the plain-http server received %+v: the fetch went out in clear (token %q seen: %v)",
				seen, token, strings.Contains(seen[0].Authorization, token))
		}
		if code == 0 || !strings.Contains(errOut, plain.URL+"/blobs/"+blobDigest) || !strings.Contains(errOut, "not https") ||
			strings.Contains(errOut, "s3cr3t") {
			t.Errorf("plugin add: exit %d, want a refusal naming the http target (without its query)\n%s%s", code, out, errOut)
		}
	})

	t.Run("OCI blob redirected to another https origin", func(t *testing.T) {
		out, errOut, code := runPB(t, dir, env, "plugin", "add", "tocdn", "oci://"+host+"/org/tocdn:1.0", "--config", cfg)
		if code != 0 {
			t.Fatalf("plugin add: exit %d\n%s%s", code, out, errOut)
		}
		seen := cdn.requests("/")
		if len(seen) != 1 {
			t.Fatalf("the CDN received %+v, want the blob's GET once", seen)
		}
		if seen[0].Authorization != "" {
			t.Errorf("the CDN (another origin) received the registry's credentials: Authorization %q", seen[0].Authorization)
		}
	})

	t.Run("https URL redirected to plain http", func(t *testing.T) {
		out, errOut, code := runPB(t, dir, env, "plugin", "add", "web", registry.URL+"/echo.wasm", "--config", cfg)
		if seen := plain.requests("/echo.wasm"); len(seen) != 0 {
			t.Errorf("the plain-http server received %+v: the fetch went out in clear", seen)
		}
		if code == 0 || !strings.Contains(errOut, plain.URL+"/echo.wasm") || !strings.Contains(errOut, "not https") {
			t.Errorf("plugin add: exit %d, want a refusal naming the http target\n%s%s", code, out, errOut)
		}
	})

	// The registry's own requests carried its token, and only after its
	// challenge: the token went nowhere else.
	for _, r := range registry.requests("/token") {
		if r.Authorization != "" {
			t.Errorf("the token realm received credentials %q", r.Authorization)
		}
	}
}

// TestAbuseStoreDiskFull: the PostgreSQL server of a host's store runs out
// of disk while the host serves. Calls that write fail with an envelope
// that is retryable and tells the operator what to do, calls that read
// are still served, the host does not crash, no acknowledged write is
// lost, and once space returns the failed calls, retried unchanged (same
// request_id), succeed exactly once.
//
// The whole cluster — data and WAL — is on a tmpfs of its own, filled by
// a file of the test's as another tenant of the volume would fill it.
func TestAbuseStoreDiskFull(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary, starts PostgreSQL")
	}
	pg := pgtest.StartWith(t, pgtest.Options{DiskBytes: 128 << 20})
	url := pg.NewDatabase(t)
	dir, _ := buildtest.Plugins(t, taskPlugins...)
	repo := newRepo(t, "hello\n")
	data := t.TempDir()
	project := newProject(t, data, url, "full", repo)
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Start a fresh WAL segment, written by the checkpoint, so the WAL has
	// room for every write of the test and the full disk shows as what a
	// data volume's does: an ERROR on extending a table (SQLSTATE 53100).
	// A full WAL is PostgreSQL's PANIC and restart, another test's.
	if _, err := db.Exec(`SELECT pg_switch_wal()`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CHECKPOINT`); err != nil {
		t.Fatal(err)
	}
	h := startHost(t, "--plugins", dir, "--data", data, "--store", url)

	create := func(key string) (tasks.Task, *abi.Envelope) {
		var task tasks.Task
		// A long description fills the tables' pages sooner.
		env := h.call(t, "create_task", map[string]any{"project_id": project.ID, "title": "task " + key,
			"description": strings.Repeat("d", 2000), "request_id": key}, &task)
		return task, env
	}
	acked := map[string]string{} // request_id → the task id its call answered
	for i := range 3 {
		key := fmt.Sprintf("before-%d", i)
		task, env := create(key)
		if env != nil {
			t.Fatalf("%s: %+v", key, env)
		}
		acked[key] = task.TaskID
	}

	if _, err := pg.FillDisk(); err != nil {
		t.Fatal(err)
	}
	// Tables take rows into their pages' free space until one has to
	// grow: keep writing until three calls failed.
	var failed []string
	for i := 0; i < 300 && len(failed) < 3; i++ {
		key := fmt.Sprintf("full-%d", i)
		task, env := create(key)
		if env == nil {
			acked[key] = task.TaskID
			continue
		}
		failed = append(failed, key)
		if env.Code != abi.CodeUnavailable || !env.Retryable || !strings.Contains(env.Message, "out of disk space") || !strings.Contains(env.Message, "operator") {
			t.Errorf("%s on a full disk: %+v\nwant a retryable envelope saying the store is out of disk space and what the operator must do", key, env)
		}
	}
	if len(failed) == 0 {
		t.Fatalf("300 calls on a full disk all succeeded: the disk was not full")
	}
	// Reads are served meanwhile: the host is up and answers from the store.
	var list tasks.TasksOut
	if env := h.call(t, "list_tasks", map[string]any{"project_id": project.ID}, &list); env != nil {
		t.Errorf("list_tasks on a full disk: %+v", env)
	}

	if err := pg.FreeDisk(); err != nil {
		t.Fatal(err)
	}
	// Space is back: the failed calls, retried unchanged, succeed; a new
	// call too.
	for _, key := range append(failed, "after") {
		task, env := create(key)
		if env != nil {
			t.Errorf("%s once space returned: %+v", key, env)
			continue
		}
		acked[key] = task.TaskID
	}

	// By effect, in the store: every acknowledged task is there, once, as
	// its call answered; nothing else was created.
	rows, err := db.Query(`SELECT id, title FROM tasks WHERE project_id = $1`, project.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	stored := map[string]string{} // title → id
	for rows.Next() {
		var id, title string
		if err := rows.Scan(&id, &title); err != nil {
			t.Fatal(err)
		}
		if prev, dup := stored[title]; dup {
			t.Errorf("%q stored twice: %s and %s", title, prev, id)
		}
		stored[title] = id
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for key, id := range acked {
		if got := stored["task "+key]; got != id {
			t.Errorf("acknowledged %s (task %s): the store holds %q", key, id, got)
		}
	}
	if len(stored) != len(acked) {
		t.Errorf("the store holds %d tasks, %d were acknowledged", len(stored), len(acked))
	}
	if strings.Contains(h.stderr.String(), "panic") {
		t.Errorf("the host panicked:\n%s", h.stderr.String())
	}
	t.Logf("%d calls acknowledged on the full disk before %d failed", len(acked)-3-len(failed)-1, len(failed))
}
