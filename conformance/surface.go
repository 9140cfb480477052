package conformance

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/plugin"
)

// headings is the description template of the task tools' design
// (design-mcp-tool-hit-rate.md, decision 2), in order.
var headings = []string{"Use when:", "Required:", "Optional:", "Next:", "Avoid:"}

const templateFix = `write the description as five lines, in this order: "Use when: <one sentence>", "Required: <fields, or none>", ` +
	`"Optional: <fields, or none>", "Next: <the call to make next>", "Avoid: <one or two common mistakes>"`

// knownCapabilities are the capabilities the host can grant: those board
// operations and host functions need.
func knownCapabilities() []string {
	var out []string
	for _, c := range abi.BoardOps() {
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	for _, f := range abi.HostFunctions() {
		if f.Capability != "" && !slices.Contains(out, f.Capability) {
			out = append(out, f.Capability)
		}
	}
	slices.Sort(out)
	return out
}

// toolSurface holds what the surface checks learnt about a tool, for the
// behaviour checks: its resolved schemas and the rule violations.
type toolSurface struct {
	def   *abi.Tool
	in    *toolSchema
	out   *toolSchema
	viols []violation
	// unchecked: the host serves the tool without checking its arguments
	// (its inputSchema does not compile; plugin.InputSchemaProblem), so
	// the kit has no schema to derive calls from, and calls it with {}.
	unchecked bool
}

// checkCapabilities runs the plugin-level surface check.
func checkCapabilities(rec *recorder, m *abi.Manifest) {
	known := knownCapabilities()
	for _, c := range m.Capabilities {
		if !slices.Contains(known, c) {
			rec.fail(CheckCapabilities, "", fmt.Sprintf("capability %q is not one the host knows (%s)", c, strings.Join(known, ", ")),
				rec.fix("declare only capabilities the host knows; it never grants an unknown one", "sdk.Require(abi.CapBoardRead, ...)"))
		}
	}
	rec.pass(CheckCapabilities, "")
}

// checkTool runs the per-tool surface checks and returns what the
// behaviour checks need.
func checkTool(rec *recorder, pluginName string, t *abi.Tool, seen map[string]int) *toolSurface {
	ts := &toolSurface{def: t}
	name := t.Name

	// Name.
	switch {
	case !abi.ValidToolName(name):
		rec.fail(CheckToolName, name, fmt.Sprintf("name %q is not 1-128 of [A-Za-z0-9_.-]", name),
			"rename the tool: letters, digits, '_', '-' and '.' only, at most 128; agents call it by this name")
	case seen[name] > 1:
		rec.fail(CheckToolName, name, fmt.Sprintf("name %q is declared %d times", name, seen[name]),
			"give every tool of the plugin its own name; the host serves only the first")
	default:
		rec.pass(CheckToolName, name)
	}

	// Description template.
	lines := map[string]string{}
	if problems := descriptionProblems(t.Description, lines); len(problems) > 0 {
		rec.fail(CheckDescription, name, "the description "+strings.Join(problems, "; "), templateFix)
	} else {
		rec.pass(CheckDescription, name)
	}

	// Input schema. A schema the host cannot compile is judged as serve
	// judges it (plugin.InputSchemaProblem), in the words of serve's log:
	// a tool refused is an error; one served with its arguments left to
	// the plugin works, with a warning, and is still called.
	schemaDependent := []string{CheckInputDescribed, CheckDescriptionFields, CheckRules, CheckRulesDeclared, CheckRootCombinator,
		CheckUnknownFields, CheckIdempotency}
	if problem, refused := plugin.InputSchemaProblem(pluginName, name, t.InputSchema); problem != "" {
		fix := "fix the inputSchema as the message says: MCP clients read it, and the host validates arguments against it"
		if refused {
			rec.fail(CheckInputSchema, name, problem, fix)
		} else {
			rec.warn(CheckInputSchema, name, problem, fix)
			ts.unchecked = true
		}
		for _, id := range schemaDependent {
			rec.skip(id, name, "skipped: the host cannot compile the inputSchema")
		}
	} else if in, err := loadSchema(t.InputSchema); err != nil {
		rec.fail(CheckInputSchema, name, "inputSchema: "+err.Error(),
			rec.fix(`give the tool an inputSchema that is a JSON Schema object with "type": "object"`, "it infers one from the input struct"))
		for _, id := range schemaDependent {
			rec.skip(id, name, "skipped: the inputSchema does not load")
		}
	} else {
		ts.in = in
		checkInputSchema(rec, name, t, in)
		checkDescriptionFields(rec, name, in, lines)
		if und := undescribedFields(in.root); len(und) > 0 {
			rec.fail(CheckInputDescribed, name, fmt.Sprintf("input fields without a description: %s", strings.Join(und, ", ")),
				rec.fix("give every property of the inputSchema a \"description\", nested ones included, in whatever writes your tool list: "+
					"say what the value is, where it comes from (which tool returns it) and its default", `a jsonschema:"..." struct tag`))
		} else {
			rec.pass(CheckInputDescribed, name)
		}
		checkRoot(rec, name, in)
		checkRules(rec, ts, t.Rules)
		checkIdempotency(rec, name, t, in)
	}

	// Output schema.
	switch {
	case len(t.OutputSchema) == 0:
		rec.fail(CheckOutputSchema, name, "no outputSchema is declared",
			rec.fix("declare an outputSchema for the tool in your tool list and answer structuredContent matching it: clients validate "+
				"structuredContent against it and agents read its field descriptions", "it infers one from the output struct"))
		rec.skip(CheckOutputDescribed, name, "skipped: no outputSchema")
	default:
		out, err := loadSchema(t.OutputSchema)
		if err == nil && fmt.Sprint(out.root["type"]) != "object" {
			err = fmt.Errorf(`top-level "type" must be "object", got %v`, out.root["type"])
		}
		if err != nil {
			rec.fail(CheckOutputSchema, name, "outputSchema: "+err.Error(),
				`make the outputSchema a JSON Schema object with "type": "object" that github.com/google/jsonschema-go resolves`)
			rec.skip(CheckOutputDescribed, name, "skipped: the outputSchema does not load")
			break
		}
		ts.out = out
		rec.pass(CheckOutputSchema, name)
		if und := undescribedFields(out.root); len(und) > 0 {
			rec.fail(CheckOutputDescribed, name, fmt.Sprintf("output fields without a description: %s", strings.Join(und, ", ")),
				rec.fix("give every property of the outputSchema a \"description\", nested ones included: an agent reads them to use the answer",
					"jsonschema struct tags"))
		} else {
			rec.pass(CheckOutputDescribed, name)
		}
	}

	// Unknown keywords, in either schema.
	var unknown []string
	if ts.in != nil {
		for _, k := range unknownKeywords(ts.in.root) {
			unknown = append(unknown, "inputSchema "+k)
		}
	}
	if ts.out != nil {
		for _, k := range unknownKeywords(ts.out.root) {
			unknown = append(unknown, "outputSchema "+k)
		}
	}
	if len(unknown) > 0 {
		rec.fail(CheckSchemaKeywords, name, "keywords JSON Schema 2020-12 does not define (validators ignore them): "+strings.Join(unknown, ", "),
			"fix the spelling (e.g. required, not require; additionalProperties) or drop the keyword; prefix vendor extensions with x-")
	} else {
		rec.pass(CheckSchemaKeywords, name)
	}
	return ts
}

// descriptionProblems checks the template and fills lines with the text of
// each heading's line.
func descriptionProblems(desc string, lines map[string]string) []string {
	pos := map[string]int{}
	for i, line := range strings.Split(desc, "\n") {
		line = strings.TrimSpace(line)
		for _, h := range headings {
			if _, dup := pos[h]; !dup && strings.HasPrefix(line, h) {
				pos[h] = i
				lines[h] = strings.TrimSpace(strings.TrimPrefix(line, h))
			}
		}
	}
	var missing, empty []string
	for _, h := range headings {
		if _, ok := pos[h]; !ok {
			missing = append(missing, h)
		} else if lines[h] == "" {
			empty = append(empty, h)
		}
	}
	var problems []string
	if len(missing) > 0 {
		problems = append(problems, "lacks the heading(s) "+strings.Join(missing, " ")+" (each at the start of a line)")
	}
	if len(empty) > 0 {
		problems = append(problems, "has nothing after "+strings.Join(empty, " "))
	}
	last, lastH := -1, ""
	for _, h := range headings {
		p, ok := pos[h]
		if !ok {
			continue
		}
		if p < last {
			problems = append(problems, fmt.Sprintf("has %s before %s", h, lastH))
			break
		}
		last, lastH = p, h
	}
	return problems
}

func checkDescriptionFields(rec *recorder, name string, in *toolSchema, lines map[string]string) {
	req, opt := lines["Required:"], lines["Optional:"]
	var missingReq, missingAny []string
	for _, f := range in.names {
		if isFalseSchema(in.props[f]) {
			continue
		}
		switch {
		case slices.Contains(in.required, f):
			if !mentions(req, f) {
				missingReq = append(missingReq, f)
			}
		case !mentions(req, f) && !mentions(opt, f):
			missingAny = append(missingAny, f)
		}
	}
	var problems []string
	if len(missingReq) > 0 {
		problems = append(problems, "the Required: line does not name the required field(s) "+strings.Join(missingReq, ", "))
	}
	if len(missingAny) > 0 {
		problems = append(problems, "neither Required: nor Optional: names "+strings.Join(missingAny, ", "))
	}
	if len(problems) > 0 {
		rec.fail(CheckDescriptionFields, name, strings.Join(problems, "; "),
			"list every input field by its exact name: required ones on the Required: line, the others on Optional: (with defaults); agents fill what they read")
		return
	}
	rec.pass(CheckDescriptionFields, name)
}

func mentions(line, field string) bool {
	re := regexp.MustCompile(`(^|[^A-Za-z0-9_])` + regexp.QuoteMeta(field) + `($|[^A-Za-z0-9_])`)
	return re.MatchString(line)
}

func checkInputSchema(rec *recorder, name string, t *abi.Tool, in *toolSchema) {
	var problems []string
	if in.root["type"] != "object" {
		problems = append(problems, fmt.Sprintf(`top-level "type" must be "object", got %v`, in.root["type"]))
	}
	if v, ok := in.root["$schema"]; ok {
		switch v {
		case draft2020:
		case draft07, strings.TrimSuffix(draft07, "#"):
			rec.warn(CheckInputSchema, name, `$schema is draft-07; MCP tool schemas default to JSON Schema 2020-12`,
				`drop $schema or set it to "`+draft2020+`"`)
		default:
			problems = append(problems, fmt.Sprintf("$schema %v is not JSON Schema 2020-12 (%s)", v, draft2020))
		}
	}
	problems = append(problems, schemaProblems(in.root)...)
	var s jsonschema.Schema
	if err := json.Unmarshal(t.InputSchema, &s); err == nil {
		if _, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true}); err != nil {
			problems = append(problems, "a default value does not validate against its own schema: "+err.Error())
		}
	}
	if len(problems) > 0 {
		rec.fail(CheckInputSchema, name, "inputSchema: "+strings.Join(problems, "; "),
			"fix the schema: it is what the host validates arguments against and what agents read")
		return
	}
	rec.pass(CheckInputSchema, name)
}

