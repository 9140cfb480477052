package board

import (
	"context"
	"testing"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/metrics"
	"github.com/plugboard/plugboard/host/internal/store"
)

// A board with metrics times the commands it forwards to the host holding
// an attempt's worktree, by operation and outcome, and its store's
// operations.
func TestForwardedCommandMetrics(t *testing.T) {
	ctx := context.Background()
	m := metrics.New()
	b := openBoard(t, Config{Metrics: m})
	repo := gitRepo(t, "app", map[string]string{"README.md": "hello\n"})
	p, err := b.CreateProject(ctx, "demo", []RepoSpec{{Path: repo}})
	if err != nil {
		t.Fatal(err)
	}
	task, err := b.CreateTask(ctx, CreateTaskArgs{ProjectID: p.ID, Title: "t"})
	if err != nil {
		t.Fatal(err)
	}
	// An attempt whose worktree is on a host that is not running.
	at := store.Attempt{ID: store.NewID(), TaskID: task.TaskID, Branch: "pb/x", Executor: "SHELL", Variant: "DEFAULT",
		Dir: t.TempDir(), HostID: "gone-host", CreatedAt: store.Now(), UpdatedAt: store.Now()}
	if err := b.store.CreateAttempt(ctx, at, nil); err != nil {
		t.Fatal(err)
	}
	_, err = b.StopAttempt(ctx, StopArgs{AttemptID: at.ID})
	if env, ok := err.(*abi.Envelope); !ok || env.Code != abi.CodeUnavailable {
		t.Fatalf("stop of an attempt on a gone host: %v, want unavailable", err)
	}

	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]uint64{}
	for _, f := range fams {
		for _, s := range f.GetMetric() {
			key := f.GetName()
			for _, l := range s.GetLabel() {
				key += " " + l.GetName() + "=" + l.GetValue()
			}
			counts[key] = s.GetHistogram().GetSampleCount()
		}
	}
	if n := counts["plugboard_forwarded_command_duration_seconds op=stop_attempt outcome=unavailable"]; n != 1 {
		t.Errorf("forwarded stop_attempt (unavailable) timed %d times, want 1 (all: %v)", n, counts)
	}
	if counts["plugboard_store_operation_duration_seconds op=tx"] == 0 || counts["plugboard_store_operation_duration_seconds op=query"] == 0 {
		t.Errorf("store operations not timed: %v", counts)
	}
}
