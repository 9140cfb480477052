package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/plugboard/plugboard/abi"
)

// series returns the samples of family name as "label=value,…" → value
// (a counter's or gauge's value, a histogram's count).
func series(t *testing.T, m *Metrics, name string) map[string]float64 {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, s := range f.GetMetric() {
			var labels []string
			for _, l := range s.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			out[strings.Join(labels, ",")] = value(f.GetType(), s)
		}
	}
	return out
}

func value(typ dto.MetricType, s *dto.Metric) float64 {
	switch typ {
	case dto.MetricType_COUNTER:
		return s.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		return s.GetGauge().GetValue()
	case dto.MetricType_HISTOGRAM:
		return float64(s.GetHistogram().GetSampleCount())
	}
	return -1
}

func wantSeries(t *testing.T, got map[string]float64, want map[string]float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("got %d series %v, want %v", len(got), got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
}

func TestToolCallsByOutcome(t *testing.T) {
	m := New()
	tool := m.Tool("echo", "echo")
	for range 3 {
		tool.Done("", time.Millisecond)
	}
	tool.Done(abi.CodeInvalidArgument, time.Millisecond)
	tool.Done(abi.CodeInvalidArgument, time.Millisecond)
	tool.Done("made_up_code", time.Millisecond)
	m.UnknownTool()
	wantSeries(t, series(t, m, "plugboard_tool_calls_total"), map[string]float64{
		"outcome=ok,plugin=echo,tool=echo":               3,
		"outcome=invalid_argument,plugin=echo,tool=echo": 2,
		"outcome=other,plugin=echo,tool=echo":            1,
		"outcome=tool_not_found,plugin=,tool=(unknown)":  1,
	})
	wantSeries(t, series(t, m, "plugboard_tool_call_duration_seconds"), map[string]float64{
		"plugin=echo,tool=echo": 6,
	})
}

// A call's recording, once its tool's labels are resolved, allocates
// nothing: it is on every call's path.
func TestToolDoneAllocatesNothing(t *testing.T) {
	tool := New().Tool("echo", "echo")
	tool.Done(abi.CodeToolError, time.Millisecond) // makes the code's counter
	for _, code := range []string{"", abi.CodeToolError} {
		if n := testing.AllocsPerRun(100, func() { tool.Done(code, time.Millisecond) }); n != 0 {
			t.Errorf("Done(%q) allocates %v times", code, n)
		}
	}
}

func TestNilMetricsRecordNothing(t *testing.T) {
	var m *Metrics
	m.Tool("a", "b").Done("", time.Second)
	m.UnknownTool()
	m.Loaded("p", nil)
	m.Unloaded("p")
	m.Compiled("p", CacheHit, nil, time.Second)
	m.Egress("example.com", false, false, 200)
	m.Store().Observe(StoreTx, time.Second)
	m.Forwarded("stop_attempt", nil, time.Second)
	m.SetPools(nil)
	m.SetAttempts(nil)
	m.SetSessions(nil)
}

func TestEgressOutcomesAndHostCap(t *testing.T) {
	m := New()
	m.Egress("api.example.com", false, false, 200)
	m.Egress("api.example.com", false, false, 204)
	m.Egress("api.example.com", false, false, 503)
	m.Egress("api.example.com", false, true, 0)
	m.Egress("evil.example", true, true, 0)
	got := series(t, m, "plugboard_egress_requests_total")
	wantSeries(t, got, map[string]float64{
		"host=api.example.com,outcome=2xx":   2,
		"host=api.example.com,outcome=5xx":   1,
		"host=api.example.com,outcome=error": 1,
		"host=evil.example,outcome=denied":   1,
	})
	for i := range MaxHosts + 50 {
		m.Egress(fmt.Sprintf("h%d.example", i), true, true, 0)
	}
	hosts := map[string]bool{}
	for k := range series(t, m, "plugboard_egress_requests_total") {
		host, _, _ := strings.Cut(strings.TrimPrefix(k, "host="), ",")
		hosts[host] = true
	}
	if len(hosts) != MaxHosts+1 || !hosts[Other] {
		t.Errorf("%d distinct host labels (other: %v), want %d and other", len(hosts), hosts[Other], MaxHosts+1)
	}
	// A host seen before the cap keeps its label after it.
	m.Egress("api.example.com", false, false, 200)
	if n := series(t, m, "plugboard_egress_requests_total")["host=api.example.com,outcome=2xx"]; n != 3 {
		t.Errorf("api.example.com 2xx = %v after the cap, want 3", n)
	}
}

func TestLifecycleStoreAndForwarded(t *testing.T) {
	m := New()
	m.Loaded("echo", nil)
	m.Loaded("broken", errors.New("bad"))
	m.Unloaded("echo")
	m.Compiled("echo", CacheMiss, nil, time.Second)
	m.Compiled("echo", CacheHit, nil, 50*time.Millisecond)
	s := m.Store()
	s.Observe(StoreExec, time.Millisecond)
	s.Observe(StoreTx, time.Millisecond)
	s.Observe(StoreTx, time.Millisecond)
	env := abi.NewEnvelope(abi.CodeUnavailable, "host gone", "")
	m.Forwarded("stop_attempt", fmt.Errorf("wrapped: %w", env), time.Second)
	m.Forwarded("stop_attempt", nil, time.Second)
	m.Forwarded("follow_up", errors.New("plain"), time.Second)
	wantSeries(t, series(t, m, "plugboard_plugin_loads_total"), map[string]float64{
		"plugin=echo,result=ok": 1, "plugin=broken,result=error": 1})
	wantSeries(t, series(t, m, "plugboard_plugin_unloads_total"), map[string]float64{"plugin=echo": 1})
	wantSeries(t, series(t, m, "plugboard_plugin_compiles_total"), map[string]float64{
		"cache=miss,plugin=echo,result=ok": 1, "cache=hit,plugin=echo,result=ok": 1})
	wantSeries(t, series(t, m, "plugboard_plugin_compile_duration_seconds"), map[string]float64{
		"cache=miss,plugin=echo": 1, "cache=hit,plugin=echo": 1})
	wantSeries(t, series(t, m, "plugboard_store_operation_duration_seconds"), map[string]float64{
		"op=exec": 1, "op=query": 0, "op=tx": 2})
	wantSeries(t, series(t, m, "plugboard_forwarded_command_duration_seconds"), map[string]float64{
		"op=stop_attempt,outcome=unavailable": 1, "op=stop_attempt,outcome=ok": 1, "op=follow_up,outcome=error": 1})
}

func TestScrapedGauges(t *testing.T) {
	m := New()
	// Without sources, none of them is exported.
	for _, name := range []string{"plugboard_plugin_instances", "plugboard_attempts", "plugboard_sessions"} {
		if got := series(t, m, name); len(got) != 0 {
			t.Errorf("%s without a source: %v", name, got)
		}
	}
	m.SetPools(func() []Pool {
		return []Pool{{Plugin: "echo", Idle: 2, Busy: 1}, {Plugin: "echo", Idle: 1}, {Plugin: "tasks-read", Busy: 3}}
	})
	var deadline time.Duration
	m.SetAttempts(func(ctx context.Context) (map[string]int, error) {
		dl, _ := ctx.Deadline()
		deadline = time.Until(dl)
		return map[string]int{"idle": 1, "running": 2, "completed": 0, "failed": 4}, nil
	})
	m.SetSessions(func() int { return 5 })
	wantSeries(t, series(t, m, "plugboard_plugin_instances"), map[string]float64{
		"plugin=echo,state=idle": 3, "plugin=echo,state=busy": 1,
		"plugin=tasks-read,state=idle": 0, "plugin=tasks-read,state=busy": 3})
	wantSeries(t, series(t, m, "plugboard_attempts"), map[string]float64{
		"state=idle": 1, "state=running": 2, "state=completed": 0, "state=failed": 4})
	wantSeries(t, series(t, m, "plugboard_sessions"), map[string]float64{"": 5})
	if deadline <= 0 || deadline > AttemptsTimeout {
		t.Errorf("the attempts source ran with %v left, want a deadline within %v", deadline, AttemptsTimeout)
	}
	// A store that fails (no board yet) leaves the gauge out of the scrape,
	// and the rest of it in.
	m.SetAttempts(func(context.Context) (map[string]int, error) { return nil, errors.New("no board") })
	if got := series(t, m, "plugboard_attempts"); len(got) != 0 {
		t.Errorf("plugboard_attempts without a board: %v", got)
	}
	if got := series(t, m, "plugboard_sessions"); got[""] != 5 {
		t.Errorf("plugboard_sessions = %v", got)
	}
}

func TestOutcome(t *testing.T) {
	for code, want := range map[string]string{"": "ok", abi.CodePluginTimeout: abi.CodePluginTimeout, "nope": Other} {
		if got := Outcome(code); got != want {
			t.Errorf("Outcome(%q) = %q, want %q", code, got, want)
		}
	}
}

func TestHandlerRequiresToken(t *testing.T) {
	m := New()
	m.Tool("echo", "echo").Done("", time.Millisecond)
	token := []byte(strings.Repeat("k", MinTokenBytes))
	srv := httptest.NewServer(m.Handler(token))
	defer srv.Close()
	get := func(method, auth string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+Path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	for _, auth := range []string{"", "Bearer ", "Bearer " + string(token[:MinTokenBytes-1]), "Bearer " + string(token) + "x",
		"Basic " + string(token), string(token)} {
		resp, _ := get(http.MethodGet, auth)
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer ") {
			t.Errorf("Authorization %q: %d, WWW-Authenticate %q; want 401 with a Bearer challenge", auth, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}
	resp, body := get(http.MethodGet, "Bearer "+string(token))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("with the token: %d %s", resp.StatusCode, body)
	}
	for _, want := range []string{`plugboard_tool_calls_total{outcome="ok",plugin="echo",tool="echo"} 1`, "go_goroutines ", "process_start_time_seconds "} {
		if !strings.Contains(body, want) {
			t.Errorf("the scrape has no %q", want)
		}
	}
	if resp, _ := get(http.MethodPost, "Bearer "+string(token)); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST with the token: %d, want 405", resp.StatusCode)
	}
}

func TestReadToken(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := strings.Repeat("a", MinTokenBytes)
	if tok, err := ReadToken(write("good", "  "+good+"\n")); err != nil || string(tok) != good {
		t.Errorf("ReadToken(good) = %q, %v", tok, err)
	}
	if _, err := ReadToken(write("short", good[1:]+"\n")); err == nil || !strings.Contains(err.Error(), "at least 32") {
		t.Errorf("ReadToken(short) = %v, want a length error", err)
	}
	if _, err := ReadToken(write("spaced", good+" "+good)); err == nil {
		t.Error("ReadToken(token with a space) succeeded")
	}
	if _, err := ReadToken(filepath.Join(dir, "missing")); err == nil {
		t.Error("ReadToken(missing file) succeeded")
	}
}

// BenchmarkToolDone is what metrics add to a call's path: one call's
// recording (BenchmarkEchoMetrics in bench/ times it within the call).
func BenchmarkToolDone(b *testing.B) {
	tool := New().Tool("echo", "echo")
	b.ReportAllocs()
	for b.Loop() {
		tool.Done("", 30*time.Microsecond)
	}
}
