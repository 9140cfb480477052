package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/trace"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/dispatch"
	"github.com/plugboard/plugboard/host/internal/metrics"
	"github.com/plugboard/plugboard/host/internal/registry"
)

// Request is one tool call. It and Result are this package's types, not
// the pipeline's (host/internal/dispatch): the pipeline's request also
// carries what only a transport sets (an MCP client, a replay key), and
// either may grow without changing what callers write.
type Request struct {
	// Tool is the tool's name or one of its aliases.
	Tool      string
	Arguments json.RawMessage
	// Progress, when set, receives the plugin's progress reports.
	Progress func(abi.ProgressRequest)
	// Caller is who calls; nil takes the caller the context carries.
	Caller *abi.Caller
}

// Result is a normalised tool result: on success Structured and Content;
// on failure Envelope (IsError), with Structured holding its JSON and
// Content its compact text.
type Result struct {
	Content    []abi.Content
	Structured json.RawMessage
	Envelope   *abi.Envelope
}

// IsError reports whether the result is an envelope.
func (r *Result) IsError() bool { return r.Envelope != nil }

// LoadOptions configures LoadDir. The zero value loads as `plugboard serve`
// does by default, minus the board.
type LoadOptions struct {
	// DataDir holds the describe cache (manifests of modules without an
	// embedded section), authenticated with the engine's Config.CacheKey;
	// "" or an engine without a key disables it.
	DataDir string
	// DescribeTimeout bounds describe for modules without a manifest
	// section; 0 means the registry's default (10 s).
	DescribeTimeout time.Duration
	// CallTimeout is each call's deadline and the cap of a tool's own
	// timeout_ms; 0 keeps serve's defaults (30 s, capped at 5 min).
	CallTimeout time.Duration
	// NoRetry turns off the host's retries of retryable failures, so every
	// call runs once.
	NoRetry bool
	// Conditions are the abi.Conditions taken as met: a tool whose When
	// names another is not served.
	Conditions []string
	// Metrics records the set's calls, loads and pools in serve's
	// Prometheus metrics (MetricsHandler), as serve --metrics does.
	Metrics bool
	// Tracer receives a span per call and one per run of its plugin, with
	// those of the host functions it calls below (host.Config.Tracer);
	// nil is off.
	Tracer trace.TracerProvider
}

// Set is a folder of plugins loaded as `plugboard serve` loads them
// (manifests from the embedded section or describe, every declared
// capability granted, each plugin compiled on first use) with the host's
// call pipeline over them: name or alias, argument validation, deadline,
// retries, result normalisation. There is no board (board calls answer
// unavailable), caller policy, decision log or request_id deduplication.
// It is safe for concurrent use.
type Set struct {
	reg *registry.Registry
	d   *dispatch.Dispatcher
	// metrics are LoadOptions.Metrics' (nil without).
	metrics *metrics.Metrics
}

// MetricsHandler serves the set's metrics in Prometheus' text format to
// any request (the caller decides who reaches it); nil without
// LoadOptions.Metrics.
func (s *Set) MetricsHandler() http.Handler {
	if s.metrics == nil {
		return nil
	}
	return promhttp.HandlerFor(s.metrics.Registry(), promhttp.HandlerOpts{})
}

// LoadDir loads every .wasm file under dir (recursively) into eng. A broken
// plugin does not fail the load: its tools are not served, and Plugin's
// error names why. Close releases the set.
func LoadDir(ctx context.Context, eng *Engine, dir string, opts LoadOptions) (*Set, error) {
	return LoadDirWith(ctx, eng, dir, opts, nil)
}

// Call runs one call through the pipeline. Every failure, the host's own
// included, is an envelope in the result.
func (s *Set) Call(ctx context.Context, req Request) *Result {
	// The conversion is of identical field lists: it stops compiling when
	// the pipeline's result changes, where it is decided what callers see.
	return (*Result)(s.d.Call(ctx, dispatch.Request{Tool: req.Tool, Arguments: req.Arguments, Progress: req.Progress, Caller: req.Caller}))
}

// Tools returns the names of the served tools, in the order they are listed.
func (s *Set) Tools() []string {
	tools := s.reg.Tools()
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Def.Name
	}
	return names
}

// Plugin returns the compiled plugin serving a tool (compiling it on first
// use), to call its exports below the pipeline. The error of a tool that is
// not served names every plugin file the set could not load and why.
func (s *Set) Plugin(ctx context.Context, tool string) (*Plugin, error) {
	t, ok := s.reg.Resolve(tool)
	if !ok {
		err := fmt.Errorf("tool %q is not served", tool)
		for _, p := range s.reg.Problems() {
			err = errors.Join(err, fmt.Errorf("%s: %w", p.Path, p.Err))
		}
		return nil, err
	}
	return t.Plugin.Runtime(ctx)
}

// Close closes every plugin of the set, waiting for calls in flight until
// ctx is done; it returns ErrBusy if some were still running.
func (s *Set) Close(ctx context.Context) error {
	return s.reg.Close(ctx)
}
