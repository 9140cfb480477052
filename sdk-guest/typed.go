package sdk

import (
	"encoding/json"
	"reflect"
	"strings"
)

// A build with the plugboard_typed tag links no encoding/json (codec_typed.go):
// arguments are decoded by their type's plan (decodeTyped), results and
// envelopes encoded by encPlan and appendAny. `plugboard plugin build`
// chooses it when the describe build says every tool qualifies
// (registry.typedReason, through the plugboard_typed export); a tool
// that does not — a *Result answer, an argument of a shape the plans do
// not decode, resources or prompts — keeps encoding/json for the whole
// plugin. About 0.6 MB of a 3.6 MB guest (BENCHMARKS section 11c).

// TypedAnswer is what the describe build's plugboard_typed export answers
// for a plugin a build with the plugboard_typed tag serves; any other
// answer says why it needs encoding/json.
const TypedAnswer = "typed"

// typedReason says why the registered plugin needs encoding/json, or ""
// when a build with the plugboard_typed tag serves it.
func (r *registry) typedReason() string {
	if len(r.resources)+len(r.templates)+len(r.prompts) > 0 {
		return "it serves resources or prompts"
	}
	for _, t := range r.tools {
		if t.typedReason != "" {
			return "tool " + t.spec.Name + ": " + t.typedReason
		}
	}
	return ""
}

// toolTypedReason says why a tool with these input and output types needs
// encoding/json, or "".
func toolTypedReason(in *plan, inType, outType reflect.Type, isResult bool) string {
	if isResult {
		return "it answers with a *sdk.Result"
	}
	if in == nil {
		return "its input " + inType.String() + " is not a plain struct"
	}
	if reason := planReason(in, "input"); reason != "" {
		return reason
	}
	return encodableReason(outType, "output", map[reflect.Type]bool{})
}

// planReason names a field of p that decodeTyped cannot decode, or "".
func planReason(p *plan, at string) string {
	for _, name := range p.names {
		f := p.fields[name]
		switch {
		case f.kind == kindOther:
			return at + " field " + name + " needs encoding/json"
		case f.kind == kindStruct:
			if reason := planReason(f.sub, at+"."+name); reason != "" {
				return reason
			}
		}
	}
	return ""
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// encodableReason says why appendAny may not encode a value of type t, or
// "": it encodes booleans, numbers, strings, json.RawMessage, slices,
// arrays, string-keyed maps, pointers and structs of those (without
// embedded fields or ",string"). Interfaces are refused: what they hold
// is known only at run time.
func encodableReason(t reflect.Type, at string, seen map[reflect.Type]bool) string {
	if t == rawMessageType {
		return ""
	}
	if customEncoded(t) {
		return at + " (" + t.String() + ") has its own JSON or text encoding"
	}
	switch t.Kind() {
	case reflect.Bool, reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return ""
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return encodableReason(t.Elem(), at, seen)
	case reflect.Map:
		if t.Key().Kind() != reflect.String || customEncoded(t.Key()) {
			return at + " (" + t.String() + ") is a map whose keys are not strings"
		}
		return encodableReason(t.Elem(), at, seen)
	case reflect.Struct:
		if seen[t] {
			return ""
		}
		seen[t] = true
		if encPlanOf(t) == nil {
			return at + " (" + t.String() + ") has embedded fields or field options only encoding/json handles"
		}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() || f.Tag.Get("json") == "-" {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" {
				name = f.Name
			}
			if reason := encodableReason(f.Type, at+"."+name, seen); reason != "" {
				return reason
			}
		}
		return ""
	case reflect.Interface:
		return at + " (" + t.String() + ") is an interface: what it holds is known only at run time"
	}
	return at + " (" + t.String() + ") is a " + t.Kind().String()
}

// refuseTyped panics in a build with the plugboard_typed tag: what is being
// registered is served through encoding/json.
func refuseTyped(what string) {
	if typedBuild {
		panic("sdk: " + what + ": this module is built with the plugboard_typed tag, which links no encoding/json; " +
			"build it with `plugboard plugin build`, which leaves the tag out for a plugin with resources or prompts")
	}
}

// decodeArgumentsTyped decodes a tool's arguments with the input type's
// plan, as decodeArguments does with encoding/json.
func decodeArgumentsTyped(p *plan, args json.RawMessage, v reflect.Value) error {
	if len(args) == 0 {
		return nil
	}
	return p.decodeTyped(args, v)
}
