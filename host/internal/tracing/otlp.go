package tracing

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The standard variables naming an OTLP endpoint (OpenTelemetry's
// exporter configuration): the traces one is the URL traces are posted
// to, the general one a base URL that /v1/traces is appended to.
const (
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
)

// SecretEnv are the exporter's variables that may hold credentials (the
// headers sent to the collector, e.g. an API key): attempt processes never
// get them, whatever the agent environment's settings say.
var SecretEnv = []string{
	"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
	"OTEL_EXPORTER_OTLP_METRICS_HEADERS", "OTEL_EXPORTER_OTLP_LOGS_HEADERS",
}

// TracesPath is where an OTLP/HTTP receiver takes traces, under its base
// URL.
const TracesPath = "/v1/traces"

// Endpoint is where traces go, resolved from the host's settings.
type Endpoint struct {
	// URL is the URL the exporter posts traces to ("" when traces are
	// off).
	URL string
	// From names the setting it came from, for the log and errors.
	From string
}

// ResolveEndpoint applies the configuration's precedence to the OTLP
// endpoint: flag (a base URL, from --otlp-endpoint), else the
// environment (getenv: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is, else
// OTEL_EXPORTER_OTLP_ENDPOINT as a base URL), else file (a base URL, the
// configuration file's telemetry.otlp_endpoint, named fileFrom). None
// set: traces are off (a zero Endpoint). A base URL gets /v1/traces
// appended to its path.
func ResolveEndpoint(flag, file, fileFrom string, getenv func(string) string) (Endpoint, error) {
	switch {
	case flag != "":
		return endpoint(flag, "--otlp-endpoint", true)
	case getenv(EnvTracesEndpoint) != "":
		return endpoint(getenv(EnvTracesEndpoint), "$"+EnvTracesEndpoint, false)
	case getenv(EnvEndpoint) != "":
		return endpoint(getenv(EnvEndpoint), "$"+EnvEndpoint, true)
	case file != "":
		return endpoint(file, fileFrom, true)
	}
	return Endpoint{}, nil
}

// endpoint checks raw, an http or https URL, and appends TracesPath to a
// base URL's path.
func endpoint(raw, from string, base bool) (Endpoint, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return Endpoint{}, fmt.Errorf("%s: %q is not an OTLP/HTTP endpoint: give an http or https URL such as http://127.0.0.1:4318", from, raw)
	}
	if base {
		u.Path = strings.TrimSuffix(u.Path, "/") + TracesPath
	}
	// The URL is logged: credentials in it would be too, so none is
	// accepted (headers carry them: OTEL_EXPORTER_OTLP_HEADERS).
	if u.User != nil {
		return Endpoint{}, fmt.Errorf("%s: put no credentials in the URL; give them as headers in $OTEL_EXPORTER_OTLP_HEADERS", from)
	}
	return Endpoint{URL: u.String(), From: from}, nil
}

// NewOTLP returns a tracer provider that batches spans (the batch span
// processor: OTEL_BSP_* tune it) and exports them over OTLP/HTTP in
// protobuf to ep.URL; the exporter's other variables (headers,
// compression, timeout, certificates) apply as OpenTelemetry documents
// them. Its resource is service.name "plugboard" and service.version
// version, which OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override.
// The caller shuts it down (Shutdown flushes what is batched).
func NewOTLP(ctx context.Context, ep Endpoint, version string) (*sdktrace.TracerProvider, error) {
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(ep.URL))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ep.From, err)
	}
	return NewProvider(sdktrace.NewBatchSpanProcessor(exp), version), nil
}

// NewProvider returns a tracer provider sending every span to sp, with the
// host's resource (see NewOTLP). Sampling follows the caller's: a call
// whose traceparent is not sampled is not recorded.
func NewProvider(sp sdktrace.SpanProcessor, version string) *sdktrace.TracerProvider {
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		attribute.String("service.name", "plugboard"), attribute.String("service.version", version)))
	if err != nil {
		res = resource.Default()
	}
	if env, err := resource.New(context.Background(), resource.WithFromEnv()); err == nil {
		if merged, err := resource.Merge(res, env); err == nil {
			res = merged
		}
	}
	return sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sp), sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())))
}
