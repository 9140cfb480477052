//go:build wasip1

// Command needsconfig is a test plugin written straight against
// github.com/extism/go-pdk that needs configuration only the operator can
// set, and says so in the ways foreign plugins do:
//
//   - transcribe fails with "FOO_API_KEY config must be set" (as an error
//     status, or with as_result as an isError result), as the AssemblyAI
//     servlet words it;
//   - summarize panics on the empty value its lookup of BAR_TOKEN gave;
//   - lookup probes the optional BASE_URL and fails on an argument it does
//     not know, which is the agent's to fix.
package main

import (
	"encoding/json"
	"strconv"

	"github.com/extism/go-pdk"
)

const manifest = `{"tools":[
{"name":"transcribe","description":"Use when: testing a tool that needs FOO_API_KEY.\nRequired: none\nOptional: as_result\nNext: set the key.\nAvoid: calling it outside tests.","inputSchema":{"type":"object","properties":{"as_result":{"type":"boolean","description":"fail with an isError result rather than an error status"}}}},
{"name":"summarize","description":"Use when: testing a tool that panics without BAR_TOKEN.\nRequired: none\nOptional: none\nNext: set the token.\nAvoid: calling it outside tests.","inputSchema":{"type":"object","properties":{}}},
{"name":"lookup","description":"Use when: testing a tool with an optional setting.\nRequired: city\nOptional: none\nNext: use the answer.\nAvoid: calling it outside tests.","inputSchema":{"type":"object","properties":{"city":{"type":"string","description":"a city: Paris or Oslo"}},"required":["city"]}}
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
				AsResult bool   `json:"as_result"`
				City     string `json:"city"`
			} `json:"arguments"`
		} `json:"params"`
	}
	if err := pdk.InputJSON(&req); err != nil {
		pdk.SetError(err)
		return 1
	}
	args := req.Params.Arguments
	var text string
	switch req.Params.Name {
	case "transcribe":
		key, ok := pdk.GetConfig("FOO_API_KEY")
		if !ok {
			if args.AsResult {
				return answer(result{Content: []content{{Type: "text", Text: "FOO_API_KEY config must be set"}}, IsError: true})
			}
			pdk.SetErrorString("FOO_API_KEY config must be set")
			return 1
		}
		text = "transcribed with a key of " + strconv.Itoa(len(key)) + " bytes"
	case "summarize":
		token, _ := pdk.GetConfig("BAR_TOKEN")
		text = "summarized with a token starting " + string(token[0]) // panics when unset
	case "lookup":
		base, ok := pdk.GetConfig("BASE_URL")
		if !ok {
			base = "https://default.example"
		}
		if args.City != "Paris" && args.City != "Oslo" {
			return answer(result{Content: []content{{Type: "text", Text: "unknown city " + args.City + ": use Paris or Oslo"}}, IsError: true})
		}
		text = args.City + " from " + base
	default:
		pdk.SetErrorString("unknown tool " + req.Params.Name)
		return 1
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
