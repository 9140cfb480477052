package dashboard

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/plugboard/plugboard/abi"
)

// The Decisions view's API: GET decisions?agent=&tool=&outcome=&from=&to=&limit=
// lists rows (newest first, without their payloads), GET decision?id=
// reads one whole. Each parameter is checked before the store is asked,
// so a wrong one is an invalid_argument naming it, never an empty list.

// Bounds of the decision log's API.
const (
	// defaultDecisions is how many rows a list returns without limit,
	// maxDecisions the most it may ask for.
	defaultDecisions = 100
	maxDecisions     = 500
	// maxFilterLen bounds a caller or tool filter (identities and tool
	// names are far shorter).
	maxFilterLen = 256
)

// decisionParams are the parameters decisions accepts.
var decisionParams = []string{"agent", "tool", "outcome", "from", "to", "limit"}

// errorCode is the shape of an envelope code an outcome may name: the
// registered ones (abi.Codes) and a plugin's own.
var errorCode = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// decisionIDPattern matches a decision-log row id (a UUID).
var decisionIDPattern = regexp.MustCompile(`^[0-9a-fA-F-]{1,64}$`)

// decisionsHint says what the decisions API takes, for whoever built a
// wrong URL (the page builds them from its filter form).
const decisionsHint = "filter with agent, tool, outcome (ok, error, invoked or an error code such as permission_denied), " +
	"from and to (RFC 3339 times, from before to) and limit (1-500); or clear the Decisions view's filter"

// badFilter is the invalid_argument envelope of a wrong parameter.
func badFilter(param, msg string) *abi.Envelope {
	env := abi.NewEnvelope(abi.CodeInvalidArgument, msg, decisionsHint)
	env.Details = map[string]any{"field": param}
	return env
}

// decisionQuery reads and checks the decisions API's parameters.
func decisionQuery(q url.Values) (DecisionQuery, *abi.Envelope) {
	f := DecisionQuery{Limit: defaultDecisions}
	for k, v := range q {
		if !slices.Contains(decisionParams, k) {
			env := badFilter(k, fmt.Sprintf("unknown filter %q", k))
			env.Details["allowed"] = decisionParams
			return f, env
		}
		if len(v) > 1 {
			return f, badFilter(k, fmt.Sprintf("filter %q given %d times", k, len(v)))
		}
	}
	f.Agent, f.Tool = strings.TrimSpace(q.Get("agent")), strings.TrimSpace(q.Get("tool"))
	for k, v := range map[string]string{"agent": f.Agent, "tool": f.Tool} {
		if len(v) > maxFilterLen {
			return f, badFilter(k, fmt.Sprintf("filter %q is %d bytes long, more than %d", k, len(v), maxFilterLen))
		}
	}
	switch o := strings.TrimSpace(q.Get("outcome")); {
	case o == "" || o == "any":
	case o == "ok" || o == "error" || o == "invoked":
		f.Status = o
	case errorCode.MatchString(o):
		f.Status, f.ErrorCode = "error", o
	default:
		return f, badFilter("outcome", fmt.Sprintf("outcome %q is neither ok, error, invoked nor an error code", o))
	}
	var env *abi.Envelope
	if f.From, env = filterTime(q, "from"); env != nil {
		return f, env
	}
	if f.To, env = filterTime(q, "to"); env != nil {
		return f, env
	}
	if !f.From.IsZero() && !f.To.IsZero() && !f.From.Before(f.To) {
		return f, badFilter("to", fmt.Sprintf("to (%s) is not after from (%s)", f.To.Format(time.RFC3339), f.From.Format(time.RFC3339)))
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxDecisions {
			env := badFilter("limit", fmt.Sprintf("limit %q is not a number from 1 to %d", s, maxDecisions))
			env.Details["max"] = maxDecisions
			return f, env
		}
		f.Limit = n
	}
	return f, nil
}

// filterTime reads the RFC 3339 time of parameter name; zero when absent.
func filterTime(q url.Values, name string) (time.Time, *abi.Envelope) {
	s := strings.TrimSpace(q.Get(name))
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, badFilter(name, fmt.Sprintf("%s %q is not an RFC 3339 time such as 2025-01-31T09:00:00Z", name, s))
	}
	return t, nil
}

// decisionID reads and checks the decision API's id.
func decisionID(q url.Values) (string, *abi.Envelope) {
	id := q.Get("id")
	if len(q) != 1 || len(q["id"]) != 1 || !decisionIDPattern.MatchString(id) {
		env := abi.NewEnvelope(abi.CodeInvalidArgument, "decision takes one id, a row's id (UUID)",
			"open a row of the Decisions view, or pass ?id= with the id the list gave")
		env.Details = map[string]any{"field": "id"}
		return "", env
	}
	return id, nil
}
