package runtime_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/host/internal/metrics"
	"github.com/plugboard/plugboard/host/internal/runtime"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// An engine with metrics counts its compilations (whether the machine code
// came from the disk cache) and each plugin HTTP request by host and
// outcome; a plugin reports its pool.
func TestEngineMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins")
	}
	_, wasm := buildtest.Plugins(t, "testdata/plugins/fetch")
	code, err := os.ReadFile(wasm["fetch"])
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	m := metrics.New()
	e, err := runtime.New(ctx, runtime.Config{CacheDir: t.TempDir(), CacheKey: testKey, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/ok" {
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	opts := runtime.PluginOptions{HTTP: &runtime.Egress{AllowedHosts: []string{hostPort(t, srv.URL)}, AllowPrivate: true}}
	var p *runtime.Plugin
	for range 2 { // the first compiles, the second loads the machine code from the cache
		if p, err = e.CompileWith(ctx, "fetch", code, opts); err != nil {
			t.Fatal(err)
		}
		defer p.Close(ctx)
	}
	for _, path := range []string{"/ok", "/ok", "/missing"} {
		if _, err := fetch(t, ctx, p, args("url", srv.URL+path), runtime.CallOptions{}); err != nil {
			t.Fatalf("fetch %s: %v", path, err)
		}
	}
	if idle, busy := p.Instances(); idle != 1 || busy != 0 {
		t.Errorf("Instances() = %d idle, %d busy after the calls; want 1, 0", idle, busy)
	}
	// A refused request ends its call (the instance is discarded).
	if _, err := fetch(t, ctx, p, args("url", "http://denied.example/x"), runtime.CallOptions{}); err == nil || !strings.Contains(err.Error(), "permission_denied") {
		t.Fatalf("fetch of a host not allowed: %v", err)
	}

	got := map[string]float64{}
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		for _, s := range f.GetMetric() {
			key := f.GetName()
			for _, l := range s.GetLabel() {
				key += " " + l.GetName() + "=" + l.GetValue()
			}
			got[key] = s.GetCounter().GetValue()
		}
	}
	for key, want := range map[string]float64{
		"plugboard_plugin_compiles_total cache=miss plugin=fetch result=ok":  1,
		"plugboard_plugin_compiles_total cache=hit plugin=fetch result=ok":   1,
		"plugboard_egress_requests_total host=127.0.0.1 outcome=2xx":         2,
		"plugboard_egress_requests_total host=127.0.0.1 outcome=4xx":         1,
		"plugboard_egress_requests_total host=denied.example outcome=denied": 1,
	} {
		if got[key] != want {
			t.Errorf("%s = %v, want %v", key, got[key], want)
		}
	}
}
