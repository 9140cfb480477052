package registry

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
)

// A plugin is served whole or not at all. One whose names another plugin
// already serves, or which takes a name reserved for a first-party plugin
// (ReservedOwner), is refused with every name it declares: an agent that
// called one of its tools and got another plugin's answer for the next
// could not tell which plugin it is talking to, and a half-served plugin
// hides the clash until someone calls the missing tool. What is served
// keeps its names — a reload serves the plugins that were served before
// the newcomers — so dropping a file into a plugin folder can never take
// a name away from a plugin already answering it; the log and the problem
// name the newcomer, and the setting that resolves the clash.

// clashes collects the names a plugin declares that it may not serve, so
// the registry reports them once per plugin — one log line and one Problem
// naming every clashing name, the plugins kept and the way out — not once
// per name.
type clashes struct {
	names    []string // "tool echo", "prompt greet", …
	kept     []*Plugin
	reserved []string // "tool approve_attempt (tasks-control's)"
	sameName *Plugin  // a served plugin of the same name
	tools    int
}

func (c *clashes) any() bool { return len(c.names)+len(c.reserved) > 0 || c.sameName != nil }

func (c *clashes) add(kind, name string, prev *Plugin) {
	c.names = append(c.names, kind+" "+name)
	if kind == "tool" || kind == "tool alias" {
		c.tools++
	}
	if !slices.Contains(c.kept, prev) {
		c.kept = append(c.kept, prev)
	}
}

func (c *clashes) addReserved(kind, name, owner string) {
	c.reserved = append(c.reserved, fmt.Sprintf("%s %s (%s's)", kind, name, owner))
}

// report records why plugin p is not served in s, and logs it, if it
// clashed at all.
func (c *clashes) report(s *snapshot, p *Plugin, log *slog.Logger) {
	if !c.any() {
		return
	}
	var why []string
	var kept []string
	for _, k := range c.kept {
		kept = append(kept, fmt.Sprintf("%s (%s)", k.Name(), k.Path))
	}
	resolve := fmt.Sprintf("set plugins.settings.%s.prefix in the configuration file to serve its names under a prefix", p.Name())
	if c.sameName != nil {
		why = append(why, fmt.Sprintf("a plugin named %s is already served from %s", p.Name(), c.sameName.Path))
		resolve = "remove one of the two files, or give the newcomer another name in its manifest"
	}
	if len(c.names) > 0 {
		what := "names"
		if c.tools == len(c.names) {
			what = "tool names"
		}
		why = append(why, fmt.Sprintf("%d %s already served by plugin %s: %s", len(c.names), what, strings.Join(kept, ", "), strings.Join(c.names, ", ")))
	}
	if len(c.reserved) > 0 {
		why = append(why, fmt.Sprintf("%d names reserved for first-party plugins, served only by the plugin of that name installed as <name>.wasm or from its source: %s",
			len(c.reserved), strings.Join(c.reserved, ", ")))
		if c.sameName == nil {
			resolve += "; a plugin replacing a first-party one must be installed under that plugin's name"
		}
	}
	s.problems = append(s.problems, Problem{Path: p.Path, Err: fmt.Errorf(
		"plugin %s (%s) is not served, none of its names: %s; %s", p.Name(), p.Path, strings.Join(why, "; "), resolve)})
	log.Error("plugin not served: it clashes with what is already served, which keeps its names",
		"plugin", p.Name(), "path", p.Path, "why", strings.Join(why, "; "), "clashing", strings.Join(append(slices.Clone(c.names), c.reserved...), ", "),
		"kept", strings.Join(kept, ", "), "resolve", resolve)
}
