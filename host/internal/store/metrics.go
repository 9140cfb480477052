package store

import (
	"context"
	"time"

	"github.com/plugboard/plugboard/host/internal/metrics"
)

// SetMetrics has the store time its operations (by kind: exec, query, tx)
// into m; nil stops it.
func (s *Store) SetMetrics(m *metrics.Metrics) { s.db.metrics.Store(m.Store()) }

// noTiming is time's answer without metrics.
func noTiming() {}

// time starts timing one operation of kind op; the function it returns
// records it.
func (d *sqlDB) time(op metrics.StoreOp) func() {
	m := d.metrics.Load()
	if m == nil {
		return noTiming
	}
	start := time.Now()
	return func() { m.Observe(op, time.Since(start)) }
}

// AttemptStates counts the attempts by state, as get_attempt_status
// derives it: the newest process other than a dev server decides (none:
// idle; running; completed; failed or killed: failed). Every state is in
// the map, with 0 when no attempt is in it. One query, for the metrics'
// plugboard_attempts.
func (s *Store) AttemptStates(ctx context.Context) (map[string]int, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT COALESCE(p.status, 'idle'), COUNT(*) FROM attempts a
		LEFT JOIN execution_processes p ON p.id = (SELECT id FROM execution_processes
			WHERE attempt_id = a.id AND run_reason <> 'devserver' ORDER BY created_at DESC, id ASC LIMIT 1)
		GROUP BY COALESCE(p.status, 'idle')`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int{"idle": 0, "running": 0, "completed": 0, "failed": 0}
	for rows.Next() {
		var status string
		var n int
		if err := rows.Scan(&status, &n); err != nil {
			return nil, err
		}
		switch status {
		case ProcRunning, ProcCompleted, "idle":
			out[status] += n
		default: // failed, killed
			out["failed"] += n
		}
	}
	return out, rows.Err()
}
