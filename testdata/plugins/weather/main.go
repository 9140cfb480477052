//go:build wasip1

// Command weather is a test plugin in the shape of most API servlets,
// written straight against github.com/extism/go-pdk: one tool that calls a
// fixed web API (https://api.weather.example/v1/forecast?city=CITY) with
// the operator's API key (config API_KEY, sent as X-Api-Key) and answers
// the forecast it returns. No such host exists: tests run it against a
// local server through the conformance kit's --http-stand-in, with the
// plugin's allowed_hosts naming api.weather.example as an operator's would.
package main

import (
	"net/url"

	"github.com/extism/go-pdk"
)

const manifest = `{"tools":[{"name":"forecast","description":"Use when: you need tomorrow's weather for a city.\nRequired: city\nOptional: none\nNext: read the forecast.\nAvoid: asking for more than one city per call.","inputSchema":{"type":"object","properties":{"city":{"type":"string","description":"the city's name, e.g. Oslo"}},"required":["city"]}}]}`

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
			Arguments struct {
				City string `json:"city"`
			} `json:"arguments"`
		} `json:"params"`
	}
	if err := pdk.InputJSON(&req); err != nil {
		pdk.SetError(err)
		return 1
	}
	key, ok := pdk.GetConfig("API_KEY")
	if !ok || key == "" {
		pdk.SetErrorString("API_KEY is not configured")
		return 1
	}
	r := pdk.NewHTTPRequest(pdk.MethodGet, "https://api.weather.example/v1/forecast?city="+url.QueryEscape(req.Params.Arguments.City))
	r.SetHeader("X-Api-Key", key)
	resp := r.Send()
	if resp.Status() != 200 {
		out := result{Content: []content{{Type: "text", Text: "the weather service answered " + string(resp.Body())}}, IsError: true}
		if err := pdk.OutputJSON(out); err != nil {
			pdk.SetError(err)
			return 1
		}
		return 0
	}
	if err := pdk.OutputJSON(result{Content: []content{{Type: "text", Text: string(resp.Body())}}}); err != nil {
		pdk.SetError(err)
		return 1
	}
	return 0
}

func main() {}
