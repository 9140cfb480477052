package board

import (
	"context"
	"slices"
	"time"
)

// chainStarted and chainDone bracket background work: a process being
// supervised, or the step that follows one. A step starts the next before
// it is done, so the count stays above zero until a chain has ended.
func (b *Board) chainStarted() {
	b.pending.Add(1)
	b.chains.Add(1)
}

func (b *Board) chainDone() {
	b.pending.Add(-1)
	b.chains.Done()
}

// Busy reports whether processes this host started still run, or a step
// after one (cleanup script, queued follow-up) is still to start.
func (b *Board) Busy() bool { return b.pending.Load() > 0 }

// RunningAttempts lists the attempts that have a process this host runs,
// sorted.
func (b *Board) RunningAttempts() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var ids []string
	for _, r := range b.running {
		if !slices.Contains(ids, r.row.AttemptID) {
			ids = append(ids, r.row.AttemptID)
		}
	}
	slices.Sort(ids)
	return ids
}

// WaitIdle waits until the board is not Busy, or ctx ends. A one-shot
// command that started an attempt uses it to stay until its processes end:
// they belong to the process that supervises them.
func (b *Board) WaitIdle(ctx context.Context) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for b.Busy() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}
