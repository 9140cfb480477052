package plugin

import (
	"context"

	"github.com/plugboard/plugboard/abi"

	"github.com/plugboard/plugboard/host/internal/dispatch"
	"github.com/plugboard/plugboard/host/internal/metrics"
	"github.com/plugboard/plugboard/host/internal/registry"
	"github.com/plugboard/plugboard/host/internal/tracing"
)

// Settings are the operator's settings of one plugin as `plugboard serve`
// binds them: what it is compiled with (configuration values and secrets,
// egress, mounts, limits, state), its call timeout and the names its tools
// are served under. host.LoadSettings makes them of a configuration file's
// plugins.settings entry, exactly as serve does. An alias of the
// registry's: they are handed to it as they are, and made by
// host.LoadSettings.
type Settings = registry.Settings

// LoadDirWith is LoadDir with the operator's settings of each plugin, by
// the name the host serves it under, bound as serve binds them. The
// conformance kit runs plugins with it, so that a plugin needing
// configuration gets the values serve would give it.
func LoadDirWith(ctx context.Context, eng *Engine, dir string, opts LoadOptions, settings map[string]Settings) (*Set, error) {
	var m *metrics.Metrics
	if opts.Metrics {
		m = metrics.New()
	}
	reg, err := registry.Load(ctx, registry.Options{Dirs: []string{dir}, DataDir: opts.DataDir, CacheKey: eng.Config().CacheKey, Engine: eng,
		DescribeTimeout: opts.DescribeTimeout, Conditions: opts.Conditions, Settings: settings, Metrics: m})
	if err != nil {
		return nil, err
	}
	do := dispatch.Options{DefaultTimeout: opts.CallTimeout, MaxTimeout: opts.CallTimeout, Metrics: m, Tracer: tracing.New(opts.Tracer)}
	if opts.NoRetry {
		do.Retry.Max = -1
	}
	return &Set{reg: reg, d: dispatch.New(reg, do), metrics: m}, nil
}

// PlainManifest is the manifest serve makes of wasm served as the plugin
// name under settings s, when it is a plain Extism module (plain: it
// exports neither describe nor call nor hyper-mcp's list_tools and
// call_tool): the tools s.Functions describe (plugins.settings.NAME.tools),
// or err, serve's reason for refusing it, word for word.
func PlainManifest(name string, wasm []byte, s Settings) (m *abi.Manifest, plain bool, err error) {
	return registry.PlainManifest(name, wasm, s)
}
