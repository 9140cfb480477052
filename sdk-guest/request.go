package sdk

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/plugboard/plugboard/abi"
)

// parseRequest decodes a call request with the same result as
// json.Unmarshal into an abi.CallRequest, in one quick validating pass.
//
// encoding/json scans an input twice (checkValid, then decode) with a
// byte-at-a-time state machine, and would scan the arguments a third and
// fourth time when they are decoded into the tool's input; on the call path
// those scans of a large argument dominate. This parser validates the whole
// request in tight loops and slices out the arguments without copying them;
// the context is decoded by the plan of fastdecode.go. Anything unusual
// (escaped or case-folded keys, odd types) falls back to json.Unmarshal, so
// behaviour never differs; FuzzParseRequest checks that against
// encoding/json.
func parseRequest(input []byte) (abi.CallRequest, error) {
	var req abi.CallRequest
	p := parser{b: input}
	ok, err := p.request(&req)
	if err != nil {
		return abi.CallRequest{}, err
	}
	if !ok {
		req = abi.CallRequest{}
		if err := json.Unmarshal(input, &req); err != nil {
			return abi.CallRequest{}, err
		}
	}
	return req, nil
}

// errSyntax is the parser's one error; parseRequest reports it with the
// offset.
var errSyntax = errors.New("invalid JSON")

// maxDepth matches encoding/json's nesting limit.
const maxDepth = 10000

type parser struct {
	b     []byte
	i     int
	depth int
}

func (p *parser) fail() error {
	return fmt.Errorf("%w at offset %d", errSyntax, p.i)
}

func (p *parser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// request parses the top-level object. ok=false asks for the fallback.
func (p *parser) request(req *abi.CallRequest) (ok bool, err error) {
	p.ws()
	if p.i >= len(p.b) || p.b[p.i] != '{' {
		// Valid JSON of another type, or garbage: encoding/json says which.
		return false, nil
	}
	ok, err = p.object(func(key []byte) (bool, error) {
		switch string(key) {
		case "params":
			return p.params(&req.Params)
		case "context":
			return true, p.context(&req.Context)
		}
		return !foldsTo(key, "params", "context"), p.skip()
	})
	if err != nil || !ok {
		return ok, err
	}
	p.ws()
	if p.i != len(p.b) {
		return false, p.fail()
	}
	return true, nil
}

func (p *parser) params(params *abi.CallParams) (bool, error) {
	if p.literal("null") {
		return true, nil
	}
	if p.i >= len(p.b) || p.b[p.i] != '{' {
		return false, p.skip() // a type error: let encoding/json report it
	}
	return p.object(func(key []byte) (bool, error) {
		switch string(key) {
		case "name":
			return p.name(&params.Name)
		case "arguments":
			start := p.i
			if err := p.skip(); err != nil {
				return false, err
			}
			params.Arguments = p.b[start:p.i:p.i]
			return true, nil
		}
		return !foldsTo(key, "name", "arguments"), p.skip()
	})
}

func (p *parser) name(dst *string) (bool, error) {
	if p.literal("null") {
		return true, nil
	}
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return false, p.skip()
	}
	s, plain, err := p.str()
	if err != nil {
		return false, err
	}
	if !plain || !utf8.Valid(s) { // encoding/json unescapes and repairs UTF-8
		return false, nil
	}
	*dst = string(s)
	return true, nil
}

// context decodes the context object with encoding/json into the same
// CallContext as earlier duplicates, as encoding/json would.
func (p *parser) context(dst **abi.CallContext) error {
	if p.literal("null") {
		*dst = nil
		return nil
	}
	start := p.i
	if err := p.skip(); err != nil {
		return err
	}
	if *dst == nil {
		*dst = new(abi.CallContext)
	}
	span := p.b[start:p.i]
	if contextPlan.decodeFast(span, reflect.ValueOf(*dst).Elem()) {
		return nil
	}
	return json.Unmarshal(span, *dst)
}

// contextPlan decodes call contexts, ignoring fields this SDK does not know
// (later ABI additions).
var contextPlan = newPlan(reflect.TypeFor[abi.CallContext](), true)

// foldsTo reports whether key matches one of names only case-insensitively,
// which encoding/json accepts; the fallback handles it.
func foldsTo(key []byte, names ...string) bool {
	for _, n := range names {
		if strings.EqualFold(string(key), n) {
			return true
		}
	}
	return false
}

