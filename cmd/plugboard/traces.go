package main

import (
	"context"
	"flag"
	"log/slog"
	"os"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	plughost "github.com/plugboard/plugboard/host"
	"github.com/plugboard/plugboard/host/config"
)

// traceFlags select where serve sends its OpenTelemetry traces: off unless
// --otlp-endpoint, $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
// $OTEL_EXPORTER_OTLP_ENDPOINT or the configuration file's
// telemetry.otlp_endpoint names an OTLP/HTTP receiver (in that order).
type traceFlags struct {
	endpoint string
}

func (f *traceFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.endpoint, "otlp-endpoint", "", "send OpenTelemetry traces over OTLP/HTTP to the receiver at URL (e.g. http://127.0.0.1:4318; they are posted to URL/v1/traces); default: $"+
		plughost.EnvOTLPTracesEndpoint+", else $"+plughost.EnvOTLPEndpoint+", else the configuration file's telemetry.otlp_endpoint, else no traces")
}

// tracesShutdownGrace bounds the last export at exit: a collector gone
// away must not hold the process.
const tracesShutdownGrace = 5 * time.Second

// provider returns the tracer provider the flags (and conf, nil without a
// configuration file) select, and where it sends traces; nil when traces
// are off. The caller shuts it down after the host's Close.
func (f *traceFlags) provider(ctx context.Context, conf *config.Config) (*sdktrace.TracerProvider, plughost.OTLPEndpoint, error) {
	file, fileFrom := "", ""
	if conf != nil && conf.Telemetry.OTLPEndpoint != nil {
		file, fileFrom = *conf.Telemetry.OTLPEndpoint, conf.File+": telemetry.otlp_endpoint"
	}
	ep, err := plughost.ResolveOTLPEndpoint(f.endpoint, file, fileFrom, os.Getenv)
	if err != nil {
		return nil, ep, usageError("%v", err)
	}
	if ep.URL == "" {
		return nil, ep, nil
	}
	tp, err := plughost.NewOTLPTracerProvider(ctx, ep, version)
	if err != nil {
		return nil, ep, err
	}
	return tp, ep, nil
}

// shutdownTraces flushes and stops tp, within tracesShutdownGrace.
func shutdownTraces(ctx context.Context, tp *sdktrace.TracerProvider, log func() *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tracesShutdownGrace)
	defer cancel()
	if err := tp.Shutdown(ctx); err != nil && log() != nil {
		log().Warn("traces: the last spans were not exported", "err", err)
	}
}

// logTraces writes the start-up line saying where traces go, and sends
// the exporter's failures (a collector down) to the log: the process is
// this command's, so otel's error handler is too.
func logTraces(log *slog.Logger, ep plughost.OTLPEndpoint) {
	if ep.URL == "" {
		log.Info("traces", "on", false, "why", "no OTLP endpoint: serve --otlp-endpoint URL, $"+plughost.EnvOTLPEndpoint+" or telemetry.otlp_endpoint")
		return
	}
	log.Info("traces", "on", true, "to", ep.URL, "protocol", "otlp/http", "from", ep.From)
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("traces: export failed", "err", err) }))
}
