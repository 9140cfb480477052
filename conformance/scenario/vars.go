package scenario

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// varNameRE is a variable's name.
var varNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.]*$`)

// refRE matches "$${" (a literal "${") or a reference ${name}, ${name+N} or
// ${name-N}.
var refRE = regexp.MustCompile(`\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_.]*)([+-][0-9]+)?\}`)

// vars are a scenario's variables: the setup's, and what steps captured.
// dynamic resolves names no step set (gates).
type vars struct {
	m       map[string]any
	dynamic func(name string) (any, bool)
}

func newVars() *vars { return &vars{m: map[string]any{}} }

func (v *vars) set(name string, val any) { v.m[name] = val }

func (v *vars) lookup(name, delta string) (any, error) {
	val, ok := v.m[name]
	if !ok && v.dynamic != nil {
		val, ok = v.dynamic(name)
	}
	if !ok {
		var known []string
		for k := range v.m {
			known = append(known, k)
		}
		slices.Sort(known)
		return nil, &packError{fmt.Sprintf("undefined variable ${%s}: no setup or earlier step defines it (defined: %s)",
			name, strings.Join(known, ", "))}
	}
	if delta == "" {
		return val, nil
	}
	n, ok := val.(float64)
	if !ok {
		return nil, &packError{fmt.Sprintf("${%s%s}: %s is %s, not a number", name, delta, name, short(val, 80))}
	}
	d, _ := strconv.Atoi(delta)
	return n + float64(d), nil
}

// subst replaces references in every string of x (recursively through
// lists and objects; object keys are left alone). A string that is exactly
// one reference becomes the variable's value with its JSON type; elsewhere
// the value is spliced in as text.
func (v *vars) subst(x any) (any, error) {
	switch x := x.(type) {
	case string:
		return v.substString(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			s, err := v.subst(e)
			if err != nil {
				return nil, err
			}
			out[i] = s
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			s, err := v.subst(e)
			if err != nil {
				return nil, err
			}
			out[k] = s
		}
		return out, nil
	}
	return x, nil
}

func (v *vars) substString(s string) (any, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	if m := refRE.FindStringSubmatchIndex(s); m != nil && m[0] == 0 && m[1] == len(s) && m[2] >= 0 {
		return v.lookup(s[m[2]:m[3]], sub(s, m, 4))
	}
	var b strings.Builder
	last := 0
	for _, m := range refRE.FindAllStringSubmatchIndex(s, -1) {
		b.WriteString(s[last:m[0]])
		last = m[1]
		if m[2] < 0 { // "$${"
			b.WriteString("${")
			continue
		}
		val, err := v.lookup(s[m[2]:m[3]], sub(s, m, 4))
		if err != nil {
			return nil, err
		}
		b.WriteString(asText(val))
	}
	b.WriteString(s[last:])
	return b.String(), nil
}

// str substitutes into s and requires text.
func (v *vars) str(s string) (string, error) {
	val, err := v.substString(s)
	if err != nil {
		return "", err
	}
	if str, ok := val.(string); ok {
		return str, nil
	}
	return asText(val), nil
}

func sub(s string, m []int, i int) string {
	if m[i] < 0 {
		return ""
	}
	return s[m[i]:m[i+1]]
}

// asText renders a value spliced into a string: strings as they are,
// integral numbers without a fraction, anything else as compact JSON.
func asText(val any) string {
	switch val := val.(type) {
	case string:
		return val
	case float64:
		if val == math.Trunc(val) && math.Abs(val) < 1e15 {
			return strconv.FormatInt(int64(val), 10)
		}
		return strconv.FormatFloat(val, 'g', -1, 64)
	}
	b, _ := json.Marshal(val)
	return string(b)
}
