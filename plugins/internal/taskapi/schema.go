package taskapi

import (
	"encoding/json"
	"reflect"

	sdk "github.com/plugboard/plugboard/sdk-guest"
)

// toolTypes records a registered tool: its input and output types, from
// which its schemas are generated, and the capability of its plugin.
type toolTypes struct {
	name       string
	in, out    reflect.Type
	capability string
}

var (
	// registered lists the tools registered so far, in order.
	registered []toolTypes
	// registering is the capability of the plugin being registered.
	registering string
)

// tool registers a task tool with its generated schemas.
func tool[In, Out any](spec sdk.ToolSpec, handler func(c *sdk.Call, in In) (Out, error)) {
	registered = append(registered, toolTypes{spec.Name, reflect.TypeFor[In](), reflect.TypeFor[Out](), registering})
	// A tool missing from schemas_gen.go has its schemas inferred by the
	// SDK, without the enums and rules; TestSchemasUpToDate fails on it.
	if s, ok := generatedSchemas[spec.Name]; ok {
		spec.InputSchema, spec.OutputSchema = json.RawMessage(s.input), json.RawMessage(s.output)
	}
	sdk.Tool(spec, handler)
}

// toolSchemas are a tool's generated input and output schemas.
type toolSchemas struct{ input, output string }
