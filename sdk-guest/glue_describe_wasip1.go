//go:build wasip1 && plugboard_describe

package sdk

import "github.com/extism/go-pdk"

// plugboard_typed tells `plugboard plugin build`, from the describe build,
// whether the module it builds next may take the plugboard_typed tag:
// "typed" when every tool qualifies, else why not (typed.go).
//
//go:wasmexport plugboard_typed
func exportTyped() int32 {
	reason := std.typedReason()
	if reason == "" {
		reason = TypedAnswer
	}
	pdk.OutputString(reason)
	return 0
}
