package sdk

import (
	"encoding/base64"
	"errors"
	"math"
	"reflect"
	"slices"
	"strconv"
	"sync"

	"github.com/plugboard/plugboard/abi/jsonscan"
)

// appendAny appends v as encoding/json encodes it with HTML escaping off,
// without encoding/json, for the values encodableReason accepts and those
// an envelope's details hold (any of them, in maps and slices): it is the
// encoder of a build with the plugboard_typed tag. A value of another kind
// (a channel, a function, a complex number, a NaN, a type with its own
// text encoding) is an error. FuzzAppendAny holds it to encoding/json.
func appendAny(dst []byte, v any) ([]byte, error) {
	return appendReflect(dst, reflect.ValueOf(v), 0)
}

// maxEncodeDepth stops a cyclic value, as encoding/json does after 1,000
// levels of pointers.
const maxEncodeDepth = 1000

var errEncodeDepth = errors.New("sdk: value nested too deep (a cycle?) to encode as JSON")

func appendReflect(dst []byte, v reflect.Value, depth int) ([]byte, error) {
	if depth > maxEncodeDepth {
		return nil, errEncodeDepth
	}
	if !v.IsValid() {
		return append(dst, "null"...), nil
	}
	t := v.Type()
	if t == rawMessageType {
		return appendRaw(dst, v.Bytes())
	}
	if customEncoded(t) {
		return nil, errors.New("sdk: " + t.String() + " has its own JSON or text encoding, which needs encoding/json")
	}
	switch t.Kind() {
	case reflect.Bool:
		return strconv.AppendBool(dst, v.Bool()), nil
	case reflect.String:
		return appendString(dst, v.String()), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.AppendInt(dst, v.Int(), 10), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.AppendUint(dst, v.Uint(), 10), nil
	case reflect.Float32, reflect.Float64:
		return appendFloat(dst, v.Float(), t.Bits())
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			return append(dst, "null"...), nil
		}
		return appendReflect(dst, v.Elem(), depth+1)
	case reflect.Slice:
		if v.IsNil() {
			return append(dst, "null"...), nil
		}
		if t.Elem().Kind() == reflect.Uint8 && !customEncoded(t.Elem()) {
			dst = append(dst, '"')
			dst = base64.StdEncoding.AppendEncode(dst, v.Bytes())
			return append(dst, '"'), nil
		}
		return appendElements(dst, v, depth)
	case reflect.Array:
		return appendElements(dst, v, depth)
	case reflect.Map:
		if t.Key().Kind() != reflect.String || customEncoded(t.Key()) {
			return nil, errors.New("sdk: map " + t.String() + " has keys that are not strings")
		}
		if v.IsNil() {
			return append(dst, "null"...), nil
		}
		keys := make([]string, 0, v.Len())
		for it := v.MapRange(); it.Next(); {
			keys = append(keys, it.Key().String())
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, k)
			dst = append(dst, ':')
			var err error
			if dst, err = appendReflect(dst, v.MapIndex(reflect.ValueOf(k).Convert(t.Key())), depth+1); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	case reflect.Struct:
		p := encPlanOf(t)
		if p == nil {
			return nil, errors.New("sdk: " + t.String() + " has embedded fields or field options only encoding/json handles")
		}
		return p.appendValue(dst, v)
	}
	return nil, errors.New("sdk: a " + t.Kind().String() + " cannot be encoded as JSON")
}

func appendElements(dst []byte, v reflect.Value, depth int) ([]byte, error) {
	dst = append(dst, '[')
	for i := range v.Len() {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = appendReflect(dst, v.Index(i), depth+1); err != nil {
			return nil, err
		}
	}
	return append(dst, ']'), nil
}

// appendFloat writes f as encoding/json does: the shortest decimal that
// reads back as f, in exponent form below 1e-6 and from 1e21, with a
// one-digit negative exponent written as e-7, not e-07.
func appendFloat(dst []byte, f float64, bits int) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, errors.New("sdk: unsupported value: " + strconv.FormatFloat(f, 'g', -1, bits))
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	dst = strconv.AppendFloat(dst, f, format, -1, bits)
	if format == 'e' {
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, nil
}

// appendRaw appends a json.RawMessage as encoding/json does: compacted,
// null when empty, an error when it is not one JSON value.
func appendRaw(dst []byte, raw []byte) ([]byte, error) {
	if len(raw) == 0 {
		return append(dst, "null"...), nil
	}
	p := jsonscan.Parser{B: raw}
	p.WS()
	start := p.I
	if err := p.Skip(); err != nil {
		return nil, errors.New("sdk: json.RawMessage is not valid JSON: " + err.Error())
	}
	end := p.I
	p.WS()
	if p.I != len(raw) {
		return nil, errors.New("sdk: json.RawMessage is not one JSON value")
	}
	return appendCompact(dst, raw[start:end]), nil
}

// appendCompact appends valid JSON without its insignificant whitespace.
func appendCompact(dst, src []byte) []byte {
	inString := false
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case inString:
			dst = append(dst, c)
			if c == '\\' && i+1 < len(src) {
				i++
				dst = append(dst, src[i])
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
			dst = append(dst, c)
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// encPlans caches the plans of the struct types appendAny meets.
var encPlans sync.Map // reflect.Type → *encPlan (nil: none)

// encPlanOf returns the encoding plan of struct type t, or nil.
func encPlanOf(t reflect.Type) *encPlan {
	if p, ok := encPlans.Load(t); ok {
		return p.(*encPlan)
	}
	p := newEncPlan(t)
	encPlans.Store(t, p)
	return p
}
