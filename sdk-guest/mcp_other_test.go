//go:build !wasip1

package sdk

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/plugboard/plugboard/abi"
)

func TestClientHostCalls(t *testing.T) {
	var seen []string
	defer SetTestHost(func(name string, req []byte) []byte {
		seen = append(seen, name+" "+string(req))
		switch name {
		case "sample":
			return []byte(`{"result":{"role":"assistant","content":{"type":"text","text":"4"},"model":"m"}}`)
		case "elicit":
			return []byte(`{"error":{"code":"unsupported","message":"no elicitation","retryable":false}}`)
		}
		return nil
	})()
	c := &Call{ctx: &abi.CallContext{}}
	c.Notify("warning", map[string]int{"n": 1})
	res, err := c.Sample(abi.SampleRequest{Messages: []abi.SamplingMessage{{Role: "user", Content: Text("2+2")}}, MaxTokens: 5})
	if err != nil || res.Content.Text != "4" || res.Model != "m" {
		t.Errorf("sample: %+v %v", res, err)
	}
	_, err = c.Elicit("name?", json.RawMessage(`{"type":"object"}`))
	if env, ok := err.(*abi.Envelope); !ok || env.Code != abi.CodeUnsupported {
		t.Errorf("elicit: %v", err)
	}
	want := []string{
		`notify {"level":"warning","data":{"n":1}}`,
		`sample {"messages":[{"role":"user","content":{"type":"text","text":"2+2"}}],"maxTokens":5}`,
		`elicit {"message":"name?","requestedSchema":{"type":"object"}}`,
	}
	if !reflect.DeepEqual(seen, want) {
		t.Errorf("host calls\n%q\nwant\n%q", seen, want)
	}
}
