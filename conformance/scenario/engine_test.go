package scenario

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func doc(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func check(t *testing.T, s string) Check {
	t.Helper()
	var c Check
	if err := json.Unmarshal([]byte(s), &c); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return c
}

const sample = `{
  "state": "running", "count": 3, "nothing": null, "flag": true,
  "id": "0b6f3ad4-2f58-4e8d-9a51-3f6f0b1a2c3d", "at": "2026-01-02T03:04:05.123456Z",
  "entries": [{"i": 4, "content": "line-4"}, {"i": 5, "content": "line-5"}, {"i": 6, "content": "line-6"}],
  "execs": [{"executor": "CODEX", "ok": false}, {"executor": "SHELL", "ok": true}],
  "page": {"next_cursor": 4, "has_more": true},
  "text": "Use when: x\nRequired: y"
}`

func TestPaths(t *testing.T) {
	d := doc(t, sample)
	for path, want := range map[string]string{
		"$":                        "", // whole document: checked below
		"state":                    `"running"`,
		"$.state":                  `"running"`,
		"page.next_cursor":         `4`,
		"entries[0].content":       `"line-4"`,
		"entries[-1].i":            `6`,
		"entries[*].i":             `[4,5,6]`,
		"execs[executor=SHELL].ok": `true`,
		"execs[ok=false].executor": `"CODEX"`,
		"nothing":                  `null`,
	} {
		got, err := lookupPath(d, path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if want == "" {
			if _, ok := got.(map[string]any); !ok {
				t.Errorf("$ = %v", got)
			}
			continue
		}
		if b, _ := json.Marshal(got); string(b) != want {
			t.Errorf("%s = %s, want %s", path, b, want)
		}
	}
	for path, want := range map[string]string{
		"missing":                   "missing not found",
		"page.missing":              "page.missing not found",
		"entries[7].i":              "entries[7] (list has 3) not found",
		"execs[executor=GEMINI].ok": "execs[executor=GEMINI] not found",
		"state.x":                   "state.x not found",
	} {
		if _, err := lookupPath(d, path); err == nil || err.Error() != want {
			t.Errorf("%s: error %v, want %q", path, err, want)
		}
	}
	for _, bad := range []string{"a..b", "a[", "a[x]", "a[=b]", "a[0]b"} {
		if _, err := parsePath(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestChecks(t *testing.T) {
	d := doc(t, sample)
	vs := newVars()
	vs.set("cursor", 4.0)
	vs.set("st", "running")
	pass := []string{
		`{"path": "state", "equals": "running"}`,
		`{"path": "state", "equals": "${st}", "not_equals": "idle"}`,
		`{"path": "nothing", "equals": null, "exists": true}`,
		`{"path": "absent", "exists": false}`,
		`{"path": "entries[*].nope", "exists": false}`,
		`{"path": "state", "one_of": ["failed", "running"]}`,
		`{"path": "count", "type": "integer"}`,
		`{"path": "nothing", "type": ["string", "null"]}`,
		`{"path": "id", "format": "uuid"}`,
		`{"path": "at", "format": "rfc3339"}`,
		`{"path": "state", "regex": "^run"}`,
		`{"path": "text", "regex": "(?s)Use when:.*Required:"}`,
		`{"path": "entries", "length": 3, "min_length": 1, "max_length": 3}`,
		`{"path": "state", "length": 7}`,
		`{"path": "page", "length": 2, "contains": "has_more"}`,
		`{"path": "entries[*].content", "contains": "line-5", "not_contains": "line-9"}`,
		`{"path": "text", "contains": "Required:"}`,
		`{"path": "$", "json_contains": "line-6", "json_not_contains": "workspace_id"}`,
		`{"path": "entries[*].i", "set": [6, 4, 5], "ascending": true}`,
		`{"path": "entries[*].i", "each": true, "gt": 3, "gte": 4, "lt": 7, "lte": 6}`,
		`{"path": "entries", "each": true, "type": "object"}`,
		`{"path": "entries[-1].i", "equals": "${cursor+2}"}`,
		`{"path": "entries[0].i", "equals": "${cursor}"}`,
		`{"path": "page.next_cursor", "gt": "${cursor-1}"}`,
	}
	for _, s := range pass {
		if err := check(t, s).eval(d, vs); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	fail := map[string]string{
		`{"path": "state", "equals": "idle"}`:                  `state: expected == "idle", got "running"`,
		`{"path": "absent", "equals": 1}`:                      `absent: expected equals 1, but absent is missing`,
		`{"path": "nothing", "exists": false}`:                 `nothing: expected to be absent, but nothing is null`,
		`{"path": "entries[5].i", "exists": true}`:             `entries[5].i: expected to exist, but entries[5] (list has 3) is missing`,
		`{"path": "count", "type": "string"}`:                  `count: expected type string (is number), got 3`,
		`{"path": "state", "format": "uuid"}`:                  `state: expected format uuid, got "running"`,
		`{"path": "state", "regex": "^idle$"}`:                 `state: expected to match /^idle$/, got "running"`,
		`{"path": "entries", "min_length": 4}`:                 `entries: expected min_length 4 (length is 3), got [`,
		`{"path": "entries[*].content", "contains": "line-9"}`: `entries[*].content: expected to contain "line-9", got ["line-4","line-5","line-6"]`,
		`{"path": "entries[*].i", "each": true, "lt": 6}`:      `entries[2].i: expected < 6, got 6`,
		`{"path": "entries[*].i", "descending": true}`:         `expected a list in strictly descending order`,
		`{"path": "$", "json_not_contains": "line-6"}`:         `$: expected JSON that does not contain "line-6"`,
		`{"path": "entries[*].i", "set": [4, 5]}`:              `expected the elements (any order) [4,5], got [4,5,6]`,
		`{"path": "state", "one_of": ["idle"], "equals": "x"}`: `state: expected == "x", got "running"; state: expected one of ["idle"], got "running"`,
	}
	for s, want := range fail {
		err := check(t, s).eval(d, vs)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want it to contain %q", s, err, want)
		}
	}
	// Mistakes of the pack itself.
	for s, want := range map[string]string{
		`{"path": "state", "equals": "${nope}"}`: "undefined variable ${nope}",
		`{"path": "state", "gt": "${st+1}"}`:     "${st+1}: st is \"running\", not a number",
		`{"path": "${st}[", "exists": true}`:     "unclosed [",
		`{"path": "state", "regex": "${st}("}`:   "missing closing )",
	} {
		err := check(t, s).eval(d, vs)
		if err == nil || !isPackError(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want a pack error containing %q", s, err, want)
		}
	}
	for s, want := range map[string]string{
		`{"path": "a"}`:                    "no operator",
		`{"path": "a", "equal": 1}`:        `unknown operator "equal"`,
		`{"path": "a", "regex": "("}`:      "missing closing",
		`{"path": "a", "length": -1}`:      "non-negative integer",
		`{"path": "a", "type": "str"}`:     `unknown type "str"`,
		`{"path": "a", "format": "email"}`: "want uuid or rfc3339",
		`{"equals": 1}`:                    `needs "path"`,
	} {
		var c Check
		if err := json.Unmarshal([]byte(s), &c); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", s, err, want)
		}
	}
}

func TestSubstitution(t *testing.T) {
	vs := newVars()
	vs.set("id", "abc")
	vs.set("n", 41.0)
	vs.set("cursor", nil)
	vs.set("list", []any{1.0, "x"})
	vs.dynamic = func(name string) (any, bool) { return "dyn:" + name, strings.HasPrefix(name, "gate.") }
	got, err := vs.subst(map[string]any{
		"whole":   "${id}",
		"typed":   "${n}",
		"plus":    "${n+1}",
		"minus":   "${n-41}",
		"null":    "${cursor}",
		"list":    "${list}",
		"spliced": "id=${id} n=${n} list=${list} null=${cursor}",
		"escape":  "$${id} stays, ${id} goes",
		"nested":  []any{map[string]any{"k": "${id}"}, 7.0, true},
		"gate":    "${gate.main}",
		"shell":   "for i in $(seq 1 3); do echo $i; done",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"escape":"${id} stays, abc goes","gate":"dyn:gate.main","list":[1,"x"],"minus":0,"nested":[{"k":"abc"},7,true],` +
		`"null":null,"plus":42,"shell":"for i in $(seq 1 3); do echo $i; done","spliced":"id=abc n=41 list=[1,\"x\"] null=null",` +
		`"typed":41,"whole":"abc"}`
	if b, _ := json.Marshal(got); string(b) != want {
		t.Errorf("subst =\n%s\nwant\n%s", b, want)
	}
	if _, err := vs.subst("a ${missing} b"); err == nil || !strings.Contains(err.Error(), "undefined variable ${missing}") ||
		!strings.Contains(err.Error(), "defined: cursor, id, list, n") {
		t.Errorf("undefined: %v", err)
	}
}

// fake answers tool calls from a function, counting them.
type fake struct {
	calls atomic.Int64
	tools []*mcp.Tool
	fn    func(n int64, tool string, args map[string]any) (*mcp.CallToolResult, error)
}

func (f *fake) CallTool(_ context.Context, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	return f.fn(f.calls.Add(1), tool, args)
}

func (f *fake) ListTools(context.Context) ([]*mcp.Tool, error) { return f.tools, nil }

func (f *fake) Close() error { return nil }

func result(structured any) *mcp.CallToolResult {
	b, _ := json.Marshal(structured)
	return &mcp.CallToolResult{StructuredContent: structured, Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
}

// envelope is an error result as plugboard answers it: the envelope as the
// text, no structuredContent.
func envelope(code, hint string) *mcp.CallToolResult {
	b, _ := json.Marshal(map[string]any{"code": code, "message": code + " happened", "retryable": true, "hint": hint})
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
}

func testRunner(c Client) *runner {
	r := &runner{c: c, setup: merged(Setup{}, Setup{TimeoutMS: 400, IntervalMS: 10}), vars: newVars()}
	return r
}

func steps(t *testing.T, s string) []Step {
	t.Helper()
	p, err := Parse([]byte(`{"name": "t", "scenarios": [{"id": "s", "name": "S", "steps": ` + s + `}]}`))
	if err != nil {
		t.Fatal(err)
	}
	return p.Scenarios[0].Steps
}

func TestWaitCaptureAndSubstitution(t *testing.T) {
	f := &fake{fn: func(n int64, tool string, args map[string]any) (*mcp.CallToolResult, error) {
		switch tool {
		case "create":
			return result(map[string]any{"id": "t-1", "n": 7}), nil
		case "status":
			if args["id"] != "t-1" || args["next"] != 8.0 {
				return nil, errors.New("args not substituted")
			}
			state := "running"
			if n >= 4 {
				state = "done"
			}
			return result(map[string]any{"state": state, "polls": n}), nil
		}
		return nil, errors.New("unknown tool")
	}}
	r := testRunner(f)
	err := r.run(context.Background(), steps(t, `[
		{"call": "create", "capture": {"task": "id", "n": "n"}},
		{"call": "status", "args": {"id": "${task}", "next": "${n+1}"},
		 "wait": {"until": {"fields": [{"path": "state", "equals": "done"}]}},
		 "expect": {"fields": [{"path": "polls", "gte": 4}]}, "capture": {"polls": "polls"}}]`))
	if err != nil {
		t.Fatal(err)
	}
	if r.vars.m["polls"] != 4.0 || r.vars.m["task"] != "t-1" {
		t.Fatalf("vars = %v", r.vars.m)
	}
}

func TestWaitTimesOut(t *testing.T) {
	f := &fake{fn: func(n int64, tool string, args map[string]any) (*mcp.CallToolResult, error) {
		return result(map[string]any{"state": "running", "n": n}), nil
	}}
	r := testRunner(f)
	start := time.Now()
	err := r.run(context.Background(), steps(t, `[{"name": "settle", "call": "status", "args": {"id": "x"},
		"wait": {"until": {"fields": [{"path": "state", "not_equals": "running"}]}, "timeout_ms": 150, "interval_ms": 20}}]`))
	if err == nil {
		t.Fatal("the wait held")
	}
	if d := time.Since(start); d < 150*time.Millisecond || d > 2*time.Second {
		t.Errorf("waited %s", d)
	}
	for _, want := range []string{`step 1 (settle): status {"id":"x"}: waited 150ms (`, ` calls) and the condition never held: `,
		`state: expected != "running", got "running"; last result: {"n":`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message lacks %q:\n%v", want, err)
		}
	}
	// A pack mistake in the condition fails at once instead of waiting.
	f.calls.Store(0)
	err = r.run(context.Background(), steps(t, `[{"call": "status",
		"wait": {"until": {"fields": [{"path": "state", "equals": "${undefined}"}]}, "timeout_ms": 5000}}]`))
	if err == nil || !strings.Contains(err.Error(), "undefined variable ${undefined}") || f.calls.Load() != 1 {
		t.Fatalf("%d calls: %v", f.calls.Load(), err)
	}
}

func TestErrorExpectations(t *testing.T) {
	f := &fake{fn: func(n int64, tool string, args map[string]any) (*mcp.CallToolResult, error) {
		switch tool {
		case "nohint":
			return envelope("no_session_yet", ""), nil
		case "ok":
			return result(map[string]any{"fine": true}), nil
		}
		return envelope("no_session_yet", "call get_attempt_status until latest_session_id is set"), nil
	}}
	r := testRunner(f)
	for s, want := range map[string]string{
		`{"call": "x", "expect": {"error_code": "no_session_yet", "hint_contains": ["get_attempt_status", "latest_session_id"],
		  "fields": [{"path": "retryable", "equals": true}]}}`: "",
		`{"call": "x", "expect": {"ok": false}}`:                      "",
		`{"call": "x"}`:                                               `step 1: x {}: expected success, got error no_session_yet: no_session_yet happened (hint: call get_attempt_status`,
		`{"call": "x", "expect": {"error_code": "ambiguous_target"}}`: `expected error code ambiguous_target, got no_session_yet: no_session_yet happened`,
		`{"call": "x", "expect": {"error_code": "no_session_yet", "hint_contains": "exactly one"}}`: `expected the hint of no_session_yet to contain "exactly one", got hint "call get_attempt_status`,
		`{"call": "nohint", "expect": {"error_code": "no_session_yet"}}`:                            "error no_session_yet has no hint",
		`{"call": "ok", "expect": {"error_code": "no_session_yet"}}`:                                "expected error no_session_yet, got success",
	} {
		err := r.run(context.Background(), steps(t, "["+s+"]"))
		if want == "" && err != nil {
			t.Errorf("%s: %v", s, err)
		}
		if want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: error %v, want %q", s, err, want)
		}
	}
}

func TestParallelSameAndRetry(t *testing.T) {
	var mu sync.Mutex
	seen := 0
	f := &fake{fn: func(n int64, tool string, args map[string]any) (*mcp.CallToolResult, error) {
		mu.Lock()
		defer mu.Unlock()
		seen++
		if tool == "flaky" && seen <= 5 {
			return envelope("request_in_progress", "retry"), nil
		}
		id := "one"
		if tool == "split" && n%2 == 0 {
			id = "two"
		}
		return result(map[string]any{"id": id}), nil
	}}
	r := testRunner(f)
	if err := r.run(context.Background(), steps(t, `[{"call": "flaky", "parallel": 20, "retry_on": ["request_in_progress"],
		"same": ["id"], "capture": {"id": "id"}}]`)); err != nil {
		t.Fatal(err)
	}
	if f.calls.Load() != 25 || r.vars.m["id"] != "one" {
		t.Fatalf("%d calls, id %v", f.calls.Load(), r.vars.m["id"])
	}
	f.calls.Store(0)
	err := r.run(context.Background(), steps(t, `[{"call": "split", "repeat": 2, "same": ["id"]}]`))
	if err == nil || !strings.Contains(err.Error(), `expected the same id from all 2 calls, got "one" (call 1) and "two" (call 2)`) {
		t.Fatalf("split: %v", err)
	}
	seen = 0
	err = r.run(context.Background(), steps(t, `[{"call": "flaky", "repeat": 2}]`))
	if err == nil || !strings.Contains(err.Error(), "call 1 of 2: expected success, got error request_in_progress") {
		t.Fatalf("without retry_on: %v", err)
	}
}

func TestOutputSchemaAndTools(t *testing.T) {
	out := map[string]any{"type": "object", "required": []any{"id"},
		"properties": map[string]any{"id": map[string]any{"type": "string", "description": "the id"}}}
	in := map[string]any{"type": "object", "required": []any{"action"}, "properties": map[string]any{
		"action": map[string]any{"type": "string", "enum": []any{"send", "cancel"}, "description": "what to do"},
		"prompt": map[string]any{"type": "string"}}}
	f := &fake{
		tools: []*mcp.Tool{{Name: "good", Description: "Use when: a\nRequired: b", InputSchema: in, OutputSchema: out},
			{Name: "bad", InputSchema: in, OutputSchema: out}},
		fn: func(n int64, tool string, args map[string]any) (*mcp.CallToolResult, error) {
			if tool == "bad" {
				return result(map[string]any{"id": 5}), nil
			}
			return result(map[string]any{"id": "x"}), nil
		}}
	r := testRunner(f)
	if err := r.loadTools(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := r.run(context.Background(), steps(t, `[{"call": "good"}]`)); err != nil {
		t.Fatal(err)
	}
	err := r.run(context.Background(), steps(t, `[{"call": "bad", "expect": {"fields": [{"path": "id", "equals": 5}]}}]`))
	if err == nil || !strings.Contains(err.Error(), "the result does not validate against bad's outputSchema") {
		t.Fatalf("bad output: %v", err)
	}
	err = r.run(context.Background(), steps(t, `[{"tools": {"select": ["good"], "described": ["good"], "instances": [
		{"name": "no action", "tool": "good", "value": {}, "valid": false},
		{"name": "send", "tool": "good", "value": {"action": "send"}, "valid": true},
		{"name": "wrong", "tool": "good", "value": {"action": "nope"}, "valid": true}]},
		"expect": {"fields": [{"path": "tools[*].description", "each": true, "regex": "^Use when:"},
		                      {"path": "by_name.bad", "exists": false}, {"path": "names", "equals": ["good"]}]}}]`))
	for _, want := range []string{"schema properties without a description: good.input.prompt",
		`wrong: good's inputSchema refuses {"action":"nope"}, which it must accept`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("tools step: %v, want %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "no action") || strings.Contains(err.Error(), "regex") || strings.Contains(err.Error(), "by_name") {
		t.Errorf("tools step reports checks that hold: %v", err)
	}
	// An envelope in structuredContent that fails the outputSchema is lost
	// in clients that check it on isError too: the engine fails it.
	f.fn = func(n int64, tool string, args map[string]any) (*mcp.CallToolResult, error) {
		res := envelope("not_found", "call list_things")
		if tool == "bad" {
			res.StructuredContent = map[string]any{"code": "not_found", "message": "m", "retryable": false, "hint": "h"}
		}
		return res, nil
	}
	if err := r.run(context.Background(), steps(t, `[{"call": "good", "expect": {"error_code": "not_found"}}]`)); err != nil {
		t.Errorf("an envelope as text: %v", err)
	}
	err = r.run(context.Background(), steps(t, `[{"call": "bad", "expect": {"error_code": "not_found"}}]`))
	if err == nil || !strings.Contains(err.Error(), "an error result carries structuredContent that fails bad's outputSchema") {
		t.Errorf("an envelope in structuredContent: %v", err)
	}
	err = r.run(context.Background(), steps(t, `[{"tools": {"select": ["good", "get_context"]}}]`))
	if err == nil || !strings.Contains(err.Error(), "tools/list lacks get_context (it lists bad, good)") {
		t.Fatalf("select: %v", err)
	}
}

func TestPackValidation(t *testing.T) {
	for s, want := range map[string]string{
		`{"scenarios": []}`:              "pack has no name",
		`{"name": "p", "scenarios": []}`: "pack has no scenarios",
		`{"name": "p", "scenarios": [{"id": "A b", "name": "x", "steps": [{"sleep_ms": 1}]}]}`:                                                     "id must match",
		`{"name": "p", "scenarios": [{"id": "a", "name": "x", "steps": [{"sleep_ms": 1}]}, {"id": "a", "name": "y", "steps": [{"sleep_ms": 1}]}]}`: "duplicate id",
		`{"name": "p", "scenarios": [{"id": "a", "name": "x", "steps": [{"include": "nope"}]}]}`:                                                   `no fragment "nope"`,
		`{"name": "p", "scenarios": [{"id": "a", "name": "x", "steps": [{"call": "t", "repeat": 2, "parallel": 2}]}]}`:                             "repeat and parallel are exclusive",
		`{"name": "p", "scenarios": [{"id": "a", "name": "x", "steps": [{"call": "t", "same": ["id"]}]}]}`:                                         "same needs repeat or parallel",
		`{"name": "p", "scenarios": [{"id": "a", "name": "x", "steps": [{"call": "t", "expect": {"ok": true, "error_code": "x"}}]}]}`:              "ok: true contradicts error_code",
		`{"name": "p", "scenarios": [{"id": "a", "name": "x", "steps": [{"call": "t", "expect": {"hint_contains": "x"}}]}]}`:                       "hint_contains needs error_code",
		`{"name": "p", "scenarios": [{"id": "a", "name": "x", "steps": [{"call": "t", "capture": {"x": "a[b"}}]}]}`:                                "unclosed [",
		`{"name": "p", "scenarios": [{"id": "a", "name": "x", "steps": [{"call": "t", "expect": {"fields": [{"path": "a", "eq": 1}]}}]}]}`:         `unknown operator "eq"`,
		`{"name": "p", "scenarios": [{"id": "a", "name": "x", "setup": {"files": {"../x": ""}}, "steps": [{"sleep_ms": 1}]}]}`:                     "must be relative",
		`{"name": "p", "typo": 1, "scenarios": []}`:                                                           `unknown field "typo"`,
		`{"name": "p", "scenarios": [{"id": "a", "name": "x", "steps": [{"open_gate": "g", "expect": {}}]}]}`: "expect and capture apply to call and tools steps only",
	} {
		if _, err := Parse([]byte(s)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", s, err, want)
		}
	}
	p, err := Parse([]byte(`{"name": "p", "fragments": {"settle": [{"call": "s"}, {"name": "two", "sleep_ms": 1}]},
		"scenarios": [{"id": "a", "name": "x", "steps": [{"call": "t"}, {"include": "settle"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if st := p.Scenarios[0].Steps; len(st) != 3 || st[1].Name != "settle" || st[2].Name != "settle: two" {
		t.Fatalf("fragment inlined as %+v", st)
	}
}

func TestMergedSetup(t *testing.T) {
	s := merged(Setup{Files: map[string]string{"a": "1", "b": "2"}, ServeArgs: []string{"--x"}, TimeoutMS: 5},
		Setup{Files: map[string]string{"b": "3"}, ServeArgs: []string{"--guard", "safe"}, SetupScript: "s"})
	if s.Files["a"] != "1" || s.Files["b"] != "3" || strings.Join(s.ServeArgs, " ") != "--x --guard safe" || s.SetupScript != "s" ||
		s.TimeoutMS != 5 || s.IntervalMS != 30 || s.Project != "demo" || s.Repo != "app" || s.CallTimeoutMS != 60000 {
		t.Fatalf("merged = %+v", s)
	}
}

func TestReportJSONRoundTrip(t *testing.T) {
	rep := Report{Pack: "p", Results: []Result{{ID: "a", Name: "A", Status: StatusPass, Duration: 1500 * time.Millisecond}},
		Passed: 1, Duration: 2 * time.Second}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"duration_ms":1500`) || !strings.Contains(string(b), `"duration_ms":2000`) {
		t.Fatalf("%s", b)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil || back.Results[0].Duration != 1500*time.Millisecond || back.Duration != 2*time.Second {
		t.Fatalf("%+v %v", back, err)
	}
}
