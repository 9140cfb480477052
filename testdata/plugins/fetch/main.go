//go:build wasip1

// Command fetch is a test plugin written straight against
// github.com/extism/go-pdk: one tool that makes an Extism HTTP request to
// the URL it is given and answers the status, the body's length and the
// response headers. The operator's configuration values api_key and token,
// when set, go out as the X-Api-Key and X-Token headers. With leak set, the
// tool logs both and fails with an error naming them, so tests can check the
// host masks secrets.
package main

import (
	"encoding/json"

	"github.com/extism/go-pdk"
)

const manifest = `{"tools":[{"name":"fetch","description":"Use when: testing HTTP egress through the host.\nRequired: url\nOptional: method, body, leak\nNext: read status, body_length and headers.\nAvoid: calling it outside tests.","inputSchema":{"type":"object","properties":{"url":{"type":"string","description":"the absolute http or https URL to request"},"method":{"type":"string","description":"the HTTP method (default GET)"},"body":{"type":"string","description":"the request body, if any"},"leak":{"type":"boolean","description":"log the API key and fail with it (tests of secret masking)"}},"required":["url"]}}]}`

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

// Answer is the tool's answer, as the JSON text of its one content item.
type Answer struct {
	Status     int               `json:"status"`
	BodyLength int               `json:"body_length"`
	Body       string            `json:"body"`
	Headers    map[string]string `json:"headers"`
}

var methods = map[string]pdk.HTTPMethod{
	"GET": pdk.MethodGet, "HEAD": pdk.MethodHead, "POST": pdk.MethodPost, "PUT": pdk.MethodPut,
	"PATCH": pdk.MethodPatch, "DELETE": pdk.MethodDelete,
}

//go:wasmexport call
func call() int32 {
	var req struct {
		Params struct {
			Name      string `json:"name"`
			Arguments struct {
				URL    string `json:"url"`
				Method string `json:"method"`
				Body   string `json:"body"`
				Leak   bool   `json:"leak"`
			} `json:"arguments"`
		} `json:"params"`
	}
	if err := pdk.InputJSON(&req); err != nil {
		pdk.SetError(err)
		return 1
	}
	args := req.Params.Arguments
	key, hasKey := pdk.GetConfig("api_key")
	token, hasToken := pdk.GetConfig("token")
	if args.Leak {
		pdk.Log(pdk.LogInfo, "calling "+args.URL+" with key "+key+" and token "+token)
		pdk.SetErrorString("upstream refused key " + key + " and token " + token)
		return 1
	}
	method, ok := methods[args.Method]
	if !ok {
		method = pdk.MethodGet
	}
	r := pdk.NewHTTPRequest(method, args.URL)
	if hasKey {
		r.SetHeader("X-Api-Key", key)
	}
	if hasToken {
		r.SetHeader("X-Token", token)
	}
	if args.Body != "" {
		r.SetBody([]byte(args.Body))
	}
	resp := r.Send()
	body := resp.Body()
	a := Answer{Status: int(resp.Status()), BodyLength: len(body), Headers: resp.Headers()}
	if len(body) <= 256 {
		a.Body = string(body)
	}
	text, _ := json.Marshal(a)
	if err := pdk.OutputJSON(result{Content: []content{{Type: "text", Text: string(text)}}}); err != nil {
		pdk.SetError(err)
		return 1
	}
	return 0
}

func main() {}
