package conformance

import (
	"math/rand/v2"
	"testing"

	"github.com/plugboard/plugboard/abi"
)

// FuzzConformanceSchema: whatever schema a plugin declares, the kit's
// schema walking, instance generation and rule derivation never panic.
func FuzzConformanceSchema(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":"string","minLength":3,"pattern":"^[a-z]+$"},"b":{"type":["integer","null"],"exclusiveMinimum":2}},"required":["a"]}`,
		`{"type":"object","properties":{"x":{"$ref":"#/$defs/X"}},"$defs":{"X":{"type":"array","items":{"$ref":"#/$defs/X"},"minItems":2}}}`,
		`{"type":"object","oneOf":[{"required":["a"]},{"properties":{"b":false}}],"not":{"anyOf":[{"required":["a","b"]}]}}`,
		`{"type":"object","properties":{"e":{"enum":[null]},"c":{"const":{"k":[1,2]}},"t":{"type":[""]},"n":{"multipleOf":0.3,"maximum":-5}}}`,
		`{"type":"object","if":{"required":["m"]},"then":{"required":["n"]},"else":{"allOf":[{"required":["o"]}]},"additionalProperties":{"type":"object","properties":{"d":{}}}}`,
		`{"type":"object","properties":{"items":{"items":[{"type":"string"}],"prefixItems":[true,false]}},"dependentSchemas":{"a":{"properties":{"z":{}}}}}`,
	} {
		f.Add([]byte(s), uint64(1))
	}
	f.Fuzz(func(t *testing.T, raw []byte, seed uint64) {
		ts, err := loadSchema(raw)
		if err != nil {
			return
		}
		_ = schemaProblems(ts.root)
		_ = unknownKeywords(ts.root)
		_ = undescribedFields(ts.root)
		valid, _ := ts.findValid(want{})
		if valid == nil {
			valid = map[string]any{}
		}
		_ = ts.invalidProbes(valid)
		var rules []abi.Rule
		if len(ts.names) >= 2 {
			a, b := ts.names[0], ts.names[1]
			rules = []abi.Rule{{AtMostOne: []string{a, b}, Hint: "h"}, {ExactlyOne: []string{a, b}, Hint: "h"},
				{When: &abi.RuleWhen{Field: a, Values: []string{"x"}}, Require: []string{b}, Forbid: nil, Hint: "h"},
				{Forbid: []string{b}, Hint: "h"}}
		}
		_, _, _ = ts.ruleViolations(rules)
		_ = undeclaredPairs(ts.root, rules)
		fz := &fuzzer{s: ts, rnd: rand.New(rand.NewPCG(seed, 7))}
		for _, inst := range fz.edges(valid) {
			_ = encode(inst)
		}
		for range 5 {
			_ = encode(fz.instance(valid))
		}
	})
}
