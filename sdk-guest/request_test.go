package sdk

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/abi"

	"github.com/plugboard/plugboard/abi/jsonscan"
)

var requestSeeds = []string{
	`{"params":{"name":"echo","arguments":{"text":"hi"}},"context":{"request_id":"r","progress":true}}`,
	` { "params" : { "arguments" : [1, 2.5e-3, -0, true, false, null, {"a":{}} , []] , "name" : "x" } } `,
	`{"params":{"name":"echo"}}`,
	`{"params":{"name":"echo","arguments":null},"context":null}`,
	`{"params":null}`,
	`{}`,
	`null`,
	`[]`,
	`"x"`,
	``,
	`{"params":{"name":"e\u0063ho","arguments":{}}}`,
	`{"Params":{"NAME":"echo"}}`,
	`{"p\u0061rams":{"name":"echo"}}`,
	`{"params":{"name":"a"},"params":{"arguments":{"x":1}}}`,
	`{"context":{"request_id":"a"},"context":{"progress":true}}`,
	`{"context":{"request_id":"a"},"context":null}`,
	`{"params":5}`,
	`{"params":{"name":5}}`,
	`{"context":"x"}`,
	`{"params":{"name":"echo","arguments":{"text":"a\"b\\c\n\u00e9"}}}`,
	`{"params":{"name":"echo","arguments":{"text":"unterminated}}}`,
	`{"params":{"name":"echo","arguments":{"n":01}}}`,
	`{"params":{"name":"echo","arguments":{"n":1.}}}`,
	`{"params":{"name":"echo","arguments":{"n":-}}}`,
	`{"params":{"name":"echo","arguments":{"n":1e}}}`,
	`{"params":{"name":"echo","arguments":{"s":"\x"}}}`,
	`{"params":{"name":"echo","arguments":{"s":"\u12"}}}`,
	`{"params":{"name":"echo","arguments":[1,]}}`,
	`{"params":{"name":"echo",}}`,
	`{"params":{"name":"echo"}} x`,
	`{"params":{"name":"echo"}}` + "\n",
	`{"a":tru}`,
	`{"a" 1}`,
	"{\"a\":\"tab\there\"}",
	"{\"params\":{\"name\":\"\xc9\"}}",
	`{"extra":{"deep":[[[[{"x":"y"}]]]]},"params":{"name":"n","extra":1}}`,
	`{"context":{"request_id":"r","caller":{"id":"u","role":"dev"},"deadline_unix_ms":5,"progress":true,"new_thing":{"x":[1]}}}`,
	`{"context":{"Request_ID":"r"}}`,
	`{"context":{"caller":null,"progress":null,"request_id":null}}`,
	`{"context":{"caller":{"id":"a"},"caller":{"role":"b"}}}`,
	`{"context":{"deadline_unix_ms":1.5}}`,
	`{"context":{"deadline_unix_ms":"5"}}`,
	`{"context":{"caller":{"id":"a","extra":1}}}`,
	`{"context":{"caller":{"ID":"a"}}}`,
	`{"context":{"request_id":"\u0041"}}`,
	`{"context":[]}`,
	`{"method":"resources/read","params":{"uri":"test://a"},"context":{"progress":true}}`,
	`{"params":{"uri":"test://a"},"method":"resources/read"}`,
	`{"METHOD":"prompts/get","params":{"name":"p","arguments":{"a":"b"}}}`,
	`{"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"a","value":"x"},"context":{"arguments":{"b":"c"}}}}`,
	`{"params":{"name":"echo","URI":"x"}}`,
	`{"method":5}`,
}

func FuzzParseRequest(f *testing.F) {
	for _, s := range requestSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, input []byte) {
		checkParseRequest(t, input)
	})
}

// checkParseRequest asserts parseRequest agrees with encoding/json.
func checkParseRequest(t *testing.T, input []byte) {
	t.Helper()
	var want abi.CallRequest
	wantErr := json.Unmarshal(input, &want)
	got, err := parseRequest(input)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%q: parseRequest error %v, encoding/json error %v", input, err, wantErr)
	}
	if err != nil {
		return
	}
	if got.Method != want.Method || got.Params.URI != want.Params.URI || !reflect.DeepEqual(got.Params.Ref, want.Params.Ref) ||
		!reflect.DeepEqual(got.Params.Argument, want.Params.Argument) || !reflect.DeepEqual(got.Params.CompletionContext, want.Params.CompletionContext) {
		t.Fatalf("%q: parseRequest = %+v %q, encoding/json = %+v %q", input, got.Params, got.Method, want.Params, want.Method)
	}
	if got.Params.Name != want.Params.Name || !reflect.DeepEqual(got.Context, want.Context) {
		t.Fatalf("%q: parseRequest = %+v %+v, encoding/json = %+v %+v", input, got.Params, got.Context, want.Params, want.Context)
	}
	norm := func(b []byte) []byte {
		if string(b) == "null" {
			return nil
		}
		return b
	}
	if !bytes.Equal(norm(got.Params.Arguments), norm(want.Params.Arguments)) {
		t.Fatalf("%q: arguments %q, encoding/json %q", input, got.Params.Arguments, want.Params.Arguments)
	}
}

