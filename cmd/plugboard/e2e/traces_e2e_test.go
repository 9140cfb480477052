package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/abi/tasks"
	plughost "github.com/plugboard/plugboard/host"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// otlpReceiver is an OTLP/HTTP trace receiver: what a collector's
// otlphttp receiver does with POST /v1/traces (protobuf, gzip or not).
type otlpReceiver struct {
	mu        sync.Mutex
	spans     []*tracepb.Span
	resources []map[string]string
	// bad records requests it could not read, for the test to fail on.
	bad []string
}

func (r *otlpReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	fail := func(why string) {
		r.mu.Lock()
		r.bad = append(r.bad, why)
		r.mu.Unlock()
		http.Error(w, why, http.StatusBadRequest)
	}
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		fail(req.Method + " " + req.URL.Path)
		return
	}
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		fail("Content-Type " + ct)
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			fail(err.Error())
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		fail(err.Error())
		return
	}
	var export collectortrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &export); err != nil {
		fail(err.Error())
		return
	}
	r.mu.Lock()
	for _, rs := range export.ResourceSpans {
		r.resources = append(r.resources, stringAttrs(rs.GetResource().GetAttributes()))
		for _, ss := range rs.ScopeSpans {
			r.spans = append(r.spans, ss.Spans...)
		}
	}
	r.mu.Unlock()
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// stringAttrs are the string and int attributes of kvs, as text.
func stringAttrs(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		switch v := kv.GetValue().GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.Key] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.Key] = strconv.FormatInt(v.IntValue, 10)
		}
	}
	return m
}

