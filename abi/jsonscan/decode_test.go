package jsonscan

import (
	"encoding/json"
	"reflect"
	"testing"
)

var decodeSeeds = []string{
	`{"text":"hi","n":[1,-2.5e3,true,false,null],"o":{"a":{}}}`,
	` [ 1 , "x" , {} , [] ] `,
	`"plain"`, `"esc\n\u00e9"`, `{"k\u0041":1}`, `{"a":1,"a":2}`,
	"{\"\xff\":1}", "\"\xff\"", `1e400`, `{"a":}`, `[1,]`, `tru`, ``, `{} x`,
	`{"deep":[[[[[[[[[[]]]]]]]]]]}`, `-0`, `0.5`, `01`,
}

// TestDecodeAgreesWithEncodingJSON holds Decode to json.Unmarshal into any.
func TestDecodeAgreesWithEncodingJSON(t *testing.T) {
	for _, s := range decodeSeeds {
		checkDecode(t, []byte(s))
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkDecode)
}

func checkDecode(t *testing.T, b []byte) {
	got, err := Decode(b)
	var want any
	wantErr := json.Unmarshal(b, &want)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%q: Decode err %v, encoding/json err %v", b, err, wantErr)
	}
	if err == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: Decode = %#v, encoding/json = %#v", b, got, want)
	}
}
