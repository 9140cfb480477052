// Command crash is a test plugin whose one tool panics: it proves a guest
// panic becomes a plugin_failed envelope carrying the panic text and that
// the crashed instance is replaced.
package main

import sdk "github.com/plugboard/plugboard/sdk-guest"

func init() {
	sdk.Plugin("crash", "1.0.0", "Test plugin: a tool that panics.")
	sdk.Tool(sdk.ToolSpec{
		Name: "crash",
		Description: `Use when: testing how the host handles a plugin that panics.
Required: none
Optional: none
Next: expect a plugin_failed envelope; the next call gets a fresh instance.
Avoid: calling it outside tests.`,
	}, func(_ *sdk.Call, _ struct{}) (struct{}, error) {
		panic("crash plugin: deliberate panic")
	})
}

func main() {}
