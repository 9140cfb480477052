package store

import (
	"context"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// ErrUnavailable marks (errors.Is) a store error that is the PostgreSQL
// server's condition, not the call's fault: out of disk, memory or
// connections, shutting down or recovering from a crash, or unreachable.
// The same call can succeed once the server is well again, which is the
// operator's to see to; the error's text says what to look at.
var ErrUnavailable = errors.New("the board's store is unavailable")

// UnavailableError is an error of ErrUnavailable's kind: the server's
// condition in words, what the operator does about it, and the driver's
// error. Its Unavailable method lets a layer that does not import this
// package (the idempotency guard, the board API) tell it from a failure
// of the call's own and answer it as unavailable and retryable.
type UnavailableError struct {
	// Condition is the server's state, e.g. "its PostgreSQL server is out
	// of disk space".
	Condition string
	// Fix is what the operator does, and what a caller may count on.
	Fix string
	// Err is the driver's error.
	Err error
}

func (e *UnavailableError) Error() string {
	return ErrUnavailable.Error() + ": " + e.Condition + " (" + e.Err.Error() + "); " + e.Fix
}

// Unwrap gives ErrUnavailable and the driver's error (a *pgconn.PgError
// stays reachable for pgCode).
func (e *UnavailableError) Unwrap() []error { return []error{ErrUnavailable, e.Err} }

// Unavailable reports that the error is the store's condition, for
// errors.As with an interface{ Unavailable() bool }.
func (e *UnavailableError) Unavailable() bool { return true }

// rolledBack ends the fix of an ERROR of class 53: such an error aborts
// its transaction, so this much is known. Whether the call that met it
// made an earlier effect is its own layer's to say (a keyed call's
// journal), not the store's.
const rolledBack = "; the transaction that met it was rolled back"

// pgUnavailable classifies a PostgreSQL error: the server's conditions
// become an *UnavailableError naming the condition and the operator's
// fix; every other error (the call's own, a conflict, a cancellation) is
// returned as it is. An error classified already is returned as it is.
func pgUnavailable(err error) error {
	if err == nil || errors.Is(err, ErrUnavailable) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		cond, fix := pgCondition(pe.Code)
		if cond == "" {
			return err
		}
		return &UnavailableError{Condition: cond, Fix: fix, Err: err}
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return &UnavailableError{Condition: "its PostgreSQL server cannot be reached", Err: err,
			Fix: "the operator must check that the server is running and reachable; calls that write fail until it is"}
	}
	return err
}

// pgCondition is the condition and the operator's fix for a SQLSTATE that
// is the server's state rather than the statement's, "" for any other.
// The codes are PostgreSQL's (Appendix A, "PostgreSQL Error Codes").
func pgCondition(code string) (condition, fix string) {
	switch code {
	case "53100": // disk_full
		return "its PostgreSQL server is out of disk space",
			"the operator must free disk space on the server's data volume" + rolledBack
	case "53200": // out_of_memory
		return "its PostgreSQL server is out of memory",
			"the operator must check the server's memory" + rolledBack
	case "53300": // too_many_connections
		return "its PostgreSQL server has no connection left",
			"the operator must raise max_connections or stop idle clients"
	case "53000", "53400": // insufficient_resources, configuration_limit_exceeded
		return "its PostgreSQL server is out of a resource",
			"the operator must check the server's log and limits" + rolledBack
	case "58030": // io_error
		return "its PostgreSQL server cannot read or write its files",
			"the operator must check the server's disk and log"
	case "57P01", "57P02", "57P03": // admin_shutdown, crash_shutdown, cannot_connect_now
		return "its PostgreSQL server is shutting down, restarting or recovering",
			"the operator must check the server's log if this lasts; calls that write fail until it accepts them again"
	}
	if strings.HasPrefix(code, "08") { // connection_exception
		return "the connection to its PostgreSQL server failed",
			"the operator must check that the server is running and reachable"
	}
	return "", ""
}
