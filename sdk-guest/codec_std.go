//go:build !plugboard_typed

package sdk

import (
	"bytes"
	"encoding/json"
)

// This file holds every use of encoding/json that a plain tool's call can
// reach; codec_typed.go replaces it in a build with the plugboard_typed
// tag (typed.go says when plugboard plugin build chooses that).

// typedBuild is true in a build with the plugboard_typed tag.
const typedBuild = false

// decodeArguments decodes a tool's arguments, refusing unknown fields.
// Absent or null arguments leave v at its zero value.
func decodeArguments(args json.RawMessage, v any) error {
	if len(args) == 0 || string(args) == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// decodeStrict decodes one value with encoding/json, refusing unknown
// fields; any error means falling back for the whole input.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if dec.Decode(v) != nil {
		return errFallback
	}
	return nil
}

// appendJSON appends v as encoding/json encodes it without HTML escaping.
func appendJSON(dst []byte, v any) ([]byte, error) {
	buf := bytes.NewBuffer(dst)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return b[:len(b)-1], nil // Encode's newline
}

// marshalJSON is json.Marshal.
func marshalJSON(v any) ([]byte, error) { return json.Marshal(v) }

// unmarshalJSON is json.Unmarshal.
func unmarshalJSON(data []byte, v any) error { return json.Unmarshal(data, v) }
