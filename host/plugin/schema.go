package plugin

import (
	"encoding/json"

	"github.com/plugboard/plugboard/host/internal/registry"
)

// InputSchemaProblem is what `plugboard serve` reports of the input schema
// of tool (its name in the manifest) of plugin when the host cannot compile
// it: "" when the host compiles it; else the problem, word for word as the
// server's log and the dashboard give it, and whether the tool is refused
// (not served) or served with its arguments left to the plugin.
func InputSchemaProblem(plugin, tool string, inputSchema json.RawMessage) (problem string, refused bool) {
	p := registry.CheckInputSchema(plugin, tool, inputSchema)
	if p == nil {
		return "", false
	}
	return p.Error(), p.Refused
}