// literal consumes lit if it is next.
func (p *parser) literal(lit string) bool {
	if len(p.b)-p.i >= len(lit) && string(p.b[p.i:p.i+len(lit)]) == lit {
		p.i += len(lit)
		return true
	}
	return false
}

// object parses an object at p.i, calling member with p.i at each value
// (after whitespace); member must consume the value. A key with escapes
// asks for the fallback.
func (p *parser) object(member func(key []byte) (bool, error)) (bool, error) {
	if p.depth++; p.depth > maxDepth {
		return false, p.fail()
	}
	defer func() { p.depth-- }()
	p.i++ // '{'
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return true, nil
	}
	ok := true
	for {
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return false, p.fail()
		}
		key, plain, err := p.str()
		if err != nil {
			return false, err
		}
		ok = ok && plain
		p.ws()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return false, p.fail()
		}
		p.i++
		p.ws()
		if plain {
			m, err := member(key)
			if err != nil {
				return false, err
			}
			ok = ok && m
		} else if err := p.skip(); err != nil {
			return false, err
		}
		p.ws()
		if p.i >= len(p.b) {
			return false, p.fail()
		}
		switch p.b[p.i] {
		case ',':
			p.i++
			p.ws()
		case '}':
			p.i++
			return ok, nil
		default:
			return false, p.fail()
		}
	}
}

// str parses a string at p.i (which holds '"') and returns its raw
// contents; plain is false when it holds escapes.
func (p *parser) str() (s []byte, plain bool, err error) {
	start := p.i + 1
	plain = true
	for i := start; i < len(p.b); i++ {
		// Skip 8 plain bytes at a time: the strings are the bulk of a
		// request and this loop runs over each of them twice.
		for i+8 <= len(p.b) && !specialIn8(binary.LittleEndian.Uint64(p.b[i:])) {
			i += 8
		}
		if i >= len(p.b) {
			break
		}
		switch c := p.b[i]; {
		case c == '"':
			p.i = i + 1
			return p.b[start:i], plain, nil
		case c == '\\':
			plain = false
			i++
			if i >= len(p.b) {
				p.i = i
				return nil, false, p.fail()
			}
			switch p.b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(p.b) || !isHex(p.b[i+1]) || !isHex(p.b[i+2]) || !isHex(p.b[i+3]) || !isHex(p.b[i+4]) {
					p.i = i
					return nil, false, p.fail()
				}
				i += 4
			default:
				p.i = i
				return nil, false, p.fail()
			}
		case c < 0x20:
			p.i = i
			return nil, false, p.fail()
		}
	}
	p.i = len(p.b)
	return nil, false, p.fail()
}

// specialIn8 reports whether any of the 8 bytes in x is '"', '\\' or a
// control character (< 0x20), with the classic SWAR zero-byte tests.
func specialIn8(x uint64) bool {
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

// skip validates and consumes one value at p.i.
func (p *parser) skip() error {
	if p.i >= len(p.b) {
		return p.fail()
	}
	switch c := p.b[p.i]; {
	case c == '"':
		_, _, err := p.str()
		return err
	case c == '{':
		_, err := p.object(func([]byte) (bool, error) { return true, p.skip() })
		return err
	case c == '[':
		return p.array()
	case c == '-' || '0' <= c && c <= '9':
		return p.number()
	case p.literal("true"), p.literal("false"), p.literal("null"):
		return nil
	}
	return p.fail()
}

func (p *parser) array() error {
	if p.depth++; p.depth > maxDepth {
		return p.fail()
	}
	defer func() { p.depth-- }()
	p.i++ // '['
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		return nil
	}
	for {
		if err := p.skip(); err != nil {
			return err
		}
		p.ws()
		if p.i >= len(p.b) {
			return p.fail()
		}
		switch p.b[p.i] {
		case ',':
			p.i++
			p.ws()
		case ']':
			p.i++
			return nil
		default:
			return p.fail()
		}
	}
}

// number consumes -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *parser) number() error {
	b, i := p.b, p.i
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
		p.i = i
		return p.fail()
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			p.i = i
			return p.fail()
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
			p.i = i
			return p.fail()
		}
		for ; i < len(b) && isDigit(b[i]); i++ {
		}
	}
	p.i = i
	return nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
