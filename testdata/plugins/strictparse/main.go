//go:build wasip1

// Command strictparse is a test plugin written straight against
// github.com/extism/go-pdk, parsing its call input as strictly as the
// servlets xtp-zig-bindgen generates do (Zig's std.json refuses a field its
// type does not declare, error.UnknownField): the Extism MCP
// CallToolRequest of the servlet schema — an optional "method" and
// "params" with "name" and "arguments" — and nothing else, at any level.
// It proves the host sends a foreign plugin exactly that shape.
package main

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/extism/go-pdk"
)

const manifest = `{"tools":[{"name":"strict_echo","description":"Use when: testing that the host sends a foreign plugin exactly the Extism MCP call input.\nRequired: text\nOptional: none\nNext: compare the answer with the text sent.\nAvoid: calling it outside tests.","inputSchema":{"type":"object","properties":{"text":{"type":"string","description":"the text to echo"}},"required":["text"],"additionalProperties":false}}]}`

//go:wasmexport describe
func describe() int32 {
	pdk.OutputString(manifest)
	return 0
}

// callToolRequest is the servlet schema's CallToolRequest.
type callToolRequest struct {
	Method *string `json:"method"`
	Params struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"params"`
}

type content struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type result struct {
	Content []content `json:"content"`
	IsError bool      `json:"isError,omitempty"`
}

// strict decodes b into v refusing unknown fields, as Zig's std.json does
// by default, with the error a Zig servlet sets.
func strict(b []byte, v any) bool {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		msg := err.Error()
		if strings.Contains(msg, "unknown field") {
			msg = "error.UnknownField (" + msg + ")"
		}
		pdk.SetErrorString(msg)
		return false
	}
	return true
}

//go:wasmexport call
func call() int32 {
	var req callToolRequest
	if !strict(pdk.Input(), &req) {
		return 1
	}
	if req.Method != nil && *req.Method != "tools/call" {
		pdk.SetErrorString("error.InvalidMethod: " + *req.Method)
		return 1
	}
	var args struct {
		Text string `json:"text"`
	}
	if len(req.Params.Arguments) == 0 { // the servlet schema makes them optional
		req.Params.Arguments = json.RawMessage("{}")
	}
	if !strict(req.Params.Arguments, &args) {
		return 1
	}
	res := result{Content: []content{{Type: "text", Text: "strict: " + args.Text}}}
	if req.Params.Name != "strict_echo" {
		res = result{Content: []content{{Type: "text", Text: "unknown tool " + req.Params.Name}}, IsError: true}
	}
	if err := pdk.OutputJSON(res); err != nil {
		pdk.SetError(err)
		return 1
	}
	return 0
}

func main() {}
