package host

import "github.com/plugboard/plugboard/host/internal/registry"

// LoadSettings is one plugin's settings (plugins.settings.NAME) as serve
// binds them, for a plugin folder loaded without a host
// (plugin.LoadDirWith, whose plugin.Settings this is): the conformance kit
// runs plugins with the configuration serve would give them, converted by
// serve's own code so the two cannot drift apart.
func LoadSettings(s PluginSetting) registry.Settings {
	return settingsOf(s)
}
