package dispatch

import "github.com/plugboard/plugboard/abi"

// codeOf is the code a span records for a step's outcome: the envelope's,
// "" for success.
func codeOf(env *abi.Envelope) string {
	if env == nil {
		return ""
	}
	return env.Code
}
