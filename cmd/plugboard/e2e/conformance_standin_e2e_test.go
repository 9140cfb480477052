package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// A plugin that calls a fixed web API is judged by the kit against a
// test server standing in for it (--http-stand-in HOST=URL), through the
// real binary: the plugin runs with the settings serve would give it
// (--config: its API key, and allowed_hosts naming the API's host), its
// requests reach the stand-in as the plugin addressed them, and the
// stand-in widens nothing — without allowed_hosts the request is refused
// and never sent, and the plugin needs configuration: the setting that
// would allow the host.
func TestConformanceHTTPStandIn(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	_, wasm := foreignCorpus(t, "testdata/plugins/weather")
	var mu sync.Mutex
	var seen []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, fmt.Sprintf("%s %s%s key=%s", r.Method, r.Host, r.URL.Path, r.Header.Get("X-Api-Key")))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"city": %q, "tomorrow": "sunny"}`, r.URL.Query().Get("city"))
	}))
	defer api.Close()
	requests := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
	dir := t.TempDir()
	env := cleanEnv("WEATHER_KEY=k-123")
	allowed := writeJSON(t, filepath.Join(dir, "allowed.json"), `{"plugins": {"settings": {"weather": {
		"allowed_hosts": ["api.weather.example"], "config": {"API_KEY": "${WEATHER_KEY}"}}}}}`)
	standIn := "api.weather.example=" + api.URL

	rep, code, stderr := kitRun(t, env, "--config", allowed, "--http-stand-in", standIn, wasm["weather"])
	if code != 0 || len(rep.Plugins) != 1 || !strings.HasPrefix(rep.Plugins[0].Verdict.Kind, "works") {
		t.Fatalf("weather against its stand-in: exit %d, %+v\n%s", code, rep.Plugins, stderr)
	}
	got := requests()
	if len(got) == 0 {
		t.Fatal("the stand-in saw no request")
	}
	for _, r := range got {
		if r != "GET api.weather.example/v1/forecast key=k-123" {
			t.Errorf("the stand-in saw %q, want the request as the plugin made it to api.weather.example with the operator's key", r)
		}
	}

	// The plugin's allowed_hosts still decide: a stand-in for a host it may
	// not reach sends nothing, and the kit reports the refusal.
	closed := writeJSON(t, filepath.Join(dir, "closed.json"), `{"plugins": {"settings": {"weather": {"config": {"API_KEY": "${WEATHER_KEY}"}}}}}`)
	before := len(requests())
	rep, code, _ = kitRun(t, env, "--config", closed, "--http-stand-in", standIn, wasm["weather"])
	if n := len(requests()); n != before {
		t.Errorf("the stand-in saw %d requests for a plugin not allowed to reach api.weather.example", n-before)
	}
	p := rep.Plugins[0]
	if code != 3 || p.Verdict.Kind != "needs_configuration" || !slices.Equal(p.Verdict.Settings, []string{"plugins.settings.weather.allowed_hosts"}) {
		t.Errorf("without allowed_hosts: exit %d, verdict %+v; want 3, needs configuration naming plugins.settings.weather.allowed_hosts", code, p.Verdict)
	}

	// A malformed stand-in is the run's misuse.
	if _, _, code := runPB(t, dir, env, "conformance", "--http-stand-in", "api.weather.example=ftp://x", wasm["weather"]); code != 2 {
		t.Errorf("an ftp stand-in: exit %d, want 2", code)
	}
}
