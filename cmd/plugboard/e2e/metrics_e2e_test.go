package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// The metrics end-to-end test runs the real binary with --metrics, makes
// calls with the go-sdk client, and has a real Prometheus (Debian's
// package) scrape the endpoint with the token, then asks Prometheus' own
// HTTP API what it stored.

// requirePrometheusEnv makes a missing Prometheus fail the test instead
// of skipping it (CI sets it; build/install-prometheus.sh installs one).
const requirePrometheusEnv = "PLUGBOARD_REQUIRE_PROMETHEUS"

var metricsURLLine = regexp.MustCompile(`plugboard: metrics at (http://(\S+)/metrics)`)

// prometheusBinary returns the installed Prometheus server, or skips t
// (fails it under PLUGBOARD_REQUIRE_PROMETHEUS=1).
func prometheusBinary(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("prometheus"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/bin/prometheus"); err == nil {
		return "/usr/bin/prometheus"
	}
	if os.Getenv(requirePrometheusEnv) == "1" {
		t.Fatalf("no prometheus binary, and %s=1: run build/install-prometheus.sh", requirePrometheusEnv)
	}
	t.Skipf("no prometheus binary (build/install-prometheus.sh installs Debian's); %s=1 makes this a failure", requirePrometheusEnv)
	return ""
}

