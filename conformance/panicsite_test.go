package conformance

import "testing"

func TestPanicSiteSkipsRuntimeAndSDK(t *testing.T) {
	console := `panic: boom

goroutine 1 [running]:
runtime.gopanic(...)
	runtime/panic.go:100 +0x1
github.com/plugboard/plugboard/sdk-guest.decode(...)
	github.com/plugboard/plugboard/sdk-guest@v0.0.0-00010101000000-000000000000/call.go:10 +0x2
github.com/plugboard/plugboard/sdk-guest.dispatch(...)
	github.com/plugboard/plugboard/sdk-guest/call.go:20 +0x3
main.handler(...)
	example.com/wordcount/main.go:30 +0x4
`
	if got, want := panicSite(console), "example.com/wordcount/main.go:30"; got != want {
		t.Errorf("panicSite = %q, want %q", got, want)
	}
}
