//go:build !wasip1

package sdk

import (
	"reflect"
	"testing"

	"github.com/plugboard/plugboard/abi"
)

func TestCallContextProgressAndLog(t *testing.T) {
	type hostCall struct{ name, req string }
	var calls []hostCall
	nativeHost = func(name string, req []byte) []byte {
		calls = append(calls, hostCall{name, string(req)})
		return nil
	}
	defer func() { nativeHost = nil }()

	var seen abi.CallContext
	r := newRegistry()
	r.plugin("p", "", "")
	register(r, ToolSpec{Name: "work", Description: "d"}, func(c *Call, in struct{}) (struct{}, error) {
		seen = c.Context()
		c.Progress(1, 2, "half")
		c.Log("info", "working", map[string]any{"n": 1})
		return struct{}{}, nil
	})

	call(t, r, `{"params":{"name":"work"},"context":{"request_id":"r9","caller":{"id":"u1","role":"dev"},"deadline_unix_ms":42,"progress":true,"future_field":1}}`)
	if seen.RequestID != "r9" || seen.Caller == nil || seen.Caller.Role != "dev" || seen.DeadlineUnixMS != 42 || !seen.Progress {
		t.Errorf("context = %+v", seen)
	}
	want := []hostCall{
		{"progress", `{"progress":1,"total":2,"message":"half"}`},
		{"log", `{"level":"info","message":"working","attrs":{"n":1}}`},
	}
	if !reflect.DeepEqual(calls, want) {
		t.Errorf("host calls = %q, want %q", calls, want)
	}

	// Without progress requested (or without a context) Progress makes no host call.
	for _, req := range []string{`{"params":{"name":"work"},"context":{}}`, `{"params":{"name":"work"}}`} {
		calls = nil
		call(t, r, req)
		if len(calls) != 1 || calls[0].name != "log" {
			t.Errorf("%s: host calls = %q, want only the log", req, calls)
		}
	}
	if (seen != abi.CallContext{}) {
		t.Errorf("context without one = %+v, want zero", seen)
	}
}
