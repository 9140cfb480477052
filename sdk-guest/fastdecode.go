package sdk

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/plugboard/plugboard/abi/jsonscan"
)

// This file is the fast path of argument (and call-context) decoding.
//
// encoding/json validates its input with a byte-at-a-time state machine
// that makes an indirect call per byte; compiled to WebAssembly by the Go
// toolchain that costs tens of nanoseconds a byte, and it dominated the
// call path (measured: ~40 µs of a 1 KiB echo call). For the common shapes
// of tool inputs — structs of strings, numbers, booleans, pointers to them
// and nested such structs — a plan built once per type decodes the
// arguments with the request parser's tight loops instead, strings with
// escapes through jsonscan.Unquote. Anything else (keys with escapes,
// unknown or case-folded keys, type mismatches, custom unmarshalers,
// ",string" options, embedded structs) gives up, and the caller decodes
// with encoding/json from scratch, so results and errors are always
// encoding/json's. FuzzFastDecode checks that equivalence.

// errFallback stops the fast path; the caller decodes with encoding/json.
var errFallback = errors.New("sdk: fall back to encoding/json")

// plan decodes JSON objects into one struct type.
type plan struct {
	fields map[string]*fieldPlan // by exact JSON name
	names  []string              // JSON names, for case-folded matches
	// skipUnknown skips keys that match no field (json.Unmarshal's
	// behaviour) instead of giving up (DisallowUnknownFields).
	skipUnknown bool
}

type fieldKind uint8

const (
	kindString fieldKind = iota
	kindBool
	kindInt
	kindUint
	kindFloat
	kindStruct
	kindOther // decoded by encoding/json on its own span
)

type fieldPlan struct {
	index int
	kind  fieldKind
	ptr   bool  // the field is a pointer to the kind
	sub   *plan // kindStruct
}

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// customDecoded reports whether encoding/json hands t to a method.
func customDecoded(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Implements(jsonUnmarshalerType) || p.Implements(jsonUnmarshalerType) ||
		t.Implements(textUnmarshalerType) || p.Implements(textUnmarshalerType)
}

// newPlan builds the plan of struct type t, or returns nil when the type
// needs encoding/json throughout.
func newPlan(t reflect.Type, skipUnknown bool) *plan {
	return buildPlan(t, skipUnknown, map[reflect.Type]bool{})
}

func buildPlan(t reflect.Type, skipUnknown bool, seen map[reflect.Type]bool) *plan {
	if t.Kind() != reflect.Struct || customDecoded(t) || seen[t] {
		return nil
	}
	seen[t] = true
	defer delete(seen, t)
	p := &plan{fields: map[string]*fieldPlan{}, skipUnknown: skipUnknown}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous {
			return nil // promoted fields: encoding/json's rules, not ours
		}
		if !f.IsExported() {
			continue
		}
		name := f.Name
		if tag, ok := f.Tag.Lookup("json"); ok {
			if tag == "-" {
				continue
			}
			tagName, opts, _ := strings.Cut(tag, ",")
			if strings.Contains(","+opts+",", ",string,") || !plainTagName(tagName) {
				return nil
			}
			if tagName != "" {
				name = tagName
			}
		}
		if _, dup := p.fields[name]; dup {
			return nil
		}
		fp := &fieldPlan{index: i}
		ft := f.Type
		if ft.Kind() == reflect.Pointer && !customDecoded(ft) {
			fp.ptr = true
			ft = ft.Elem()
		}
		fp.kind = kindOther
		if !customDecoded(ft) {
			switch ft.Kind() {
			case reflect.String:
				fp.kind = kindString
			case reflect.Bool:
				fp.kind = kindBool
			case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
				fp.kind = kindInt
			case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
				fp.kind = kindUint
			case reflect.Float32, reflect.Float64:
				fp.kind = kindFloat
			case reflect.Struct:
				if fp.sub = buildPlan(ft, skipUnknown, seen); fp.sub != nil {
					fp.kind = kindStruct
				}
			}
		}
		if fp.kind == kindOther && fp.ptr {
			fp.ptr = false // encoding/json decodes the pointer field itself
		}
		p.fields[name] = fp
		p.names = append(p.names, name)
	}
	return p
}

// plainTagName accepts the tag names this path handles; encoding/json has
// its own rules for the rest.
func plainTagName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// decodeFast decodes the JSON object data into v (an addressable struct of
// p's type). It returns false when encoding/json must decode data instead;
// v may then hold part of the data.
func (p *plan) decodeFast(data []byte, v reflect.Value) bool {
	d := parser{Parser: jsonscan.Parser{B: data}}
	d.WS()
	if d.I >= len(d.B) || d.B[d.I] != '{' {
		return false
	}
	if err := d.decodeObject(p, v); err != nil {
		return false
	}
	d.WS()
	return d.I == len(d.B)
}

// decodeTyped decodes the JSON object data into v (an addressable struct
// of p's type) without encoding/json, with encoding/json's results and the
// errors it would give: keys with escapes or in another case are matched
// as it matches them, and a mismatch is an *json.UnmarshalTypeError or an
// unknown-field error. Like the json.Decoder decodeArguments uses, it
// reads the first JSON value of data only. It serves builds with the
// plugboard_typed tag, whose plans have no field of kindOther (typedReason
// checks).
func (p *plan) decodeTyped(data []byte, v reflect.Value) error {
	d := parser{Parser: jsonscan.Parser{B: data, UnquoteKeys: true}, typed: true}
	d.WS()
	switch {
	case d.I >= len(d.B):
		return d.Fail()
	case d.Literal("null"):
		return nil
	case d.B[d.I] != '{':
		start := d.I
		if err := d.Skip(); err != nil {
			return err
		}
		return &json.UnmarshalTypeError{Value: jsonValueKind(d.B[start]), Type: v.Type(), Offset: int64(start)}
	}
	return d.decodeObject(p, v)
}

