package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Check is one assertion on the value(s) a path selects: {"path": P,
// "each": bool, OP: ARG, ...}. Every op given must hold.
type Check struct {
	Path string
	// Each applies the ops to every selected value of a [*] path, or to
	// every element of a selected list, instead of to the selection.
	Each bool
	Ops  []Op
}

// Op is one operator of a check with its argument (${vars} substituted
// at run time).
type Op struct {
	Name string
	Arg  any
}

// ops are the check operators with a validation of their argument as
// written in the pack.
var ops = map[string]func(arg any) error{
	"equals":            anyArg,
	"not_equals":        anyArg,
	"one_of":            listArg,
	"exists":            boolArg,
	"type":              typeArg,
	"regex":             regexArg,
	"format":            formatArg,
	"length":            intArg,
	"min_length":        intArg,
	"max_length":        intArg,
	"contains":          anyArg,
	"not_contains":      anyArg,
	"json_contains":     stringArg,
	"json_not_contains": stringArg,
	"set":               listArg,
	"gt":                numArg,
	"gte":               numArg,
	"lt":                numArg,
	"lte":               numArg,
	"ascending":         trueArg,
	"descending":        trueArg,
}

// opOrder is the order ops are evaluated and reported in.
var opOrder = []string{"exists", "type", "equals", "not_equals", "one_of", "format", "regex", "length", "min_length",
	"max_length", "contains", "not_contains", "json_contains", "json_not_contains", "set", "gt", "gte", "lt", "lte",
	"ascending", "descending"}

func (c *Check) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("a check is an object: %w", err)
	}
	p, ok := raw["path"]
	if !ok {
		return errors.New(`a check needs "path"`)
	}
	if err := json.Unmarshal(p, &c.Path); err != nil {
		return fmt.Errorf("check path: %w", err)
	}
	if e, ok := raw["each"]; ok {
		if err := json.Unmarshal(e, &c.Each); err != nil {
			return fmt.Errorf("check %s: each: %w", c.Path, err)
		}
	}
	c.Ops = nil
	for _, name := range opOrder {
		r, ok := raw[name]
		if !ok {
			continue
		}
		var arg any
		if err := json.Unmarshal(r, &arg); err != nil {
			return err
		}
		if !containsVar(arg) {
			if err := ops[name](arg); err != nil {
				return fmt.Errorf("check %s: %s: %w", c.Path, name, err)
			}
		}
		c.Ops = append(c.Ops, Op{Name: name, Arg: arg})
	}
	for k := range raw {
		if _, known := ops[k]; !known && k != "path" && k != "each" {
			return fmt.Errorf("check %s: unknown operator %q (known: %s)", c.Path, k, strings.Join(opOrder, ", "))
		}
	}
	if len(c.Ops) == 0 {
		return fmt.Errorf("check %s: no operator", c.Path)
	}
	return nil
}

// MarshalJSON writes the check back in its pack form.
func (c Check) MarshalJSON() ([]byte, error) {
	m := map[string]any{"path": c.Path}
	if c.Each {
		m["each"] = true
	}
	for _, op := range c.Ops {
		m[op.Name] = op.Arg
	}
	return json.Marshal(m)
}

func containsVar(x any) bool {
	switch x := x.(type) {
	case string:
		return strings.Contains(x, "${")
	case []any:
		return slices.ContainsFunc(x, containsVar)
	case map[string]any:
		for _, v := range x {
			if containsVar(v) {
				return true
			}
		}
	}
	return false
}

func anyArg(any) error { return nil }

func listArg(a any) error {
	if _, ok := a.([]any); !ok {
		return errors.New("want a list")
	}
	return nil
}

func boolArg(a any) error {
	if _, ok := a.(bool); !ok {
		return errors.New("want true or false")
	}
	return nil
}

func trueArg(a any) error {
	if a != true {
		return errors.New("want true")
	}
	return nil
}

func stringArg(a any) error {
	if _, ok := a.(string); !ok {
		return errors.New("want a string")
	}
	return nil
}

func numArg(a any) error {
	if _, ok := a.(float64); !ok {
		return errors.New("want a number")
	}
	return nil
}

func intArg(a any) error {
	if n, ok := a.(float64); !ok || n < 0 || n != float64(int(n)) {
		return errors.New("want a non-negative integer")
	}
	return nil
}

var jsonTypes = []string{"string", "number", "integer", "boolean", "null", "array", "object"}

func typeArg(a any) error {
	names, ok := typeNames(a)
	if !ok {
		return errors.New("want a type name or a list of them")
	}
	for _, n := range names {
		if !slices.Contains(jsonTypes, n) {
			return fmt.Errorf("unknown type %q (known: %s)", n, strings.Join(jsonTypes, ", "))
		}
	}
	return nil
}

func typeNames(a any) ([]string, bool) {
	switch a := a.(type) {
	case string:
		return []string{a}, true
	case []any:
		var out []string
		for _, e := range a {
			s, ok := e.(string)
			if !ok {
				return nil, false
			}
			out = append(out, s)
		}
		return out, true
	}
	return nil, false
}

