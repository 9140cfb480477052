package jsonfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestPathString(t *testing.T) {
	for _, c := range []struct {
		p    Path
		want string
	}{
		{nil, ""},
		{Path{"agents"}, "agents"},
		{Path{"agents", 1, "type"}, "agents[1].type"},
		{Path{0, "variants", "PLAN", "argv"}, "[0].variants.PLAN.argv"},
		{Path{"permissions", "WORKER", "allow", 0}, "permissions.WORKER.allow[0]"},
	} {
		if got := c.p.String(); got != c.want {
			t.Errorf("%#v: %q, want %q", c.p, got, c.want)
		}
	}
}

// TestSyntaxErrors: a malformed document is refused at the place of the
// fault, naming the field being read.
func TestSyntaxErrors(t *testing.T) {
	for _, c := range []struct {
		name, doc, want string
	}{
		{"missing comma", "{\n  \"a\": 1\n  \"b\": 2\n}", `f.json:3:3: invalid character '"' after object key:value pair`},
		{"trailing comma", "{\"list\": [1, 2,]}", `f.json:1:16: list[2]: invalid character ']' looking for beginning of value`},
		{"truncated", "{\"a\": {\"b\": [1,\n", `f.json:1:16: a.b[1]: unexpected end of the file`},
		{"empty", " \n", `f.json:1:1: the file is empty`},
		{"trailing data", "{} {}", `f.json:1:4: unexpected data after the top-level object`},
		{"bad literal", `{"ok": tru}`, `f.json:1:11: ok: invalid character '}' in literal true`},
		{"columns count characters", "{\"é\": \"ü\", \"x\": nul}", `f.json:1:20: x: invalid character '}' in literal null`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("f.json", []byte(c.doc))
			if err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Fatalf("error %v, want it to start %q", err, c.want)
			}
			var e *Error
			if !errors.As(err, &e) || e.Line == 0 {
				t.Fatalf("not a placed *Error: %#v", err)
			}
		})
	}
}

type inner struct {
	Name  string   `json:"name"`
	Count *int     `json:"count,omitempty"`
	Tags  []string `json:"tags"`
}

type custom struct{ v string }

func (c *custom) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil // encoding/json's convention, which Decode relies on
	}
	if string(b) != `"ok"` {
		return fmt.Errorf("want \"ok\", got %s", b)
	}
	c.v = "ok"
	return nil
}

type embedded struct {
	Extra string `json:"extra"`
}

type outer struct {
	embedded
	Items   []inner            `json:"items"`
	Limits  map[string]uint8   `json:"limits"`
	Custom  custom             `json:"custom"`
	Any     any                `json:"any"`
	Raw     json.RawMessage    `json:"raw"`
	Ignored string             `json:"-"`
	Nested  map[string][]inner `json:"nested"`
}

