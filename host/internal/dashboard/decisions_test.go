package dashboard

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/plugboard/plugboard/abi"
)

// TestDecisionQuery: the Decisions view's filters are read into the
// store's terms (an error code is the outcome error with that code), and
// every wrong one is an invalid_argument naming the parameter, with a hint
// listing what the API takes, before the store is asked.
func TestDecisionQuery(t *testing.T) {
	from := time.Date(2025, 1, 31, 9, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		query string
		want  DecisionQuery
	}{
		{"", DecisionQuery{Limit: defaultDecisions}},
		{"agent=w1&tool=list_tasks&limit=500", DecisionQuery{Agent: "w1", Tool: "list_tasks", Limit: 500}},
		{"outcome=ok", DecisionQuery{Status: "ok", Limit: defaultDecisions}},
		{"outcome=any", DecisionQuery{Limit: defaultDecisions}},
		{"outcome=invoked", DecisionQuery{Status: "invoked", Limit: defaultDecisions}},
		{"outcome=permission_denied", DecisionQuery{Status: "error", ErrorCode: "permission_denied", Limit: defaultDecisions}},
		{"from=2025-01-31T09:00:00Z&to=2025-01-31T10:00:00.5%2B01:00",
			DecisionQuery{From: from, To: from.Add(500 * time.Millisecond), Limit: defaultDecisions}},
	} {
		q, _ := url.ParseQuery(c.query)
		got, env := decisionQuery(q)
		if env != nil || got.Agent != c.want.Agent || got.Tool != c.want.Tool || got.Status != c.want.Status ||
			got.ErrorCode != c.want.ErrorCode || !got.From.Equal(c.want.From) || !got.To.Equal(c.want.To) || got.Limit != c.want.Limit {
			t.Errorf("%q: %+v, %v; want %+v", c.query, got, env, c.want)
		}
	}
	for _, c := range []struct{ query, field string }{
		{"since=2025-01-01T00:00:00Z", "since"},
		{"agent=a&agent=b", "agent"},
		{"tool=" + strings.Repeat("x", maxFilterLen+1), "tool"},
		{"outcome=Not%20A%20Code", "outcome"},
		{"from=yesterday", "from"},
		{"to=2025-01-31", "to"},
		{"from=2025-01-31T10:00:00Z&to=2025-01-31T09:00:00Z", "to"},
		{"limit=0", "limit"},
		{"limit=501", "limit"},
		{"limit=ten", "limit"},
	} {
		q, _ := url.ParseQuery(c.query)
		_, env := decisionQuery(q)
		if env == nil || env.Code != abi.CodeInvalidArgument || env.Details["field"] != c.field || !strings.Contains(env.Hint, "outcome") {
			t.Errorf("%q: %+v, want invalid_argument naming %s", c.query, env, c.field)
		}
	}
}

// TestDecisionID: a row is opened by exactly one id of a row's form.
func TestDecisionID(t *testing.T) {
	if id, env := decisionID(url.Values{"id": {"0b6f7f5e-1c1e-4f5e-9a3b-2f1d4c5e6a7b"}}); env != nil || id != "0b6f7f5e-1c1e-4f5e-9a3b-2f1d4c5e6a7b" {
		t.Errorf("a row id: %q, %v", id, env)
	}
	for _, q := range []url.Values{{}, {"id": {""}}, {"id": {"a", "b"}}, {"id": {"x' OR 1=1"}}, {"id": {"ab"}, "tool": {"echo"}}} {
		if _, env := decisionID(q); env == nil || env.Code != abi.CodeInvalidArgument {
			t.Errorf("%v: %v, want invalid_argument", q, env)
		}
	}
}
