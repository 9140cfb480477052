package sdk

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

type fzMode string

type fzNested struct {
	A string `json:"a"`
	B *int   `json:"b,omitempty"`
}

type fzIn struct {
	S     string             `json:"s"`
	B     bool               `json:"b"`
	I     int8               `json:"i"`
	U     uint16             `json:"u"`
	F     float32            `json:"f"`
	F64   float64            `json:"f64"`
	PS    *string            `json:"ps"`
	PI    *int64             `json:"pi,omitempty"`
	N     fzNested           `json:"n"`
	PN    *fzNested          `json:"pn"`
	L     []string           `json:"l"`
	M     map[string]int     `json:"m"`
	Any   any                `json:"any"`
	T     time.Time          `json:"t"`
	PT    *time.Time         `json:"pt"`
	Named fzMode             `json:"named"`
	Raw   []byte             `json:"raw"`
	MN    map[string]fzNest2 `json:"mn"`
	NoTag int
	Skip  int `json:"-"`
	//lint:ignore SA5008 encoding/json documents "-," as the field named "-"; the fuzz target must cover it
	Dash int `json:"-,"`
	//lint:ignore U1000 an unexported field must be ignored by both decoders
	priv int
}

type fzNest2 struct {
	X int `json:"x"`
}

var fastSeeds = []string{
	`{"s":"hello","b":true,"i":-5,"u":7,"f":1.5,"f64":-2e10,"ps":"p","pi":9,"n":{"a":"x","b":3},"pn":{"a":"y"},"l":["a"],"m":{"k":1},"any":[1,"x"],"t":"2024-01-02T03:04:05Z","named":"formal","raw":"aGk=","NoTag":4,"-":2}`,
	`{"s":null,"ps":null,"pn":null,"l":null,"m":null,"any":null,"t":null,"pt":null,"n":null,"b":null,"i":null}`,
	`{"s":"a\"b"}`, `{"s":"\u00e9"}`, "{\"s\":\"\xff\"}", `{"S":"folded"}`, `{"notag":1}`, `{"Skip":1}`, `{"priv":1}`,
	`{"i":128}`, `{"i":-129}`, `{"u":-1}`, `{"u":65536}`, `{"i":1.0}`, `{"i":1e2}`, `{"f":1e39}`, `{"f64":1e309}`,
	`{"s":1}`, `{"b":"true"}`, `{"n":[]}`, `{"n":{"a":"x","zz":1}}`, `{"n":{"A":"x"}}`, `{"pn":{"b":null}}`,
	`{"mn":{"k":{"x":1}}}`, `{"mn":{"k":{"y":1}}}`, `{"l":[1]}`, `{"t":"yesterday"}`,
	`{"s":"a","s":"b"}`, `{"pn":{"a":"1"},"pn":{"b":2}}`, `{"n":{"a":"1"},"n":{"b":2}}`,
	`{}`, ` { "s" : "ws" } `, `[]`, `"x"`, `{"s":"a"} {}`, `{"s":"a",}`, `{"\u0073":"esc"}`,
	`{"unknown":1}`, `{"pi":-0}`, `{"f":-0.0}`, `{"u":0}`,
	`{"s":"line\nnext \"q\" \\ \/ \ud83d\ude00 \ud83d lone","ps":"tab\there","n":{"a":"\u00e9"}}`, "{\"s\":\"bad \xff utf8\"}",
}

func FuzzFastDecode(f *testing.F) {
	for _, s := range fastSeeds {
		f.Add([]byte(s))
	}
	p := newPlan(reflect.TypeFor[fzIn](), false)
	if p == nil {
		f.Fatal("no plan for fzIn")
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFastDecode(t, p, data)
	})
}

