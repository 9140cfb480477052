//go:build plugboard_typed

package sdk

import (
	"encoding/json"
	"errors"
)

// This file replaces codec_std.go in a build with the plugboard_typed tag:
// nothing here links encoding/json (its types only). Registration refuses
// a tool whose types need it (typed.go), so the functions that answer
// "needs encoding/json" are never reached by a module plugboard plugin
// build made.

const typedBuild = true

var errNeedsJSON = errors.New("sdk: this plugin is built with the plugboard_typed tag, without encoding/json")

func decodeArguments(json.RawMessage, any) error { return errNeedsJSON }

func decodeStrict([]byte, any) error { return errFallback }

func appendJSON(dst []byte, v any) ([]byte, error) { return appendAny(dst, v) }

func marshalJSON(v any) ([]byte, error) { return appendAny(nil, v) }

func unmarshalJSON([]byte, any) error { return errNeedsJSON }
