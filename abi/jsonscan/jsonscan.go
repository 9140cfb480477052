// Package jsonscan validates JSON and slices values out of it in one pass,
// without decoding: objects are walked member by member and any value can be
// skipped (validated) and taken as a raw span. Both sides of the ABI parse
// JSON on their hot path — the guest SDK its call request, the host a
// plugin's CallToolResult — where encoding/json's byte-at-a-time state
// machine, run twice per input, dominated. Standard library only.
package jsonscan

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Parser scans B from offset I. Methods advance I past what they consume;
// on a syntax error I is left at the offending byte.
type Parser struct {
	B []byte
	I int
	// Spaced is set once WS has skipped any whitespace: a value scanned
	// while it stayed false is already compact.
	Spaced bool
	// UnquoteKeys makes Object hand member the value of a key with
	// escapes or invalid UTF-8 (Unquote) instead of skipping its member.
	UnquoteKeys bool
	depth       int
	// fallback is set by Decode on input it hands to encoding/json.
	fallback bool
}

// ErrSyntax is the parser's one error, reported with the offset.
var ErrSyntax = errors.New("invalid JSON")

// MaxDepth matches encoding/json's nesting limit.
const MaxDepth = 10000

// Fail returns ErrSyntax with the current offset.
func (p *Parser) Fail() error {
	return fmt.Errorf("%w at offset %d", ErrSyntax, p.I)
}

// WS skips insignificant whitespace.
func (p *Parser) WS() {
	for p.I < len(p.B) {
		switch p.B[p.I] {
		case ' ', '\t', '\n', '\r':
			p.I++
			p.Spaced = true
		default:
			return
		}
	}
}

// Literal consumes lit if it is next.
func (p *Parser) Literal(lit string) bool {
	if len(p.B)-p.I >= len(lit) && string(p.B[p.I:p.I+len(lit)]) == lit {
		p.I += len(lit)
		return true
	}
	return false
}

// object parses an object at p.I, calling member with p.I at each value
// (after whitespace); member must consume the value. A key with escapes
// asks for the fallback: its member is skipped and ok is false, unless
// UnquoteKeys is set.
func (p *Parser) Object(member func(key []byte) (bool, error)) (bool, error) {
	if p.depth++; p.depth > MaxDepth {
		return false, p.Fail()
	}
	defer func() { p.depth-- }()
	p.I++ // '{'
	p.WS()
	if p.I < len(p.B) && p.B[p.I] == '}' {
		p.I++
		return true, nil
	}
	ok := true
	for {
		if p.I >= len(p.B) || p.B[p.I] != '"' {
			return false, p.Fail()
		}
		key, plain, err := p.Str()
		if err != nil {
			return false, err
		}
		if p.UnquoteKeys && (!plain || !utf8.Valid(key)) {
			if key, plain = Unquote(key); !plain {
				return false, p.Fail()
			}
		}
		ok = ok && plain
		p.WS()
		if p.I >= len(p.B) || p.B[p.I] != ':' {
			return false, p.Fail()
		}
		p.I++
		p.WS()
		if plain {
			m, err := member(key)
			if err != nil {
				return false, err
			}
			ok = ok && m
		} else if err := p.Skip(); err != nil {
			return false, err
		}
		p.WS()
		if p.I >= len(p.B) {
			return false, p.Fail()
		}
		switch p.B[p.I] {
		case ',':
			p.I++
			p.WS()
		case '}':
			p.I++
			return ok, nil
		default:
			return false, p.Fail()
		}
	}
}

// str parses a string at p.I (which holds '"') and returns its raw
// contents; plain is false when it holds escapes.
func (p *Parser) Str() (s []byte, plain bool, err error) {
	start := p.I + 1
	plain = true
	for i := start; i < len(p.B); i++ {
		// Skip 8 plain bytes at a time: the strings are the bulk of a
		// request and this loop runs over each of them twice.
		for i+8 <= len(p.B) && !SpecialIn8(binary.LittleEndian.Uint64(p.B[i:])) {
			i += 8
		}
		if i >= len(p.B) {
			break
		}
		switch c := p.B[i]; {
		case c == '"':
			p.I = i + 1
			return p.B[start:i], plain, nil
		case c == '\\':
			plain = false
			i++
			if i >= len(p.B) {
				p.I = i
				return nil, false, p.Fail()
			}
			switch p.B[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(p.B) || !isHex(p.B[i+1]) || !isHex(p.B[i+2]) || !isHex(p.B[i+3]) || !isHex(p.B[i+4]) {
					p.I = i
					return nil, false, p.Fail()
				}
				i += 4
			default:
				p.I = i
				return nil, false, p.Fail()
			}
		case c < 0x20:
			p.I = i
			return nil, false, p.Fail()
		}
	}
	p.I = len(p.B)
	return nil, false, p.Fail()
}

// SpecialIn8 reports whether any of the 8 bytes in x is '"', '\\' or a
// control character (< 0x20), with the classic SWAR zero-byte tests.
func SpecialIn8(x uint64) bool {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	hasZero := func(v uint64) uint64 { return (v - ones) & ^v & highs }
	return (hasZero(x^(ones*'"')) | hasZero(x^(ones*'\\')) | (x-ones*0x20)&^x&highs) != 0
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// skip validates and consumes one value at p.I.
func (p *Parser) Skip() error {
	if p.I >= len(p.B) {
		return p.Fail()
	}
	switch c := p.B[p.I]; {
	case c == '"':
		_, _, err := p.Str()
		return err
	case c == '{':
		_, err := p.Object(func([]byte) (bool, error) { return true, p.Skip() })
		return err
	case c == '[':
		return p.Array()
	case c == '-' || '0' <= c && c <= '9':
		return p.Number()
	case p.Literal("true"), p.Literal("false"), p.Literal("null"):
		return nil
	}
	return p.Fail()
}

// Array validates and consumes an array at p.I (which holds '[').
func (p *Parser) Array() error { return p.Elements(p.Skip) }

// Elements consumes an array at p.I (which holds '['), calling elem with
// p.I at each element; elem must consume it.
func (p *Parser) Elements(elem func() error) error {
	if p.depth++; p.depth > MaxDepth {
		return p.Fail()
	}
	defer func() { p.depth-- }()
	p.I++ // '['
	p.WS()
	if p.I < len(p.B) && p.B[p.I] == ']' {
		p.I++
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		p.WS()
		if p.I >= len(p.B) {
			return p.Fail()
		}
		switch p.B[p.I] {
		case ',':
			p.I++
			p.WS()
		case ']':
			p.I++
			return nil
		default:
			return p.Fail()
		}
	}
}

// Number consumes -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *Parser) Number() error {
	b, i := p.B, p.I
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i++; i < len(b) && isDigit(b[i]); i++ {
		}
	default:
		p.I = i
		return p.Fail()
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			p.I = i
			return p.Fail()
		}
		for ; i < len(b) && isDigit(b[i]); i++ {
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			p.I = i
			return p.Fail()
		}
		for ; i < len(b) && isDigit(b[i]); i++ {
		}
	}
	p.I = i
	return nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
