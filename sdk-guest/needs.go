package sdk

import (
	"fmt"
	"strings"

	"github.com/plugboard/plugboard/abi"
)

// A plugin says what the operator must set for it to work — the
// configuration values it reads with Config and the hosts it calls with
// HTTP — by declaring them in init, next to its tools:
//
//	func init() {
//		sdk.Plugin("weather", "1.0.0", "Forecasts from the weather API.")
//		sdk.NeedsConfig("API_KEY", "the weather API's key, from its console", sdk.Required, sdk.Secret)
//		sdk.NeedsConfig("UNITS", "metric (the default) or imperial")
//		sdk.NeedsHTTP("api.weather.example", "the forecasts", "/v1/forecast")
//		sdk.Tool(...)
//	}
//
// The declarations go into the manifest (abi.Needs), where `plugboard
// plugin inspect`, `plugboard config check` and the dashboard read them
// and say, against the operator's plugins.settings.NAME, what is set and
// what is missing. They grant nothing: the plugin reads the values and
// reaches the hosts the operator's settings give it, declared or not.

// ConfigOption qualifies a configuration value NeedsConfig declares.
type ConfigOption int

const (
	// Required marks a value the plugin's tools cannot work without; a
	// value without it is optional (the plugin has a default).
	Required ConfigOption = iota + 1
	// Secret marks a credential: the operator should give it as "${VAR}"
	// or {"secret_file": PATH}, which plugboard masks, rather than as a
	// literal in the configuration file.
	Secret
)

// NeedsConfig declares a configuration value the plugin reads with
// Config(key): plugins.settings.NAME.config.KEY in plugboard's
// configuration. description says what the value is and where the
// operator gets it; opts are Required and Secret. Call it from init. It
// panics on a programming error — an invalid key (abi.ValidConfigKey), a
// key declared twice, an unknown option, a description over
// abi.MaxNeedTextBytes — so `plugboard plugin build` catches it.
func NeedsConfig(key, description string, opts ...ConfigOption) {
	std.needsConfig(key, description, opts...)
}

// NeedsHTTP declares a host the plugin sends requests to with HTTP,
// written as an allowed_hosts entry is (abi.CheckHostPattern:
// "api.example.com", "*.example.com", "host:8443"; without a port the
// plugin is taken to use HTTPS); why says what for, and paths, for the
// operator to read, which URL paths it calls ("/v1/*"). Call it from init.
// It panics on a programming error — an invalid host, a host declared
// twice, a path not starting with "/" — so `plugboard plugin build`
// catches it.
func NeedsHTTP(host, why string, paths ...string) { std.needsHTTP(host, why, paths...) }

func (r *registry) needsConfig(key, description string, opts ...ConfigOption) {
	need := abi.ConfigNeed{Key: key, Description: description}
	for _, o := range opts {
		switch o {
		case Required:
			need.Required = true
		case Secret:
			need.Secret = true
		default:
			panic(fmt.Sprintf("sdk: NeedsConfig(%q): unknown option %d; use sdk.Required and sdk.Secret", key, o))
		}
	}
	r.addNeeds(fmt.Sprintf("NeedsConfig(%q)", key), abi.Needs{Config: append(r.needs.Config, need), HTTP: r.needs.HTTP})
}

func (r *registry) needsHTTP(host, why string, paths ...string) {
	need := abi.HTTPNeed{Host: host, Why: why, Paths: append([]string(nil), paths...)}
	r.addNeeds(fmt.Sprintf("NeedsHTTP(%q)", host), abi.Needs{Config: r.needs.Config, HTTP: append(r.needs.HTTP, need)})
}

// addNeeds makes next the plugin's needs when it is a valid declaration,
// and panics with what is wrong otherwise: a declaration the host would
// refuse the whole manifest for is a bug of the plugin, best found when
// it registers.
func (r *registry) addNeeds(call string, next abi.Needs) {
	if err := next.Validate(); err != nil {
		panic("sdk: " + call + ": " + strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	r.needs = next
}
