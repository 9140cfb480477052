package store

import (
	"fmt"
	"strings"
)

// The forms a store target takes: a PostgreSQL URL (postgres:// or
// postgresql://, any case) or a SQLite file path. Anything else with a
// "://" is a mistake — mysql://…, a misspelt postgress://… — that would
// otherwise open a SQLite file named like the URL in the working
// directory, and the operator would find an empty board there.

// TargetForms names the accepted forms, for errors and flag help.
const TargetForms = "a SQLite file path (e.g. /var/lib/plugboard/board.db) or a PostgreSQL URL postgres://USER@HOST/DB (or postgresql://)"

// CheckTarget refuses a target that is neither a PostgreSQL URL nor a
// file path: one with a "://" of another scheme.
func CheckTarget(target string) error {
	scheme, _, url := strings.Cut(target, "://")
	if !url || isPostgresURL(target) {
		return nil
	}
	return fmt.Errorf("store %s: unknown scheme %q: the store is %s", Redact(target), scheme, TargetForms)
}

// IsPostgresURL reports whether target names a PostgreSQL database rather
// than a SQLite file.
func IsPostgresURL(target string) bool { return isPostgresURL(target) }

// Redact is target as logs and errors show it: a PostgreSQL URL with its
// password (in the user part or a password parameter) replaced by ***, a
// URL of an unknown scheme by its scheme alone, a file path as it is.
func Redact(target string) string {
	switch scheme, _, url := strings.Cut(target, "://"); {
	case isPostgresURL(target):
		return redactURL(target)
	case url:
		return scheme + "://***"
	}
	return target
}

// Kind is "postgres" or "sqlite", the store target names.
func Kind(target string) string {
	if isPostgresURL(target) {
		return "postgres"
	}
	return "sqlite"
}
