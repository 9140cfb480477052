package schema

import (
	"fmt"
	"strings"

	"github.com/plugboard/plugboard/abi"
)

// checkRules applies the tool's mode rules (abi.Rule) to the arguments, in
// order, and returns the first violation's envelope. They run before the
// schema so the agent gets the rule's precise code and hint rather than
// "matches none of the oneOf forms".
func (v *Validator) checkRules(args map[string]any) *abi.Envelope {
	for _, r := range v.rules {
		if !r.Applies(args) {
			continue
		}
		present := presentFields(args, r.ExactlyOne, r.AtMostOne, r.Require, r.Forbid)
		code := r.Code
		if code == "" {
			code = abi.CodeInvalidArgument
		}
		mode := ""
		if r.When != nil {
			mode = fmt.Sprintf(" when %s=%v", r.When.Field, args[r.When.Field])
		}
		switch {
		case len(r.ExactlyOne) > 0 && len(present) == 0:
			return v.ruleEnvelope(abi.CodeMissingRequired, r.ExactlyOne[0], r.ExactlyOne,
				fmt.Sprintf("%s: one of %s is required%s", v.tool, strings.Join(r.ExactlyOne, ", "), mode), r.Hint)
		case len(r.ExactlyOne) > 0 && len(present) > 1, len(r.AtMostOne) > 0 && len(present) > 1:
			return v.ruleEnvelope(code, present[1], present,
				fmt.Sprintf("%s: %s were given together; send only one%s", v.tool, strings.Join(present, " and "), mode), r.Hint)
		case len(r.Require) > 0:
			for _, f := range r.Require {
				if !isPresent(args, f) {
					return v.ruleEnvelope(abi.CodeMissingRequired, f, nil,
						fmt.Sprintf("%s: required field %q is missing%s", v.tool, f, mode), r.Hint)
				}
			}
		case len(r.Forbid) > 0 && len(present) > 0:
			return v.ruleEnvelope(code, present[0], present,
				fmt.Sprintf("%s: %s not allowed%s", v.tool, strings.Join(quote(present), ", "), mode), r.Hint)
		}
	}
	return nil
}

func (v *Validator) ruleEnvelope(code, field string, fields []string, message, hint string) *abi.Envelope {
	env := v.envelope(code, field, message, hint)
	if len(fields) > 1 {
		env.Details["fields"] = fields
	}
	return env
}

// presentFields returns the fields of the rule's one non-empty list that
// the arguments carry, in the rule's order.
func presentFields(args map[string]any, lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		for _, f := range l {
			if isPresent(args, f) {
				out = append(out, f)
			}
		}
	}
	return out
}

func isPresent(args map[string]any, field string) bool {
	v, ok := args[field]
	return ok && v != nil
}

func quote(fields []string) []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = fmt.Sprintf("%q is", f)
		if len(fields) > 1 {
			out[i] = fmt.Sprintf("%q", f)
		}
	}
	if len(fields) > 1 {
		out[len(out)-1] += " are"
	}
	return out
}
