package pluginbuild

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/plugin"
)

func repoRoot(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// TestTypedBuild: echo's tools qualify for the SDK's own codecs, so the
// module links no encoding/json and still answers as encoding/json would
// — keys with escapes or in another case, strings with escapes — and
// refuses bad arguments with envelopes naming the field. tasks-control
// does not qualify, and the build says why.
func TestTypedBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two plugins")
	}
	ctx := context.Background()
	root := repoRoot(t)
	out := filepath.Join(t.TempDir(), "echo.wasm")
	var typed bool
	var why string
	if _, err := Plugin(ctx, filepath.Join(root, "plugins", "echo"), out, Options{Codecs: func(ok bool, reason string) { typed, why = ok, reason }}); err != nil {
		t.Fatal(err)
	}
	wasm, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !typed || linksJSON(wasm) || bytes.Contains(wasm, []byte("encoding/json.(*decodeState).object\x00")) ||
		bytes.Contains(wasm, []byte("encoding/json.(*encodeState).marshal\x00")) {
		t.Fatalf("echo: typed %v (%s), yet it links encoding/json", typed, why)
	}

	eng, err := plugin.NewEngine(ctx, plugin.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(ctx)
	p, err := eng.Compile(ctx, "echo", wasm, nil)
	if err != nil {
		t.Fatal(err)
	}
	call := func(args string) abi.CallResult {
		t.Helper()
		raw, err := p.Call(ctx, abi.ExportCall, []byte(`{"params":{"name":"echo","arguments":`+args+`},"context":{}}`), plugin.CallOptions{})
		if err != nil {
			t.Fatalf("call %s: %v", args, err)
		}
		var res abi.CallResult
		if err := json.Unmarshal(raw, &res); err != nil {
			t.Fatalf("call %s: %s: %v", args, raw, err)
		}
		return res
	}
	for args, want := range map[string]string{
		`{"text":"plain"}`:                        "plain",
		`{"t\u0065xt":"line\nnext \"q\" \u00e9"}`: "line\nnext \"q\" é",
		`{"TEXT":"folded"}`:                       "folded",
		"{\"text\":\"bad \xff\"}":                 "bad \ufffd",
		`null`:                                    "",
	} {
		res := call(args)
		var got struct{ Text string }
		if res.IsError || json.Unmarshal(res.StructuredContent, &got) != nil || got.Text != want {
			t.Errorf("echo %s = %s, want text %q", args, res.StructuredContent, want)
		}
	}
	for args, want := range map[string]string{
		`{"text":1}`:            `argument "text" must be a string, got number`,
		`{"text":"a","more":1}`: `unknown argument "more"`,
		`["text"]`:              `arguments must be a JSON object, got array`,
	} {
		res := call(args)
		var env abi.Envelope
		if !res.IsError || json.Unmarshal(res.StructuredContent, &env) != nil || env.Code != abi.CodeInvalidArgument || env.Message != want {
			t.Errorf("echo %s = %s, want invalid_argument %q", args, res.StructuredContent, want)
		}
	}
	raw, err := p.Call(ctx, abi.ExportCall, []byte(`{"method":"prompts/get","params":{"name":"x"}}`), plugin.CallOptions{})
	if err != nil || !strings.Contains(string(raw), `does not serve method \"prompts/get\"`) {
		t.Errorf("prompts/get to a typed echo = %s, %v", raw, err)
	}

	typed, why = true, ""
	if _, err := Plugin(ctx, filepath.Join(root, "plugins", "tasks-control"), filepath.Join(t.TempDir(), "tc.wasm"),
		Options{Codecs: func(ok bool, reason string) { typed, why = ok, reason }}); err != nil {
		t.Fatal(err)
	}
	if typed || !strings.Contains(why, "input field repos needs encoding/json") {
		t.Errorf("tasks-control: typed %v, why %q", typed, why)
	}
}