// TestTracesEndToEnd runs plugboard serve --otlp-endpoint against an OTLP
// receiver in the test, calls a board tool with the caller's trace
// context in params._meta, stops the server (which flushes its spans) and
// reads the trace: one trace, the caller's, with the request, dispatch,
// plugin run, host function and store statements each the child of the
// one before.
func TestTracesEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	recv := &otlpReceiver{}
	collector := httptest.NewServer(recv)
	defer collector.Close()

	dir, _ := buildtest.Plugins(t, "testdata/plugins/boardprobe")
	srv := startHTTPServer(t, dir, httpEnv(), "--otlp-endpoint", collector.URL)
	if !strings.Contains(srv.Stderr.String(), "to="+collector.URL+"/v1/traces") {
		t.Errorf("no start-up line saying where traces go:\n%s", srv.Stderr.String())
	}
	session, _, err := connectHTTP(t, srv.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	const (
		callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
		callerSpan  = "00f067aa0ba902b7"
	)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "board_call",
		Arguments: map[string]any{"op": abi.OpListProjects},
		Meta:      mcp.Meta{"traceparent": "00-" + callerTrace + "-" + callerSpan + "-01", "tracestate": "vendor=opaque"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("board_call list_projects: %s", clitest.Text(res))
	}
	// A graceful stop flushes the batched spans before the process exits.
	session.Close()
	if err := srv.Cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-srv.Exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not exit after SIGINT:\n%s", srv.Stderr.String())
	}

	recv.mu.Lock()
	defer recv.mu.Unlock()
	if len(recv.bad) > 0 {
		t.Fatalf("the receiver could not read what was exported: %v", recv.bad)
	}
	if len(recv.resources) == 0 || recv.resources[0]["service.name"] != "plugboard" || recv.resources[0]["service.version"] == "" {
		t.Errorf("resource = %v, want service.name plugboard and a service.version", recv.resources)
	}
	type node struct {
		span  *tracepb.Span
		attrs map[string]string
	}
	var inTrace []node
	byID := map[string]node{}
	for _, s := range recv.spans {
		if hex.EncodeToString(s.TraceId) != callerTrace {
			continue
		}
		n := node{s, stringAttrs(s.Attributes)}
		inTrace = append(inTrace, n)
		byID[hex.EncodeToString(s.SpanId)] = n
	}
	if len(inTrace) == 0 {
		var names []string
		for _, s := range recv.spans {
			names = append(names, s.Name+"@"+hex.EncodeToString(s.TraceId))
		}
		t.Fatalf("no span in the caller's trace %s; received %v", callerTrace, names)
	}
	for _, n := range inTrace {
		t.Logf("span %s parent %s %q %v", hex.EncodeToString(n.span.SpanId), hex.EncodeToString(n.span.ParentSpanId), n.span.Name, n.attrs)
	}
	// one finds the single span of the trace named name.
	one := func(name string) node {
		t.Helper()
		var found []node
		for _, n := range inTrace {
			if n.span.Name == name {
				found = append(found, n)
			}
		}
		if len(found) != 1 {
			var names []string
			for _, n := range inTrace {
				names = append(names, n.span.Name)
			}
			t.Fatalf("%d spans named %q in the trace, want 1; the trace has %v", len(found), name, names)
		}
		return found[0]
	}
	parentOf := func(n node) string { return hex.EncodeToString(n.span.ParentSpanId) }
	idOf := func(n node) string { return hex.EncodeToString(n.span.SpanId) }

	transport := one("tools/call board_call")
	if parentOf(transport) != callerSpan {
		t.Errorf("transport span's parent = %s, want the caller's span %s", parentOf(transport), callerSpan)
	}
	if transport.span.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("transport span kind = %v, want server", transport.span.Kind)
	}
	if transport.span.TraceState != "vendor=opaque" {
		t.Errorf("transport span's tracestate = %q, want the caller's", transport.span.TraceState)
	}
	for k, want := range map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "board_call",
		"gen_ai.operation.name": "execute_tool", "network.transport": "tcp", "mcp.protocol.version": legacyRevision} {
		if got := transport.attrs[k]; got != want {
			t.Errorf("transport span %s = %q, want %q", k, got, want)
		}
	}
	if transport.attrs["mcp.session.id"] == "" {
		t.Errorf("transport span has no mcp.session.id: %v", transport.attrs)
	}

	dispatch := one("dispatch board_call")
	if parentOf(dispatch) != idOf(transport) {
		t.Errorf("dispatch span's parent is not the transport span")
	}
	if dispatch.attrs["gen_ai.tool.name"] != "board_call" {
		t.Errorf("dispatch span attributes = %v", dispatch.attrs)
	}

	plugin := one("plugin boardprobe")
	if parentOf(plugin) != idOf(dispatch) {
		t.Errorf("plugin span's parent is not the dispatch span")
	}
	if plugin.attrs["plugboard.plugin.name"] != "boardprobe" || plugin.attrs["plugboard.plugin.attempt"] != "1" {
		t.Errorf("plugin span attributes = %v", plugin.attrs)
	}

	host := one("host board " + abi.OpListProjects)
	if parentOf(host) != idOf(plugin) {
		t.Errorf("host function span's parent is not the plugin span")
	}
	if host.attrs["plugboard.host.function"] != abi.FuncBoard || host.attrs["plugboard.board.operation"] != abi.OpListProjects ||
		host.attrs["plugboard.host.module"] != abi.HostModule {
		t.Errorf("host function span attributes = %v", host.attrs)
	}

	var stores []node
	for _, n := range inTrace {
		if strings.HasPrefix(n.span.Name, "store ") && parentOf(n) == idOf(host) {
			stores = append(stores, n)
		}
	}
	if len(stores) == 0 {
		t.Fatalf("no store span under the host function's")
	}
	for _, s := range stores {
		if s.attrs["db.system.name"] != "sqlite" || s.attrs["db.operation.name"] == "" {
			t.Errorf("store span %q attributes = %v", s.span.Name, s.attrs)
		}
	}
	// Every span of the trace is below the caller's: none is orphaned.
	for _, n := range inTrace {
		if p := parentOf(n); p != callerSpan {
			if _, ok := byID[p]; !ok {
				t.Errorf("span %q has parent %s, not in the trace", n.span.Name, p)
			}
		}
		if n.span.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR {
			t.Errorf("span %q failed: %v", n.span.Name, n.span.Status)
		}
	}
	// Arguments stay out of spans: the op is in the host function's
	// attribute (its name), never the argument object.
	for _, n := range inTrace {
		for k, v := range n.attrs {
			if bytes.Contains([]byte(v), []byte(`"op"`)) {
				t.Errorf("span %q attribute %s carries the call's arguments: %s", n.span.Name, k, v)
			}
		}
	}
}

