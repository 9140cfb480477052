//go:build wasip1

// Command counter is a test plugin written straight against
// github.com/extism/go-pdk: one tool that increments a Go global and an
// Extism var and answers both, so tests can tell a stateful plugin (one
// instance, state kept across calls) from a pooled one. sleep_ms holds the
// call after counting, so concurrent calls overlap.
package main

import (
	"encoding/json"
	"time"

	"github.com/extism/go-pdk"
)

const manifest = `{"tools":[{"name":"count","description":"Use when: testing that plugin state persists across calls.\nRequired: none\nOptional: sleep_ms\nNext: compare global and var with earlier calls.\nAvoid: calling it outside tests.","inputSchema":{"type":"object","properties":{"sleep_ms":{"type":"integer","description":"milliseconds to wait after counting"}}}}]}`

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
}

// global counts the calls this instance served.
var global int

//go:wasmexport call
func call() int32 {
	var req struct {
		Params struct {
			Arguments struct {
				SleepMS int `json:"sleep_ms"`
			} `json:"arguments"`
		} `json:"params"`
	}
	if err := pdk.InputJSON(&req); err != nil {
		pdk.SetError(err)
		return 1
	}
	global++
	v := pdk.GetVarInt("count") + 1
	pdk.SetVarInt("count", v)
	if ms := req.Params.Arguments.SleepMS; ms > 0 {
		time.Sleep(time.Duration(ms) * time.Millisecond)
	}
	text, _ := json.Marshal(map[string]int{"global": global, "var": v})
	if err := pdk.OutputJSON(result{Content: []content{{Type: "text", Text: string(text)}}}); err != nil {
		pdk.SetError(err)
		return 1
	}
	return 0
}

func main() {}
