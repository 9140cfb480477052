package conformance

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/plugboard/plugboard/abi/jsonscan"
)

// Instances are plain JSON values (map[string]any, []any, string, float64,
// bool, nil), the values the host's validator sees after decoding.

// minimal returns a small value the schema accepts, or false when the kit
// cannot build one (a false schema, or nesting too deep). It does not
// validate: callers validate whole instances against the resolved schema.
func minimal(root map[string]any, v any, depth int) (any, bool) {
	g := &minGen{root: root, budget: maxNodes}
	return g.min(v, depth)
}

// maxNodes bounds the values one minimal or fuzzed instance holds: a
// recursive schema with minItems would otherwise grow exponentially.
const maxNodes = 20000

type minGen struct {
	root   map[string]any
	budget int
}

func (g *minGen) min(v any, depth int) (any, bool) {
	root := g.root
	g.budget--
	if depth > 16 || g.budget < 0 {
		return nil, false
	}
	if isFalseSchema(v) {
		return nil, false
	}
	m := obj(v)
	if len(m) == 0 {
		return "x", true
	}
	if _, ok := m["$ref"]; ok {
		// deref follows every hop, so a target still holding $ref is a
		// reference the kit cannot follow (remote, or a cycle).
		if d := obj(deref(root, m)); d != nil {
			if _, unresolved := d["$ref"]; !unresolved {
				return g.min(d, depth+1)
			}
		}
	}
	if c, ok := m["const"]; ok {
		return c, true
	}
	if e := asList(m["enum"]); len(e) > 0 {
		for _, x := range e {
			if x != nil {
				return x, true
			}
		}
		return nil, true
	}
	types := typesOf(m)
	if d, ok := m["default"]; ok && (types == nil || slices.Contains(types, jsonKind(d)) ||
		(jsonKind(d) == "number" && slices.Contains(types, "integer") && d.(float64) == math.Trunc(d.(float64)))) {
		return d, true
	}
	t := ""
	for _, x := range types {
		if x != "null" {
			t = x
			break
		}
	}
	if t == "" && slices.Contains(types, "null") {
		return nil, true
	}
	if t == "" {
		for _, k := range []string{"oneOf", "anyOf"} {
			for _, b := range asList(m[k]) {
				if val, ok := g.min(merge(m, obj(b)), depth+1); ok {
					return val, true
				}
			}
		}
		if all := asList(m["allOf"]); len(all) > 0 {
			merged := m
			for _, b := range all {
				merged = merge(merged, obj(b))
			}
			return g.min(merged, depth+1)
		}
		return "x", true
	}
	switch t {
	case "string":
		return minimalString(m), true
	case "integer", "number":
		return minimalNumber(m, t == "integer"), true
	case "boolean":
		return false, true
	case "array":
		n := intKeyword(m, "minItems", 0)
		items := make([]any, 0, n)
		for i := range n {
			var is any = m["items"]
			if pre := asList(m["prefixItems"]); i < len(pre) {
				is = pre[i]
			}
			val, ok := g.min(is, depth+1)
			if !ok {
				return nil, false
			}
			items = append(items, val)
		}
		return items, true
	case "object":
		o := map[string]any{}
		props := obj(m["properties"])
		req := stringList(m["required"])
		for _, b := range asList(m["allOf"]) {
			req = append(req, stringList(obj(b)["required"])...)
		}
		for _, r := range req {
			var ps any = true
			if p, ok := props[r]; ok {
				ps = p
			}
			val, ok := g.min(ps, depth+1)
			if !ok {
				return nil, false
			}
			o[r] = val
		}
		return o, true
	}
	return nil, true
}

// merge returns a copy of base without its combinators, with b's keywords
// added ("required" and "properties" are combined).
func merge(base, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range base {
		if k == "oneOf" || k == "anyOf" || k == "allOf" {
			continue
		}
		out[k] = v
	}
	for k, v := range b {
		switch k {
		case "required":
			out[k] = append(slices.Clone(asList(out[k])), asList(v)...)
		case "properties":
			props := map[string]any{}
			for pk, pv := range obj(out[k]) {
				props[pk] = pv
			}
			for pk, pv := range obj(v) {
				props[pk] = pv
			}
			out[k] = props
		default:
			out[k] = v
		}
	}
	return out
}

