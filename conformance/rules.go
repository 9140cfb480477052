package conformance

import (
	"fmt"
	"slices"
	"strings"

	"github.com/plugboard/plugboard/abi"
)

// violation is an instance that breaks one declared rule and nothing else
// the kit knows of: it is built from an instance the schema accepts by
// removing or adding the fields the rule is about.
type violation struct {
	rule int
	what string
	inst map[string]any
}

// describeRule renders a rule for messages: "exactly_one [attempt_id
// session_id] when action in [send queue]".
func describeRule(r abi.Rule) string {
	var b strings.Builder
	switch {
	case len(r.ExactlyOne) > 0:
		fmt.Fprintf(&b, "exactly_one %v", r.ExactlyOne)
	case len(r.AtMostOne) > 0:
		fmt.Fprintf(&b, "at_most_one %v", r.AtMostOne)
	case len(r.Require) > 0:
		fmt.Fprintf(&b, "require %v", r.Require)
	case len(r.Forbid) > 0:
		fmt.Fprintf(&b, "forbid %v", r.Forbid)
	}
	if r.When != nil {
		fmt.Fprintf(&b, " when %s in %v", r.When.Field, r.When.Values)
	}
	return b.String()
}

// ruleViolations builds, for each rule and each of its modes, the
// instances that break it. inconclusive lists what could not be tested (no
// instance the schema accepts in that mode was found); unknown lists rule
// fields that are not properties of the schema.
func (s *toolSchema) ruleViolations(rules []abi.Rule) (viols []violation, inconclusive, unknown []string) {
	for i, r := range rules {
		fields := slices.Concat(r.ExactlyOne, r.AtMostOne, r.Require, r.Forbid)
		if r.When != nil {
			fields = append(fields, r.When.Field)
		}
		for _, f := range fields {
			if _, ok := s.props[f]; !ok && !slices.Contains(unknown, f) {
				unknown = append(unknown, f)
			}
		}
		modes := []map[string]any{nil}
		if r.When != nil {
			modes = nil
			for _, v := range r.When.Values {
				modes = append(modes, map[string]any{r.When.Field: v})
			}
		}
		for _, fixed := range modes {
			mode := ""
			if fixed != nil {
				mode = fmt.Sprintf(" (%s=%v)", r.When.Field, fixed[r.When.Field])
			}
			base := func(with []string, without []string) (map[string]any, bool) {
				inst, ok := s.findValid(want{fixed: fixed, with: with, without: without})
				if !ok {
					inconclusive = append(inconclusive, fmt.Sprintf("rule %d (%s)%s: no instance the schema accepts with %v present and %v absent",
						i, describeRule(r), mode, with, without))
				}
				return inst, ok
			}
			add := func(what string, inst map[string]any) {
				viols = append(viols, violation{rule: i, what: what + mode, inst: inst})
			}
			switch {
			case len(r.ExactlyOne) > 0:
				fs := r.ExactlyOne
				if w, ok := base(fs[:1], fs[1:]); ok {
					none := clone(w)
					delete(none, fs[0])
					add(fmt.Sprintf("none of %v", fs), none)
					for _, g := range fs[1:] {
						both := clone(w)
						both[g] = s.valueOf(g)
						add(fmt.Sprintf("%s and %s together", fs[0], g), both)
					}
				}
			case len(r.AtMostOne) > 0:
				fs := r.AtMostOne
				for a := range fs {
					others := slices.Delete(slices.Clone(fs), a, a+1)
					w, ok := base(fs[a:a+1], others)
					if !ok {
						continue
					}
					for _, g := range fs[a+1:] {
						both := clone(w)
						both[g] = s.valueOf(g)
						add(fmt.Sprintf("%s and %s together", fs[a], g), both)
					}
				}
			case len(r.Require) > 0:
				for _, f := range r.Require {
					if w, ok := base([]string{f}, nil); ok {
						missing := clone(w)
						delete(missing, f)
						add(fmt.Sprintf("%s missing", f), missing)
					}
				}
			case len(r.Forbid) > 0:
				for _, f := range r.Forbid {
					if w, ok := base(nil, []string{f}); ok {
						present := clone(w)
						present[f] = s.valueOf(f)
						add(fmt.Sprintf("%s present", f), present)
					}
				}
			}
		}
	}
	return viols, inconclusive, unknown
}

// undeclaredPairs returns the field sets the schema's root not forbids
// together that no at_most_one or exactly_one rule covers.
func undeclaredPairs(root map[string]any, rules []abi.Rule) [][]string {
	var out [][]string
	for _, pair := range notPairs(root) {
		covered := false
		for _, r := range rules {
			set := r.AtMostOne
			if len(set) == 0 {
				set = r.ExactlyOne
			}
			if r.When == nil && len(set) > 0 && containsAll(set, pair) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, pair)
		}
	}
	return out
}

func containsAll(set, sub []string) bool {
	for _, s := range sub {
		if !slices.Contains(set, s) {
			return false
		}
	}
	return true
}
