//go:build wasip1

// Command hyperv2 is a test plugin written straight against
// github.com/extism/go-pdk, in the shape of hyper-mcp's current plugin
// interface (v2): no describe and no call, but one export per MCP method —
// list_tools and call_tool, list_resources, list_resource_templates and
// read_resource, list_prompts and get_prompt, complete — each taking
// {"request": <MCP params>, "context": {"id", "_meta"}} (the lists only the
// context) and answering the MCP result itself. It proves plugboard serves
// such plugins unchanged and keeps what their error results hold.
package main

import (
	"encoding/json"
	"strings"

	"github.com/extism/go-pdk"
)

type requestContext struct {
	ID   any            `json:"id"`
	Meta map[string]any `json:"_meta"`
}

const tools = `{"tools":[
 {"name":"v2_echo","title":"Echo","description":"Use when: checking a hyper-mcp v2 plugin answers.\nRequired: text\nOptional: none\nNext: read the text back.\nAvoid: nothing.",
  "inputSchema":{"type":"object","properties":{"text":{"type":"string","description":"what to echo"}},"required":["text"]},
  "annotations":{"readOnlyHint":true}},
 {"name":"v2_fail","description":"Use when: checking how an error result with several items reaches the client.\nRequired: none\nOptional: none\nNext: read every item.\nAvoid: nothing.",
  "inputSchema":{"type":"object","properties":{}}},
 {"name":"v2_needs_key","description":"Use when: checking a missing configuration value is blamed on the operator.\nRequired: none\nOptional: as_result\nNext: set the key.\nAvoid: nothing.",
  "inputSchema":{"type":"object","properties":{"as_result":{"type":"boolean","description":"report it as an isError result instead of an error status"}}}}
]}`

// list_tools answers tools/list.
//
//go:wasmexport list_tools
func listTools() int32 {
	var in struct {
		Context requestContext `json:"context"`
	}
	if err := pdk.InputJSON(&in); err != nil {
		pdk.SetError(err)
		return -1
	}
	pdk.OutputString(tools)
	return 0
}

type content map[string]any

type callResult struct {
	Content           []content      `json:"content"`
	IsError           bool           `json:"isError,omitempty"`
	StructuredContent map[string]any `json:"structuredContent,omitempty"`
}

// call_tool answers tools/call.
//
//go:wasmexport call_tool
func callTool() int32 {
	var in struct {
		Request struct {
			Name      string         `json:"name"`
			Arguments map[string]any `json:"arguments"`
		} `json:"request"`
		Context requestContext `json:"context"`
	}
	if err := pdk.InputJSON(&in); err != nil {
		pdk.SetError(err)
		return -1
	}
	var res callResult
	switch in.Request.Name {
	case "v2_echo":
		text, _ := in.Request.Arguments["text"].(string)
		res = callResult{
			Content:           []content{{"type": "text", "text": text}},
			StructuredContent: map[string]any{"text": text, "request_id": in.Context.ID},
		}
	case "v2_fail":
		res = callResult{IsError: true, Content: []content{
			{"type": "text", "text": "first problem"},
			{"type": "text", "text": "second problem", "annotations": map[string]any{"audience": []string{"user"}, "priority": 0.9}},
			{"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png",
				"annotations": map[string]any{"audience": []string{"assistant"}, "priority": 0.5, "lastModified": "2025-01-12T15:00:58Z"}},
			{"type": "resource_link", "uri": "hyper://logs/1", "name": "log", "mimeType": "text/plain"},
		}}
	case "v2_needs_key":
		if _, ok := pdk.GetConfig("api-key"); !ok {
			if asResult, _ := in.Request.Arguments["as_result"].(bool); asResult {
				res = callResult{IsError: true, Content: []content{{"type": "text", "text": "Error: No api-key configured"}}}
				break
			}
			pdk.SetErrorString("No api-key configured")
			return -1
		}
		res = callResult{Content: []content{{"type": "text", "text": "configured"}}}
	default:
		pdk.SetErrorString("unknown tool " + in.Request.Name)
		return -1
	}
	if err := pdk.OutputJSON(res); err != nil {
		pdk.SetError(err)
		return -1
	}
	return 0
}

//go:wasmexport list_resources
func listResources() int32 {
	pdk.OutputString(`{"resources":[{"uri":"hyper://greeting","name":"greeting","mimeType":"text/plain","annotations":{"priority":1}}]}`)
	return 0
}

//go:wasmexport list_resource_templates
func listResourceTemplates() int32 {
	pdk.OutputString(`{"resourceTemplates":[{"uriTemplate":"hyper://items/{id}","name":"item","mimeType":"text/plain"}]}`)
	return 0
}

//go:wasmexport read_resource
func readResource() int32 {
	var in struct {
		Request struct {
			URI string `json:"uri"`
		} `json:"request"`
	}
	if err := pdk.InputJSON(&in); err != nil {
		pdk.SetError(err)
		return -1
	}
	text := "hello from hyper v2"
	if id, ok := strings.CutPrefix(in.Request.URI, "hyper://items/"); ok {
		text = "item " + id
	} else if in.Request.URI != "hyper://greeting" {
		pdk.SetErrorString("no resource " + in.Request.URI)
		return -1
	}
	out, _ := json.Marshal(map[string]any{"contents": []map[string]string{{"uri": in.Request.URI, "mimeType": "text/plain", "text": text}}})
	pdk.Output(out)
	return 0
}

//go:wasmexport list_prompts
func listPrompts() int32 {
	pdk.OutputString(`{"prompts":[{"name":"v2_greet","description":"Greets someone.","arguments":[{"name":"who","description":"whom to greet","required":true}]}]}`)
	return 0
}

//go:wasmexport get_prompt
func getPrompt() int32 {
	var in struct {
		Request struct {
			Name      string            `json:"name"`
			Arguments map[string]string `json:"arguments"`
		} `json:"request"`
	}
	if err := pdk.InputJSON(&in); err != nil {
		pdk.SetError(err)
		return -1
	}
	out, _ := json.Marshal(map[string]any{"messages": []map[string]any{
		{"role": "user", "content": map[string]string{"type": "text", "text": "Say hello to " + in.Request.Arguments["who"]}},
	}})
	pdk.Output(out)
	return 0
}

//go:wasmexport complete
func complete() int32 {
	var in struct {
		Request struct {
			Ref struct {
				Type string `json:"type"`
				Name string `json:"name"`
				URI  string `json:"uri"`
			} `json:"ref"`
			Argument struct {
				Name  string `json:"name"`
				Value string `json:"value"`
			} `json:"argument"`
		} `json:"request"`
	}
	if err := pdk.InputJSON(&in); err != nil {
		pdk.SetError(err)
		return -1
	}
	var values []string
	for _, v := range []string{"ada", "alan", "grace"} {
		if strings.HasPrefix(v, in.Request.Argument.Value) {
			values = append(values, in.Request.Ref.Type+":"+v)
		}
	}
	out, _ := json.Marshal(map[string]any{"completion": map[string]any{"values": values, "total": len(values)}})
	pdk.Output(out)
	return 0
}

func main() {}
