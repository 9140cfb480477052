package sdk

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

type feNested struct {
	A string `json:"a,omitempty"`
	B *int   `json:"b"`
}

type feOut struct {
	S     string         `json:"s"`
	SE    string         `json:"se,omitempty"`
	SZ    string         `json:"sz,omitzero"`
	B     bool           `json:"b"`
	BE    bool           `json:"be,omitempty"`
	I     int64          `json:"i"`
	I8    int8           `json:"i8,omitempty"`
	U     uint32         `json:"u"`
	F     float64        `json:"f"`
	F32   float32        `json:"f32"`
	PS    *string        `json:"ps"`
	PSE   *string        `json:"pse,omitempty"`
	N     feNested       `json:"n"`
	NZ    feNested       `json:"nz,omitzero"`
	PN    *feNested      `json:"pn"`
	L     []string       `json:"l"`
	LE    []string       `json:"le,omitempty"`
	M     map[string]int `json:"m"`
	Any   any            `json:"any"`
	T     time.Time      `json:"t"`
	Raw   []byte         `json:"raw"`
	Named fzMode         `json:"named"`
	NoTag int
	Skip  int `json:"-"`
	priv  int
}

func feValue(s string, n int64, f float64, flag bool) feOut {
	v := feOut{
		S: s, SE: s, SZ: s, B: flag, BE: flag, I: n, I8: int8(n), U: uint32(n), F: f, F32: float32(f),
		N: feNested{A: s}, L: []string{s}, M: map[string]int{s: int(n)}, Any: s,
		T: time.Unix(n%1e9, 0).UTC(), Raw: []byte(s), Named: fzMode(s), NoTag: int(n), Skip: 1, priv: 2,
	}
	if flag {
		b := int(n)
		v.PS, v.PN, v.NZ = &s, &feNested{A: s, B: &b}, feNested{A: "z"}
		v.LE = []string{s, s}
	}
	return v
}

func FuzzFastEncode(f *testing.F) {
	for _, s := range []string{"", "plain", `q"b\s`, "\x00\x1f\b\f\n\r\t\x7f", "é☃😀", "\u2028\u2029", "\xff\xfe", "<&>", "a\xc3", "12345678\"12345678"} {
		f.Add(s, int64(-7), 1.5, true)
		f.Add(s, int64(0), 0.0, false)
	}
	p := newEncPlan(reflect.TypeFor[feOut]())
	if p == nil {
		f.Fatal("no plan for feOut")
	}
	f.Fuzz(func(t *testing.T, s string, n int64, fl float64, flag bool) {
		if math.IsNaN(fl) || math.IsInf(fl, 0) || math.IsInf(float64(float32(fl)), 0) {
			return
		}
		v := feValue(s, n, fl, flag)
		want, werr := appendJSON(nil, v)
		got, gerr := p.appendValue(nil, reflect.ValueOf(v))
		if (werr != nil) != (gerr != nil) || !sameJSON(string(got), string(want)) {
			t.Fatalf("plan:          %s (%v)\nencoding/json: %s (%v)", got, gerr, want, werr)
		}
		if got, want := string(appendString(nil, s)), string(mustJSON(t, s)); !sameJSON(got, want) {
			t.Fatalf("appendString(%q) = %s, encoding/json %s", s, got, want)
		}
	})
}

// sameJSON compares encodings byte for byte, except that encoding/json
// built with GOEXPERIMENT=jsonv2 writes invalid UTF-8 as a literal U+FFFD
// where the default one writes \ufffd.
func sameJSON(got, want string) bool {
	return got == want || strings.ReplaceAll(got, `\ufffd`, "\uFFFD") == want
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := appendJSON(nil, v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEncPlanShapes(t *testing.T) {
	type zeroer struct {
		T time.Time `json:"t,omitzero"` // time.Time has IsZero
	}
	type quoted struct {
		N int `json:"n,string"`
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[zeroer](), reflect.TypeFor[quoted](), reflect.TypeFor[map[string]any](), reflect.TypeFor[time.Time]()} {
		if newEncPlan(typ) != nil {
			t.Errorf("%v: got a plan, want encoding/json throughout", typ)
		}
	}
	if newEncPlan(reflect.TypeFor[*greetOut]()) == nil {
		t.Error("no plan for *greetOut")
	}
	// A failing field value fails the whole encoding, as with encoding/json.
	type withFloat struct {
		F float64 `json:"f"`
	}
	if _, err := newEncPlan(reflect.TypeFor[withFloat]()).appendValue(nil, reflect.ValueOf(withFloat{math.Inf(1)})); err == nil {
		t.Error("Inf encoded without error")
	}
}
