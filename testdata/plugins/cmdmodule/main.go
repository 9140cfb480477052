//go:build wasip1

// Command cmdmodule is a test plugin in the shape Go's default wasip1 build
// leaves a go-pdk servlet: a command module, exporting _start (Go's
// runtime initialisation and main) beside describe and call, and no
// _initialize. Tests build it with plain `GOOS=wasip1 GOARCH=wasm go
// build`, not -buildmode=c-shared, to check that the conformance kit,
// inspect and serve judge such a module by what the host really does with
// it.
package main

import (
	"github.com/extism/go-pdk"
)

const manifest = `{"tools":[{"name":"cmd_echo","description":"Use when: checking a command module answers.\nRequired: text\nOptional: none\nNext: read the text back.\nAvoid: nothing.","inputSchema":{"type":"object","properties":{"text":{"type":"string","description":"what to echo"}},"required":["text"]}}]}`

//go:wasmexport describe
func describe() int32 {
	pdk.OutputString(manifest)
	return 0
}

//go:wasmexport call
func call() int32 {
	var req struct {
		Params struct {
			Arguments struct {
				Text string `json:"text"`
			} `json:"arguments"`
		} `json:"params"`
	}
	if err := pdk.InputJSON(&req); err != nil {
		pdk.SetError(err)
		return 1
	}
	if err := pdk.OutputJSON(map[string]any{"content": []map[string]string{{"type": "text", "text": req.Params.Arguments.Text}}}); err != nil {
		pdk.SetError(err)
		return 1
	}
	return 0
}

func main() {}
