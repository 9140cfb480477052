// Command boardprobe is a test plugin that passes a board API call through
// the plugboard:host/v1 board host function. It declares every board
// capability, so tests can narrow them with a grants file and see the host
// refuse what was withheld.
package main

import (
	"encoding/json"

	"github.com/plugboard/plugboard/abi"
	sdk "github.com/plugboard/plugboard/sdk-guest"
)

// Input is the arguments of board_call.
type Input struct {
	Op   string         `json:"op" jsonschema:"board operation name, one of abi.BoardOps"`
	Args map[string]any `json:"args,omitempty" jsonschema:"the operation's argument object"`
}

// Output is the answer of board_call.
type Output struct {
	Result any `json:"result" jsonschema:"the operation's JSON result"`
}

func init() {
	sdk.Plugin("boardprobe", "1.0.0", "Test plugin: calls the board API.")
	sdk.Require(abi.CapBoardRead, abi.CapBoardWrite, abi.CapBoardControl, abi.CapWorkspaceRead)
	sdk.Tool(sdk.ToolSpec{
		Name: "board_call",
		Description: `Use when: testing the board host function.
Required: op
Optional: args
Next: inspect result.
Avoid: operations needing capabilities this plugin lacks.`,
	}, func(c *sdk.Call, in Input) (Output, error) {
		var args any
		if in.Args != nil {
			args = in.Args
		}
		var raw json.RawMessage
		if err := c.Board(in.Op, args, &raw); err != nil {
			return Output{}, err
		}
		var out Output
		if err := json.Unmarshal(raw, &out.Result); err != nil {
			return Output{}, err
		}
		return out, nil
	})
}

func main() {}
