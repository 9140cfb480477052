// Command sleepy is a test plugin whose one tool sleeps: concurrent calls
// whose [started, ended] intervals overlap prove the host runs them in
// parallel instances.
package main

import (
	"time"

	sdk "github.com/plugboard/plugboard/sdk-guest"
)

// Input is the arguments of sleep.
type Input struct {
	MS int `json:"ms" jsonschema:"how long to sleep, in milliseconds (0 or more)"`
}

// Output is the answer of sleep.
type Output struct {
	StartedUnixNano int64 `json:"started_unix_nano" jsonschema:"wall clock when the sleep began, Unix nanoseconds"`
	EndedUnixNano   int64 `json:"ended_unix_nano" jsonschema:"wall clock when the sleep ended, Unix nanoseconds"`
}

func init() {
	sdk.Plugin("sleepy", "1.0.0", "Test plugin: a tool that sleeps.")
	sdk.Tool(sdk.ToolSpec{
		Name: "sleep",
		Description: `Use when: testing that concurrent calls run in parallel.
Required: ms
Optional: none
Next: compare started_unix_nano and ended_unix_nano across calls.
Avoid: sleeping longer than the tool deadline.`,
	}, func(_ *sdk.Call, in Input) (Output, error) {
		if in.MS < 0 {
			return Output{}, sdk.InvalidArgument("ms", "ms is negative", "Pass ms as 0 or more.")
		}
		start := time.Now()
		time.Sleep(time.Duration(in.MS) * time.Millisecond)
		return Output{StartedUnixNano: start.UnixNano(), EndedUnixNano: time.Now().UnixNano()}, nil
	})
}

func main() {}
