//go:build wasip1

// Command rawpdk is a test plugin written straight against
// github.com/extism/go-pdk, without the plugboard SDK or abi: a plain Extism
// MCP plugin. It proves the host loads plugins that predate plugboard
// (describe gives only {"tools":[...]}, call gets no context and answers
// with text content only).
package main

import (
	"strings"

	"github.com/extism/go-pdk"
)

const manifest = `{"tools":[{"name":"raw_upper","description":"Use when: you need a text in upper case.\nRequired: text\nOptional: none\nNext: use the returned text.\nAvoid: sending non-text data.","inputSchema":{"type":"object","properties":{"text":{"type":"string","description":"the text to upper-case"}},"required":["text"]}}]}`

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
				Text string `json:"text"`
			} `json:"arguments"`
		} `json:"params"`
	}
	if err := pdk.InputJSON(&req); err != nil {
		pdk.SetError(err)
		return 1
	}
	res := result{Content: []content{{Type: "text", Text: strings.ToUpper(req.Params.Arguments.Text)}}}
	if req.Params.Name != "raw_upper" {
		res = result{Content: []content{{Type: "text", Text: "unknown tool " + req.Params.Name}}, IsError: true}
	}
	if err := pdk.OutputJSON(res); err != nil {
		pdk.SetError(err)
		return 1
	}
	return 0
}

func main() {}
