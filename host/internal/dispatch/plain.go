package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/registry"
	"github.com/plugboard/plugboard/host/internal/runtime"
)

// Calls to the functions of plain Extism modules (registry.Function), which
// the operator describes as tools in the plugin's settings. Everything
// before the plugin step — resolution, policy, validation against the
// operator's input schema, the decision log — is every tool's; this is
// only the step itself: the tool's export runs with the input the settings
// give it (the arguments object as JSON, or one string argument's text),
// under the call's deadline and the plugin's sandbox, and its output
// becomes the result — one text item, or JSON whose object is also the
// structured result. A failure (a non-zero return with the function's
// error text, a trap, the deadline, a cap) is the runtime's envelope, as
// for any plugin.

// runFunction is run for a tool served by a plain module's function.
func (d *Dispatcher) runFunction(ctx context.Context, rt *runtime.Plugin, timeout time.Duration, tool registry.Tool, req Request, fn registry.Function, ex *execution) *Result {
	input, env := functionInput(fn, req.Arguments)
	if env != nil {
		return failed(env.WithDetail("tool", req.Tool))
	}
	opts := runtime.CallOptions{Progress: req.Progress, Client: req.Client}
	if ex != nil && ex.recordHTTP {
		opts.HTTP = ex.recordRequest
	}
	// No list watch and no missing-configuration recorder: a plain module
	// has no lists to change, and the runtime blames a failure on missing
	// configuration itself (runtime.ConfigBlame) when the function returns
	// non-zero, the only error it can give.
	out, err := rt.Call(ctx, fn.Export, input, opts)
	if err != nil {
		env, ok := err.(*abi.Envelope)
		if !ok {
			env = abi.NewEnvelope(abi.CodeInternal, err.Error(), "")
		}
		if env.Code == abi.CodePluginTimeout {
			env = env.WithDetail("timeout_ms", timeout.Milliseconds())
		}
		return failed(env.WithDetail("tool", req.Tool))
	}
	return functionResult(tool, fn, out)
}

// functionInput is what the function receives: the arguments as JSON, or
// the text of its input field. The arguments passed validation against the
// tool's schema, which requires that field as a string; the checks here
// hold for a schema given in code that does not.
func functionInput(fn registry.Function, args json.RawMessage) ([]byte, *abi.Envelope) {
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	if fn.InputField == "" {
		return args, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(args, &fields); err != nil {
		return nil, abi.NewEnvelope(abi.CodeInvalidArgument, "arguments must be a JSON object: "+err.Error(),
			"send arguments as a JSON object matching the tool's inputSchema")
	}
	raw, ok := fields[fn.InputField]
	if !ok {
		env := abi.NewEnvelope(abi.CodeMissingRequired, fmt.Sprintf("%s is required", fn.InputField),
			fmt.Sprintf("add %s, a string, to the arguments", fn.InputField))
		return nil, env.WithDetail("field", fn.InputField)
	}
	var text string
	if err := json.Unmarshal(raw, &text); err != nil {
		env := abi.NewEnvelope(abi.CodeInvalidArgument, fmt.Sprintf("%s must be a string", fn.InputField),
			fmt.Sprintf("send %s as a JSON string", fn.InputField))
		return nil, env.WithDetail("field", fn.InputField)
	}
	return []byte(text), nil
}

// functionResult turns a function's output into the tool's result, as its
// settings read it. Output the settings cannot carry is the plugin's
// failure, never a result a client would refuse: text that is not UTF-8,
// "json" that does not parse, or, under an output schema, that is not an
// object matching it (clients check structuredContent against the
// outputSchema).
func functionResult(tool registry.Tool, fn registry.Function, out []byte) *Result {
	fail := func(what string) *Result {
		env := abi.NewEnvelope(abi.CodePluginFailed,
			fmt.Sprintf("function %s of plugin %s answered %s", fn.Export, tool.Plugin.Name(), what),
			fmt.Sprintf("do not retry with the same arguments; the operator serves this function as %s (plugins.settings.%s.tools: output, output_schema) and can change that",
				tool.Def.Name, tool.Plugin.Name()))
		env.Details = map[string]any{"plugin": tool.Plugin.Name(), "tool": tool.Def.Name, "export": fn.Export, "output_prefix": prefix(out, 200)}
		return failed(env)
	}
	if fn.Output != registry.FunctionJSON {
		if !utf8.Valid(out) {
			return fail(fmt.Sprintf("%d bytes that are not UTF-8 text", len(out)))
		}
		return &Result{Content: []abi.Content{{Type: abi.ContentText, Text: string(out)}}}
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, out); err != nil {
		return fail("what is not JSON: " + err.Error())
	}
	res := &Result{Content: []abi.Content{{Type: abi.ContentText, Text: buf.String()}}}
	isObject := buf.Len() > 0 && buf.Bytes()[0] == '{'
	if len(fn.OutputSchema) > 0 {
		if !isObject {
			return fail("JSON that is not an object, which its output_schema describes")
		}
		if err := checkOutput(fn.OutputSchema, buf.Bytes()); err != nil {
			return fail("JSON that does not match its output_schema: " + err.Error())
		}
	}
	if isObject {
		res.Structured = buf.Bytes()
	}
	return res
}

// checkOutput validates an object against the tool's output schema. The
// schema is resolved on every call: it is the operator's and small, and a
// cache would outlive the settings it came from.
func checkOutput(schemaJSON, out []byte) error {
	var s jsonschema.Schema
	if err := json.Unmarshal(schemaJSON, &s); err != nil {
		return fmt.Errorf("the output_schema is not a JSON Schema: %w", err)
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		return fmt.Errorf("the output_schema does not resolve: %w", err)
	}
	var v any
	if err := json.Unmarshal(out, &v); err != nil {
		return err
	}
	return resolved.Validate(v)
}
