package sdk

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

// jsonNoHTML is encoding/json's encoding with HTML escaping off.
func jsonNoHTML(t *testing.T, v any) ([]byte, error) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func checkAppendAny(t *testing.T, v any) {
	t.Helper()
	want, wantErr := jsonNoHTML(t, v)
	got, err := appendAny(nil, v)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%#v: appendAny err %v, encoding/json err %v", v, err, wantErr)
	}
	if err == nil && !bytes.Equal(got, want) {
		t.Fatalf("%#v:\nappendAny     %s\nencoding/json %s", v, got, want)
	}
}

type anyNested struct {
	Name  string            `json:"name"`
	Score float64           `json:"score,omitempty"`
	Tags  []string          `json:"tags"`
	Meta  map[string]any    `json:"meta,omitempty"`
	Raw   json.RawMessage   `json:"raw,omitempty"`
	Bytes []byte            `json:"bytes,omitempty"`
	Next  *anyNested        `json:"next,omitempty"`
	Small float32           `json:"small"`
	Arr   [2]int            `json:"arr"`
	Named map[anyKey]uint16 `json:"named"`
}

type anyKey string

// TestAppendAnyMatchesEncodingJSON covers what envelopes and typed results
// hold: every kind appendAny encodes, and those it refuses.
func TestAppendAnyMatchesEncodingJSON(t *testing.T) {
	for _, v := range []any{
		nil, true, "x<y>&\u2028\xff", 42, int8(-3), uint64(math.MaxUint64), 1.0, 0.0, 1e21, 1e20, 1e-7, 123456789.125, math.Copysign(0, -1),
		float32(1e-7), float32(3.4e38), math.SmallestNonzeroFloat64, math.MaxFloat64,
		[]any{1, "a", nil, []any{}, map[string]any{}}, map[string]any{"b": 1, "a": []string{"x"}, "c": nil},
		[]string(nil), map[string]int(nil), []byte("hello"), []byte{}, [3]bool{true},
		map[anyKey]uint16{"z": 1, "a": 2},
		anyNested{Name: "n", Score: 2.5, Tags: []string{"t"}, Meta: map[string]any{"k": 1.5}, Raw: json.RawMessage(" { \"a\" : [1, 2] } "),
			Bytes: []byte{0, 255}, Next: &anyNested{Name: "inner"}, Small: 0.1, Arr: [2]int{1, 2}},
		&anyNested{}, map[string]any{"details": map[string]any{"field": "text", "max": 10}},
		json.RawMessage(nil), json.RawMessage("[1,"), math.NaN(), math.Inf(1), make(chan int), complex(1, 2),
	} {
		checkAppendAny(t, v)
	}
}

func FuzzAppendAny(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5,"x",null,true,{"b":-0.0001}]}`, `1e300`, `"\u00e9<>"`, `[]`, `{}`, `-1.5e-7`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		checkAppendAny(t, v)
	})
}