func intKeyword(m map[string]any, k string, def int) int {
	if f, ok := m[k].(float64); ok && f >= 0 && f < 1<<20 {
		return int(f)
	}
	return def
}

func numKeyword(m map[string]any, k string) (float64, bool) {
	f, ok := m[k].(float64)
	return f, ok
}

// formatSamples are valid values of the string formats agents meet.
var formatSamples = map[string]string{
	"uuid":          "3f2b8c1e-5d4a-4b6e-9f7a-2c1d0e9b8a76",
	"date-time":     "2026-01-02T03:04:05Z",
	"date":          "2026-01-02",
	"time":          "03:04:05Z",
	"duration":      "PT1M",
	"email":         "agent@example.com",
	"idn-email":     "agent@example.com",
	"hostname":      "example.com",
	"idn-hostname":  "example.com",
	"ipv4":          "192.0.2.1",
	"ipv6":          "2001:db8::1",
	"uri":           "https://example.com/",
	"uri-reference": "https://example.com/",
	"iri":           "https://example.com/",
	"iri-reference": "https://example.com/",
	"uri-template":  "https://example.com/{id}",
	"json-pointer":  "/a",
	"regex":         "a+",
}

func minimalString(m map[string]any) string {
	s := "x"
	if f, ok := m["format"].(string); ok {
		if sample, ok := formatSamples[f]; ok {
			s = sample
		}
	}
	if p, ok := m["pattern"].(string); ok {
		if re, err := regexp.Compile(p); err == nil && !re.MatchString(s) {
			for _, c := range []string{"x", "a", "abc", "0", "1", "A", "x-1", "a_b", "1.0.0", "example", "main", "DEFAULT"} {
				if re.MatchString(c) {
					s = c
					break
				}
			}
		}
	}
	minL := intKeyword(m, "minLength", 0)
	for utf8.RuneCountInString(s) < minL {
		s += "x"
	}
	if maxL, ok := numKeyword(m, "maxLength"); ok && utf8.RuneCountInString(s) > int(maxL) {
		s = string([]rune(s)[:int(max(maxL, 0))])
	}
	return s
}

func minimalNumber(m map[string]any, integer bool) float64 {
	v := 1.0
	lo, hasLo := numKeyword(m, "minimum")
	if x, ok := numKeyword(m, "exclusiveMinimum"); ok && (!hasLo || x >= lo) {
		lo, hasLo = x+step(integer, x), true
	}
	hi, hasHi := numKeyword(m, "maximum")
	if x, ok := numKeyword(m, "exclusiveMaximum"); ok && (!hasHi || x <= hi) {
		hi, hasHi = x-step(integer, x), true
	}
	if hasLo {
		v = lo
	}
	if hasHi && v > hi {
		v = hi
	}
	if mo, ok := numKeyword(m, "multipleOf"); ok && mo > 0 {
		v = math.Ceil(v/mo) * mo
	}
	if integer {
		v = math.Ceil(v)
	}
	return v
}

func step(integer bool, x float64) float64 {
	if integer {
		if x == math.Trunc(x) {
			return 1
		}
		return 0.5
	}
	return math.Max(math.Abs(x)*1e-9, 1e-9)
}

// valueOf returns the minimal value of a root property (memoised); a field
// the schema does not declare gets a string.
func (s *toolSchema) valueOf(name string) any {
	if v, ok := s.values[name]; ok {
		return v
	}
	ps, ok := s.props[name]
	if !ok || isFalseSchema(ps) {
		s.values[name] = "x"
		return "x"
	}
	v, ok := minimal(s.root, ps, 0)
	if !ok {
		v = "x"
	}
	s.values[name] = v
	return v
}

// enumValues returns the alternatives of a property with an enum or const.
func (s *toolSchema) enumValues(name string) []any {
	m := obj(deref(s.root, s.props[name]))
	if c, ok := m["const"]; ok {
		return []any{c}
	}
	return asList(m["enum"])
}

