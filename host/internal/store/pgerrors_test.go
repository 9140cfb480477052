package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestPgUnavailable(t *testing.T) {
	full := &pgconn.PgError{Severity: "ERROR", Code: "53100", Message: `could not extend file "base/1/2": No space left on device`}
	err := pgUnavailable(fmt.Errorf("claim: %w", full))
	if !errors.Is(err, ErrUnavailable) || pgCode(err) != "53100" {
		t.Fatalf("disk full: %v (pgCode %q)", err, pgCode(err))
	}
	var u interface{ Unavailable() bool }
	if !errors.As(err, &u) || !u.Unavailable() {
		t.Errorf("disk full: no Unavailable method reachable through errors.As")
	}
	for _, want := range []string{"out of disk space", "No space left on device", "the operator must free disk space", "rolled back"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("disk full: %q lacks %q", err, want)
		}
	}
	if again := pgUnavailable(err); again != err {
		t.Errorf("classified twice: %v", again)
	}
	for _, code := range []string{"53200", "53300", "53400", "57P01", "57P03", "08006", "58030"} {
		if err := pgUnavailable(&pgconn.PgError{Code: code}); !errors.Is(err, ErrUnavailable) {
			t.Errorf("%s: not unavailable: %v", code, err)
		}
	}
	// The call's own errors, conflicts and cancellations are not the
	// server's condition.
	for _, err := range []error{
		&pgconn.PgError{Code: "23505"}, &pgconn.PgError{Code: "40001"}, &pgconn.PgError{Code: "42P01"},
		errors.New("not found"), context.Canceled, fmt.Errorf("%w: %w", context.DeadlineExceeded, &pgconn.PgError{Code: "57P01"}),
	} {
		if got := pgUnavailable(err); got != err {
			t.Errorf("%v classified: %v", err, got)
		}
	}
	if pgUnavailable(nil) != nil {
		t.Error("nil classified")
	}
}