func regexArg(a any) error {
	s, ok := a.(string)
	if !ok {
		return errors.New("want a string")
	}
	_, err := regexp.Compile(s)
	return err
}

var formats = map[string]func(string) bool{
	"uuid": regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`).MatchString,
	"rfc3339": func(s string) bool {
		_, err := time.Parse(time.RFC3339Nano, s)
		return err == nil
	},
}

func formatArg(a any) error {
	s, _ := a.(string)
	if formats[s] == nil {
		return errors.New("want uuid or rfc3339")
	}
	return nil
}

// eval checks c against doc. The error describes every op that failed.
func (c Check) eval(doc any, vs *vars) error {
	path, err := vs.str(c.Path)
	if err != nil {
		return err
	}
	segs, err := parsePath(path)
	if err != nil {
		return &packError{err.Error()}
	}
	r := resolve(doc, segs)
	var fails []string
	for _, op := range c.Ops {
		arg, err := vs.subst(op.Arg)
		if err != nil {
			return err
		}
		if err := ops[op.Name](arg); err != nil {
			return &packError{fmt.Sprintf("check %s: %s %s: %v", path, op.Name, short(arg, 80), err)}
		}
		if op.Name == "exists" {
			if f := checkExists(path, r, arg.(bool)); f != "" {
				fails = append(fails, f)
			}
			continue
		}
		if len(r.missing) > 0 {
			fails = append(fails, fmt.Sprintf("%s: expected %s %s, but %s is missing", path, op.Name, short(arg, 120), r.missing[0]))
			break
		}
		targets := []hit{{at: path, val: r.value()}}
		if c.Each {
			if r.multi {
				targets = r.hits
			} else if l, ok := r.hits[0].val.([]any); ok {
				targets = nil
				for i, e := range l {
					targets = append(targets, hit{at: fmt.Sprintf("%s[%d]", r.hits[0].at, i), val: e})
				}
			}
		}
		for _, t := range targets {
			if f := apply(op.Name, arg, t.val); f != "" {
				fails = append(fails, fmt.Sprintf("%s: expected %s, got %s", t.at, f, short(t.val, 200)))
				break // one element is enough to show
			}
		}
	}
	if len(fails) > 0 {
		return errors.New(strings.Join(fails, "; "))
	}
	return nil
}

func checkExists(path string, r resolution, want bool) string {
	switch {
	case want && len(r.missing) > 0:
		return fmt.Sprintf("%s: expected to exist, but %s is missing", path, r.missing[0])
	case !want && len(r.hits) > 0:
		return fmt.Sprintf("%s: expected to be absent, but %s is %s", path, r.hits[0].at, short(r.hits[0].val, 200))
	}
	return ""
}

// apply evaluates one op; "" means it holds, else it returns what was
// expected, e.g. `== "idle"`.
func apply(name string, arg, got any) string {
	switch name {
	case "equals":
		if !equal(got, arg) {
			return "== " + short(arg, 200)
		}
	case "not_equals":
		if equal(got, arg) {
			return "!= " + short(arg, 200)
		}
	case "one_of":
		if !slices.ContainsFunc(arg.([]any), func(a any) bool { return equal(got, a) }) {
			return "one of " + short(arg, 200)
		}
	case "type":
		names, _ := typeNames(arg)
		if !slices.Contains(names, typeOf(got)) && (typeOf(got) != "number" || !slices.Contains(names, "integer") || !isInt(got)) {
			return "type " + strings.Join(names, " or ") + " (is " + typeOf(got) + ")"
		}
	case "format":
		s, ok := got.(string)
		if !ok || !formats[arg.(string)](s) {
			return "format " + arg.(string)
		}
	case "regex":
		s, ok := got.(string)
		if !ok || !regexp.MustCompile(arg.(string)).MatchString(s) {
			return "to match /" + arg.(string) + "/"
		}
	case "length", "min_length", "max_length":
		n, ok := length(got)
		want := int(arg.(float64))
		if !ok {
			return fmt.Sprintf("%s %d of a string, list or object (is %s)", name, want, typeOf(got))
		}
		if (name == "length" && n != want) || (name == "min_length" && n < want) || (name == "max_length" && n > want) {
			return fmt.Sprintf("%s %d (length is %d)", name, want, n)
		}
	case "contains", "not_contains":
		has, ok := contains(got, arg)
		if !ok {
			return fmt.Sprintf("%s %s, which needs a string, list or object (is %s)", name, short(arg, 120), typeOf(got))
		}
		if has != (name == "contains") {
			return map[bool]string{true: "to contain ", false: "not to contain "}[name == "contains"] + short(arg, 200)
		}
	case "json_contains", "json_not_contains":
		b, _ := json.Marshal(got)
		if bytes.Contains(b, []byte(arg.(string))) != (name == "json_contains") {
			return fmt.Sprintf("JSON that %s %q", map[bool]string{true: "contains", false: "does not contain"}[name == "json_contains"], arg)
		}
	case "set":
		l, ok := got.([]any)
		if !ok || !sameSet(l, arg.([]any)) {
			return "the elements (any order) " + short(arg, 300)
		}
	case "gt", "gte", "lt", "lte":
		n, ok := got.(float64)
		want := arg.(float64)
		sym := map[string]string{"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}[name]
		if !ok || !map[string]bool{"gt": n > want, "gte": n >= want, "lt": n < want, "lte": n <= want}[name] {
			return sym + " " + asText(want)
		}
	case "ascending", "descending":
		l, ok := got.([]any)
		if !ok || !ordered(l, name == "ascending") {
			return "a list in strictly " + name + " order"
		}
	}
	return ""
}

func equal(a, b any) bool { return reflect.DeepEqual(a, b) }

func typeOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func isInt(v any) bool {
	f, ok := v.(float64)
	return ok && f == float64(int64(f))
}

func length(v any) (int, bool) {
	switch v := v.(type) {
	case string:
		return len(v), true
	case []any:
		return len(v), true
	case map[string]any:
		return len(v), true
	}
	return 0, false
}

// contains: a substring of a string, an element of a list, a member name
// of an object.
func contains(got, arg any) (has, ok bool) {
	switch g := got.(type) {
	case string:
		s, isStr := arg.(string)
		return isStr && strings.Contains(g, s), true
	case []any:
		return slices.ContainsFunc(g, func(e any) bool { return equal(e, arg) }), true
	case map[string]any:
		s, isStr := arg.(string)
		_, found := g[s]
		return isStr && found, true
	}
	return false, false
}

func sameSet(got, want []any) bool {
	if len(got) != len(want) {
		return false
	}
	used := make([]bool, len(want))
outer:
	for _, g := range got {
		for i, w := range want {
			if !used[i] && equal(g, w) {
				used[i] = true
				continue outer
			}
		}
		return false
	}
	return true
}

func ordered(l []any, asc bool) bool {
	for i := 1; i < len(l); i++ {
		var less bool
		switch a := l[i-1].(type) {
		case float64:
			b, ok := l[i].(float64)
			if !ok {
				return false
			}
			less = a < b
			if !asc {
				less = a > b
			}
		case string:
			b, ok := l[i].(string)
			if !ok {
				return false
			}
			less = a < b
			if !asc {
				less = a > b
			}
		default:
			return false
		}
		if !less {
			return false
		}
	}
	return true
}

// outcome is a tool call's result as the checks see it.
type outcome struct {
	isError bool
	doc     any    // structuredContent, else the text as JSON, else the text
	text    string // the text content
}

func (o outcome) code() string {
	m, _ := o.doc.(map[string]any)
	s, _ := m["code"].(string)
	return s
}

// eval checks an outcome; a nil expectation wants a success.
func (e *Expect) eval(o outcome, vs *vars) error {
	if e == nil {
		e = &Expect{}
	}
	env, _ := o.doc.(map[string]any)
	if !e.wantsError() {
		if o.isError {
			return fmt.Errorf("expected success, got error %s", envelopeSummary(env, o.text))
		}
	} else {
		if !o.isError {
			want := "an error"
			if e.ErrorCode != "" {
				want = "error " + e.ErrorCode
			}
			return fmt.Errorf("expected %s, got success", want)
		}
		code, _ := env["code"].(string)
		if code == "" {
			return fmt.Errorf("expected an error envelope with a code, got isError with %s", short(o.doc, 300))
		}
		if e.ErrorCode != "" && code != e.ErrorCode {
			return fmt.Errorf("expected error code %s, got %s", e.ErrorCode, envelopeSummary(env, o.text))
		}
		if m, _ := env["message"].(string); strings.TrimSpace(m) == "" {
			return fmt.Errorf("error %s has no message", code)
		}
		if _, ok := env["retryable"].(bool); !ok {
			return fmt.Errorf("error %s has no boolean retryable", code)
		}
		hint, _ := env["hint"].(string)
		if strings.TrimSpace(hint) == "" {
			return fmt.Errorf("error %s has no hint: an expected failure must name the next step", code)
		}
		for _, want := range e.HintContains {
			w, err := vs.str(want)
			if err != nil {
				return err
			}
			if !strings.Contains(hint, w) {
				return fmt.Errorf("expected the hint of %s to contain %q, got hint %q", code, w, hint)
			}
		}
	}
	var fails []string
	for _, c := range e.Fields {
		if err := c.eval(o.doc, vs); err != nil {
			if isPackError(err) {
				return err
			}
			fails = append(fails, err.Error())
		}
	}
	if len(fails) > 0 {
		return errors.New(strings.Join(fails, "; "))
	}
	return nil
}

func envelopeSummary(env map[string]any, text string) string {
	if env == nil {
		return clip(text, 300)
	}
	code, _ := env["code"].(string)
	msg, _ := env["message"].(string)
	hint, _ := env["hint"].(string)
	s := code + ": " + clip(msg, 200)
	if hint != "" {
		s += " (hint: " + clip(hint, 200) + ")"
	}
	return s
}

// short renders a value as compact JSON of at most n bytes.
func short(v any, n int) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return clip(string(b), n)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return fmt.Sprintf("%s…(%d bytes)", s[:cut], len(s))
}
