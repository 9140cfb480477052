package runtime_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/runtime"
	"github.com/plugboard/plugboard/host/internal/tracing"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// TestHostFunctionSpans: under a recording span, the guest's http_request
// is a span of its own — method, host and status, not the URL's path or
// query — a refused one failed with its envelope's code; without a span in
// the context nothing is recorded.
func TestHostFunctionSpans(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins")
	}
	_, wasm := buildtest.Plugins(t, "testdata/plugins/fetch")
	code, err := os.ReadFile(wasm["fetch"])
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	e, err := runtime.New(ctx, runtime.Config{CacheDir: t.TempDir(), CacheKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	defer srv.Close()
	host := hostPort(t, srv.URL)
	p, err := e.CompileWith(ctx, "fetch", code, runtime.PluginOptions{HTTP: &runtime.Egress{AllowedHosts: []string{host}, AllowPrivate: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)

	rec := tracetest.NewSpanRecorder()
	tp := tracing.NewProvider(rec, "test")
	defer func() { _ = tp.Shutdown(ctx) }()
	tr := tracing.New(tp)

	// Untraced: no span.
	if _, err := fetch(t, ctx, p, args("url", srv.URL+"/private/path?token=s3cr3t"), runtime.CallOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := len(rec.Ended()); n != 0 {
		t.Fatalf("%d spans without a span in the context", n)
	}

	callCtx, call := tr.StartDispatch(ctx, "fetch")
	a, err := fetch(t, callCtx, p, args("url", srv.URL+"/private/path?token=s3cr3t"), runtime.CallOptions{})
	if err != nil || a.Status != http.StatusTeapot {
		t.Fatalf("fetch: %+v %v", a, err)
	}
	_, err = fetch(t, callCtx, p, args("url", "http://not-allowed.example/"), runtime.CallOptions{})
	if err == nil {
		t.Fatal("a host outside allowed_hosts was reached")
	}
	tracing.End(call, "")

	var spans []map[string]string
	var refused codes.Code
	for _, s := range rec.Ended() {
		if s.Name() != "host http_request" {
			continue
		}
		if s.Parent().SpanID() != call.SpanContext().SpanID() {
			t.Errorf("http_request span is not the call's child")
		}
		m := map[string]string{}
		for _, kv := range s.Attributes() {
			m[string(kv.Key)] = kv.Value.String()
			if strings.Contains(kv.Value.String(), "s3cr3t") || strings.Contains(kv.Value.String(), "/private") {
				t.Errorf("span attribute %s carries the URL's path or query: %s", kv.Key, kv.Value.String())
			}
		}
		spans = append(spans, m)
		if m[tracing.AttrServerAddress] == "not-allowed.example" {
			refused = s.Status().Code
		}
	}
	if len(spans) != 2 {
		t.Fatalf("http_request spans %v, want 2", spans)
	}
	ok := spans[0]
	if ok[tracing.AttrHTTPMethod] != "GET" || ok[tracing.AttrServerAddress] != "127.0.0.1" || ok[tracing.AttrHTTPStatus] != "418" ||
		ok[tracing.AttrHostModule] != abi.ExtismModule {
		t.Errorf("the allowed request's span: %v", ok)
	}
	if refused != codes.Error || spans[1][tracing.AttrErrorCode] != abi.CodePermissionDenied {
		t.Errorf("the refused request's span: status %v attributes %v", refused, spans[1])
	}
}
