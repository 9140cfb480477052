package jsonscan

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// Decode parses one JSON document into the values encoding/json produces
// for an `any` (map[string]any, []any, string, float64, bool, nil) in one
// validating pass. Strings with escapes or invalid UTF-8 are decoded by
// Unquote, keys with them by encoding/json, so the result never differs
// from json.Unmarshal.
func Decode(b []byte) (any, error) {
	p := Parser{B: b}
	p.WS()
	v, err := p.value()
	if err == nil {
		p.WS()
		if p.I != len(b) {
			err = p.Fail()
		}
	}
	if err != nil || p.fallback {
		// Rare inputs (escaped or non-UTF-8 keys, or an error whose message
		// should be encoding/json's): decode the standard way.
		var out any
		if uerr := json.Unmarshal(b, &out); uerr != nil {
			return nil, uerr
		}
		return out, nil
	}
	return v, nil
}

func (p *Parser) value() (any, error) {
	if p.I >= len(p.B) {
		return nil, p.Fail()
	}
	switch c := p.B[p.I]; {
	case c == '"':
		return p.stringValue()
	case c == '{':
		m := map[string]any{}
		ok, err := p.Object(func(key []byte) (bool, error) {
			if !utf8.Valid(key) {
				p.fallback = true
			}
			v, err := p.value()
			if err != nil {
				return false, err
			}
			m[string(key)] = v
			return true, nil
		})
		if !ok {
			p.fallback = true // a key with escapes was skipped
		}
		return m, err
	case c == '[':
		return p.arrayValue()
	case c == '-' || '0' <= c && c <= '9':
		start := p.I
		if err := p.Number(); err != nil {
			return nil, err
		}
		f, err := strconv.ParseFloat(string(p.B[start:p.I]), 64)
		if err != nil { // out of range: encoding/json reports it too
			return nil, &json.UnmarshalTypeError{Value: "number " + string(p.B[start:p.I]), Offset: int64(start)}
		}
		return f, nil
	case p.Literal("true"):
		return true, nil
	case p.Literal("false"):
		return false, nil
	case p.Literal("null"):
		return nil, nil
	}
	return nil, p.Fail()
}

func (p *Parser) stringValue() (any, error) {
	start := p.I
	s, plain, err := p.Str()
	if err != nil {
		return nil, err
	}
	if plain && utf8.Valid(s) {
		return string(s), nil
	}
	if u, ok := Unquote(s); ok {
		return string(u), nil
	}
	var out string
	if err := json.Unmarshal(p.B[start:p.I], &out); err != nil {
		return nil, err
	}
	return out, nil
}

func (p *Parser) arrayValue() (any, error) {
	out := []any{}
	err := p.Elements(func() error {
		v, err := p.value()
		out = append(out, v)
		return err
	})
	return out, err
}
