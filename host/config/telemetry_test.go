package config

import (
	"strings"
	"testing"
)

// The telemetry section: otlp_endpoint is kept as written (serve resolves
// it under --otlp-endpoint and the OTEL_EXPORTER_OTLP_* variables), and a
// value that is no OTLP/HTTP base URL is placed at its line, column and
// key.
func TestTelemetrySection(t *testing.T) {
	c, err := Parse("/etc/plugboard/pb.json", []byte(`{"telemetry": {"otlp_endpoint": "http://127.0.0.1:4318"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if e := c.Telemetry.OTLPEndpoint; e == nil || *e != "http://127.0.0.1:4318" {
		t.Errorf("otlp_endpoint %v", e)
	}
	if s := c.Summary(); !strings.Contains(s, "telemetry.otlp_endpoint http://127.0.0.1:4318") {
		t.Errorf("summary %q does not name the telemetry section", s)
	}
	for body, want := range map[string]string{
		"{\n  \"telemetry\": {\"otlp_endpoint\": \"127.0.0.1:4318\"}\n}":        `pb.json:2:34: telemetry.otlp_endpoint: want the http or https base URL`,
		"{\n  \"telemetry\": {\"otlp_endpoint\": \"http://u:pw@collector\"}\n}": `pb.json:2:34: telemetry.otlp_endpoint: want the http or https base URL of an OTLP/HTTP receiver without credentials`,
		"{\n  \"telemetry\": {\"otlp_endpoint\": \"grpc://collector:4317\"}\n}": `telemetry.otlp_endpoint: want`,
		"{\n  \"telemetry\": {\"otlp_headers\": \"api-key=secret\"}\n}":         `pb.json:2:17: telemetry.otlp_headers: unknown field "otlp_headers"`,
	} {
		_, err := Parse("pb.json", []byte(body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s:\n  %v\nwant\n  %s", body, err, want)
		}
	}
}
