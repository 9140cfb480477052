package host

import (
	"context"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/plugboard/plugboard/host/internal/tracing"
)

// OTLPEndpoint is where traces go (ResolveOTLPEndpoint). It is this
// package's type, converted from the tracing package's at the boundary.
type OTLPEndpoint struct {
	// URL is the URL the OTLP/HTTP exporter posts traces to ("" when
	// traces are off).
	URL string
	// From names the setting it came from, for the log and errors.
	From string
}

// The standard OpenTelemetry variables ResolveOTLPEndpoint reads.
const (
	EnvOTLPTracesEndpoint = tracing.EnvTracesEndpoint
	EnvOTLPEndpoint       = tracing.EnvEndpoint
)

// ResolveOTLPEndpoint applies the configuration's precedence to the OTLP
// endpoint: flag (a base URL such as http://127.0.0.1:4318), else
// $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (the traces URL as it is), else
// $OTEL_EXPORTER_OTLP_ENDPOINT (a base URL), read through getenv, else
// file (a base URL, from the setting fileFrom names). A base URL gets
// /v1/traces appended. None set is a zero OTLPEndpoint: traces off.
func ResolveOTLPEndpoint(flag, file, fileFrom string, getenv func(string) string) (OTLPEndpoint, error) {
	ep, err := tracing.ResolveEndpoint(flag, file, fileFrom, getenv)
	return OTLPEndpoint(ep), err
}

// NewOTLPTracerProvider returns the tracer provider for Config.Tracer that
// batches spans and exports them over OTLP/HTTP (protobuf) to ep, with
// service.name "plugboard" and service.version version. OpenTelemetry's
// exporter variables (OTEL_EXPORTER_OTLP_HEADERS, _COMPRESSION, _TIMEOUT,
// certificates) and batch variables (OTEL_BSP_*) apply. The caller shuts
// it down after the host's Close, which flushes it.
func NewOTLPTracerProvider(ctx context.Context, ep OTLPEndpoint, version string) (*sdktrace.TracerProvider, error) {
	return tracing.NewOTLP(ctx, tracing.Endpoint(ep), version)
}
