// Command fragile is a test plugin whose one tool is correct on small
// inputs and traps on a large one: it copies its text into a fixed 64 KiB
// buffer without checking the length. Derived arguments pass; the
// conformance kit's fuzzing (huge strings) finds the crash.
package main

import (
	"strings"

	sdk "github.com/plugboard/plugboard/sdk-guest"
)

// Input is the arguments of shout.
type Input struct {
	Text string `json:"text" jsonschema:"the text to upper-case"`
}

// Output is the answer of shout.
type Output struct {
	Text string `json:"text" jsonschema:"the text in upper case"`
}

var buf [64 << 10]byte

func init() {
	sdk.Plugin("fragile", "1.0.0", "Test plugin: a tool that traps on long input.")
	sdk.Tool(sdk.ToolSpec{
		Name: "shout",
		Description: `Use when: you need a text in upper case.
Required: text
Optional: none
Next: use the returned text.
Avoid: texts over 64 KiB (this test plugin crashes on them).`,
	}, func(_ *sdk.Call, in Input) (Output, error) {
		n := 0
		for i := 0; i < len(in.Text); i++ {
			buf[i] = in.Text[i] // index out of range past 64 KiB: the bug the kit must find
			n++
		}
		return Output{Text: strings.ToUpper(string(buf[:n]))}, nil
	})
}

func main() {}