// checkRoot: root combinators (warning), unknown fields (warning).
func checkRoot(rec *recorder, name string, in *toolSchema) {
	var found []string
	for _, k := range []string{"oneOf", "anyOf", "allOf"} {
		if _, ok := in.root[k]; ok {
			found = append(found, k)
		}
	}
	if len(found) > 0 {
		rec.fail(CheckRootCombinator, name,
			fmt.Sprintf("the inputSchema has %s at its root: the Anthropic API refuses any tool whose input_schema has oneOf, anyOf or allOf "+
				"at the top level (\"input_schema does not support oneOf, allOf, or anyOf at the top level\"), and that 400 fails every "+
				"request of the session, so Claude clients lose every tool of the server", strings.Join(found, " and ")),
			"express modes with a root if/then/else and exclusive fields with a root not: {\"required\": [a, b]}, putting any anyOf inside "+
				"then/else (docs/DECISIONS.md, \"Mode-dependent schemas without a root oneOf\"); declare the same constraints as abi.Rule "+
				"for precise error codes")
	} else {
		rec.pass(CheckRootCombinator, name)
	}
	if !in.closed {
		rec.fail(CheckUnknownFields, name, "the inputSchema accepts unknown fields (no additionalProperties: false at its root): "+
			"a misspelt optional argument is silently ignored",
			rec.fix(`add "additionalProperties": false to the inputSchema's root`, "its inferred schemas have it"))
	} else {
		rec.pass(CheckUnknownFields, name)
	}
}

