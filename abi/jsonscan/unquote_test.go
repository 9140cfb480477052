package jsonscan

import (
	"bytes"
	"encoding/json"
	"testing"
)

var unquoteSeeds = []string{
	`plain`, ``, `a\"b`, `line\nnext\ttab\\ \/ \b\f\r`, `\u00e9\u20AC`, `\ud83d\ude00`, `\ud83d`, `\ud83dx`,
	`\ud83d\u0041`, `\ude00`, `\ud83d\ud83d\ude00`, "caf\xc3\xa9", "bad\xff\xfeutf8", "\xe2\x82", `\u0000`,
	"\u2028", `tail\`, `\x`, `\u12`, `\u12G4`, "ctl\x01",
}

// TestUnquoteAgreesWithEncodingJSON holds Unquote to json.Unmarshal into a
// string, for every string Str accepts.
func TestUnquoteAgreesWithEncodingJSON(t *testing.T) {
	for _, s := range unquoteSeeds {
		checkUnquote(t, []byte(s))
	}
}

func FuzzUnquote(f *testing.F) {
	for _, s := range unquoteSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkUnquote)
}

func checkUnquote(t *testing.T, s []byte) {
	quoted := append(append([]byte{'"'}, s...), '"')
	p := Parser{B: quoted}
	raw, _, err := p.Str()
	var want string
	wantErr := json.Unmarshal(quoted, &want)
	if err != nil || p.I != len(quoted) {
		if wantErr == nil {
			t.Fatalf("%q: Str refused what encoding/json accepts (%v)", s, err)
		}
		return
	}
	if wantErr != nil {
		t.Fatalf("%q: Str accepted what encoding/json refuses (%v)", s, wantErr)
	}
	got, ok := Unquote(raw)
	if !ok || !bytes.Equal(got, []byte(want)) {
		t.Fatalf("%q: Unquote = %q, %v; encoding/json = %q", s, got, ok, want)
	}
}
