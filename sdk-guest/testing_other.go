//go:build !wasip1

package sdk

import "path"

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

// SetTestEnv makes env what Config, HTTP and OpenDir read outside
// WebAssembly, in place of the operator's settings, and returns a function
// that restores the previous environment. Like the settings of a real
// plugin it is process-wide, so tests that set different environments must
// not run in parallel. Package sdktest wraps it. Tests only; there is no
// wasip1 version.
func SetTestEnv(env TestEnv) (restore func()) {
	prevEnv, prevDirs := testEnv, testDirs
	dirs := make(map[string]string, len(env.Dirs))
	for guest, host := range env.Dirs {
		dirs[path.Clean("/"+guest)] = host
	}
	testEnv, testDirs = env, dirs
	return func() { testEnv, testDirs = prevEnv, prevDirs }
}
