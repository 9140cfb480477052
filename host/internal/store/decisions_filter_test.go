package store

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"
)

// TestDecisionFilters: the decision log's filters (caller, tool, status,
// error code, a range of creation times) each select exactly their rows,
// combine with AND, and keep the newest first, on every store.
func TestDecisionFilters(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func() *Store) {
		ctx := context.Background()
		s := open()
		base := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
		at := func(min int) string { return FormatTime(base.Add(time.Duration(min) * time.Minute)) }
		for i, r := range []struct {
			id, agent, tool, status, code string
			min                           int
		}{
			{"a", "w1", "list_tasks", DecisionOK, "", 0},
			{"b", "w1", "create_task", DecisionError, "permission_denied", 1},
			{"c", "s1", "create_task", DecisionOK, "", 2},
			{"d", "s1", "echo", DecisionError, "invalid_argument", 3},
			{"e", "w1", "echo", DecisionInvoked, "", 4},
		} {
			d := Decision{ID: r.id, Kind: DecisionKindCall, AgentID: r.agent, Tool: r.tool, Status: r.status, ErrorCode: r.code,
				Input: json.RawMessage(`{}`), CreatedAt: at(r.min), Attempts: i}
			if r.status != DecisionInvoked {
				d.FinishedAt = new(at(r.min))
			}
			if err := s.InsertDecision(ctx, d); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range []struct {
			name string
			f    DecisionFilter
			want []string
		}{
			{"all, newest first", DecisionFilter{}, []string{"e", "d", "c", "b", "a"}},
			{"caller", DecisionFilter{AgentID: "w1"}, []string{"e", "b", "a"}},
			{"tool", DecisionFilter{Tool: "create_task"}, []string{"c", "b"}},
			{"ok", DecisionFilter{Status: DecisionOK}, []string{"c", "a"}},
			{"error", DecisionFilter{Status: DecisionError}, []string{"d", "b"}},
			{"still running", DecisionFilter{Status: DecisionInvoked}, []string{"e"}},
			{"error code", DecisionFilter{Status: DecisionError, ErrorCode: "permission_denied"}, []string{"b"}},
			{"from", DecisionFilter{CreatedFrom: at(3)}, []string{"e", "d"}},
			{"before", DecisionFilter{CreatedBefore: at(1)}, []string{"a"}},
			{"range", DecisionFilter{CreatedFrom: at(1), CreatedBefore: at(3)}, []string{"c", "b"}},
			{"combined", DecisionFilter{AgentID: "s1", Tool: "create_task", Status: DecisionOK, CreatedFrom: at(0)}, []string{"c"}},
			{"nothing", DecisionFilter{AgentID: "w1", ErrorCode: "invalid_argument"}, nil},
			{"limit", DecisionFilter{Limit: 2}, []string{"e", "d"}},
		} {
			rows, err := s.ListDecisions(ctx, c.f)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			var got []string
			for _, r := range rows {
				got = append(got, r.ID)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("%s: rows %v, want %v", c.name, got, c.want)
			}
		}
	})
}
