//go:build wasip1

// Command plainfn is a test plugin in the shape of most Extism plugins: a
// plain Extism module written against github.com/extism/go-pdk, exporting
// functions that take input bytes and write output bytes — count_vowels,
// Extism's classic example, among them — and neither describe nor call
// nor hyper-mcp's list_tools and call_tool, so it cannot say what tools it
// has. The operator describes them in plugins.settings.plainfn.tools.
// Tests build it with `GOOS=wasip1 GOARCH=wasm go build
// -buildmode=c-shared`: plugboard plugin build needs a describe export.
package main

import (
	"strings"

	"github.com/extism/go-pdk"
)

// countVowels counts the vowels of its input text and answers JSON.
//
//go:wasmexport count_vowels
func countVowels() int32 {
	n := 0
	for _, r := range pdk.InputString() {
		if strings.ContainsRune("aeiouAEIOU", r) {
			n++
		}
	}
	if err := pdk.OutputJSON(struct {
		Count  int    `json:"count"`
		Vowels string `json:"vowels"`
	}{n, "aeiou"}); err != nil {
		pdk.SetError(err)
		return 1
	}
	return 0
}

// reverse answers its input text reversed, as text.
//
//go:wasmexport reverse
func reverse() int32 {
	r := []rune(pdk.InputString())
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	pdk.OutputString(string(r))
	return 0
}

// echo answers its input as it came: the arguments object, when the tool
// passes the arguments as JSON.
//
//go:wasmexport echo
func echo() int32 {
	pdk.Output(pdk.Input())
	return 0
}

// fail rejects every input with an Extism error and a non-zero status.
//
//go:wasmexport fail
func fail() int32 {
	pdk.SetErrorString("input rejected: " + pdk.InputString())
	return 1
}

// binary answers bytes that are not UTF-8 text.
//
//go:wasmexport binary
func binary() int32 {
	pdk.Output([]byte{0xff, 0xfe, 0x00, 0x01})
	return 0
}

// spin never returns: the host's deadline ends it.
//
//go:wasmexport spin
func spin() int32 {
	n := 0
	for {
		n++
		if n < 0 {
			return int32(n)
		}
	}
}

// add has a signature no Extism function has, (i32, i32) -> i32.
//
//go:wasmexport add
func add(a, b int32) int32 { return a + b }

func main() {}
