//go:build wasip1

// Command misbehave is a test plugin, written straight against
// github.com/extism/go-pdk, whose tools answer in every way the host must
// survive: output that is not JSON, output over the size cap, a plain-text
// error (an Extism MCP plugin's isError), an Extism error status, and a
// flood on stderr.
package main

import (
	"os"
	"strings"

	"github.com/extism/go-pdk"
)

var tools = []string{"garbage", "oversize", "text_error", "status_error", "noisy"}

//go:wasmexport describe
func describe() int32 {
	var b strings.Builder
	b.WriteString(`{"tools":[`)
	for i, name := range tools {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"name":"` + name + `","description":"Use when: testing how the host survives a misbehaving plugin.\nRequired: none\nOptional: none\nNext: expect an envelope.\nAvoid: calling it outside tests.","inputSchema":{"type":"object","properties":{},"additionalProperties":false}}`)
	}
	b.WriteString(`]}`)
	pdk.OutputString(b.String())
	return 0
}

//go:wasmexport call
func call() int32 {
	in := string(pdk.Input())
	switch {
	case strings.Contains(in, `"name":"garbage"`):
		pdk.OutputString("this is not JSON {")
	case strings.Contains(in, `"name":"oversize"`):
		pdk.OutputString(`{"structuredContent":{"blob":"` + strings.Repeat("x", 5<<20) + `"}}`)
	case strings.Contains(in, `"name":"text_error"`):
		pdk.OutputString(`{"content":[{"type":"text","text":"the frobnicator is offline"}],"isError":true}`)
	case strings.Contains(in, `"name":"status_error"`):
		pdk.SetErrorString("refusing on purpose")
		return 1
	case strings.Contains(in, `"name":"noisy"`):
		line := strings.Repeat("noise ", 100) + "\n"
		for range 20000 {
			os.Stderr.WriteString(line)
		}
		pdk.OutputString(`{"structuredContent":{"ok":true}}`)
	}
	return 0
}

func main() {}
