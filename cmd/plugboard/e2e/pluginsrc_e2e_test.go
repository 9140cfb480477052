package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plugboard/plugboard/host/plugin"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// Plugins with a source, end to end through the real binary: a
// configuration whose plugins.settings add one plugin from an https URL,
// one from an OCI registry (both served by this test over TLS, trusted
// through SSL_CERT_FILE) and one from a file next to it, `plugin add`,
// `plugin lock`, serve → both plugins' tools served
// (one under its prefix, with a secret that the decision log masks), the
// settings reloaded while serving; then the URL serves other bytes →
// `plugin verify` fails naming them, a host without the cached copy refuses
// that plugin naming the expected and actual sha256 and the fix, and a host
// with it still serves the pinned bytes.

// wasmOrigin serves modules over TLS: GET /echo.wasm, and the OCI
// distribution API for org/rawpdk:1.0.
type wasmOrigin struct {
	*httptest.Server
	mu    sync.Mutex
	file  []byte            // /echo.wasm
	blobs map[string][]byte // by digest
	tags  map[string][]byte // manifests by tag and digest
}

func newWasmOrigin(t *testing.T) *wasmOrigin {
	o := &wasmOrigin{blobs: map[string][]byte{}, tags: map[string][]byte{}}
	o.Server = httptest.NewTLSServer(http.HandlerFunc(o.serve))
	t.Cleanup(o.Close)
	return o
}

func (o *wasmOrigin) serve(w http.ResponseWriter, r *http.Request) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch p := r.URL.Path; {
	case p == "/echo.wasm":
		w.Write(o.file)
	case strings.HasPrefix(p, "/v2/org/rawpdk/manifests/"):
		m, ok := o.tags[strings.TrimPrefix(p, "/v2/org/rawpdk/manifests/")]
		if !ok || !strings.Contains(r.Header.Get("Accept"), "application/vnd.oci.image.manifest.v1+json") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
		w.Write(m)
	case strings.HasPrefix(p, "/v2/org/rawpdk/blobs/"):
		b, ok := o.blobs[strings.TrimPrefix(p, "/v2/org/rawpdk/blobs/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	default:
		http.NotFound(w, r)
	}
}

func digestOf(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// push publishes module as org/rawpdk:tag, an OCI artifact with a config
// blob and the module as its wasm layer.
func (o *wasmOrigin) push(tag string, module []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	config := []byte("{}")
	o.blobs[digestOf(config)], o.blobs[digestOf(module)] = config, module
	m, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": map[string]any{"mediaType": "application/vnd.wasm.config.v0+json", "digest": digestOf(config), "size": len(config)},
		"layers": []map[string]any{{"mediaType": "application/vnd.wasm.content.layer.v1+wasm", "digest": digestOf(module), "size": len(module)}}})
	o.tags[tag], o.tags[digestOf(m)] = m, m
}

func (o *wasmOrigin) setFile(b []byte) {
	o.mu.Lock()
	o.file = b
	o.mu.Unlock()
}

// hostPort is the origin's address, for URLs and OCI references.
func (o *wasmOrigin) hostPort() string { return strings.TrimPrefix(o.URL, "https://") }

// startServe runs `plugboard serve ARGS...` with env over stdio and
// connects a client.
func startServe(t *testing.T, env []string, args ...string) *server {
	t.Helper()
	return dialServe(t, env, nil, args...)
}

func listedTools(t *testing.T, s *server) []string {
	t.Helper()
	return toolNames(t, s.session)
}

func TestPluginSourcesEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	_, wasm := buildtest.Plugins(t, "plugins/echo", "testdata/plugins/rawpdk")
	echo, _ := os.ReadFile(wasm["echo"])
	rawpdk, _ := os.ReadFile(wasm["rawpdk"])

	origin := newWasmOrigin(t)
	origin.setFile(echo)
	origin.push("1.0", rawpdk)
	dir := t.TempDir()
	// The host trusts the test's certificate through SSL_CERT_FILE, as an
	// operator trusts a private registry's CA.
	caFile := filepath.Join(dir, "test-ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: origin.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	const secret = "e2e-secret-token-4711"
	env := cleanEnv("SSL_CERT_FILE="+caFile, "PB_E2E_TOKEN="+secret)
	empty := t.TempDir()
	data := filepath.Join(dir, "data")
	settings := func(webPrefix string) string {
		return `{"data": "data", "plugins": {"dirs": [` + jsonString(empty) + `], "settings": {
  "web": {"source": "https://` + origin.hostPort() + `/echo.wasm", "prefix": "` + webPrefix + `", "config": {"token": "${PB_E2E_TOKEN}"}},
  "oci": {"source": "oci://` + origin.hostPort() + `/org/rawpdk:1.0"},
  "local": {"source": "plugins/echo.wasm"}
}}}`
	}
	cfg := writeJSON(t, filepath.Join(dir, "plugboard.json"), settings("web_"))
	os.MkdirAll(filepath.Join(dir, "plugins"), 0o755)
	// The local source is echo with one more custom section: the same
	// tools, other bytes. With web's very bytes it would put them into a
	// fresh host's source cache (content-addressed by sha256), and that
	// host would rightly serve web's pinned bytes without the network.
	localEcho, err := plugin.SetCustomSection(echo, "plugboard-test-copy", []byte("local"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "plugins", "echo.wasm"), localEcho, 0o644); err != nil {
		t.Fatal(err)
	}
	lockFile := filepath.Join(dir, "plugboard.lock")

	// config check sums it up without the secret.
	out, errOut, code := runPB(t, dir, env, "config", "check", cfg)
	if code != 0 || !strings.Contains(out, "plugins.settings (local: file source; oci: oci source; web: https source, config (1 value, 1 secret), prefix web_)") ||
		strings.Contains(out+errOut, secret) {
		t.Fatalf("config check: exit %d\n%s%s", code, out, errOut)
	}

	// Before the lock: serve refuses both, naming the fix.
	s := startServe(t, env, "--config", cfg, "--data", filepath.Join(dir, "unlocked"))
	if names := listedTools(t, s); len(names) != 0 {
		t.Errorf("unpinned plugins served: %v", names)
	}
	s.session.Close()
	for _, want := range []string{"plugin not loaded: its bytes do not match the lockfile", "plugin=web", "plugin=oci", "plugin=local",
		"expected_sha256=none", "actual_sha256=" + strings.TrimPrefix(digestOf(echo), "sha256:"), "plugboard plugin lock --config"} {
		if !strings.Contains(s.stderr.String(), want) {
			t.Errorf("serve before the lock: stderr lacks %q:\n%s", want, s.stderr.String())
		}
	}

	// plugin add pins one plugin and prints the entry to paste (or says the
	// file has it); plugin lock pins every source and drops entries the
	// file has no source for.
	webURL := "https://" + origin.hostPort() + "/echo.wasm"
	out, errOut, code = runPB(t, dir, env, "plugin", "add", "web", webURL, "--config", cfg)
	if code != 0 || !strings.Contains(out, "pinned web in "+lockFile) || !strings.Contains(out, "plugin echo") ||
		!strings.Contains(out, cfg+" configures it already") {
		t.Fatalf("plugin add web: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = runPB(t, dir, env, "plugin", "add", "extra", webURL, "--config", cfg)
	if code != 0 || !strings.Contains(out, `"extra": {"source":"`+webURL+`"}`) {
		t.Fatalf("plugin add extra: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = runPB(t, dir, env, "plugin", "add", "web", "https://"+origin.hostPort()+"/other.wasm", "--config", cfg)
	if code != 1 || !strings.Contains(errOut, "plugins.settings.web.source is "+webURL) {
		t.Fatalf("plugin add web with another source: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = runPB(t, dir, env, "plugin", "lock", "--config", cfg)
	if code != 0 || !strings.Contains(out, "unchanged web") || !strings.Contains(out, "pinned    oci") || !strings.Contains(out, "pinned    local") ||
		!strings.Contains(out, "removed   extra") {
		t.Fatalf("plugin lock: exit %d\n%s%s", code, out, errOut)
	}
	var lock struct {
		Version int `json:"version"`
		Plugins map[string]struct {
			Source string `json:"source"`
			SHA256 string `json:"sha256"`
			Size   int64  `json:"size"`
		} `json:"plugins"`
	}
	b, _ := os.ReadFile(lockFile)
	if err := json.Unmarshal(b, &lock); err != nil || lock.Version != 1 ||
		"sha256:"+lock.Plugins["web"].SHA256 != digestOf(echo) || "sha256:"+lock.Plugins["oci"].SHA256 != digestOf(rawpdk) ||
		lock.Plugins["oci"].Source != "oci://"+origin.hostPort()+"/org/rawpdk:1.0" || lock.Plugins["web"].Size != int64(len(echo)) ||
		lock.Plugins["local"].Source != "plugins/echo.wasm" {
		t.Fatalf("lockfile %s: %v\nlock output:\n%s", b, err, out)
	}
	if _, err := os.Stat(filepath.Join(data, "sources", lock.Plugins["web"].SHA256+".wasm")); err != nil {
		t.Errorf("plugin lock did not cache the module: %v", err)
	}
	out, errOut, code = runPB(t, dir, env, "plugin", "verify", "--config", cfg)
	if code != 0 || !strings.Contains(out, "every plugin matches (3)") {
		t.Fatalf("plugin verify: exit %d\n%s%s", code, out, errOut)
	}

	// serve: both plugins' tools, web's under its prefix; a call routes to
	// the plugin's own tool name.
	s = startServe(t, env, "--config", cfg, "--watch", "100ms")
	if names := listedTools(t, s); !slices.Equal(names, []string{"echo", "raw_upper", "web_echo"}) {
		t.Fatalf("tools %v", names)
	}
	ctx := context.Background()
	res := s.call(t, ctx, "web_echo", map[string]any{"text": "the token is " + secret})
	if res.IsError || !strings.Contains(clitest.Text(res), secret) {
		t.Fatalf("web_echo: %s", clitest.Text(res))
	}
	if res := s.call(t, ctx, "raw_upper", map[string]any{"text": "oci"}); res.IsError || !strings.Contains(clitest.Text(res), "OCI") {
		t.Fatalf("raw_upper: %s", clitest.Text(res))
	}

	// The settings reload: a new prefix is served without a restart; a
	// broken file is logged and the settings in force are kept.
	time.Sleep(20 * time.Millisecond) // a later modification time
	writeJSON(t, cfg, settings("w2_"))
	waitTools(t, s, []string{"echo", "raw_upper", "w2_echo"})
	writeJSON(t, cfg, `{"plugins": {"settings": {"web": {"prefx": "x_"}}}}`)
	waitLog(t, s, `configuration file not reloaded; the plugin settings in force are kept`)
	if names := listedTools(t, s); !slices.Equal(names, []string{"echo", "raw_upper", "w2_echo"}) {
		t.Errorf("tools after a broken file: %v", names)
	}
	writeJSON(t, cfg, settings("web_"))
	waitTools(t, s, []string{"echo", "raw_upper", "web_echo"})
	s.session.Close()
	if strings.Contains(s.stderr.String(), secret) {
		t.Errorf("the secret is in the host's log:\n%s", s.stderr.String())
	}

	// The decision log: the call's row is under the served name, and the
	// plugin's secret is masked in its input and result.
	out, errOut, code = runPB(t, dir, env, "audit", "tail", "--json", "--tool", "web_echo", "--data", data)
	if code != 0 || !strings.Contains(out, `"tool":"web_echo"`) || strings.Contains(out, secret) || !strings.Contains(out, "the token is ***") {
		t.Fatalf("audit tail: exit %d\n%s%s", code, out, errOut)
	}

	// The URL serves other bytes.
	origin.setFile(rawpdk)
	out, errOut, code = runPB(t, dir, env, "plugin", "verify", "--config", cfg)
	wantMismatch := "MISMATCH  web https://" + origin.hostPort() + "/echo.wasm: expected sha256 " + strings.TrimPrefix(digestOf(echo), "sha256:") +
		", actual sha256 " + strings.TrimPrefix(digestOf(rawpdk), "sha256:")
	if code != 1 || !strings.Contains(out, wantMismatch) || !strings.Contains(out, "ok        oci") ||
		!strings.Contains(errOut, "1 of 3 plugins do not match") || !strings.Contains(errOut, ": web;") {
		t.Fatalf("plugin verify after the change: exit %d\nstdout:\n%s\nstderr:\n%s\nwant %q", code, out, errOut, wantMismatch)
	}

	// A host without the cached copy refuses web, naming both sha256 and
	// the command that fixes it; oci is still served.
	s = startServe(t, env, "--config", cfg, "--data", filepath.Join(dir, "fresh"))
	if names := listedTools(t, s); !slices.Equal(names, []string{"echo", "raw_upper"}) {
		t.Errorf("fresh host serves %v, want echo and raw_upper", names)
	}
	s.session.Close()
	refusal := ""
	for _, line := range strings.Split(s.stderr.String(), "\n") {
		if strings.Contains(line, "plugin=web") && strings.Contains(line, "do not match the lockfile") {
			refusal = line
		}
	}
	for _, want := range []string{"expected_sha256=" + lock.Plugins["web"].SHA256, "actual_sha256=" + strings.TrimPrefix(digestOf(rawpdk), "sha256:"),
		"plugboard plugin lock --config " + cfg + " web", "level=ERROR"} {
		if !strings.Contains(refusal, want) {
			t.Errorf("refusal line lacks %q:\n%s\nstderr:\n%s", want, refusal, s.stderr.String())
		}
	}
	if n := strings.Count(s.stderr.String(), "plugin=web"); n != 1 {
		t.Errorf("web's refusal logged %d times, want once:\n%s", n, s.stderr.String())
	}

	// A host with the cached copy serves the pinned bytes, network or not.
	origin.Close()
	s = startServe(t, env, "--config", cfg)
	if names := listedTools(t, s); !slices.Equal(names, []string{"echo", "raw_upper", "web_echo"}) {
		t.Errorf("host with the cache serves %v", names)
	}
}

func waitTools(t *testing.T, s *server, want []string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		names := listedTools(t, s)
		if slices.Equal(names, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("tools %v, want %v", names, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func waitLog(t *testing.T, s *server, want string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(s.stderr.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the log never said %q:\n%s", want, s.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