// writeToken writes a metrics token file and returns its path.
func writeToken(t *testing.T, token string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "metrics.token")
	if err := os.WriteFile(p, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// freeLoopbackPort returns a port free on 127.0.0.1 a moment ago.
func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startPrometheus runs Prometheus scraping target (host:port) every second
// with the token in tokenFile, and returns its base URL.
func startPrometheus(t *testing.T, bin, target, tokenFile string) string {
	t.Helper()
	dir := t.TempDir()
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: plugboard
    scrape_interval: 1s
    scrape_timeout: 1s
    authorization:
      credentials_file: %q
    static_configs:
      - targets: [%q]
`, tokenFile, target)
	cfgFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(freeLoopbackPort(t))
	cmd := exec.Command(bin, "--config.file="+cfgFile, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	out := &clitest.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("prometheus output:\n%s", out.String())
		}
	})
	base := "http://" + addr
	deadline := time.Now().Add(60 * time.Second)
	for {
		if resp, err := http.Get(base + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		select {
		case <-exited:
			t.Fatalf("prometheus exited: %v\n%s", cmd.ProcessState, out.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready after 60s:\n%s", out.String())
		}
	}
}

// promQuery returns the value of an instant query's single sample, and
// whether there was exactly one.
func promQuery(t *testing.T, base, query string) (float64, bool) {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(query))
	if err != nil {
		t.Fatalf("query %s: %v", query, err)
	}
	defer resp.Body.Close()
	var r struct {
		Status string
		Error  string
		Data   struct {
			Result []struct {
				Value [2]any
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.Status != "success" {
		t.Fatalf("query %s: status %q, error %q, %v", query, r.Status, r.Error, err)
	}
	if len(r.Data.Result) != 1 {
		return 0, false
	}
	s, _ := r.Data.Result[0].Value[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	return v, err == nil
}

func TestMetricsPrometheusScrape(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary, runs Prometheus")
	}
	prom := prometheusBinary(t)
	dir, _ := buildtest.Plugins(t, "plugins/echo")
	const token = "metrics-e2e-0123456789abcdef0123456789abcdef"
	tokenFile := writeToken(t, token)
	srv := startHTTPServer(t, dir, httpEnv(), "--metrics", "127.0.0.1:0", "--metrics-token-file", tokenFile)
	m := metricsURLLine.FindStringSubmatch(srv.Stderr.String())
	if m == nil {
		t.Fatalf("no metrics line on stderr:\n%s", srv.Stderr.String())
	}
	metricsURL, metricsAddr := m[1], m[2]
	if metricsAddr == srv.Addr || strings.HasSuffix(metricsAddr, ":0") {
		t.Fatalf("metrics at %s, MCP at %s: want a listener of its own, on the chosen port", metricsAddr, srv.Addr)
	}

	// Without the token (or with another), no metrics: agents in
	// attempts reach loopback too.
	for _, auth := range []string{"", "Bearer wrong-token-0123456789abcdef0123456789"} {
		req, _ := http.NewRequest(http.MethodGet, metricsURL, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" || strings.Contains(string(body), "plugboard_") {
			t.Errorf("scrape with Authorization %q: %d, WWW-Authenticate %q, body %.100q; want 401 without metrics",
				auth, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body)
		}
	}
	// Nor on the MCP listener.
	if resp, err := http.Get("http://" + srv.Addr + "/metrics"); err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(body), "plugboard_tool_calls_total") {
			t.Errorf("the MCP listener serves the metrics")
		}
	}

	session, _, err := connectHTTP(t, srv.URL, "")
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	ctx := context.Background()
	const ok, failing = 7, 3
	for i := range ok {
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": fmt.Sprint("call ", i)}})
		if err != nil || res.IsError {
			t.Fatalf("echo call %d: %v %+v", i, err, res)
		}
	}
	for i := range failing {
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": i}})
		if err != nil {
			t.Fatal(err)
		}
		if env := clitest.EnvelopeOf(t, res); env.Code != abi.CodeInvalidArgument {
			t.Fatalf("echo with a number: %s, want %s", env.Code, abi.CodeInvalidArgument)
		}
	}

	base := startPrometheus(t, prom, metricsAddr, tokenFile)
	queries := map[string]float64{
		`plugboard_tool_calls_total{tool="echo",plugin="echo",outcome="ok"}`:               ok,
		`plugboard_tool_calls_total{tool="echo",plugin="echo",outcome="invalid_argument"}`: failing,
		`plugboard_tool_call_duration_seconds_count{tool="echo",plugin="echo"}`:            ok + failing,
		`plugboard_sessions`: 1,
		`plugboard_plugin_loads_total{plugin="echo",result="ok"}`: 1,
		`count(plugboard_plugin_instances{plugin="echo"})`:        2,
		`count(plugboard_attempts)`:                               4,
		`sum(plugboard_attempts)`:                                 0,
		`up{job="plugboard"}`:                                     1,
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		var wrong []string
		for q, want := range queries {
			if got, found := promQuery(t, base, q); !found || got != want {
				wrong = append(wrong, fmt.Sprintf("%s = %v (found %v), want %v", q, got, found, want))
			}
		}
		if len(wrong) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus still has, after 90s:\n%s", strings.Join(wrong, "\n"))
		}
		time.Sleep(500 * time.Millisecond)
	}
	// The plugin was compiled (and whether from the cache is known).
	if got, found := promQuery(t, base, `sum(plugboard_plugin_compiles_total{plugin="echo",result="ok"})`); !found || got < 1 {
		t.Errorf("echo's compilations: %v (found %v), want at least 1", got, found)
	}
}

// --metrics without its token, or with a short or unreadable one, is
// refused at start, naming the flag.
func TestMetricsFlagsRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildtest.Binary(t)
	short := writeToken(t, "too-short")
	good := writeToken(t, strings.Repeat("a", 40))
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no token file", []string{"--metrics", "127.0.0.1:0"}, "--metrics 127.0.0.1:0 needs --metrics-token-file"},
		{"short token", []string{"--metrics", "127.0.0.1:0", "--metrics-token-file", short}, "--metrics-token-file: " + short + ": the token is 9 bytes"},
		{"unreadable token", []string{"--metrics", "127.0.0.1:0", "--metrics-token-file", short + ".missing"}, "--metrics-token-file: open "},
		{"token file alone", []string{"--metrics-token-file", good}, "--metrics-token-file needs --metrics ADDR"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(bin, append([]string{"serve", "--http", "127.0.0.1:0", "--data", t.TempDir(), "--plugins", t.TempDir()}, c.args...)...)
			cmd.Env = httpEnv()
			out, err := cmd.CombinedOutput()
			code := -1
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			if code != 2 || !strings.Contains(string(out), c.want) {
				t.Errorf("exit %d, output:\n%s\nwant exit 2 and %q", code, out, c.want)
			}
		})
	}
}
