package registry

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
)

// clashes collects the names a plugin declares that a plugin loaded before
// it already serves, so the registry reports them once per plugin — one log
// line and one Problem naming every clashing name, the plugin kept and the
// setting that resolves the clash — not once per name.
type clashes struct {
	names []string // "tool echo", "prompt greet", …
	kept  []*Plugin
	tools int
}

func (c *clashes) add(kind, name string, prev *Plugin) {
	c.names = append(c.names, kind+" "+name)
	if kind == "tool" || kind == "tool alias" {
		c.tools++
	}
	if !slices.Contains(c.kept, prev) {
		c.kept = append(c.kept, prev)
	}
}

// report records the clashes of plugin p in s and logs them, if any.
func (c *clashes) report(s *snapshot, p *Plugin, log *slog.Logger) {
	if len(c.names) == 0 {
		return
	}
	kept := make([]string, len(c.kept))
	for i, k := range c.kept {
		kept[i] = fmt.Sprintf("%s (%s)", k.Name(), k.Path)
	}
	resolve := fmt.Sprintf("set plugins.settings.%s.prefix in the configuration file to serve its names under a prefix", p.Name())
	what := "names"
	if c.tools == len(c.names) {
		what = "tool names"
	}
	s.problems = append(s.problems, Problem{Path: p.Path, Err: fmt.Errorf(
		"%d %s already served by plugin %s, kept; not served from plugin %s (%s): %s; %s",
		len(c.names), what, strings.Join(kept, ", "), p.Name(), p.Path, strings.Join(c.names, ", "), resolve)})
	log.Error("duplicate "+what+": the plugin loaded first keeps them",
		"plugin", p.Name(), "path", p.Path, "clashing", strings.Join(c.names, ", "),
		"kept", strings.Join(kept, ", "), "resolve", resolve)
}
