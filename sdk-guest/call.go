package sdk

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/plugboard/plugboard/abi"
)

// Call is the current invocation, handed to a tool handler.
type Call struct {
	ctx *abi.CallContext
}

// Context returns what the host told the plugin about this call, or the zero
// value when the request carried no context (a plain Extism host).
func (c *Call) Context() abi.CallContext {
	if c == nil || c.ctx == nil {
		return abi.CallContext{}
	}
	return *c.ctx
}

// Progress reports how far the call has got (progress out of total; total
// 0 means unknown) with an optional message. It costs nothing when the
// client did not ask for progress.
func (c *Call) Progress(progress, total float64, message string) {
	if c == nil || c.ctx == nil || !c.ctx.Progress {
		return
	}
	req, err := json.Marshal(abi.ProgressRequest{Progress: progress, Total: total, Message: message})
	if err != nil { // NaN or Inf: nothing sensible to report
		return
	}
	hostProgress(req)
}

// Log writes a structured log line through the host. level is one of
// debug, info, warn, error; attrs must be JSON-encodable (if they are not,
// the line is logged without them and with attrs_error set).
func (c *Call) Log(level, message string, attrs map[string]any) {
	req, err := json.Marshal(abi.LogRequest{Level: level, Message: message, Attrs: attrs})
	if err != nil {
		req, _ = json.Marshal(abi.LogRequest{Level: level, Message: message,
			Attrs: map[string]any{"attrs_error": err.Error()}})
	}
	hostLog(req)
}

// Fail returns an envelope error for a registered code (see abi.Codes); a
// handler returns it to answer with isError. An unregistered code panics.
func Fail(code, message, hint string) *abi.Envelope {
	return abi.NewEnvelope(code, message, hint)
}

// InvalidArgument returns an invalid_argument envelope naming the field
// (details.field).
func InvalidArgument(field, message, hint string) *abi.Envelope {
	return abi.NewEnvelope(abi.CodeInvalidArgument, message, hint).WithDetail("field", field)
}

// NotFound returns a not_found envelope.
func NotFound(message, hint string) *abi.Envelope {
	return abi.NewEnvelope(abi.CodeNotFound, message, hint)
}

// call serves one call request: the input of the call export. The error is
// non-nil only when the request is not a JSON call request; every other
// failure is an envelope inside the result.
func (r *registry) call(input []byte) ([]byte, error) {
	req, err := parseRequest(input)
	if err != nil {
		return nil, fmt.Errorf("sdk: call input is not a JSON call request: %w", err)
	}
	if req.Method != "" && req.Method != abi.MethodToolsCall {
		if typedBuild { // no resources or prompts (refuseTyped): nothing to serve
			return unservedMethod(r.info.Name, req.Method), nil
		}
		return r.method(&req), nil
	}
	withText := req.Context == nil
	t := r.byName[req.Params.Name]
	if t == nil {
		return encodeError(abi.NewEnvelope(abi.CodeToolNotFound,
			fmt.Sprintf("plugin %q has no tool %q", r.info.Name, req.Params.Name),
			"Call tools/list and use one of the names it returns."), withText), nil
	}
	out, err := t.invoke(&Call{ctx: req.Context}, req.Params.Arguments)
	if err != nil {
		var env *abi.Envelope
		if !errors.As(err, &env) {
			env = &abi.Envelope{Code: abi.CodeToolError, Message: err.Error()}
		} else if env == nil { // a typed nil *abi.Envelope: no error after all
			return t.encode(out, withText), nil
		}
		return encodeError(env, withText), nil
	}
	return t.encode(out, withText), nil
}

// encode encodes the handler's successful output.
func (t *tool) encode(out any, withText bool) []byte {
	if !t.result {
		return encodeResult(out, t.outPlan, withText)
	}
	var res *Result
	switch v := out.(type) {
	case *Result:
		res = v
	case Result:
		res = &v
	}
	if res == nil {
		res = &Result{}
	}
	cr := abi.CallResult{Content: res.Content}
	if res.Structured != nil {
		b, err := marshalJSON(res.Structured)
		if err != nil {
			return encodeError(&abi.Envelope{Code: abi.CodeToolError,
				Message: "the tool's structured result could not be encoded as JSON: " + err.Error()}, withText)
		}
		cr.StructuredContent = b
		if len(cr.Content) == 0 && withText {
			cr.Content = []abi.Content{Text(string(b))}
		}
	}
	if cr.Content == nil {
		cr.Content = []abi.Content{}
	}
	b, err := marshalJSON(cr)
	if err != nil {
		return encodeError(&abi.Envelope{Code: abi.CodeToolError, Message: "the tool's content could not be encoded: " + err.Error()}, withText)
	}
	return b
}

