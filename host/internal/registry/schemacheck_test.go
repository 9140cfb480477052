package registry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/host/internal/registry"
	"github.com/plugboard/plugboard/host/internal/runtime"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// TestCheckInputSchema: a schema the host cannot compile is served
// unchecked, unless its top level breaks the tool shape MCP clients check.
func TestCheckInputSchema(t *testing.T) {
	for _, c := range []struct {
		schema  string
		problem bool
		refused bool
	}{
		{`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`, false, false},
		{`{"type":"object","properties":{"a":{"type":"string"},"required":["a"]}}`, true, false},
		{`{"type":"object","properties":{"a":{"type":"int"}}}`, true, false},
		{`{"type":"object","properties":{"a":{"type":"string"}},"required":"a"}`, true, true},
		{`{"type":"object","properties":{"a":"string"}}`, true, true},
		{`{"type":"object","properties":["a"]}`, true, true},
	} {
		p := registry.CheckInputSchema("p", "t", json.RawMessage(c.schema))
		if (p != nil) != c.problem || p != nil && p.Refused != c.refused {
			t.Errorf("CheckInputSchema(%s) = %+v, want problem %v, refused %v", c.schema, p, c.problem, c.refused)
		}
	}
}

// TestSchemaProblemsAtLoad: the registry reports each schema it cannot
// compile as a problem and in its log, serves the tools it can leave to
// their plugin and refuses the one MCP clients would refuse.
func TestSchemaProblemsAtLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins")
	}
	dir, _ := buildtest.Plugins(t, "testdata/plugins/badschema")
	ctx := context.Background()
	engine, err := runtime.New(ctx, runtime.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close(ctx)
	var logs bytes.Buffer
	reg, err := registry.Load(ctx, registry.Options{Dirs: []string{dir}, DataDir: t.TempDir(), CacheKey: testKey, Engine: engine,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close(ctx)
	for tool, served := range map[string]bool{"bad_required_inside": true, "bad_type": true, "bad_required_string": false} {
		if _, ok := reg.Tool(tool); ok != served {
			t.Errorf("%s served: %v, want %v", tool, ok, served)
		}
	}
	refused := map[string]bool{}
	for _, p := range reg.Problems() {
		var sp *registry.SchemaProblem
		if !errors.As(p.Err, &sp) || p.Path != filepath.Join(dir, "badschema.wasm") {
			t.Errorf("problem %s: %v", p.Path, p.Err)
			continue
		}
		refused[sp.Tool] = sp.Refused
		if !strings.Contains(logs.String(), "err="+strconv.Quote(sp.Error())) {
			t.Errorf("the log lacks %q:\n%s", sp.Error(), logs.String())
		}
	}
	if len(refused) != 3 || refused["bad_required_inside"] || refused["bad_type"] || !refused["bad_required_string"] {
		t.Errorf("problems by tool (refused): %v", refused)
	}
}