// want constrains findValid: fields with fixed values, fields that must be
// present, fields that must be absent.
type want struct {
	fixed   map[string]any
	with    []string
	without []string
}

// maxTries bounds one findValid search (validations are microseconds).
const maxTries = 4000

// findValid searches for a small instance the schema accepts under the
// constraints: the required fields (minimal values), then every choice of
// up to three optional fields, for each alternative of the enum-valued
// fields — enough for the mode schemas agents meet (if/then/else, not,
// anyOf of targets). It returns false when none validates.
func (s *toolSchema) findValid(w want) (map[string]any, bool) {
	base := map[string]any{}
	for _, r := range s.required {
		if !slices.Contains(w.without, r) {
			base[r] = s.valueOf(r)
		}
	}
	for _, f := range w.with {
		base[f] = s.valueOf(f)
	}
	for k, v := range w.fixed {
		base[k] = v
	}
	type alt struct {
		name   string
		values []any
	}
	var alts []alt
	for _, name := range sortedKeys(base) {
		if _, fixed := w.fixed[name]; fixed {
			continue
		}
		if vals := s.enumValues(name); len(vals) > 1 {
			alts = append(alts, alt{name, vals})
		}
	}
	var optional []string
	for _, name := range s.names {
		if _, in := base[name]; in || slices.Contains(w.without, name) || isFalseSchema(s.props[name]) {
			continue
		}
		optional = append(optional, name)
	}
	tries := 0
	choice := make([]int, len(alts))
	for assignments := 0; assignments < 64; assignments++ {
		inst := clone(base)
		for i, a := range alts {
			inst[a.name] = a.values[choice[i]]
		}
		for k := 0; k <= min(3, len(optional)); k++ {
			found := false
			var result map[string]any
			combinations(len(optional), k, func(idx []int) bool {
				tries++
				if tries > maxTries {
					return false
				}
				cand := clone(inst)
				for _, i := range idx {
					cand[optional[i]] = s.valueOf(optional[i])
				}
				if s.valid(cand) {
					found, result = true, cand
					return false
				}
				return true
			})
			if found {
				return result, true
			}
			if tries > maxTries {
				return nil, false
			}
		}
		// Next assignment of the enum alternatives (odometer).
		i := 0
		for ; i < len(alts); i++ {
			choice[i]++
			if choice[i] < len(alts[i].values) {
				break
			}
			choice[i] = 0
		}
		if i == len(alts) {
			break
		}
	}
	return nil, false
}

// combinations calls fn with every k-subset of 0..n-1 (as sorted indexes)
// until fn returns false.
func combinations(n, k int, fn func([]int) bool) {
	idx := make([]int, k)
	for i := range idx {
		idx[i] = i
	}
	for {
		if !fn(idx) {
			return
		}
		i := k - 1
		for i >= 0 && idx[i] == n-k+i {
			i--
		}
		if i < 0 {
			return
		}
		idx[i]++
		for j := i + 1; j < k; j++ {
			idx[j] = idx[j-1] + 1
		}
	}
}

func clone(m map[string]any) map[string]any {
	out := make(map[string]any, len(m)+2)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// encode returns the JSON of an instance (HTML characters left as they are).
func encode(v any) []byte {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return []byte("null")
	}
	return []byte(strings.TrimSuffix(b.String(), "\n"))
}

// normalise turns an instance into exactly what the host's decoder makes of
// its JSON, so the kit validates what the host will see.
func normalise(v any) any {
	out, err := jsonscan.Decode(encode(v))
	if err != nil {
		return v
	}
	return out
}

// ---- invalid instances ----

// probe is one call the behaviour checks make: its arguments and what it
// tests.
type probe struct {
	what string
	args []byte
	// reject: the schema refuses the arguments, so the answer must be an
	// envelope with a code and a hint.
	reject bool
}

// unknownField is the field name the kit adds to test refusal of unknown
// fields; no real tool declares it.
const unknownField = "conformance_unknown_field"

