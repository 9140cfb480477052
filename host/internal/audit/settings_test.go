package audit_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/audit"
	"github.com/plugboard/plugboard/host/internal/dispatch"
	"github.com/plugboard/plugboard/host/internal/registry"
	"github.com/plugboard/plugboard/host/internal/runtime"
	"github.com/plugboard/plugboard/host/internal/store"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// TestPluginSettingsInTheDecisionLog: a plugin's settings seen through the
// dispatcher and the decision log — a prefixed tool is called by its
// served name and routed to the plugin's own, the row is under the served
// name; the plugin's secrets are masked in the row's input, result and
// error; each HTTP request of a call (allowed or refused) is in the row's
// http array; and the plugin's call_timeout bounds its calls.
func TestPluginSettingsInTheDecisionLog(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins")
	}
	const echoSecret, apiKey = "echo-secret-5150", "api-key-8086"
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("key was " + r.Header.Get("X-Api-Key")))
	}))
	defer upstream.Close()
	upHost := strings.TrimPrefix(upstream.URL, "http://")

	ctx := context.Background()
	dir, _ := buildtest.Plugins(t, "plugins/echo", "testdata/plugins/fetch", "testdata/plugins/sleepy")
	engine, err := runtime.New(ctx, runtime.Config{CacheDir: compiledCache, CacheKey: testCacheKey})
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close(ctx)
	reg, err := registry.Load(ctx, registry.Options{Dirs: []string{dir}, DataDir: t.TempDir(), Engine: engine,
		Settings: map[string]registry.Settings{
			"echo": {Prefix: "my_", Options: runtime.PluginOptions{Config: map[string]string{"token": echoSecret}, Secrets: []string{echoSecret}}},
			"fetch": {Options: runtime.PluginOptions{Config: map[string]string{"api_key": apiKey}, Secrets: []string{apiKey},
				HTTP: &runtime.Egress{AllowedHosts: []string{upHost}, AllowPrivate: true}}},
			"sleepy": {CallTimeout: 300 * time.Millisecond},
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close(ctx)
	st := openStore(t)
	log := audit.New(audit.Static(st), nil)
	defer log.Close()
	d := dispatch.New(reg, dispatch.Options{Auditor: log, Retry: dispatch.Retry{Max: -1}})
	call := func(tool, args string) *dispatch.Result {
		return d.Call(ctx, dispatch.Request{Tool: tool, Arguments: json.RawMessage(args), Caller: &abi.Caller{ID: "op", Role: "SUPERVISOR"}})
	}

	if res := call("my_echo", `{"text":"say `+echoSecret+`"}`); res.IsError() || !strings.Contains(string(res.Structured), echoSecret) {
		t.Fatalf("my_echo: %+v", res)
	}
	if res := call("echo", `{"text":"x"}`); res.Envelope == nil || res.Envelope.Code != abi.CodeToolNotFound {
		t.Errorf("echo under its own name: %+v", res)
	}
	if res := call("fetch", `{"url":"`+upstream.URL+`/s/`+apiKey+`"}`); res.IsError() {
		t.Fatalf("fetch: %s", res.Structured)
	}
	if res := call("fetch", `{"url":"http://203.0.113.9/x"}`); res.Envelope == nil || res.Envelope.Code != abi.CodePermissionDenied {
		t.Fatalf("fetch of a host not allowed: %+v", res)
	}
	if res := call("fetch", `{"url":"`+upstream.URL+`/","leak":true}`); !res.IsError() {
		t.Fatalf("fetch with leak answered: %s", res.Structured)
	}
	res := call("sleep", `{"ms":3000}`)
	if res.Envelope == nil || res.Envelope.Code != abi.CodePluginTimeout || res.Envelope.Details["timeout_ms"] != int64(300) {
		t.Fatalf("sleep beyond sleepy's call_timeout: %+v", res.Envelope)
	}
	if err := log.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	rows, err := st.ListDecisions(ctx, store.DecisionFilter{Limit: 20})
	if err != nil {
		t.Fatal(err)
	}
	byTool := map[string][]store.Decision{}
	for _, r := range rows {
		b, _ := json.Marshal(r)
		for _, secret := range []string{echoSecret, apiKey} {
			if strings.Contains(string(b), secret) {
				t.Errorf("row of %s shows a secret: %s", r.Tool, b)
			}
		}
		byTool[r.Tool] = append([]store.Decision{r}, byTool[r.Tool]...) // oldest first
	}
	if e := byTool["my_echo"]; len(e) != 1 || !strings.Contains(string(e[0].Input), `say ***`) || !strings.Contains(string(e[0].Result), `say ***`) {
		t.Errorf("my_echo rows: %+v", e)
	}
	f := byTool["fetch"]
	if len(f) != 3 {
		t.Fatalf("fetch rows: %d", len(f))
	}
	var reqs [][]audit.HTTPRequest
	for _, r := range f[:2] {
		var rr []audit.HTTPRequest
		if err := json.Unmarshal(r.HTTP, &rr); err != nil {
			t.Fatalf("http of %s: %s: %v", r.ID, r.HTTP, err)
		}
		reqs = append(reqs, rr)
	}
	if len(reqs[0]) != 1 || reqs[0][0].URL != upstream.URL+"/s/***" || reqs[0][0].Status != 200 || reqs[0][0].Method != "GET" {
		t.Errorf("allowed request: %+v", reqs[0])
	}
	if len(reqs[1]) != 1 || reqs[1][0].Error == "" || reqs[1][0].Status != 0 || f[1].ErrorCode != abi.CodePermissionDenied {
		t.Errorf("refused request: %+v (%s)", reqs[1], f[1].ErrorCode)
	}
	if f[2].Status != store.DecisionError || !strings.Contains(string(f[2].Error), "***") {
		t.Errorf("leaking call: %s %s", f[2].Status, f[2].Error)
	}
}
