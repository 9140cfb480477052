//go:build wasip1

package sdktest

import "testing"

// Use skips the test: native calls run only outside WebAssembly, where the
// SDK has its test stand-ins.
func Use(t testing.TB, env Env) {
	t.Helper()
	t.Skip("sdktest: native calls run only outside WebAssembly")
}

// Call skips the test, as Use does.
func Call(t testing.TB, env Env, tool string, in, out any) error {
	t.Helper()
	t.Skip("sdktest: native calls run only outside WebAssembly")
	return nil
}
