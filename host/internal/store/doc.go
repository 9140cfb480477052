// Package store owns the host's durable state: one SQLite database
// (modernc.org/sqlite, WAL, foreign keys on) holding the board — projects,
// repos, tasks, attempts, sessions, execution processes, their log entries
// and turns, the follow-up queue — and what the rest of the house keeps:
// the idempotency journal, the decision log, mail and events, the
// dashboard's sessions, and the leases and forwarded commands of hosts
// sharing it, with versioned migrations. Each consumer (board, audit,
// mail, idempotency, dashboard) declares the small interface it uses.
// OpenURL opens the same store on PostgreSQL instead (pgx): one set of
// queries and migrations serves both dialects (see dialect.go), and there
// hosts sharing the database wake each other with signals (notify.go).
//
// It knows the schema and the queries, and the small invariants a query can
// keep (dense log indexes, one queued message per session, ordering of
// "latest"). It must not run git, spawn processes or decide workflow: the
// board package does that and calls in here.
//
// Every id is a UUIDv4 string. Every timestamp is RFC3339 UTC with a fixed
// six-digit fraction, so text order equals time order and "ORDER BY
// created_at" needs no parsing.
package store