// checkFastDecode asserts that whenever the fast path succeeds,
// encoding/json (the fallback) succeeds with the same value.
func checkFastDecode(t *testing.T, p *plan, data []byte) {
	t.Helper()
	var want fzIn
	wantErr := decodeArguments(data, &want)
	var got fzIn
	if !p.decodeFast(data, reflect.ValueOf(&got).Elem()) {
		return
	}
	if wantErr != nil {
		t.Fatalf("%q: fast path succeeded, encoding/json failed: %v", data, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\nfast path     %+v\nencoding/json %+v", data, got, want)
	}
}

func TestFastDecodeMatchesEncodingJSON(t *testing.T) {
	p := newPlan(reflect.TypeFor[fzIn](), false)
	fast := 0
	for _, s := range fastSeeds {
		checkFastDecode(t, p, []byte(s))
		var v fzIn
		if p.decodeFast([]byte(s), reflect.ValueOf(&v).Elem()) {
			fast++
		}
	}
	// The common shapes must take the fast path.
	if fast < 10 {
		t.Errorf("only %d seeds decoded on the fast path", fast)
	}
	// A string with escapes (most agents' text: code, quotes, newlines)
	// stays on the fast path.
	var esc fzIn
	if !p.decodeFast([]byte(`{"s":"a\n\"b\"","n":{"a":"\u00e9"}}`), reflect.ValueOf(&esc).Elem()) || esc.S != "a\n\"b\"" || esc.N.A != "é" {
		t.Errorf("escaped strings: fast path failed or wrong: %+v", esc)
	}
	var v fzIn
	if !p.decodeFast([]byte(fastSeeds[0]), reflect.ValueOf(&v).Elem()) || v.S != "hello" || v.N.A != "x" || *v.N.B != 3 || v.PN.A != "y" || v.T.Year() != 2024 {
		t.Errorf("full seed: fast path failed or wrong: %+v", v)
	}
}

func TestPlanShapes(t *testing.T) {
	type embedded struct{ A int }
	type withEmbedded struct {
		embedded
		B int
	}
	type withString struct {
		N int `json:"n,string"`
	}
	type dupNames struct {
		A int `json:"X"`
		X int
	}
	type odd struct {
		A int `json:"a b"`
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[withEmbedded](), reflect.TypeFor[withString](), reflect.TypeFor[dupNames](), reflect.TypeFor[odd](), reflect.TypeFor[time.Time](), reflect.TypeFor[int]()} {
		if newPlan(typ, false) != nil {
			t.Errorf("%v: got a plan, want encoding/json throughout", typ)
		}
	}
	if newPlan(reflect.TypeFor[greetIn](), false) == nil || contextPlan == nil {
		t.Error("no plan for ordinary structs")
	}
}

// fzTyped is a struct whose plan has no field of kindOther: what a build
// with the plugboard_typed tag decodes without encoding/json.
type fzTyped struct {
	S   string    `json:"s"`
	B   bool      `json:"b"`
	I   int8      `json:"i"`
	U   uint16    `json:"u"`
	F   float32   `json:"f"`
	F64 float64   `json:"f64"`
	PS  *string   `json:"ps"`
	PI  *int64    `json:"pi,omitempty"`
	N   fzNested  `json:"n"`
	PN  *fzNested `json:"pn"`
	//lint:ignore U1000 an unexported field must be ignored by both decoders
	priv  int
	NoTag string
}

var typedSeeds = append([]string{
	`{"S":"folded","NOTAG":"x","N":{"A":"y"}}`, `{"\u0073":"escaped key","n":{"\u0061":"nested"}}`,
	`{"s":"a","extra":1}`, `{"n":{"a":1}}`, `{"pn":{"b":"x"}}`, `{"i":1.5}`, `{"u":-1}`, `null`, ` null `, `null x`,
	`[1]`, `"str"`, `12`, `true`, `{"s":"a"`, `{"b":nul}`, `{"n":[]}`, `{"f":"1"}`,
}, fastSeeds...)

// checkTypedDecode holds decodeTyped to encoding/json with unknown fields
// refused: both succeed with the same value or both fail; on valid JSON a
// type error names the same field and value.
func checkTypedDecode(t *testing.T, p *plan, data []byte) {
	t.Helper()
	var want, got fzTyped
	wantErr := decodeArguments(data, &want)
	if len(bytes.TrimSpace(data)) == 0 {
		return // decodeArguments takes no arguments as {}
	}
	gotErr := p.decodeTyped(data, reflect.ValueOf(&got).Elem())
	if (gotErr == nil) != (wantErr == nil) {
		t.Fatalf("%q: typed err %v, encoding/json err %v", data, gotErr, wantErr)
	}
	if wantErr == nil {
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\ntyped         %+v\nencoding/json %+v", data, got, want)
		}
		return
	}
	var wt, gt *json.UnmarshalTypeError
	if json.Valid(data) && errors.As(wantErr, &wt) {
		if !errors.As(gotErr, &gt) || gt.Field != wt.Field || gt.Value != wt.Value || gt.Type != wt.Type {
			t.Fatalf("%q: typed err %#v, encoding/json err %#v", data, gotErr, wantErr)
		}
	}
	if strings.HasPrefix(wantErr.Error(), "json: unknown field") && json.Valid(data) && gotErr.Error() != wantErr.Error() {
		t.Fatalf("%q: typed err %v, encoding/json err %v", data, gotErr, wantErr)
	}
}

func TestTypedDecodeMatchesEncodingJSON(t *testing.T) {
	p := newPlan(reflect.TypeFor[fzTyped](), false)
	if reason := planReason(p, "fzTyped"); reason != "" {
		t.Fatalf("fzTyped's plan is not complete: %s", reason)
	}
	for _, s := range typedSeeds {
		checkTypedDecode(t, p, []byte(s))
	}
}

func FuzzTypedDecode(f *testing.F) {
	for _, s := range typedSeeds {
		f.Add([]byte(s))
	}
	p := newPlan(reflect.TypeFor[fzTyped](), false)
	f.Fuzz(func(t *testing.T, data []byte) { checkTypedDecode(t, p, data) })
}