func checkRules(rec *recorder, ts *toolSurface, rules []abi.Rule) {
	name, in := ts.def.Name, ts.in
	viols, inconclusive, unknown := in.ruleViolations(rules)
	ts.viols = viols
	for _, f := range unknown {
		rec.fail(CheckRules, name, fmt.Sprintf("a rule names field %q, which is not a property of the inputSchema", f),
			"name only fields the inputSchema declares in rules (and in their when)")
	}
	for _, msg := range inconclusive {
		rec.warn(CheckRules, name, "could not test "+msg,
			"make sure the inputSchema accepts some call in every mode the rule names; if it does, the kit's search was too narrow: report it")
	}
	for _, v := range viols {
		if in.valid(normalise(v.inst)) {
			rec.fail(CheckRules, name,
				fmt.Sprintf("rule %d (%s) is not in the inputSchema: it accepts %s, which the rule refuses (%s)",
					v.rule, describeRule(rules[v.rule]), truncate(string(encode(v.inst)), 300), v.what),
				"express the rule in the schema itself, for clients that read schemas: exclusive fields as a root not: {\"required\": [a, b]}, "+
					"a mode's required or forbidden fields in a root if/then/else (or oneOf branches, though clients of the Anthropic API refuse a root oneOf)")
		}
	}
	rec.pass(CheckRules, name)
	if pairs := undeclaredPairs(in.root, rules); len(pairs) > 0 {
		var names []string
		for _, p := range pairs {
			names = append(names, "["+strings.Join(p, ", ")+"]")
		}
		rec.fail(CheckRulesDeclared, name,
			fmt.Sprintf("the schema's root not forbids %s together, but no rule declares it: agents get a generic invalid_argument (\"not\") instead of a precise code and hint",
				strings.Join(names, " and ")),
			rec.fix(`add a rule to the tool's "rules" in the manifest ({"at_most_one" or "exactly_one": the fields, "code": e.g. `+
				`ambiguous_target, "hint": the fix}); the host then refuses such calls with that code and hint`,
				"abi.Rule{AtMostOne: ..., Code: ..., Hint: ...} in ToolSpec.Rules"))
	} else {
		rec.pass(CheckRulesDeclared, name)
	}
}

func checkIdempotency(rec *recorder, name string, t *abi.Tool, in *toolSchema) {
	if t.Idempotency == nil {
		rec.pass(CheckIdempotency, name)
		return
	}
	key := t.Idempotency.KeyField
	ps, ok := in.props[key]
	if !ok {
		rec.fail(CheckIdempotency, name, fmt.Sprintf("idempotency.key_field %q is not a property of the inputSchema, so no call can carry it", key),
			"add the key field (a string, 1-128 characters) to the input, or drop idempotency")
		return
	}
	if types := typesOf(obj(deref(in.root, ps))); types != nil && !slices.Contains(types, "string") {
		rec.fail(CheckIdempotency, name, fmt.Sprintf("idempotency.key_field %q has type %v; the host takes a string of 1-128 characters", key, types),
			"make the key field a string (with minLength 1, maxLength 128)")
		return
	}
	rec.pass(CheckIdempotency, name)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && cut < len(s) && s[cut]&0xc0 == 0x80 {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… (%d bytes)", len(s))
}