var resultType = reflect.TypeFor[Result]()

// argumentError turns an argument decoding error into an invalid_argument
// envelope that names the field when it can be told.
func argumentError(toolName string, inType reflect.Type, err error) *abi.Envelope {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return abi.NewEnvelope(abi.CodeInvalidArgument,
				"arguments must be a JSON object, got "+te.Value,
				fmt.Sprintf("Send the arguments of %s as an object of named fields.", toolName))
		}
		want := jsonKind(te.Type)
		return InvalidArgument(te.Field,
			fmt.Sprintf("argument %q must be %s, got %s", te.Field, want, te.Value),
			fmt.Sprintf("Send %q as %s and call %s again.", te.Field, want, toolName))
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		if s, uerr := strconv.Unquote(name); uerr == nil {
			name = s
		}
		hint := fmt.Sprintf("Remove %q and call %s again.", name, toolName)
		if fields := jsonFieldNames(inType); len(fields) > 0 {
			hint = fmt.Sprintf("Remove %q; %s accepts only: %s.", name, toolName, strings.Join(fields, ", "))
		}
		return InvalidArgument(name, fmt.Sprintf("unknown argument %q", name), hint)
	}
	return abi.NewEnvelope(abi.CodeInvalidArgument, "arguments could not be decoded: "+err.Error(),
		fmt.Sprintf("Check the arguments against the input schema of %s.", toolName))
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

// jsonKind names the JSON kind a Go type decodes from, with an article.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "a valid value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(textUnmarshaler) {
		return "a string"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a base64 string"
		}
		return "an array"
	case reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a valid value"
}

// jsonFieldNames lists the JSON names of a struct's fields, in order.
func jsonFieldNames(t reflect.Type) []string {
	if t.Kind() != reflect.Struct {
		return nil
	}
	var names []string
	for _, f := range reflect.VisibleFields(t) {
		if !f.IsExported() || f.Anonymous && f.Type.Kind() == reflect.Struct {
			continue
		}
		name := f.Name
		if tag, ok := f.Tag.Lookup("json"); ok {
			tagName, _, _ := strings.Cut(tag, ",")
			if tagName == "-" {
				continue
			}
			if tagName != "" {
				name = tagName
			}
		}
		names = append(names, name)
	}
	return names
}

// encodeResult encodes a successful CallResult around the handler's output;
// plan, if not nil, is the output type's encoding plan.
func encodeResult(out any, plan *encPlan, withText bool) []byte {
	b, err := appendResult(out, plan, false, withText)
	if err != nil {
		return encodeError(&abi.Envelope{Code: abi.CodeToolError,
			Message: "the tool's result could not be encoded as JSON: " + err.Error()}, withText)
	}
	return b
}

// encodeError encodes an isError CallResult holding env.
func encodeError(env *abi.Envelope, withText bool) []byte {
	b, err := appendResult(env, nil, true, withText)
	if err != nil { // details that do not encode: send the envelope without them
		stripped := *env
		stripped.Details = map[string]any{"details_error": err.Error()}
		b, _ = appendResult(&stripped, nil, true, withText)
	}
	return b
}

const (
	resultPrefix  = `{"structuredContent":`
	isErrorSuffix = `,"isError":true`
	contentPrefix = `,"content":[{"type":"text","text":`
	contentSuffix = `}]`
)

// appendResult writes {"structuredContent":<v>[,"isError":true][,"content":[text]]}
// straight into one buffer: the value is encoded once, and copied as a JSON
// string only when the text content is needed. A nil value is sent as {}.
func appendResult(v any, plan *encPlan, isError, withText bool) ([]byte, error) {
	b := make([]byte, 0, 256)
	b = append(b, resultPrefix...)
	start := len(b)
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer && rv.IsNil() || !rv.IsValid() {
		b = append(b, "{}"...)
	} else {
		var err error
		if plan != nil {
			if rv.Kind() == reflect.Pointer {
				rv = rv.Elem()
			}
			b, err = plan.appendValue(b, rv)
		} else {
			b, err = appendJSON(b, v)
		}
		if err != nil {
			return nil, err
		}
		if string(b[start:]) == "null" { // a nil map, say
			b = append(b[:start], "{}"...)
		}
	}
	end := len(b)
	if isError {
		b = append(b, isErrorSuffix...)
	}
	if withText {
		b = append(b, contentPrefix...)
		b = appendString(b, string(b[start:end]))
		b = append(b, contentSuffix...)
	}
	return append(b, '}'), nil
}