// jsonValueKind names the JSON value starting with c as encoding/json's
// type errors do.
func jsonValueKind(c byte) string {
	switch c {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "bool"
	}
	return "number"
}

// typeError reports, in a typed decode, that the value at d.I does not fit
// field name (a Go value of type t), and consumes it.
func (d *parser) typeError(name string, t reflect.Type) error {
	if !d.typed {
		return errFallback
	}
	start := d.I
	if err := d.Skip(); err != nil {
		return err
	}
	return &json.UnmarshalTypeError{Value: jsonValueKind(d.B[start]), Type: t, Offset: int64(start), Field: d.fieldPath(name)}
}

func (d *parser) fieldPath(name string) string {
	if d.path == "" {
		return name
	}
	return d.path + "." + name
}

// field finds key's field as encoding/json does: the exact name, else
// (typed only) the first whose name matches case-insensitively.
func (p *plan) field(key []byte, typed bool) (string, *fieldPlan) {
	if f := p.fields[string(key)]; f != nil || !typed {
		return string(key), f
	}
	for _, name := range p.names {
		if bytes.EqualFold(key, []byte(name)) {
			return name, p.fields[name]
		}
	}
	return "", nil
}

// decodeObject decodes the object at d.I into v.
func (d *parser) decodeObject(p *plan, v reflect.Value) error {
	ok, err := d.Object(func(key []byte) (bool, error) {
		name, f := p.field(key, d.typed)
		if f == nil {
			if d.typed && !p.skipUnknown {
				return false, errors.New("json: unknown field " + strconv.Quote(string(key)))
			}
			if !p.skipUnknown || foldsTo(key, p.names...) {
				return false, errFallback
			}
			return true, d.Skip()
		}
		return true, d.decodeField(name, f, v.Field(f.index))
	})
	if err == nil && !ok { // an escaped key
		err = errFallback
	}
	return err
}

func (d *parser) decodeField(name string, f *fieldPlan, v reflect.Value) error {
	if f.kind == kindOther {
		if d.typed { // typedReason keeps such plans out of typed builds
			return errors.New("sdk: field " + strconv.Quote(d.fieldPath(name)) + " needs encoding/json")
		}
		start := d.I
		if err := d.Skip(); err != nil {
			return err
		}
		return decodeStrict(d.B[start:d.I], v.Addr().Interface())
	}
	if d.Literal("null") {
		// encoding/json: null clears a pointer and leaves other values of
		// these kinds alone.
		if f.ptr {
			v.SetZero()
		}
		return nil
	}
	if f.ptr {
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		v = v.Elem()
	}
	if d.I >= len(d.B) {
		return d.Fail()
	}
	switch f.kind {
	case kindString:
		if d.B[d.I] != '"' {
			return d.typeError(name, v.Type())
		}
		s, plain, err := d.Str()
		if err != nil {
			return err
		}
		if !plain || !utf8.Valid(s) {
			if s, plain = jsonscan.Unquote(s); !plain {
				return errFallback
			}
		}
		v.SetString(string(s))
	case kindBool:
		switch {
		case d.Literal("true"):
			v.SetBool(true)
		case d.Literal("false"):
			v.SetBool(false)
		default:
			return d.typeError(name, v.Type())
		}
	case kindInt, kindUint, kindFloat:
		c := d.B[d.I]
		if c != '-' && (c < '0' || c > '9') {
			return d.typeError(name, v.Type())
		}
		start := d.I
		if err := d.Number(); err != nil {
			return err
		}
		if setNumber(f.kind, string(d.B[start:d.I]), v) != nil {
			if !d.typed {
				return errFallback
			}
			return &json.UnmarshalTypeError{Value: "number " + string(d.B[start:d.I]), Type: v.Type(),
				Offset: int64(start), Field: d.fieldPath(name)}
		}
		return nil
	case kindStruct:
		if d.B[d.I] != '{' {
			return d.typeError(name, v.Type())
		}
		outer := d.path
		if d.typed {
			d.path = d.fieldPath(name)
		}
		err := d.decodeObject(f.sub, v)
		d.path = outer
		return err
	}
	return nil
}

// setNumber stores a JSON number literal as encoding/json does, giving up
// where encoding/json would report an error.
func setNumber(kind fieldKind, lit string, v reflect.Value) error {
	switch kind {
	case kindInt:
		n, err := strconv.ParseInt(lit, 10, 64)
		if err != nil || v.OverflowInt(n) {
			return errFallback
		}
		v.SetInt(n)
	case kindUint:
		n, err := strconv.ParseUint(lit, 10, 64)
		if err != nil || v.OverflowUint(n) {
			return errFallback
		}
		v.SetUint(n)
	case kindFloat:
		n, err := strconv.ParseFloat(lit, v.Type().Bits())
		if err != nil || v.OverflowFloat(n) {
			return errFallback
		}
		v.SetFloat(n)
	}
	return nil
}