func TestParseRequestMatchesEncodingJSON(t *testing.T) {
	for _, s := range requestSeeds {
		checkParseRequest(t, []byte(s))
	}
	deep := strings.Repeat("[", jsonscan.MaxDepth+1) + strings.Repeat("]", jsonscan.MaxDepth+1)
	checkParseRequest(t, []byte(`{"params":{"arguments":`+deep+`}}`))
	ok := strings.Repeat("[", jsonscan.MaxDepth-3) + strings.Repeat("]", jsonscan.MaxDepth-3)
	checkParseRequest(t, []byte(`{"params":{"arguments":`+ok+`}}`))
}

func TestParseRequestAliasesArguments(t *testing.T) {
	in := []byte(`{"params":{"name":"n","arguments":{"a":1}}}`)
	req, err := parseRequest(in)
	if err != nil {
		t.Fatal(err)
	}
	if i := bytes.Index(in, []byte(`{"a":1}`)); string(req.Params.Arguments) != `{"a":1}` || &req.Params.Arguments[0] != &in[i] {
		t.Errorf("arguments = %q, want a slice of the input", req.Params.Arguments)
	}
}

func TestSpecialIn8(t *testing.T) {
	special := func(c byte) bool { return c == '"' || c == '\\' || c < 0x20 }
	var b [8]byte
	for pos := range 8 {
		for c := range 256 {
			for fill := range []byte{'a', 0x80, 0xff, ' '} {
				for i := range b {
					b[i] = []byte{'a', 0x80, 0xff, ' '}[fill]
				}
				b[pos] = byte(c)
				want := false
				for _, x := range b {
					want = want || special(x)
				}
				if got := jsonscan.SpecialIn8(binary.LittleEndian.Uint64(b[:])); got != want {
					t.Fatalf("jsonscan.SpecialIn8(%q) = %v, want %v", b, got, want)
				}
			}
		}
	}
}

// checkParseRequestTyped holds the typed parse (a build without
// encoding/json) to encoding/json for what it reads: whenever
// encoding/json reads a request, the typed parse reads the same method,
// name, arguments and context, and it reads nothing encoding/json refuses.
func checkParseRequestTyped(t *testing.T, input []byte) {
	t.Helper()
	var want abi.CallRequest
	wantErr := json.Unmarshal(input, &want)
	got, err := parseRequestAs(input, true)
	if wantErr != nil {
		if err == nil {
			t.Fatalf("%q: typed parse read what encoding/json refuses (%v)", input, wantErr)
		}
		return
	}
	if err != nil {
		t.Fatalf("%q: typed parse error %v, encoding/json read it", input, err)
	}
	norm := func(b []byte) []byte {
		if string(b) == "null" {
			return nil
		}
		return b
	}
	if got.Method != want.Method || got.Params.Name != want.Params.Name || !reflect.DeepEqual(got.Context, want.Context) ||
		!bytes.Equal(norm(got.Params.Arguments), norm(want.Params.Arguments)) {
		t.Fatalf("%q: typed parse = %q %+v %+v, encoding/json = %q %+v %+v", input, got.Method, got.Params, got.Context,
			want.Method, want.Params, want.Context)
	}
}

func TestParseRequestTyped(t *testing.T) {
	for _, s := range append(requestSeeds, `{"PARAMS":{"Name":"echo","ARGUMENTS":{"a":1}},"Context":{"Request_ID":"r"}}`,
		`{"p\u0061rams":{"name":"\u0065cho"}}`, `{"method":"prompts/get","params":{"name":"p"}}`) {
		checkParseRequestTyped(t, []byte(s))
	}
}

func FuzzParseRequestTyped(f *testing.F) {
	for _, s := range requestSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkParseRequestTyped)
}
