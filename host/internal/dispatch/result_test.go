package dispatch

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/plugboard/plugboard/abi"
)

var resultSeeds = []string{
	`{"structuredContent":{"text":"hi"}}`,
	`{"structuredContent": {"text" : "hi", "n": [1, 2.5e3, true, null]}, "isError": false}`,
	`{"content":[{"type":"text","text":"plain"}],"isError":true}`,
	`{"_meta":{"x":1},"structuredContent":null,"content":null}`,
	`{"isError":"yes"}`,
	`{"structuredContent":{"a":"\u00e9\n"}}`,
	`{"structured\u0043ontent":{"a":1}}`,
	`{"structuredContent":{"a":1}} trailing`,
	`{"structuredContent":{"a":}}`,
	`[1,2]`,
	` {"isError":true} `,
	``,
}

// TestScanResultAgreesWithEncodingJSON holds the one-pass scanner to
// encoding/json's reading of the same bytes.
func TestScanResultAgreesWithEncodingJSON(t *testing.T) {
	for _, s := range resultSeeds {
		checkScan(t, []byte(s))
	}
}

func FuzzScanResult(f *testing.F) {
	for _, s := range resultSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkScan)
}

func checkScan(t *testing.T, out []byte) {
	got, compact, err := scanResult(out)
	var want abi.CallResult
	wantErr := json.Unmarshal(out, &want)
	if wantErr == nil && !bytes.HasPrefix(bytes.TrimLeft(out, " \t\r\n"), []byte("{")) {
		wantErr = errTest // a non-object is refused by both
	}
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%q: scan err %v, encoding/json err %v", out, err, wantErr)
	}
	if err != nil {
		return
	}
	if string(want.StructuredContent) == "null" {
		want.StructuredContent = nil
	}
	if want.IsError != got.IsError || !reflect.DeepEqual(want.Content, got.Content) {
		t.Fatalf("%q: got %+v, want %+v", out, got, want)
	}
	var a, b bytes.Buffer
	json.Compact(&a, want.StructuredContent)
	json.Compact(&b, got.StructuredContent)
	if a.String() != b.String() {
		t.Fatalf("%q: structuredContent %q, want %q", out, b.String(), a.String())
	}
	if compact && len(got.StructuredContent) > 0 && a.String() != string(got.StructuredContent) {
		t.Fatalf("%q: reported compact but is not", out)
	}
}

var errTest = json.Unmarshal([]byte("x"), new(any))
