package registry

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/schema"
)

// A tool's input schema is compiled when its plugin loads (schema.Check),
// so that a schema the host cannot use is reported where the operator
// looks — serve's log, the registry's problems the dashboard lists, and
// `plugboard plugin inspect`, all with the one message of SchemaProblem —
// and not first met by an agent as an error of its call.
//
// Such a tool is served with its arguments left to its plugin (the
// dispatcher's validator checks nothing the schema would), unless the
// schema also breaks the shape MCP clients check every tool against: a
// top-level "required" that is not an array of names, or "properties"
// that is not an object of schemas. The official TypeScript SDK (under
// Claude Code, MCP Inspector and most editors) refuses the whole
// tools/list over one such tool, so serving it would take every other tool
// away from those clients; it is refused alone, and the plugin's other
// tools are served.

// SchemaProblem is a tool's input schema the host cannot compile.
type SchemaProblem struct {
	Plugin string
	// Tool is the tool's name in the plugin's manifest.
	Tool string
	// Refused is true when the tool is not served (its schema breaks the
	// tool shape MCP clients check); false when it is served with its
	// arguments left to the plugin.
	Refused bool
	// Err says what is wrong and where (a *schema.CompileError).
	Err error
}

func (e *SchemaProblem) Error() string {
	if e.Refused {
		return fmt.Sprintf("plugin %s, tool %q is not served: its inputSchema cannot be compiled (%v), and MCP clients that check "+
			"tool schemas (the official TypeScript SDK) refuse the whole tools/list over it; the plugin's authors must fix the schema",
			e.Plugin, e.Tool, e.Err)
	}
	return fmt.Sprintf("plugin %s, tool %q: its inputSchema cannot be compiled (%v); the host does not check the tool's "+
		"arguments and leaves them to the plugin; the plugin's authors should fix the schema", e.Plugin, e.Tool, e.Err)
}

func (e *SchemaProblem) Unwrap() error { return e.Err }

// CheckInputSchema compiles the input schema of tool (its manifest name) of
// plugin as the host does, and returns nil or the problem it reports.
func CheckInputSchema(plugin, tool string, inputSchema json.RawMessage) *SchemaProblem {
	v := checkSchema(inputSchema)
	if v.err == nil {
		return nil
	}
	return &SchemaProblem{Plugin: plugin, Tool: tool, Refused: v.refused, Err: v.err}
}

// schemaVerdict is what CheckInputSchema found of one schema text.
type schemaVerdict struct {
	err     error
	refused bool
}

// verdicts remembers the verdict on each schema text: every reload builds
// the snapshot again with every plugin, and compiling all the schemas anew
// each time would cost milliseconds (the 31 first-party tools: 6 to 16 ms).
// It is emptied when it reaches maxVerdicts, so schemas of plugins long
// replaced are not kept forever.
var verdicts struct {
	sync.Mutex
	m map[string]schemaVerdict
}

const maxVerdicts = 4096

func checkSchema(inputSchema json.RawMessage) schemaVerdict {
	key := string(inputSchema)
	verdicts.Lock()
	v, ok := verdicts.m[key]
	verdicts.Unlock()
	if ok {
		return v
	}
	if v.err = schema.Check(inputSchema); v.err != nil {
		v.refused = breaksClients(inputSchema)
	}
	verdicts.Lock()
	if verdicts.m == nil || len(verdicts.m) >= maxVerdicts {
		verdicts.m = map[string]schemaVerdict{}
	}
	verdicts.m[key] = v
	verdicts.Unlock()
	return v
}

// breaksClients reports whether a schema's top level breaks the shape the
// TypeScript SDK checks a Tool's inputSchema against: "properties" a record
// of objects, "required" an array of strings.
func breaksClients(inputSchema json.RawMessage) bool {
	var top struct {
		Properties json.RawMessage `json:"properties"`
		Required   json.RawMessage `json:"required"`
	}
	if json.Unmarshal(inputSchema, &top) != nil {
		return true
	}
	if len(top.Properties) > 0 && string(top.Properties) != "null" {
		var props map[string]json.RawMessage
		if json.Unmarshal(top.Properties, &props) != nil {
			return true
		}
		for _, p := range props {
			// JavaScript's typeof is "object" for objects and arrays alike.
			if len(p) == 0 || (p[0] != '{' && p[0] != '[') {
				return true
			}
		}
	}
	if len(top.Required) > 0 && string(top.Required) != "null" {
		var names []string
		if json.Unmarshal(top.Required, &names) != nil {
			return true
		}
	}
	return false
}

// servable checks the input schema of def (p's tool pluginName, as the
// settings serve it) and reports a problem in s and the log. It returns
// false for a tool to refuse.
func (s *snapshot) servable(p *Plugin, pluginName string, def *abi.Tool, log *slog.Logger) bool {
	prob := CheckInputSchema(p.Name(), pluginName, def.InputSchema)
	if prob == nil {
		return true
	}
	where := p.Path
	if p.Origin != "" {
		where = p.Origin
	}
	s.problems = append(s.problems, Problem{Path: where, Err: prob})
	if prob.Refused {
		log.Error("tool not served: its input schema cannot be compiled and would break MCP clients' tools/list",
			"plugin", p.Name(), "tool", def.Name, "path", where, "err", prob.Error())
		return false
	}
	log.Warn("tool input schema cannot be compiled: the host leaves the tool's arguments to its plugin",
		"plugin", p.Name(), "tool", def.Name, "path", where, "err", prob.Error())
	return true
}
