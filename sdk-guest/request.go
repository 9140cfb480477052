package sdk

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/abi/jsonscan"
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
func parseRequest(input []byte) (abi.CallRequest, error) { return parseRequestAs(input, typedBuild) }

// parseRequestAs is parseRequest as a build with (typed) or without the
// plugboard_typed tag parses: typed, with no encoding/json to fall back
// on, it matches keys as encoding/json does itself and reads only what a
// build that serves tools alone needs (method, params.name,
// params.arguments, context).
func parseRequestAs(input []byte, typed bool) (abi.CallRequest, error) {
	var req abi.CallRequest
	p := parser{Parser: jsonscan.Parser{B: input, UnquoteKeys: typed}, typed: typed}
	ok, err := p.request(&req)
	if err != nil {
		return abi.CallRequest{}, err
	}
	if !ok && typed {
		return abi.CallRequest{}, errors.New("sdk: not a JSON object of method, params and context")
	}
	if !ok {
		req = abi.CallRequest{}
		if err := unmarshalJSON(input, &req); err != nil {
			return abi.CallRequest{}, err
		}
	}
	return req, nil
}

// parser is the shared validating scanner plus the request-specific members
// below and in fastdecode.go.
type parser struct {
	jsonscan.Parser
	// typed is set by decodeTyped: what would fall back to encoding/json
	// is decoded here or reported as the error encoding/json would give.
	typed bool
	// path is the dotted JSON path of the object being decoded (typed
	// only), for type errors.
	path string
}

// request parses the top-level object. ok=false asks for the fallback.
func (p *parser) request(req *abi.CallRequest) (ok bool, err error) {
	p.WS()
	if p.typed && p.Literal("null") { // encoding/json: no request at all
		p.WS()
		return p.I == len(p.B), nil
	}
	if p.I >= len(p.B) || p.B[p.I] != '{' {
		// Valid JSON of another type, or garbage: encoding/json says which.
		return false, nil
	}
	ok, err = p.Object(func(key []byte) (bool, error) {
		switch p.member(key, "params", "context", "method") {
		case "params":
			return p.params(&req.Params)
		case "context":
			return true, p.context(&req.Context)
		case "method":
			if p.typed { // a build without encoding/json: no fallback
				return p.name(&req.Method)
			}
		}
		// method (ABI 2: a request other than tools/call) is rare enough to
		// take the encoding/json path.
		return !foldsTo(key, "params", "context", "method"), p.Skip()
	})
	if err != nil || !ok {
		return ok, err
	}
	p.WS()
	if p.I != len(p.B) {
		return false, p.Fail()
	}
	return true, nil
}

func (p *parser) params(params *abi.CallParams) (bool, error) {
	if p.Literal("null") {
		return true, nil
	}
	if p.I >= len(p.B) || p.B[p.I] != '{' {
		return false, p.Skip() // a type error: let encoding/json report it
	}
	return p.Object(func(key []byte) (bool, error) {
		switch p.member(key, "name", "arguments") {
		case "name":
			return p.name(&params.Name)
		case "arguments":
			start := p.I
			if err := p.Skip(); err != nil {
				return false, err
			}
			params.Arguments = p.B[start:p.I:p.I]
			return true, nil
		}
		// The params of other methods (uri, ref, argument, context) take
		// the encoding/json path; a typed build serves none of them.
		return p.typed || !foldsTo(key, "name", "arguments", "uri", "ref", "argument", "context"), p.Skip()
	})
}

// member returns which of names key is: the name it equals or, in a typed
// parse, the first it matches case-insensitively (as encoding/json
// matches), else "".
func (p *parser) member(key []byte, names ...string) string {
	for _, n := range names {
		if string(key) == n {
			return n
		}
	}
	if p.typed {
		for _, n := range names {
			if bytes.EqualFold(key, []byte(n)) {
				return n
			}
		}
	}
	return ""
}

func (p *parser) name(dst *string) (bool, error) {
	if p.Literal("null") {
		return true, nil
	}
	if p.I >= len(p.B) || p.B[p.I] != '"' {
		return false, p.Skip()
	}
	s, plain, err := p.Str()
	if err != nil {
		return false, err
	}
	if !plain || !utf8.Valid(s) {
		if s, plain = jsonscan.Unquote(s); !plain {
			return false, nil
		}
	}
	*dst = string(s)
	return true, nil
}

// context decodes the context object with encoding/json into the same
// CallContext as earlier duplicates, as encoding/json would.
func (p *parser) context(dst **abi.CallContext) error {
	if p.Literal("null") {
		*dst = nil
		return nil
	}
	start := p.I
	if err := p.Skip(); err != nil {
		return err
	}
	if *dst == nil {
		*dst = new(abi.CallContext)
	}
	span := p.B[start:p.I]
	if p.typed {
		return contextPlan.decodeTyped(span, reflect.ValueOf(*dst).Elem())
	}
	if contextPlan.decodeFast(span, reflect.ValueOf(*dst).Elem()) {
		return nil
	}
	return unmarshalJSON(span, *dst)
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
