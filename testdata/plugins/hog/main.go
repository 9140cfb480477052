// Command hog is a test plugin whose one tool allocates without bound: it
// proves the host's memory cap stops a guest and that the host survives.
package main

import sdk "github.com/plugboard/plugboard/sdk-guest"

// held keeps every block reachable so the garbage collector frees nothing.
var held [][]byte

func init() {
	sdk.Plugin("hog", "1.0.0", "Test plugin: a tool that allocates memory until it is stopped.")
	sdk.Tool(sdk.ToolSpec{
		Name: "hog",
		Description: `Use when: testing that the host caps a plugin's memory.
Required: none
Optional: none
Next: expect a resource_exhausted or plugin_failed envelope.
Avoid: calling it outside tests; it grows until the memory cap.`,
	}, func(_ *sdk.Call, _ struct{}) (struct{}, error) {
		for {
			b := make([]byte, 1<<20)
			for i := 0; i < len(b); i += 4096 { // touch every page
				b[i] = byte(i >> 12)
			}
			held = append(held, b)
		}
	})
}

func main() {}
