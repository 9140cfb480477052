//go:build !wasip1 || plugboard_describe

package sdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
)

// This file is the schema inference that only describe needs. It is linked
// natively (tests, and the describe run of `plugboard plugin build`) and in
// a WebAssembly build with the plugboard_describe tag; a plain WebAssembly
// build links schema_embedded.go instead, so plugins carry neither
// jsonschema-go nor its dependencies (issue 15).

// describeBuild is true where describe infers the schemas: natively, and in
// a WebAssembly build with the plugboard_describe tag.
const describeBuild = true

// describe returns the manifest as JSON: the output of the describe export.
func (r *registry) describe() ([]byte, error) { return r.manifestJSON() }

// toolSchemas returns the function that builds a tool's input and output
// schemas.
func toolSchemas(spec ToolSpec, inType, outType reflect.Type, isResult bool) func() (in, out json.RawMessage, err error) {
	return func() (in, out json.RawMessage, err error) {
		in, out = spec.InputSchema, spec.OutputSchema
		if k := spec.Idempotency; k != nil && in == nil && !contains(jsonFieldNames(inType), k.KeyField) {
			return nil, nil, fmt.Errorf("tool %q: Idempotency.KeyField %q is not a field of %v", spec.Name, k.KeyField, inType)
		}
		if in == nil {
			if in, err = inferSchema(inType, false); err != nil {
				return nil, nil, fmt.Errorf("tool %q: input schema: %w", spec.Name, err)
			}
		}
		if out == nil && !isResult {
			if out, err = inferSchema(outType, true); err != nil {
				return nil, nil, fmt.Errorf("tool %q: output schema: %w", spec.Name, err)
			}
		}
		return in, out, nil
	}
}

// inferSchema builds the JSON schema of t. Pointers are followed, so *T has
// the schema of T (a null output is sent as {}). An output schema is open:
// its objects accept fields they do not list (openObjects).
func inferSchema(t reflect.Type, output bool) (json.RawMessage, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	s, err := jsonschema.ForType(t, nil)
	if err != nil {
		return nil, err
	}
	if output {
		openObjects(s)
	}
	return json.Marshal(s)
}

// openObjects drops additionalProperties false from every object of an
// inferred output schema. It restricts only what the plugin itself sends,
// yet a client that keeps the schema of an older version of the tool (one
// that has not listed tools again since a hot reload) would reject every
// result that gained a field; and clients compile the keyword for every
// tool at every tools/list.
func openObjects(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if a := s.AdditionalProperties; a != nil && a.Not != nil && reflect.ValueOf(*a.Not).IsZero() {
		s.AdditionalProperties = nil
	}
	for _, p := range s.Properties {
		openObjects(p)
	}
	openObjects(s.Items)
	openObjects(s.AdditionalProperties)
}

// errNoManifest is never returned here: every tool has schemas.
var errNoManifest = errors.New("sdk: no tool schemas")
