//go:build wasip1

// Command badschema is a test plugin written straight against
// github.com/extism/go-pdk whose tools declare input schemas by hand, wrong
// in the ways foreign plugins are:
//
//   - bad_required_inside puts "required" inside "properties", as the Zig
//     servlet of xtp-zig-bindgen does, and marks a field x-sensitive;
//   - bad_type names a type JSON Schema does not have ("int");
//   - bad_required_string gives a top-level "required" that is a string,
//     which MCP clients checking tool schemas refuse.
//
// Each checks its own arguments, as such a plugin must: the host cannot.
package main

import (
	"encoding/json"
	"fmt"

	"github.com/extism/go-pdk"
)

const doc = `Use when: testing a tool whose input schema the host cannot compile.\nRequired: text\nOptional: none\nNext: compare the answer with the text sent.\nAvoid: calling it outside tests.`

const manifest = `{"tools":[
{"name":"bad_required_inside","description":"` + doc + `","inputSchema":{"type":"object","properties":{"text":{"type":"string","description":"the text to echo"},"secret":{"type":"string","description":"a value the decision log must mask","x-sensitive":true},"required":["text"]}}},
{"name":"bad_type","description":"` + doc + `","inputSchema":{"type":"object","properties":{"text":{"type":"string","description":"the text to echo"},"count":{"type":"int","description":"how many times"}},"required":["text"]}},
{"name":"bad_required_string","description":"` + doc + `","inputSchema":{"type":"object","properties":{"text":{"type":"string","description":"the text to echo"}},"required":"text"}}
]}`

//go:wasmexport describe
func describe() int32 {
	pdk.OutputString(manifest)
	return 0
}

type content struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type result struct {
	Content []content `json:"content"`
	IsError bool      `json:"isError,omitempty"`
}

//go:wasmexport call
func call() int32 {
	var req struct {
		Params struct {
			Name      string `json:"name"`
			Arguments struct {
				Text   *string `json:"text"`
				Secret string  `json:"secret"`
				Count  int     `json:"count"`
			} `json:"arguments"`
		} `json:"params"`
	}
	if err := pdk.InputJSON(&req); err != nil {
		// A wrong type in the arguments: the host did not check them.
		return answer(result{Content: []content{{Type: "text", Text: "invalid arguments: " + err.Error()}}, IsError: true})
	}
	args := req.Params.Arguments
	if args.Text == nil {
		return answer(result{Content: []content{{Type: "text", Text: "text is required"}}, IsError: true})
	}
	text := fmt.Sprintf("%s: %s", req.Params.Name, *args.Text)
	if args.Count > 0 {
		text += fmt.Sprintf(" x%d", args.Count)
	}
	return answer(result{Content: []content{{Type: "text", Text: text}}})
}

func answer(res result) int32 {
	b, err := json.Marshal(res)
	if err != nil {
		pdk.SetError(err)
		return 1
	}
	pdk.Output(b)
	return 0
}

func main() {}
