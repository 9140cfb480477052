package abi

import (
	"errors"
	"fmt"
	"slices"
)

// Rule is a mode rule over a tool's top-level arguments that the host checks
// before schema validation, so an agent whose client ignores the schema's
// oneOf/not still gets the precise code and hint. The inputSchema must
// express the same rule (the conformance kit compares them); the rule only
// decides which envelope a violation gets.
//
// A field counts as present when the arguments object has it with a value
// other than null.
type Rule struct {
	// When limits the rule to calls whose field holds one of the values.
	When *RuleWhen `json:"when,omitempty"`
	// ExactlyOne: exactly one of these fields is present. None present is
	// missing_required; more than one is Code (default invalid_argument).
	ExactlyOne []string `json:"exactly_one,omitempty"`
	// AtMostOne: no more than one of these fields is present; more is Code
	// (default invalid_argument).
	AtMostOne []string `json:"at_most_one,omitempty"`
	// Require: these fields are present; a missing one is missing_required.
	Require []string `json:"require,omitempty"`
	// Forbid: these fields are absent; a present one is Code (default
	// invalid_argument).
	Forbid []string `json:"forbid,omitempty"`
	// Code is the envelope code of a violation other than a missing field.
	Code string `json:"code,omitempty"`
	// Hint is the envelope hint: the next action, naming fields.
	Hint string `json:"hint"`
}

// RuleWhen selects calls by the value of one field.
type RuleWhen struct {
	Field  string   `json:"field"`
	Values []string `json:"values"`
}

// Applies reports whether the rule covers a call with these arguments.
func (r Rule) Applies(args map[string]any) bool {
	if r.When == nil {
		return true
	}
	v, ok := args[r.When.Field].(string)
	return ok && slices.Contains(r.When.Values, v)
}

// Validate checks the rule itself.
func (r Rule) Validate() error {
	kinds := 0
	for _, fields := range [][]string{r.ExactlyOne, r.AtMostOne, r.Require, r.Forbid} {
		if len(fields) > 0 {
			kinds++
		}
	}
	switch {
	case kinds != 1:
		return errors.New("a rule sets exactly one of exactly_one, at_most_one, require, forbid")
	case len(r.ExactlyOne) == 1 || len(r.AtMostOne) == 1:
		return errors.New("exactly_one and at_most_one need at least two fields")
	case r.Hint == "":
		return errors.New("a rule needs a hint")
	case r.When != nil && (r.When.Field == "" || len(r.When.Values) == 0):
		return errors.New("when needs a field and values")
	}
	if r.Code != "" {
		if _, ok := Lookup(r.Code); !ok {
			return fmt.Errorf("code %q is not registered", r.Code)
		}
	}
	return nil
}
