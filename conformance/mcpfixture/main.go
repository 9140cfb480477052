// Command mcpfixture is the plugin `make conformance-mcp` serves to the
// official MCP conformance suite (@modelcontextprotocol/conformance): the
// tools, resources, resource templates, prompts and completions its server
// scenarios call by name, built on the guest SDK like any plugin. It shows
// every ABI version 2 feature end to end: content other than text, log
// notifications, progress, sampling and elicitation during a call, and
// Call.Ask (rounds.go) for the 2026-07-28 input-required scenarios
// (SEP-2322), which at 2025-11-25 the host answers with server-to-client
// requests instead.
//
// Not here: test_trigger_tool_change and test_trigger_prompt_change of the
// server-stateless scenario, which change the server's tool or prompt list
// at run time; a plugin declares its list once, in its manifest.
package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/plugboard/plugboard/abi"
	sdk "github.com/plugboard/plugboard/sdk-guest"
)

// A 1x1 red PNG and a WAV file of silence, the smallest valid samples.
var (
	pngData, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")
	wavData, _ = base64.StdEncoding.DecodeString("UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=")
)

// none is the input of a tool without arguments.
type none struct{}

type samplingIn struct {
	Prompt string `json:"prompt" jsonschema:"the prompt to send to the client's model"`
}

type elicitationIn struct {
	Message string `json:"message" jsonschema:"the message to show the user"`
}

func init() {
	sdk.Plugin("mcpfixture", "1.0.0", "The tools, resources and prompts the MCP conformance suite expects.")
	sdk.Require(abi.CapSampling, abi.CapElicitation)
	tools()
	resources()
	prompts()
	inputRequired()
}

func tool[In any](name, description string, h func(c *sdk.Call, in In) (*sdk.Result, error)) {
	sdk.Tool(sdk.ToolSpec{Name: name, Description: description}, h)
}

func text(s string) (*sdk.Result, error) {
	return &sdk.Result{Content: []abi.Content{sdk.Text(s)}}, nil
}

