package store

// dbSystem is the store's db.system.name in the spans of its statements
// (host/internal/tracing): each statement run through sqlDB or Tx is one,
// under the span of whoever asked (a plugin's board operation, the
// dispatcher's idempotency step), and none without one. A query's span
// ends when its first rows are ready, not when they are read.
func dbSystem(pg bool) string {
	if pg {
		return "postgresql"
	}
	return "sqlite"
}
