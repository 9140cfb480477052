// Command echo is the smallest plugboard plugin: one tool that returns its
// text unchanged. Tests and benchmarks use it to measure the cost of a call
// through the host, so it must stay minimal.
package main

import (
	"github.com/plugboard/plugboard/abi"
	sdk "github.com/plugboard/plugboard/sdk-guest"
)

// Input is the arguments of echo.
type Input struct {
	Text string `json:"text" jsonschema:"the text to return unchanged; any UTF-8 string, may be empty"`
}

// Output is the answer of echo.
type Output struct {
	Text string `json:"text" jsonschema:"exactly the text that was sent"`
}

const description = `Use when: checking that plugboard and its plugins answer, or measuring call overhead.
Required: text
Optional: none
Next: call the tool you actually need; echo changes nothing.
Avoid: using echo to store or transform data; it returns text unchanged.`

func init() {
	sdk.Plugin("echo", "1.0.0", "Returns its input unchanged; for tests and benchmarks.")
	sdk.Tool(sdk.ToolSpec{
		Name:        "echo",
		Title:       "Echo",
		Description: description,
		Annotations: &abi.Annotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)},
	}, func(_ *sdk.Call, in Input) (Output, error) {
		return Output(in), nil
	})
}

func main() {}