func tools() {
	tool("test_simple_text", "Returns one text item.", func(*sdk.Call, none) (*sdk.Result, error) {
		return text("This is a simple text response for testing.")
	})
	tool("test_image_content", "Returns one image item (a PNG).", func(*sdk.Call, none) (*sdk.Result, error) {
		return &sdk.Result{Content: []abi.Content{sdk.Image(pngData, "image/png")}}, nil
	})
	tool("test_audio_content", "Returns one audio item (a WAV).", func(*sdk.Call, none) (*sdk.Result, error) {
		return &sdk.Result{Content: []abi.Content{sdk.Audio(wavData, "audio/wav")}}, nil
	})
	tool("test_embedded_resource", "Returns one embedded text resource.", func(*sdk.Call, none) (*sdk.Result, error) {
		return &sdk.Result{Content: []abi.Content{
			sdk.Embedded(sdk.TextResource("test://embedded-resource", "text/plain", "This is an embedded resource content.")),
		}}, nil
	})
	tool("test_multiple_content_types", "Returns text, an image and an embedded resource.", func(*sdk.Call, none) (*sdk.Result, error) {
		return &sdk.Result{Content: []abi.Content{
			sdk.Text("Multiple content types test:"),
			sdk.Image(pngData, "image/png"),
			sdk.Embedded(sdk.TextResource("test://mixed-content-resource", "application/json", `{"test":"data","value":123}`)),
		}}, nil
	})
	tool("test_resource_link", "Returns a link to the static text resource.", func(*sdk.Call, none) (*sdk.Result, error) {
		return &sdk.Result{Content: []abi.Content{sdk.ResourceLink("test://static-text", "static-text", "text/plain")}}, nil
	})
	tool("test_tool_with_logging", "Sends three info log notifications, 50 ms apart.", func(c *sdk.Call, _ none) (*sdk.Result, error) {
		c.Notify("info", "Tool execution started")
		time.Sleep(50 * time.Millisecond)
		c.Notify("info", "Tool processing data")
		time.Sleep(50 * time.Millisecond)
		c.Notify("info", "Tool execution completed")
		return text("Tool with logging executed successfully")
	})
	tool("test_tool_with_progress", "Reports progress 0, 50 and 100 of 100, 50 ms apart.", func(c *sdk.Call, _ none) (*sdk.Result, error) {
		for i, p := range []float64{0, 50, 100} {
			if i > 0 {
				time.Sleep(50 * time.Millisecond)
			}
			c.Progress(p, 100, fmt.Sprintf("Completed step %.0f of 100", p))
		}
		return text("Tool with progress executed successfully")
	})
	// Beyond the suite: a call long enough to cancel (plugboard's client
	// matrix cancels it at its first progress and expects the host to
	// report it cancelled, not finished).
	tool("test_slow_progress", "Reports progress every 50 ms for 10 s.", func(c *sdk.Call, _ none) (*sdk.Result, error) {
		const steps = 200
		for i := range steps {
			c.Progress(float64(i), steps, fmt.Sprintf("step %d of %d", i, steps))
			time.Sleep(50 * time.Millisecond)
		}
		return text("Slow progress finished")
	})
	tool("test_error_handling", "Always fails.", func(*sdk.Call, none) (*sdk.Result, error) {
		return nil, sdk.Fail(abi.CodeToolError, "This tool intentionally returns an error for testing", "")
	})
	tool("test_sampling", "Asks the client's model to answer prompt.", func(c *sdk.Call, in samplingIn) (*sdk.Result, error) {
		res, err := c.Sample(abi.SampleRequest{
			Messages:  []abi.SamplingMessage{{Role: "user", Content: sdk.Text(in.Prompt)}},
			MaxTokens: 100,
		})
		if err != nil {
			return nil, err
		}
		return text("LLM response: " + res.Content.Text)
	})
	tool("test_elicitation", "Asks the user for a username and an email.", func(c *sdk.Call, in elicitationIn) (*sdk.Result, error) {
		return elicit(c, in.Message, json.RawMessage(`{"type":"object","properties":{
			"username":{"type":"string","description":"User's response"},
			"email":{"type":"string","description":"User's email address"}},
			"required":["username","email"]}`))
	})
	tool("test_elicitation_sep1034_defaults", "Asks the user for fields that all have defaults (SEP-1034).", func(c *sdk.Call, _ none) (*sdk.Result, error) {
		return elicit(c, "Test client default value handling - please accept with defaults", json.RawMessage(`{"type":"object","properties":{
			"name":{"type":"string","description":"User name","default":"John Doe"},
			"age":{"type":"integer","description":"User age","default":30},
			"score":{"type":"number","description":"User score","default":95.5},
			"status":{"type":"string","description":"User status","enum":["active","inactive","pending"],"default":"active"},
			"verified":{"type":"boolean","description":"Verification status","default":true}}}`))
	})
	tool("test_elicitation_sep1330_enums", "Asks the user to choose from the five enum forms (SEP-1330).", func(c *sdk.Call, _ none) (*sdk.Result, error) {
		return elicit(c, "Test enum schema variants", json.RawMessage(`{"type":"object","properties":{
			"untitledSingle":{"type":"string","enum":["option1","option2","option3"]},
			"titledSingle":{"type":"string","oneOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},
			"legacyEnum":{"type":"string","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},
			"untitledMulti":{"type":"array","minItems":1,"maxItems":3,"items":{"type":"string","enum":["option1","option2","option3"]}},
			"titledMulti":{"type":"array","minItems":1,"maxItems":3,"items":{"anyOf":[{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}}}`))
	})
	sdk.Tool(sdk.ToolSpec{
		Name:        "json_schema_2020_12_tool",
		Description: "Tool with JSON Schema 2020-12 features ($schema, $defs, $ref, additionalProperties).",
		InputSchema: json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",
			"$defs":{"address":{"type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},
			"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"}},
			"additionalProperties":false}`),
	}, func(_ *sdk.Call, in map[string]any) (*sdk.Result, error) {
		b, _ := json.Marshal(in)
		return text("JSON Schema 2020-12 tool called with: " + string(b))
	})
}

func elicit(c *sdk.Call, message string, schema json.RawMessage) (*sdk.Result, error) {
	res, err := c.Elicit(message, schema)
	if err != nil {
		return nil, err
	}
	content, _ := json.Marshal(res.Content)
	return text(fmt.Sprintf("Elicitation completed: action=%s, content=%s", res.Action, content))
}

func resources() {
	sdk.Resource(sdk.ResourceSpec{URI: "test://static-text", Name: "static-text", Description: "A static text resource", MIMEType: "text/plain"},
		func(_ *sdk.Call, uri string) ([]abi.ResourceContents, error) {
			return []abi.ResourceContents{sdk.TextResource(uri, "text/plain", "This is the content of the static text resource.")}, nil
		})
	sdk.Resource(sdk.ResourceSpec{URI: "test://static-binary", Name: "static-binary", Description: "A static binary resource (a PNG)", MIMEType: "image/png"},
		func(_ *sdk.Call, uri string) ([]abi.ResourceContents, error) {
			return []abi.ResourceContents{sdk.BlobResource(uri, "image/png", pngData)}, nil
		})
	sdk.Resource(sdk.ResourceSpec{URI: "test://watched-resource", Name: "watched-resource", Description: "A resource clients may subscribe to", MIMEType: "text/plain"},
		func(_ *sdk.Call, uri string) ([]abi.ResourceContents, error) {
			return []abi.ResourceContents{sdk.TextResource(uri, "text/plain", "Watched resource content")}, nil
		})
	sdk.ResourceTemplate(sdk.ResourceTemplateSpec{
		URITemplate: "test://template/{id}/data", Name: "template", Description: "Data for an id", MIMEType: "application/json",
		Complete: prefixed("1", "12", "123", "1234"),
	}, func(_ *sdk.Call, uri string, vars map[string]string) ([]abi.ResourceContents, error) {
		b, _ := json.Marshal(map[string]any{"id": vars["id"], "templateTest": true, "data": "Data for ID: " + vars["id"]})
		return []abi.ResourceContents{sdk.TextResource(uri, "application/json", string(b))}, nil
	})
}

// prefixed completes an argument with the candidates that start with what
// was typed so far.
func prefixed(candidates ...string) sdk.CompleteFunc {
	return func(_ *sdk.Call, arg abi.CompletionArg, _ map[string]string) (abi.Completion, error) {
		out := []string{}
		for _, c := range candidates {
			if strings.HasPrefix(c, arg.Value) {
				out = append(out, c)
			}
		}
		return abi.Completion{Values: out, Total: len(out)}, nil
	}
}

func userText(s string) abi.PromptMessage { return sdk.Message("user", sdk.Text(s)) }

func prompts() {
	sdk.Prompt(sdk.PromptSpec{Name: "test_simple_prompt", Title: "Simple Test Prompt", Description: "A prompt without arguments"},
		func(*sdk.Call, map[string]string) (*abi.GetPromptResult, error) {
			return &abi.GetPromptResult{Messages: []abi.PromptMessage{userText("This is a simple prompt for testing.")}}, nil
		})
	sdk.Prompt(sdk.PromptSpec{
		Name: "test_prompt_with_arguments", Title: "Prompt With Arguments", Description: "A prompt with two required arguments",
		Arguments: []abi.PromptArgument{
			{Name: "arg1", Description: "First test argument", Required: true},
			{Name: "arg2", Description: "Second test argument", Required: true},
		},
		Complete: prefixed("paris", "park", "party", "test", "testing", "tested"),
	}, func(_ *sdk.Call, args map[string]string) (*abi.GetPromptResult, error) {
		return &abi.GetPromptResult{Messages: []abi.PromptMessage{
			userText(fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", args["arg1"], args["arg2"])),
		}}, nil
	})
	sdk.Prompt(sdk.PromptSpec{
		Name: "test_prompt_with_embedded_resource", Title: "Prompt With Embedded Resource", Description: "A prompt embedding a resource",
		Arguments: []abi.PromptArgument{{Name: "resourceUri", Description: "URI of the resource to embed", Required: true}},
	}, func(_ *sdk.Call, args map[string]string) (*abi.GetPromptResult, error) {
		return &abi.GetPromptResult{Messages: []abi.PromptMessage{
			sdk.Message("user", sdk.Embedded(sdk.TextResource(args["resourceUri"], "text/plain", "Embedded resource content for testing."))),
			userText("Please process the embedded resource above."),
		}}, nil
	})
	sdk.Prompt(sdk.PromptSpec{Name: "test_prompt_with_image", Title: "Prompt With Image", Description: "A prompt holding an image"},
		func(*sdk.Call, map[string]string) (*abi.GetPromptResult, error) {
			return &abi.GetPromptResult{Messages: []abi.PromptMessage{
				sdk.Message("user", sdk.Image(pngData, "image/png")),
				userText("Please analyze the image above."),
			}}, nil
		})
}

func main() {}