// invalidProbes derives invalid arguments from a valid instance: each
// required field missing, each typed property with a value of another type,
// an unknown field, and each exclusive pair of the root not. Instances the
// schema accepts anyway are dropped, except the unknown field, which a
// schema that allows unknown fields passes on to the plugin.
func (s *toolSchema) invalidProbes(valid map[string]any) []probe {
	var out []probe
	add := func(what string, inst map[string]any, keepIfAccepted bool) {
		n := normalise(inst)
		rejected := !s.valid(n)
		if rejected || keepIfAccepted {
			out = append(out, probe{what: what, args: encode(inst), reject: rejected})
		}
	}
	for _, r := range s.required {
		inst := clone(valid)
		delete(inst, r)
		add(fmt.Sprintf("required field %q missing", r), inst, false)
	}
	for _, name := range s.names {
		types := typesOf(obj(deref(s.root, s.props[name])))
		if len(types) == 0 {
			continue
		}
		wrong, ok := wrongType(types)
		if !ok {
			continue
		}
		inst := clone(valid)
		inst[name] = wrong
		add(fmt.Sprintf("%q given %s (schema: %s)", name, article(jsonKind(wrong)), strings.Join(types, " or ")), inst, false)
	}
	inst := clone(valid)
	inst[unknownField] = true
	add(fmt.Sprintf("unknown field %q", unknownField), inst, true)
	for _, pair := range notPairs(s.root) {
		inst := clone(valid)
		for _, f := range pair {
			if _, ok := inst[f]; !ok {
				inst[f] = s.valueOf(f)
			}
		}
		add(fmt.Sprintf("%s together (the schema's root not forbids it)", strings.Join(pair, " and ")), inst, false)
	}
	return out
}

// wrongType returns a value of a JSON type the schema does not allow.
func wrongType(types []string) (any, bool) {
	allowed := func(t string) bool {
		return slices.Contains(types, t) || (t == "integer" && slices.Contains(types, "number"))
	}
	candidates := []struct {
		t string
		v any
	}{
		{"string", "not " + article(types[0])},
		{"integer", float64(12345)},
		{"boolean", true},
		{"object", map[string]any{"unexpected": "object"}},
		{"array", []any{"unexpected", "array"}},
	}
	for _, c := range candidates {
		if c.t == "integer" && (allowed("integer") || allowed("number")) {
			continue
		}
		if !allowed(c.t) {
			return c.v, true
		}
	}
	return nil, false
}

// notPairs returns the field sets the root not forbids together:
// not.required, and each not.anyOf[].required / not.oneOf[].required.
func notPairs(root map[string]any) [][]string {
	n := obj(root["not"])
	if n == nil {
		return nil
	}
	var out [][]string
	if req := stringList(n["required"]); len(req) > 1 {
		out = append(out, req)
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		for _, b := range asList(n[k]) {
			if req := stringList(obj(b)["required"]); len(req) > 1 {
				out = append(out, req)
			}
		}
	}
	return out
}

// ---- fuzzing ----

// fuzzer derives random arguments from a schema: values that follow the
// schema's types with hostile contents (unicode, huge strings, numbers at
// the edges), and values that do not (nulls, other types, deep nesting,
// unknown fields).
type fuzzer struct {
	s   *toolSchema
	rnd *rand.Rand
	// budget is the number of values the current instance may still hold.
	budget int
}

var hostileStrings = []string{
	"", " ", "x", "héllo wörld", "日本語のテキスト", "emoji 🧪🔥👩‍💻", "𝄞 astral", "\u202eRTL override",
	"zero\u200bwidth", "nul\x00byte", "line\nbreak\r\n\ttab", `quote " backslash \ slash /`, "{\"json\": true}",
	"../../../../etc/passwd", "/etc/passwd", "C:\\Windows\\system32", "%s%n%x%d", "<script>alert(1)</script>",
	"' OR 1=1 --", "${jndi:ldap://x}", "null", "true", "0", "-1", "NaN", "Infinity", "1e309",
	"00000000-0000-0000-0000-000000000000", "not-a-uuid", "2026-13-45T99:99:99Z", "\ufffd\ufffe\uffff",
	strings.Repeat("a", 4096), strings.Repeat("é", 3000),
}