// TestDecodeStrict: every problem of a document is reported at once, each
// at its key or value, with its path; a document that fits decodes.
func TestDecodeStrict(t *testing.T) {
	good := `{"extra": "e", "items": [{"name": "a", "count": 2, "tags": ["x"]}], "limits": {"l": 255},
"custom": "ok", "any": [1, {"z": null}], "raw": {"whatever": true}, "nested": {"k": [{"name": "n"}]}}`
	doc, err := Parse("good.json", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	var o outer
	if filled, err := doc.Decode(&o); !filled || err != nil {
		t.Fatalf("good document: %v %v", filled, err)
	}
	if o.Extra != "e" || o.Items[0].Name != "a" || *o.Items[0].Count != 2 || o.Limits["l"] != 255 || o.Custom.v != "ok" ||
		string(o.Raw) != `{"whatever": true}` || o.Nested["k"][0].Name != "n" {
		t.Fatalf("decoded %+v", o)
	}

	bad := `{
  "items": [
    {"name": 5, "cuont": 1},
    {"name": "b", "count": 1.5, "tags": "x"}
  ],
  "limits": {"l": 256, "m": -1},
  "custom": "no",
  "Extra": "case differs",
  "Ignored": "x",
  "items": []
}`
	doc, err = Parse("bad.json", []byte(bad))
	if err != nil {
		t.Fatal(err)
	}
	o = outer{}
	filled, err := doc.Decode(&o)
	if !filled || err == nil {
		t.Fatalf("bad document: filled=%v, err=%v", filled, err)
	}
	// What fits is decoded, so a caller can check it too; what does not
	// is left zero.
	if o.Limits["l"] != 0 || o.Custom.v != "" || len(o.Items) != 0 {
		t.Errorf("refused values decoded: %+v", o)
	}
	want := []string{
		`bad.json:3:14: items[0].name: want a string, got a number`,
		`bad.json:3:17: items[0].cuont: unknown field "cuont" (did you mean "count"?)`,
		`bad.json:4:28: items[1].count: want a whole number that fits int, got 1.5`,
		`bad.json:4:41: items[1].tags: want an array, got a string`,
		`bad.json:6:19: limits.l: want a whole number, 0 or more, that fits uint8, got 256`,
		`bad.json:6:29: limits.m: want a whole number, 0 or more, that fits uint8, got -1`,
		`bad.json:7:13: custom: want "ok", got "no"`,
		`bad.json:8:3: Extra: unknown field "Extra" (did you mean "extra"?)`,
		`bad.json:9:3: Ignored: unknown field "Ignored"`,
		`bad.json:10:3: items: field "items" is given twice (first at line 2)`,
	}
	if got := strings.Split(err.Error(), "\n"); len(got) != len(want) {
		t.Fatalf("%d errors, want %d:\n%v", len(got), len(want), err)
	} else {
		for i := range want {
			if !strings.HasPrefix(got[i], want[i]) {
				t.Errorf("error %d:\n  %s\nwant it to start\n  %s", i, got[i], want[i])
			}
		}
	}
}

// TestDecodeKeysOnly: a document whose only faults are keys still fills
// the value, so the caller can check the values too.
func TestDecodeKeysOnly(t *testing.T) {
	doc, err := Parse("k.json", []byte(`{"items": [{"name": "a", "nmae": "b"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var o outer
	filled, err := doc.Decode(&o)
	if !filled || err == nil || !strings.Contains(err.Error(), `k.json:1:26: items[0].nmae: unknown field "nmae" (did you mean "name"?)`) {
		t.Fatalf("filled=%v err=%v", filled, err)
	}
	if o.Items[0].Name != "a" {
		t.Fatalf("not filled: %+v", o)
	}
}

// TestSubAndErrorf: a section keeps the file's positions and paths; an
// error about an absent field is placed at its closest enclosing value.
func TestSubAndErrorf(t *testing.T) {
	data := "{\n  \"agents\": {\n    \"list\": [\n      {\"id\": \"x\"}\n    ]\n  }\n}"
	doc, err := Parse("c.json", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	sub, ok := doc.Sub("agents")
	if !ok || sub.Path().String() != "agents" {
		t.Fatalf("Sub: %v %v", ok, sub)
	}
	if got := sub.Errorf(Path{"list", 0, "id"}, "bad id %q", "x").Error(); got != `c.json:4:14: agents.list[0].id: bad id "x"` {
		t.Errorf("present field: %s", got)
	}
	if got := sub.Errorf(Path{"list", 0, "type"}, "missing").Error(); got != `c.json:4:7: agents.list[0].type: missing` {
		t.Errorf("absent field: %s", got)
	}
	if !sub.Has("list", 0, "id") || sub.Has("list", 1) {
		t.Error("Has")
	}
	if _, ok := doc.Sub("nothing"); ok {
		t.Error("Sub of an absent key")
	}
	var v struct {
		List []struct {
			ID string `json:"id"`
		} `json:"list"`
	}
	if filled, err := sub.Decode(&v); !filled || err != nil || v.List[0].ID != "x" {
		t.Fatalf("decode a section: %v %v %+v", filled, err, v)
	}
	var w struct {
		List []struct {
			Name string `json:"name"`
		} `json:"list"`
	}
	if _, err := sub.Decode(&w); err == nil || !strings.HasPrefix(err.Error(), `c.json:4:8: agents.list[0].id: unknown field "id"`) {
		t.Fatalf("section error: %v", err)
	}
}

// TestJoinSorts: errors read top to bottom, those without a place last.
func TestJoinSorts(t *testing.T) {
	doc, _ := Parse("j.json", []byte("{\"a\": 1,\n \"b\": 2}"))
	err := Join(doc.Errorf(Path{"b"}, "second"), errors.New("unplaced"), nil, errors.Join(doc.Errorf(Path{"a"}, "first")))
	want := "j.json:1:7: a: first\nj.json:2:7: b: second\nunplaced"
	if err == nil || err.Error() != want {
		t.Fatalf("%v\nwant\n%s", err, want)
	}
	if Join(nil, nil) != nil {
		t.Fatal("Join of nothing is not nil")
	}
}

// TestRefusedValuesReportedOnce: a check of a value Decode refused (and
// left zero) adds nothing; the others stand.
func TestRefusedValuesReportedOnce(t *testing.T) {
	doc, err := Parse("r.json", []byte(`{"items": [{"name": 5, "tags": ["a"]}], "extra": "e"}`))
	if err != nil {
		t.Fatal(err)
	}
	var o outer
	filled, decErr := doc.Decode(&o)
	if !filled || o.Extra != "e" || o.Items[0].Tags[0] != "a" {
		t.Fatalf("filled=%v %+v", filled, o)
	}
	err = Join(decErr, doc.Errorf(Path{"items", 0, "name"}, "is empty"), doc.Errorf(Path{"extra"}, "is not allowed"))
	want := "r.json:1:21: items[0].name: want a string, got a number\nr.json:1:50: extra: is not allowed"
	if err == nil || err.Error() != want {
		t.Fatalf("%v\nwant\n%s", err, want)
	}
}
