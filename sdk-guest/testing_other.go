//go:build !wasip1

package sdk

// SetTestHost makes fn stand in for the plugboard host functions outside
// WebAssembly, so native tests of a plugin can answer its host calls (board,
// progress, log): fn receives the function name and the JSON request and
// returns the JSON response (nil for none). It returns a function that
// restores the previous stand-in. Tests only; there is no wasip1 version.
func SetTestHost(fn func(name string, req []byte) []byte) (restore func()) {
	prev := nativeHost
	nativeHost = fn
	return func() { nativeHost = prev }
}
