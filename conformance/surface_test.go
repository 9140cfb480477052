package conformance

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/abi"
)

func mustSchema(t *testing.T, s string) *toolSchema {
	t.Helper()
	ts, err := loadSchema(json.RawMessage(s))
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// acceptedViolations returns the rule violations the schema accepts.
func acceptedViolations(t *testing.T, schema string, rules []abi.Rule) []string {
	t.Helper()
	ts := mustSchema(t, schema)
	viols, inconclusive, unknown := ts.ruleViolations(rules)
	if len(inconclusive) > 0 || len(unknown) > 0 {
		t.Fatalf("inconclusive %q, unknown %q", inconclusive, unknown)
	}
	if len(viols) == 0 {
		t.Fatal("no violations built")
	}
	var out []string
	for _, v := range viols {
		if ts.valid(normalise(v.inst)) {
			out = append(out, v.what)
		}
	}
	return out
}

const targetProps = `"type": "object", "additionalProperties": false,
	"properties": {"a": {"type": "string", "description": "a"}, "b": {"type": "string", "description": "b"}}`

func TestConformanceRulesInEitherSchemaForm(t *testing.T) {
	rules := []abi.Rule{{ExactlyOne: []string{"a", "b"}, Code: abi.CodeAmbiguousTarget, Hint: "one of a, b"}}
	forms := map[string]string{
		"root oneOf":         `{` + targetProps + `, "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}`,
		"root not + if/else": `{` + targetProps + `, "not": {"required": ["a", "b"]}, "if": {"required": ["b"]}, "else": {"required": ["a"]}}`,
	}
	for name, schema := range forms {
		if got := acceptedViolations(t, schema, rules); len(got) > 0 {
			t.Errorf("%s: the schema expresses the rule but the kit says it accepts %q", name, got)
		}
	}
	flat := `{` + targetProps + `}`
	got := acceptedViolations(t, flat, rules)
	if want := []string{"none of [a b]", "a and b together"}; !slices.Equal(got, want) {
		t.Errorf("flat schema: accepted %q, want %q", got, want)
	}
}

func TestConformanceModeRules(t *testing.T) {
	// follow_up's shape: prompt required for send/queue, forbidden for cancel.
	rules := []abi.Rule{
		{When: &abi.RuleWhen{Field: "action", Values: []string{"send", "queue"}}, Require: []string{"prompt"}, Hint: "pass prompt"},
		{When: &abi.RuleWhen{Field: "action", Values: []string{"cancel"}}, Forbid: []string{"prompt"}, Hint: "drop prompt"},
	}
	props := `"type": "object", "additionalProperties": false, "required": ["action"],
		"properties": {"action": {"type": "string", "enum": ["send", "queue", "cancel"]}, "prompt": {"type": "string", "minLength": 1}}`
	good := `{` + props + `, "if": {"properties": {"action": {"const": "cancel"}}, "required": ["action"]},
		"then": {"properties": {"prompt": false}}, "else": {"required": ["prompt"]}}`
	if got := acceptedViolations(t, good, rules); len(got) > 0 {
		t.Errorf("if/then/else schema: accepted %q", got)
	}
	got := acceptedViolations(t, `{`+props+`}`, rules)
	want := []string{"prompt missing (action=send)", "prompt missing (action=queue)", "prompt present (action=cancel)"}
	if !slices.Equal(got, want) {
		t.Errorf("flat schema: accepted %q, want %q", got, want)
	}
}

func TestConformanceFindValidFollowsModes(t *testing.T) {
	ts := mustSchema(t, `{"type": "object", "additionalProperties": false, "required": ["action"],
		"properties": {
			"action": {"type": "string", "enum": ["send", "cancel"]},
			"attempt_id": {"type": "string", "format": "uuid"},
			"session_id": {"type": "string", "format": "uuid"},
			"prompt": {"type": "string", "minLength": 3},
			"limit": {"type": "integer", "minimum": 5, "maximum": 9}},
		"not": {"required": ["attempt_id", "session_id"]},
		"if": {"properties": {"action": {"const": "cancel"}}, "required": ["action"]},
		"then": {"anyOf": [{"required": ["attempt_id"]}, {"required": ["session_id"]}], "properties": {"prompt": false}},
		"else": {"anyOf": [{"required": ["attempt_id"]}, {"required": ["session_id"]}], "required": ["prompt", "limit"]}}`)
	v, ok := ts.findValid(want{})
	if !ok {
		t.Fatal("no valid instance found")
	}
	if err := ts.validate(normalise(v)); err != nil {
		t.Fatalf("%v: %v", v, err)
	}
	if v["action"] != "send" || v["limit"] != 5.0 || len(v["prompt"].(string)) < 3 {
		t.Errorf("unexpected minimal instance %v", v)
	}
	c, ok := ts.findValid(want{fixed: map[string]any{"action": "cancel"}, with: []string{"session_id"}})
	if !ok || c["session_id"] == nil || c["prompt"] != nil {
		t.Errorf("cancel by session: %v %v", c, ok)
	}
	if _, ok := ts.findValid(want{fixed: map[string]any{"action": "cancel"}, with: []string{"prompt"}}); ok {
		t.Error("found a valid cancel with prompt")
	}
}

func TestConformanceUndescribedFields(t *testing.T) {
	ts := mustSchema(t, `{"type": "object",
		"properties": {
			"top": {"type": "string", "description": "described"},
			"bare": {"type": "string"},
			"obj": {"type": "object", "description": "d", "properties": {"inner": {"type": "integer"}, "ok": {"type": "boolean", "description": "d"}}},
			"list": {"type": "array", "description": "d", "items": {"type": "object", "properties": {"item_field": {"type": "string"}}}},
			"map": {"type": "object", "description": "d", "additionalProperties": {"type": "object", "properties": {"v": {"type": "string"}}}},
			"ref": {"$ref": "#/$defs/Thing"}},
		"$defs": {"Thing": {"type": "object", "description": "a thing", "properties": {"deep": {"type": "string", "description": "d"}}}},
		"if": {"properties": {"top": {"const": "x"}}},
		"then": {"properties": {"top": {"maxLength": 1}, "bare": false}},
		"oneOf": [{"properties": {"branch_only": {"type": "string"}}}]}`)
	got := undescribedFields(ts.root)
	want := []string{"bare", "branch_only", "list[].item_field", "map{}.v", "obj.inner"}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("undescribed = %q, want %q", got, want)
	}
}

