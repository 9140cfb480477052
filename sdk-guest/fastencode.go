package sdk

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/plugboard/plugboard/abi/jsonscan"
)

// This file is the fast path of result encoding, the counterpart of
// fastdecode.go: encoding/json's string escaping and reflection walk cost
// ~13 µs per KiB of output in WebAssembly. A plan built once per output
// type writes structs of strings, integers, booleans, pointers to them and
// nested such structs directly; every other value (floats, slices, maps,
// interfaces, custom marshalers) is written by encoding/json in place. The
// bytes are exactly encoding/json's with HTML escaping off; FuzzFastEncode
// checks that.

// encPlan encodes one struct type.
type encPlan struct {
	fields []encField
}

type encField struct {
	index     int
	key       string // `"name":`
	kind      fieldKind
	ptr       bool
	sub       *encPlan
	omitEmpty bool
	omitZero  bool
}

var (
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	isZeroerType      = reflect.TypeFor[interface{ IsZero() bool }]()
)

func customEncoded(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Implements(jsonMarshalerType) || p.Implements(jsonMarshalerType) ||
		t.Implements(textMarshalerType) || p.Implements(textMarshalerType)
}

// newEncPlan builds the plan of t (a struct, or a pointer to one), or
// returns nil when encoding/json must encode it throughout.
func newEncPlan(t reflect.Type) *encPlan {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return buildEncPlan(t, map[reflect.Type]bool{})
}

func buildEncPlan(t reflect.Type, seen map[reflect.Type]bool) *encPlan {
	if t.Kind() != reflect.Struct || customEncoded(t) || seen[t] {
		return nil
	}
	seen[t] = true
	defer delete(seen, t)
	p := &encPlan{}
	names := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous {
			return nil
		}
		if !f.IsExported() {
			continue
		}
		name, opts := f.Name, ""
		if tag, ok := f.Tag.Lookup("json"); ok {
			if tag == "-" {
				continue
			}
			var tagName string
			tagName, opts, _ = strings.Cut(tag, ",")
			if !plainTagName(tagName) {
				return nil
			}
			if tagName != "" {
				name = tagName
			}
		}
		opts = "," + opts + ","
		if strings.Contains(opts, ",string,") || names[name] {
			return nil
		}
		names[name] = true
		ef := encField{
			index:     i,
			key:       `"` + name + `":`,
			omitEmpty: strings.Contains(opts, ",omitempty,"),
			omitZero:  strings.Contains(opts, ",omitzero,"),
		}
		ft := f.Type
		if ef.omitZero && (ft.Implements(isZeroerType) || reflect.PointerTo(ft).Implements(isZeroerType)) {
			return nil // encoding/json calls IsZero; keep its rules
		}
		if ft.Kind() == reflect.Pointer && !customEncoded(ft) {
			ef.ptr = true
			ft = ft.Elem()
		}
		ef.kind = kindOther
		if !customEncoded(ft) {
			switch ft.Kind() {
			case reflect.String:
				ef.kind = kindString
			case reflect.Bool:
				ef.kind = kindBool
			case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
				ef.kind = kindInt
			case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
				ef.kind = kindUint
			case reflect.Struct:
				if ef.sub = buildEncPlan(ft, seen); ef.sub != nil {
					ef.kind = kindStruct
				}
			}
		}
		if ef.kind == kindOther {
			ef.ptr = false
		}
		p.fields = append(p.fields, ef)
	}
	return p
}

// appendValue appends v (a struct of p's type) as JSON.
func (p *encPlan) appendValue(dst []byte, v reflect.Value) ([]byte, error) {
	dst = append(dst, '{')
	first := true
	for i := range p.fields {
		f := &p.fields[i]
		fv := v.Field(f.index)
		if f.omitEmpty && isEmptyValue(fv) || f.omitZero && fv.IsZero() {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, f.key...)
		if f.ptr {
			if fv.IsNil() {
				dst = append(dst, "null"...)
				continue
			}
			fv = fv.Elem()
		}
		var err error
		switch f.kind {
		case kindString:
			dst = appendString(dst, fv.String())
		case kindBool:
			dst = strconv.AppendBool(dst, fv.Bool())
		case kindInt:
			dst = strconv.AppendInt(dst, fv.Int(), 10)
		case kindUint:
			dst = strconv.AppendUint(dst, fv.Uint(), 10)
		case kindStruct:
			dst, err = f.sub.appendValue(dst, fv)
		default:
			dst, err = appendJSON(dst, fv.Interface())
		}
		if err != nil {
			return nil, err
		}
	}
	return append(dst, '}'), nil
}

// isEmptyValue is encoding/json's omitempty test.
func isEmptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64,
		reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

// appendString appends s as a JSON string exactly as encoding/json does
// with HTML escaping off, skipping runs of plain ASCII 8 bytes at a time.
func appendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		for i+8 <= len(s) && !specialOrHighIn8(load64(s, i)) {
			i += 8
		}
		if i >= len(s) {
			break
		}
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// load64 reads s[i:i+8] as a little-endian word.
func load64(s string, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

// specialOrHighIn8 reports whether any of the 8 bytes in x needs a look:
// '"', '\\', a control character or a non-ASCII byte.
func specialOrHighIn8(x uint64) bool {
	const highs = 0x8080808080808080
	return jsonscan.SpecialIn8(x) || x&highs != 0
}
