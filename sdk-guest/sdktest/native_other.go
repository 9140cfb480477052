//go:build !wasip1

package sdktest

import (
	"encoding/json"
	"testing"

	"github.com/plugboard/plugboard/abi"
	sdk "github.com/plugboard/plugboard/sdk-guest"
)

// Use installs env until the test ends: sdk.Config, sdk.HTTP and
// sdk.OpenDir read it, so a test may call its handler functions directly
// (a nil *sdk.Call serves for handlers that use none of its methods but
// Progress and Log).
func Use(t testing.TB, env Env) {
	t.Helper()
	t.Cleanup(sdk.SetTestEnv(env.native()))
}

// native is env as the SDK's native stand-ins take it.
func (e Env) native() sdk.TestEnv {
	te := sdk.TestEnv{Config: e.Config, Dirs: e.Dirs}
	if e.Server != nil {
		te.HTTPClient = e.Server.Client()
		te.AllowedHosts = []string{e.Server.Listener.Addr().String()}
	}
	return te
}

// Call runs tool natively with the arguments in (JSON-encoded), through the
// SDK's decoding and encoding as the call export does, with env installed
// during the call, and decodes its structured result into out (nil: not
// decoded; an *abi.CallResult gets the whole result, content items
// included). The error is the tool's envelope, an *abi.Envelope.
func Call(t testing.TB, env Env, tool string, in, out any) error {
	t.Helper()
	args := marshalArgs(t, tool, in)
	defer sdk.SetTestEnv(env.native())()
	req, err := json.Marshal(abi.CallRequest{Params: abi.CallParams{Name: tool, Arguments: args}, Context: &abi.CallContext{}})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := sdk.HandleCall(req)
	if err != nil {
		t.Fatalf("sdktest: %v", err)
	}
	var res abi.CallResult
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("sdktest: %s answered no call result: %v\n%s", tool, err, raw)
	}
	if res.IsError {
		var env abi.Envelope
		if err := json.Unmarshal(res.StructuredContent, &env); err != nil || env.Code == "" {
			t.Fatalf("sdktest: %s answered isError without an envelope: %s", tool, raw)
		}
		return &env
	}
	if r, ok := out.(*abi.CallResult); ok {
		*r = res
		return nil
	}
	return decodeInto(t, tool, res.StructuredContent, out)
}