var edgeNumbers = []float64{0, 1, -1, 2, 0.5, -0.5, 1e-300, -1e-300, 127, 128, 255, 256, 65535, 65536,
	math.MaxInt32, math.MaxInt32 + 1, math.MinInt32, math.MinInt32 - 1, math.MaxUint32, 1 << 53, -(1 << 53),
	(1 << 53) - 1, 1 << 62, 1 << 63, -(1 << 63), 1e18, 1e100, 1e308, -1e308}

// hugeString is a string of n bytes mixing ASCII with multi-byte runes.
func hugeString(n int) string {
	var b strings.Builder
	b.Grow(n + 8)
	for b.Len() < n {
		b.WriteString("xxxxxxxxxxxxxxx é 日 🧪 ")
	}
	return b.String()
}

// deep returns a value nested n levels deep.
func deep(n int, arrays bool) any {
	var v any = "bottom"
	for range n {
		if arrays {
			v = []any{v}
		} else {
			v = map[string]any{"a": v}
		}
	}
	return v
}

// edges returns the deterministic part of the fuzz corpus: for each root
// property, its hostile boundary values set into the valid instance. They
// come first whatever the seed, so a crash on a boundary is always found.
func (f *fuzzer) edges(valid map[string]any) []map[string]any {
	var out []map[string]any
	with := func(name string, v any) {
		inst := clone(valid)
		inst[name] = v
		out = append(out, inst)
	}
	for _, name := range f.s.names {
		m := obj(deref(f.s.root, f.s.props[name]))
		types := typesOf(m)
		switch {
		case slices.Contains(types, "string"):
			with(name, hugeString(1<<20))
			with(name, "héllo 日本語 🧪 \u202e\x00\"\\")
			with(name, "")
		case slices.Contains(types, "integer") || slices.Contains(types, "number"):
			with(name, float64(1<<53-1))
			with(name, -float64(1<<53-1))
			with(name, 1e308)
			if lo, ok := numKeyword(m, "minimum"); ok {
				with(name, lo)
			}
			if hi, ok := numKeyword(m, "maximum"); ok {
				with(name, hi)
			}
		case slices.Contains(types, "array"):
			item, _ := minimal(f.s.root, m["items"], 0)
			n := 10000
			if size := len(encode(item)); size > 100 {
				n = max(1, (1<<20)/size) // about 1 MiB of items
			}
			items := make([]any, n)
			for i := range items {
				items[i] = item
			}
			with(name, items)
			with(name, deep(512, true))
		case slices.Contains(types, "object"), len(types) == 0:
			with(name, deep(512, false))
		}
		with(name, nil)
	}
	return out
}

// instance returns one random argument object: most of the time the valid
// instance with one to three fields replaced by random values, otherwise a
// fresh object of random fields.
func (f *fuzzer) instance(valid map[string]any) any {
	r := f.rnd
	f.budget = maxNodes
	switch r.IntN(20) {
	case 0:
		return []any{"arguments", "must", "be", "an", "object"}
	case 1:
		return deep(2000, r.IntN(2) == 0)
	}
	var inst map[string]any
	if valid != nil && r.IntN(3) > 0 {
		inst = clone(valid)
		for range 1 + r.IntN(3) {
			if len(f.s.names) == 0 {
				break
			}
			name := f.s.names[r.IntN(len(f.s.names))]
			inst[name] = f.value(f.s.props[name], 0)
		}
	} else {
		inst = map[string]any{}
		for _, name := range f.s.names {
			if slices.Contains(f.s.required, name) && r.IntN(10) > 0 || r.IntN(3) == 0 {
				inst[name] = f.value(f.s.props[name], 0)
			}
		}
	}
	if r.IntN(8) == 0 {
		inst[unknownField+fmt.Sprint(r.IntN(100))] = f.value(true, 0)
	}
	return inst
}