func TestConformanceDescriptionTemplate(t *testing.T) {
	good := "Use when: x.\nRequired: a\nOptional: none\nNext: y\nAvoid: z"
	if p := descriptionProblems(good, map[string]string{}); len(p) > 0 {
		t.Errorf("good description: %q", p)
	}
	cases := map[string]string{
		"Use when: x.\nRequired: a\nNext: y\nAvoid: z":                       "lacks the heading(s) Optional:",
		"Use when: x.\nOptional: none\nRequired: a\nNext: y\nAvoid: z":       "has Optional: before Required:",
		"Use when:\nRequired: a\nOptional: none\nNext: y\nAvoid: z":          "has nothing after Use when:",
		"Does things. Use when: x. Required: a Optional: b Next: c Avoid: d": "lacks the heading(s) Use when: Required: Optional: Next: Avoid:",
	}
	for desc, want := range cases {
		p := strings.Join(descriptionProblems(desc, map[string]string{}), "; ")
		if !strings.Contains(p, want) {
			t.Errorf("%q: problems %q, want %q", desc, p, want)
		}
	}
	lines := map[string]string{}
	descriptionProblems("Use when: x\nRequired: project_id, title\nOptional: description\nNext: n\nAvoid: a", lines)
	ts := mustSchema(t, `{"type": "object", "required": ["project_id", "title"], "properties": {
		"project_id": {"type": "string"}, "title": {"type": "string"}, "description": {"type": "string"}, "request_id": {"type": "string"}}}`)
	rec := newRecorder()
	checkDescriptionFields(rec, "create", ts, lines)
	if r := rec.get(CheckDescriptionFields, "create"); r.Status != StatusFail || !strings.Contains(r.Message, "request_id") ||
		strings.Contains(r.Message, "title") {
		t.Errorf("description fields: %+v", r)
	}
}

func TestConformanceSchemaProblems(t *testing.T) {
	root := mustSchema(t, `{"type": "object", "additionalProperties": false, "required": ["a", "ghost"],
		"properties": {"a": {"type": "strng"}}, "then": {"required": ["phantom"]}, "requierd": ["a"]}`).root
	p := strings.Join(schemaProblems(root), "\n")
	for _, want := range []string{`type "strng"`, `"ghost" is required but is not a property`, `"phantom" is required`} {
		if !strings.Contains(p, want) {
			t.Errorf("problems %q lack %q", p, want)
		}
	}
	if k := unknownKeywords(root); !slices.Equal(k, []string{`the root: "requierd"`}) {
		t.Errorf("unknown keywords %q", k)
	}
}

// ---- ABI checks on hand-assembled modules ----

// testModule assembles a module with the given function imports, exported
// functions (describe and call are () -> i32 returning 0, _start and
// _initialize () -> ()) and an exported memory.
func testModule(imports []wasmImport, exports ...string) []byte {
	status, init := funcType{results: []byte{valI32}}, funcType{}
	types := []funcType{status, init}
	for _, imp := range imports {
		types = append(types, imp.typ)
	}
	out := []byte("\x00asm\x01\x00\x00\x00")
	p := uleb(nil, uint64(len(types)))
	for _, t := range types {
		p = encodeType(p, t)
	}
	out = section(out, 1, p)
	p = uleb(nil, uint64(len(imports)))
	for i, imp := range imports {
		p = wname(wname(p, imp.module), imp.name)
		p = append(p, kindFunc)
		p = uleb(p, uint64(2+i))
	}
	out = section(out, 2, p)
	p = uleb(nil, uint64(len(exports)))
	var bodies [][]byte
	for _, e := range exports {
		if strings.HasPrefix(e, "_") {
			p = uleb(p, 1)
			bodies = append(bodies, []byte{0, opEnd})
		} else {
			p = uleb(p, 0)
			bodies = append(bodies, []byte{0, opI32Const, 0, opEnd})
		}
	}
	out = section(out, 3, p)
	out = section(out, 5, []byte{1, 0, 1})
	p = uleb(nil, uint64(len(exports)+1))
	p = append(wname(p, "memory"), kindMemory, 0)
	for i, e := range exports {
		p = append(wname(p, e), kindFunc)
		p = uleb(p, uint64(len(imports)+i))
	}
	out = section(out, 7, p)
	p = uleb(nil, uint64(len(bodies)))
	for _, b := range bodies {
		p = append(uleb(p, uint64(len(b))), b...)
	}
	return section(out, 10, p)
}