// TestAttemptsGetNoOTLPHeaders runs an attempt under a server whose
// environment holds the OTLP exporter's headers (a collector's API key):
// the attempt's process gets every other variable, those not.
func TestAttemptsGetNoOTLPHeaders(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary, runs an attempt")
	}
	dir, _ := buildtest.Plugins(t, "testdata/plugins/boardprobe")
	data, projectID := boardData(t)
	env := append(os.Environ(), "OTEL_EXPORTER_OTLP_HEADERS=api-key=otel-secret-1", "OTEL_EXPORTER_OTLP_TRACES_HEADERS=api-key=otel-secret-2",
		"OTEL_SERVICE_NAME=visible")
	s := dialServe(t, env, nil, "--plugins", dir, "--data", data)

	var task struct {
		TaskID string `json:"task_id"`
	}
	boardCall(t, s, abi.OpCreateTask, map[string]any{"project_id": projectID, "title": "Print the environment",
		"description": `echo "seen:${OTEL_EXPORTER_OTLP_HEADERS:-none}:${OTEL_EXPORTER_OTLP_TRACES_HEADERS:-none}:${OTEL_SERVICE_NAME:-none}"`}, &task)
	var started tasks.StartOut
	boardCall(t, s, abi.OpStartTaskAttempt, map[string]any{"task_id": task.TaskID, "executor": "shell"}, &started)
	var status tasks.StatusOut
	deadline := time.Now().Add(30 * time.Second)
	for {
		boardCall(t, s, abi.OpGetAttemptStatus, map[string]any{"attempt_id": started.AttemptID}, &status)
		if status.State == tasks.StateCompleted {
			break
		}
		if time.Now().After(deadline) || status.State == tasks.StateFailed {
			t.Fatalf("attempt did not complete: %+v", status)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var logs plughost.LogsResult
	boardCall(t, s, abi.OpTailAttemptLogs, map[string]any{"attempt_id": started.AttemptID}, &logs)
	var all strings.Builder
	for _, e := range logs.Entries {
		all.Write(e.Entry)
		all.WriteByte('\n')
	}
	if !strings.Contains(all.String(), "seen:none:none:visible") {
		t.Fatalf("the attempt saw the OTLP headers, or no environment at all; its log:\n%s", all.String())
	}
}

// TestOTLPEndpointRefused: an endpoint that is no http(s) URL stops serve
// at start with exit status 2, naming where it came from — the flag, or
// the variable when the flag is not given.
func TestOTLPEndpointRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	for _, c := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"--otlp-endpoint", "127.0.0.1:4318"}, "", "--otlp-endpoint: \"127.0.0.1:4318\" is not an OTLP/HTTP endpoint"},
		{nil, "OTEL_EXPORTER_OTLP_ENDPOINT=collector:4318", "$OTEL_EXPORTER_OTLP_ENDPOINT: \"collector:4318\" is not an OTLP/HTTP endpoint"},
	} {
		cmd := exec.Command(buildtest.Binary(t), append([]string{"serve", "--data", t.TempDir(), "--plugins", t.TempDir()}, c.args...)...)
		cmd.Env = httpEnv()
		if c.env != "" {
			cmd.Env = append(cmd.Env, c.env)
		}
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), c.want) {
			t.Errorf("serve %v (%s): %v\n%s\nwant exit status 2 and %q", c.args, c.env, err, out, c.want)
		}
	}
}
