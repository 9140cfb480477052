// Command loop is a test plugin whose one tool never returns: it proves the
// host's deadline really interrupts a guest stuck in a tight CPU loop.
package main

import sdk "github.com/plugboard/plugboard/sdk-guest"

// sink is global so the loop has an effect the compiler must keep.
var sink uint64

func init() {
	sdk.Plugin("loop", "1.0.0", "Test plugin: a tool that spins forever.")
	sdk.Tool(sdk.ToolSpec{
		Name: "spin",
		Description: `Use when: testing that the host interrupts a plugin that never returns.
Required: none
Optional: none
Next: expect a plugin_timeout envelope.
Avoid: calling it outside tests; it burns a CPU until the deadline.`,
	}, func(_ *sdk.Call, _ struct{}) (struct{}, error) {
		x := uint64(1)
		for {
			// A xorshift step: no calls, no allocation, never constant.
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			sink += x
		}
	})
}

func main() {}