func checkBytes(t *testing.T, bin []byte) *PluginReport {
	t.Helper()
	path := filepath.Join(t.TempDir(), "synthetic.wasm")
	if err := os.WriteFile(path, bin, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	k, err := New(ctx, Options{Fuzz: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close(ctx)
	pr := k.CheckFile(ctx, path)
	pr.finish(false)
	return pr
}

func result(pr *PluginReport, id string) Result {
	for _, r := range pr.Results {
		if r.ID == id && r.Tool == "" {
			return r
		}
	}
	return Result{}
}

func TestConformanceImportsAreLinkedForReal(t *testing.T) {
	i32, i64 := byte(valI32), byte(valI64)
	bin := testModule([]wasmImport{
		{module: "env", name: "abort", typ: funcType{nil, []byte{i32}}},
		{module: abi.ExtismModule, name: "no_such_kernel_fn", typ: funcType{nil, []byte{i32}}},
		{module: abi.ExtismModule, name: "alloc", typ: funcType{[]byte{i32}, []byte{i32}}}, // the kernel's is (i64) -> i64
		{module: abi.HostModule, name: "log", typ: funcType{[]byte{i64}, []byte{i64}}},     // right
		{module: abi.HostModule, name: "yield", typ: funcType{nil, []byte{i32}}},           // reserved
		{module: abi.WASIModule, name: "sock_open", typ: funcType{[]byte{i32}, []byte{i32}}},
		{module: abi.WASIModule, name: "fd_write", typ: funcType{[]byte{i32, i32, i32, i32}, []byte{i32}}}, // right
		{module: "extism:host/user", name: "create_message", typ: funcType{[]byte{i64}, []byte{i64}}},      // right (hyper-mcp's)
		{module: "extism:host/user", name: "notify_progress", typ: funcType{nil, []byte{i32}}},             // hyper-mcp's is (i64) -> ()
	}, "describe", "call")
	pr := checkBytes(t, bin)
	r := result(pr, CheckImports)
	all := r.Message + "\n" + strings.Join(r.Details, "\n")
	for _, want := range []string{"env.abort", "no_such_kernel_fn", "extism:host/env.alloc (i32) -> (i32)", "yield", "sock_open",
		"extism:host/user.notify_progress () -> (i32)"} {
		if !strings.Contains(all, want) {
			t.Errorf("abi.imports does not name %s:\n%s", want, all)
		}
	}
	for _, fine := range []string{".log", "fd_write", "create_message"} {
		if strings.Contains(all, fine) {
			t.Errorf("abi.imports flags %s, which the host provides:\n%s", fine, all)
		}
	}
	if len(r.Details) != 5 {
		t.Errorf("%d problems, want 6:\n%s", len(r.Details)+1, all)
	}
	if result(pr, CheckInstantiate).Status != StatusFail {
		t.Error("abi.instantiate passed for a module that cannot link")
	}
}

func TestConformanceExports(t *testing.T) {
	// A command module is no failure in itself: the host never runs
	// _start, so whether its exports work is for the calls to tell. The
	// shape says what it is.
	pr := checkBytes(t, testModule(nil, "describe", "_start"))
	r := result(pr, CheckExports)
	all := r.Message + "\n" + strings.Join(r.Details, "\n")
	if r.Status != StatusFail || !strings.Contains(all, `"call"`) || strings.Contains(all, "_start") {
		t.Errorf("abi.exports: %+v", r)
	}
	if pr.Shape == nil || !pr.Shape.CommandModule || pr.Shape.Interface != InterfaceExtismMCP || !strings.Contains(pr.Shape.Text, "command module") {
		t.Errorf("shape of a command module: %+v", pr.Shape)
	}
	pr = checkBytes(t, testModule(nil, "describe", "call", "_initialize"))
	if r := result(pr, CheckExports); r.Status != StatusPass {
		t.Errorf("abi.exports on a good module: %+v", r)
	}
	// describe answers nothing: abi.describe fails, the rest is skipped.
	if r := result(pr, CheckDescribe); r.Status != StatusFail {
		t.Errorf("abi.describe: %+v", r)
	}
	if r := result(pr, CheckManifest); r.Status != StatusSkip {
		t.Errorf("abi.manifest: %+v", r)
	}
}
