package store

import (
	"context"
	"maps"
	"testing"

	"github.com/plugboard/plugboard/host/internal/metrics"
)

// AttemptStates counts attempts as get_attempt_status derives each one's
// state, on both stores; and the store times its operations when given
// metrics.
func TestAttemptStates(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func() *Store) {
		ctx := context.Background()
		s := open()
		m := metrics.New()
		s.SetMetrics(m)
		_, task := board(t, s)
		// idle: no process at all.
		addAttempt(t, s, task.ID, Now())
		proc := func(attempt, reason string) *Process {
			p := &Process{AttemptID: attempt, RunReason: reason, Command: "x"}
			if err := s.CreateProcess(ctx, p); err != nil {
				t.Fatal(err)
			}
			return p
		}
		finish := func(p *Process, status string) {
			if err := s.FinishProcess(ctx, p.ID, status, nil, ""); err != nil {
				t.Fatal(err)
			}
		}
		// running.
		proc(addAttempt(t, s, task.ID, Now()).ID, ReasonCodingAgent)
		// completed: its newest process, the cleanup script, completed.
		done := addAttempt(t, s, task.ID, Now()).ID
		finish(proc(done, ReasonCodingAgent), ProcCompleted)
		finish(proc(done, ReasonCleanupScript), ProcCompleted)
		// failed, and killed (failed too); a dev server still running
		// after the agent failed decides nothing.
		failed := addAttempt(t, s, task.ID, Now()).ID
		finish(proc(failed, ReasonCodingAgent), ProcFailed)
		proc(failed, ReasonDevServer)
		finish(proc(addAttempt(t, s, task.ID, Now()).ID, ReasonSetupScript), ProcKilled)

		got, err := s.AttemptStates(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]int{"idle": 1, "running": 1, "completed": 1, "failed": 2}
		if !maps.Equal(got, want) {
			t.Errorf("AttemptStates = %v, want %v", got, want)
		}

		fams, err := m.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		counts := map[string]uint64{}
		for _, f := range fams {
			if f.GetName() == "plugboard_store_operation_duration_seconds" {
				for _, s := range f.GetMetric() {
					counts[s.GetLabel()[0].GetValue()] = s.GetHistogram().GetSampleCount()
				}
			}
		}
		if counts["exec"]+counts["tx"] == 0 || counts["query"] == 0 {
			t.Errorf("store operations timed: %v, want writes and queries", counts)
		}
	})
}
