//go:build wasip1 && !plugboard_describe

package sdk

import (
	"encoding/json"
	"errors"
	"reflect"
)

// describeBuild is false: this build serves the manifest it was given.
const describeBuild = false

// builtManifest is the manifest `plugboard plugin build` got from describe
// in a build with the plugboard_describe tag: it sets it from a file it
// overlays on this package when it builds the module without the tag, and
// embeds the same JSON as the plugboard.manifest custom section, which is
// what hosts read.
var builtManifest string

// describe returns the embedded manifest: a WebAssembly build without the
// plugboard_describe tag does not link schema inference (schema_infer.go).
func (r *registry) describe() ([]byte, error) {
	if builtManifest == "" {
		return nil, errNoManifest
	}
	return []byte(builtManifest), nil
}

// toolSchemas is nil here: schemas are inferred only natively or with the
// plugboard_describe tag.
func toolSchemas(ToolSpec, reflect.Type, reflect.Type, bool) func() (in, out json.RawMessage, err error) {
	return nil
}

var errNoManifest = errors.New("sdk: this module has no manifest: it was built with go build alone, which does not infer the tools' schemas; " +
	"build it with `plugboard plugin build` (it runs describe in a build with them and embeds the manifest), or with -tags plugboard_describe to keep describe in the module")
