package host

import (
	"maps"
	"slices"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/registry"
)

// needView is a need a plugin declares, as the dashboard's Plugins view
// shows it: what it is and its status under the settings in force, never
// a value.
type needView struct {
	Kind        string   `json:"kind"` // config or http
	Name        string   `json:"name"` // the key or the host
	Required    bool     `json:"required,omitempty"`
	Secret      bool     `json:"secret,omitempty"`
	Paths       []string `json:"paths,omitempty"`
	Description string   `json:"description,omitempty"`
	// Setting is where the operator gives it.
	Setting string `json:"setting"`
	// Status is set or missing (config), allowed or not_allowed (http).
	Status string `json:"status"`
}

// settingsView is what the operator's settings give a plugin now, by name:
// its configuration keys (each set or empty, and whether a secret), the
// hosts it may reach and the directories it sees. No value shows.
type settingsView struct {
	Config       []configKeyView `json:"config"`
	AllowedHosts []string        `json:"allowed_hosts"`
	AllowPrivate bool            `json:"allow_private,omitempty"`
	Mounts       []mountView     `json:"mounts"`
	Stateful     bool            `json:"stateful,omitempty"`
	CallTimeout  string          `json:"call_timeout,omitempty"`
}

// configKeyView is one configuration key the settings give.
type configKeyView struct {
	Key string `json:"key"`
	// Status is set, or empty: a value config_get reads as not set.
	Status string `json:"status"`
	// Secret: the value comes from the environment or a secret file.
	Secret bool `json:"secret,omitempty"`
	// Declared: the plugin declares it among its needs.
	Declared bool `json:"declared,omitempty"`
}

// mountView is one directory the settings mount into the plugin.
type mountView struct {
	Mount    string `json:"mount"`
	Path     string `json:"path"`
	Writable bool   `json:"writable,omitempty"`
}

// needsView judges a plugin's declared needs against the settings it is
// bound to (those its calls run with) and lists those settings, by name.
// The rule for hosts is the one requests are checked by
// (abi.HTTPNeed.AllowedBy); a configuration value is set when config_get
// reads it, so an empty one is missing.
func needsView(name string, n abi.Needs, s registry.Settings) ([]needView, settingsView) {
	o := s.Options
	needs := []needView{}
	for _, c := range n.Config {
		v := needView{Kind: "config", Name: c.Key, Required: c.Required, Secret: c.Secret, Description: c.Description,
			Setting: "plugins.settings." + name + ".config." + c.Key, Status: "missing"}
		if o.Config[c.Key] != "" {
			v.Status = "set"
		}
		needs = append(needs, v)
	}
	var hosts []string
	if o.HTTP != nil {
		hosts = o.HTTP.AllowedHosts
	}
	for _, h := range n.HTTP {
		v := needView{Kind: "http", Name: h.Host, Paths: h.Paths, Description: h.Why,
			Setting: "plugins.settings." + name + ".allowed_hosts", Status: "not_allowed"}
		if h.AllowedBy(hosts) {
			v.Status = "allowed"
		}
		needs = append(needs, v)
	}
	set := settingsView{Config: []configKeyView{}, AllowedHosts: []string{}, Mounts: []mountView{}, Stateful: o.Stateful}
	for _, key := range slices.Sorted(maps.Keys(o.Config)) {
		value := o.Config[key]
		k := configKeyView{Key: key, Status: "set", Secret: value != "" && slices.Contains(o.Secrets, value),
			Declared: slices.ContainsFunc(n.Config, func(c abi.ConfigNeed) bool { return c.Key == key })}
		if value == "" {
			k.Status = "empty"
		}
		set.Config = append(set.Config, k)
	}
	if o.HTTP != nil {
		set.AllowedHosts = append(set.AllowedHosts, o.HTTP.AllowedHosts...)
		set.AllowPrivate = o.HTTP.AllowPrivate
	}
	for _, m := range o.Mounts {
		set.Mounts = append(set.Mounts, mountView{Mount: m.GuestPath, Path: m.HostPath, Writable: m.Writable})
	}
	if s.CallTimeout > 0 {
		set.CallTimeout = s.CallTimeout.String()
	}
	return needs, set
}
