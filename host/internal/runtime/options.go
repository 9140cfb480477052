package runtime

import (
	"context"
	"time"
)

// PluginOptions are what the operator set for one plugin (its entry under
// plugins.settings in the configuration file) that the engine enforces. The
// zero value is the default sandbox: no configuration values, no network,
// no files, pooled instances, the engine's limits.
type PluginOptions struct {
	// Grants are the capabilities the plugin may use in abi.HostModule.
	Grants []string
	// Config is what config_get reads: values already resolved (literal,
	// ${ENV} or a secret file's content).
	Config map[string]string
	// Secrets are values that must never appear in the host's log, an
	// envelope or the decision log: the resolved values of configuration
	// entries that came from the environment or a secret file.
	Secrets []string
	// HTTP is the egress policy of Extism's http_request; nil refuses
	// every request, naming the setting that would allow it.
	HTTP *Egress
	// Mounts are host directories visible in the plugin's WASI
	// filesystem.
	Mounts []Mount
	// Stateful runs the plugin as one long-lived instance whose globals
	// and Extism vars persist across calls; calls are serialised.
	Stateful bool
	// MaxInstances and MemoryLimitPages override the engine's limits for
	// this plugin when > 0.
	MaxInstances     int
	MemoryLimitPages uint32
	// Limits override the engine's (Config.Limits) field by field: the
	// caps on what the plugin makes the host keep, write or hold outside
	// its linear memory (limits.go).
	Limits Limits
	// Reload returns the module's bytes again, so the engine can release
	// the compiled module of a plugin not being called and load it on its
	// next call (Config.CodeIdleTimeout); nil keeps it loaded. The bytes
	// must be those compiled first: anything else is refused.
	Reload func() ([]byte, error) `json:"-"`
}

// Egress is what a plugin may reach over HTTP.
type Egress struct {
	// AllowedHosts are exact host names, "*.domain" (any subdomain, not
	// the domain itself) or either with ":port"; without a port, 80 and
	// 443 only.
	AllowedHosts []string
	// AllowPrivate lets the plugin reach loopback, private, link-local and
	// cloud-metadata addresses (refused otherwise, whatever the name).
	AllowPrivate bool
	// MaxResponseBytes caps one response body (0: the engine's
	// MaxHostCallBytes).
	MaxResponseBytes int64
	// Timeout bounds one request inside the call's deadline (0: the
	// call's deadline alone).
	Timeout time.Duration
}

// Mount is one host directory in the plugin's WASI filesystem.
type Mount struct {
	// HostPath is the absolute directory on the host; GuestPath where the
	// plugin sees it (absolute, e.g. /data).
	HostPath, GuestPath string
	// Writable lets the plugin create, change and remove files under it;
	// otherwise it is read-only.
	Writable bool
}

// CompileWith compiles a module like Compile, for a plugin with the
// operator's options.
func (e *Engine) CompileWith(ctx context.Context, name string, wasm []byte, opts PluginOptions) (*Plugin, error) {
	return e.compile(ctx, name, wasm, opts)
}
