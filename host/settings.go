package host

// The operator's per-plugin settings (the configuration file's
// plugins.settings): turned into what the registry binds each plugin with,
// and the plugins with a source fetched and checked against the lockfile.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/config"
	"github.com/plugboard/plugboard/host/internal/pluginsrc"
	"github.com/plugboard/plugboard/host/internal/registry"
	"github.com/plugboard/plugboard/host/internal/runtime"
)

// PluginSetting is the operator's settings of one plugin (see
// config.PluginSetting); Config.PluginSettings holds them by plugin name.
// An alias because host/config is public: the configuration file's type is
// already one callers can name.
type PluginSetting = config.PluginSetting

// LockFileName is the lockfile pinning the plugins with a source, in the
// configuration file's directory.
const LockFileName = pluginsrc.LockFileName

// registrySettings turns the operator's settings into the registry's, and
// resolves the sources: each source plugin's module, fetched (or read from
// the cache) and checked against the lockfile next to configFile. A source
// that cannot be loaded is logged once, as an error naming the plugin, and
// handed to the registry as a problem.
func registrySettings(ctx context.Context, settings map[string]PluginSetting, configFile, dataDir string, log *slog.Logger) (map[string]registry.Settings, []registry.Source) {
	out := make(map[string]registry.Settings, len(settings))
	var sources []registry.Source
	var lock *pluginsrc.Lock
	var lockErr error
	lockFile := ""
	if configFile != "" {
		lockFile = pluginsrc.LockFor(configFile)
	}
	for name, s := range settings {
		out[name] = settingsOf(s)
		if s.Source == "" {
			continue
		}
		src := registry.Source{Name: name, Origin: s.Source}
		parsed, err := pluginsrc.Parse(s.Source, "")
		switch {
		case err != nil:
			src.Err = fmt.Errorf("plugins.settings.%s.source: %w", name, err)
		case lockFile == "":
			src.Err = fmt.Errorf("plugin %s (%s) is not loaded: a plugin with a source is pinned in a lockfile next to the configuration file, and there is none", name, s.Source)
		default:
			if lock == nil && lockErr == nil {
				lock, lockErr = pluginsrc.ReadLock(lockFile)
			}
			if lockErr != nil {
				src.Err = fmt.Errorf("plugin %s is not loaded: %w", name, lockErr)
				break
			}
			fix := "plugboard plugin lock --config " + configFile + " " + name
			src.Path, src.Err = pluginsrc.Resolve(ctx, &pluginsrc.Fetcher{}, pluginsrc.CacheIn(dataDir), name, parsed, lock, lockFile, fix)
		}
		// A source that failed is handed on all the same: the registry
		// reports it, and serves no folder's plugin under its name (the
		// settings, secrets included, are the pinned plugin's).
		var mm *pluginsrc.MismatchError
		switch {
		case errors.As(src.Err, &mm):
			log.Error("plugin not loaded: its bytes do not match the lockfile", "plugin", name, "source", s.Source,
				"expected_sha256", orNone(mm.Expected), "actual_sha256", mm.Actual, "fix", mm.Fix, "err", src.Err)
		case src.Err != nil:
			log.Error("plugin not loaded", "plugin", name, "source", s.Source, "err", src.Err)
		}
		sources = append(sources, src)
	}
	return out, sources
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// settingsOf is one plugin's settings as the registry binds them.
func settingsOf(s PluginSetting) registry.Settings {
	r := registry.Settings{Prefix: s.Prefix, Skip: s.Skip, Rename: s.Rename}
	o := &r.Options
	if len(s.Config) > 0 {
		o.Config = make(map[string]string, len(s.Config))
		for k, v := range s.Config {
			o.Config[k] = v.Value()
			if v.Secret() && v.Value() != "" {
				o.Secrets = append(o.Secrets, v.Value())
			}
		}
	}
	if len(s.AllowedHosts) > 0 {
		o.HTTP = &runtime.Egress{AllowedHosts: s.AllowedHosts, AllowPrivate: s.AllowPrivate}
	}
	for _, p := range s.AllowedPaths {
		o.Mounts = append(o.Mounts, runtime.Mount{HostPath: p.Path, GuestPath: p.Mount, Writable: p.Writable})
	}
	o.Stateful = s.Stateful
	if s.MaxInstances != nil {
		o.MaxInstances = *s.MaxInstances
	}
	if s.MemoryLimitMiB != nil {
		o.MemoryLimitPages = uint32(*s.MemoryLimitMiB * 16)
	}
	o.Limits = limitsOf(s)
	if s.CallTimeout != nil {
		r.CallTimeout = s.CallTimeout.D()
	}
	r.Functions = functionsOf(s.Tools)
	return r
}

// functionsOf is plugins.settings.NAME.tools as the registry serves them:
// the functions of a plain Extism module, each a tool.
func functionsOf(tools []config.FunctionTool) []registry.Function {
	var out []registry.Function
	for _, t := range tools {
		f := registry.Function{Name: t.Name, Title: t.Title, Description: t.Description, Export: t.Export,
			InputSchema: t.InputSchema, InputField: t.InputField, Output: t.Output, OutputSchema: t.OutputSchema}
		if a := t.Annotations; a != nil {
			f.Annotations = &abi.Annotations{ReadOnlyHint: a.ReadOnly, DestructiveHint: a.Destructive, IdempotentHint: a.Idempotent, OpenWorldHint: a.OpenWorld}
		}
		out = append(out, f)
	}
	return out
}

// PlainManifest is the manifest serve makes of wasm, served as the plugin
// name with settings s, when it is a plain Extism module (plain: it
// exports neither describe nor call nor hyper-mcp's list_tools and
// call_tool): the tools of plugins.settings.NAME.tools, or err, why serve
// refuses the module (no tools described, an export it lacks). For
// plugboard plugin inspect, which shows what serve would serve.
func PlainManifest(name string, wasm []byte, s PluginSetting) (m *abi.Manifest, plain bool, err error) {
	return registry.PlainManifest(name, wasm, registry.Settings{Functions: functionsOf(s.Tools)})
}

// PluginLimitSettings lists the caps a plugin with settings s runs under on
// an engine without limits of its own: each by its plugins.settings field,
// s's value where it sets one, else the default.
func PluginLimitSettings(s PluginSetting) []runtime.LimitSetting {
	return limitsOf(s).Or(runtime.DefaultLimits()).Settings()
}

// limitsOf is the caps a plugin's settings give (zero: the engine's).
func limitsOf(s PluginSetting) runtime.Limits {
	size := func(b *config.ByteSize) int {
		if b == nil {
			return 0
		}
		return int(*b)
	}
	count := func(n *int) int {
		if n == nil {
			return 0
		}
		return *n
	}
	return runtime.Limits{
		MaxVarBytes:          size(s.MaxVarBytes),
		MaxVars:              count(s.MaxVars),
		MaxLogBytes:          size(s.MaxLogBytes),
		MaxNotificationBytes: size(s.MaxNotificationBytes),
		MaxHTTPRequests:      count(s.MaxHTTPRequests),
		MaxHTTPConnections:   count(s.MaxHTTPConnections),
		MaxHTTPHeaderBytes:   size(s.MaxHTTPHeaderBytes),
	}
}

// longestCallTimeout is the longest call_timeout the settings give.
func longestCallTimeout(settings map[string]PluginSetting) time.Duration {
	var longest time.Duration
	for _, s := range settings {
		if s.CallTimeout != nil {
			longest = max(longest, s.CallTimeout.D())
		}
	}
	return longest
}

// SetPluginSettings replaces the per-plugin settings while the host runs
// (serve re-reads the configuration file's plugins section when it
// changes): sources are fetched and checked against the lockfile again,
// plugins whose settings changed are bound anew (recompiled on their next
// call; calls in flight finish on the old binding), and clients are told
// the tool list changed.
func (h *Host) SetPluginSettings(ctx context.Context, settings map[string]PluginSetting) error {
	rs, sources := registrySettings(ctx, settings, h.cfg.ConfigFile, h.cfg.DataDir, h.log)
	h.registry.SetSettings(rs, sources)
	_, err := h.registry.Reload(ctx)
	return err
}