// value returns a random value for a schema: of its type most of the time,
// with hostile contents; else null, another type, or deep nesting.
func (f *fuzzer) value(v any, depth int) any {
	r := f.rnd
	if f.budget--; f.budget < 0 {
		return "x"
	}
	m := obj(deref(f.s.root, v))
	roll := r.IntN(100)
	switch {
	case roll < 8:
		return nil
	case roll < 16:
		return f.anyValue(depth)
	case roll < 19:
		return deep(64+r.IntN(512), r.IntN(2) == 0)
	}
	if c, ok := m["const"]; ok && r.IntN(4) > 0 {
		return c
	}
	if e := asList(m["enum"]); len(e) > 0 && r.IntN(4) > 0 {
		return e[r.IntN(len(e))]
	}
	types := typesOf(m)
	if len(types) == 0 {
		for _, k := range []string{"oneOf", "anyOf", "allOf"} {
			if b := asList(m[k]); len(b) > 0 {
				return f.value(b[r.IntN(len(b))], depth+1)
			}
		}
		return f.anyValue(depth)
	}
	switch t := types[r.IntN(len(types))]; t {
	case "string":
		if fm, ok := m["format"].(string); ok && fm == "uuid" && r.IntN(2) == 0 {
			return fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", r.Uint32(), r.Uint32()&0xffff, r.Uint32()&0xfff,
				0x8000|r.Uint32()&0x3fff, r.Uint64()&0xffffffffffff)
		}
		if sample, ok := formatSamples[fmt.Sprint(m["format"])]; ok && r.IntN(3) == 0 {
			return sample
		}
		if r.IntN(12) == 0 {
			return hugeString(1 << (10 + r.IntN(11)))
		}
		return hostileStrings[r.IntN(len(hostileStrings))]
	case "integer", "number":
		if r.IntN(3) == 0 {
			if lo, ok := numKeyword(m, "minimum"); ok {
				return lo + float64(r.IntN(3)-1)
			}
			if hi, ok := numKeyword(m, "maximum"); ok {
				return hi + float64(r.IntN(3)-1)
			}
		}
		n := edgeNumbers[r.IntN(len(edgeNumbers))]
		if r.IntN(2) == 0 {
			n = -n
		}
		return n
	case "boolean":
		return r.IntN(2) == 0
	case "null":
		return nil
	case "array":
		n := r.IntN(5)
		if depth == 0 && r.IntN(10) == 0 {
			n = 1000 + r.IntN(5000)
		}
		n = min(n, max(f.budget, 0))
		items := make([]any, n)
		for i := range items {
			if depth > 6 {
				items[i] = "x"
				continue
			}
			items[i] = f.value(m["items"], depth+1)
		}
		return items
	case "object":
		o := map[string]any{}
		props := obj(m["properties"])
		req := stringList(m["required"])
		for _, name := range sortedKeys(props) {
			if depth > 6 {
				break
			}
			if slices.Contains(req, name) && r.IntN(8) > 0 || r.IntN(3) == 0 {
				o[name] = f.value(props[name], depth+1)
			}
		}
		if len(props) == 0 || r.IntN(6) == 0 {
			o[hostileStrings[r.IntN(len(hostileStrings))]] = f.anyValue(depth + 1)
		}
		return o
	}
	return f.anyValue(depth)
}

// anyValue returns a random value of a random JSON type.
func (f *fuzzer) anyValue(depth int) any {
	r := f.rnd
	if f.budget--; f.budget < 0 {
		return nil
	}
	switch r.IntN(6) {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2:
		return edgeNumbers[r.IntN(len(edgeNumbers))]
	case 3:
		return hostileStrings[r.IntN(len(hostileStrings))]
	case 4:
		if depth > 4 {
			return []any{}
		}
		return []any{f.anyValue(depth + 1), f.anyValue(depth + 1)}
	}
	if depth > 4 {
		return map[string]any{}
	}
	return map[string]any{"k": f.anyValue(depth + 1)}
}

func article(t string) string {
	if t == "" {
		return "a value"
	}
	if strings.ContainsRune("aeiou", rune(t[0])) {
		return "an " + t
	}
	return "a " + t
}
