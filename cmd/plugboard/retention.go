package main

import (
	"flag"
	"strconv"
	"time"

	plughost "github.com/plugboard/plugboard/host"
	"github.com/plugboard/plugboard/host/config"
)

// auditFlags bound the decision log (host/internal/audit): what a row keeps of each
// payload, and how long and how much of it is kept; and, under the same
// policy, the attempt logs (logs).
type auditFlags struct {
	payloadMax byteSize
	maxBytes   byteSize
	maxAge     time.Duration
	logs       attemptLogFlags
}

func (a *auditFlags) register(fs *flag.FlagSet) {
	a.payloadMax = byteSize(plughost.DefaultAuditPayloadMax)
	a.maxBytes = byteSize(plughost.DefaultAuditMaxBytes)
	fs.Var(&a.payloadMax, "audit-payload-max", "decision log: the longest input, result or error a row keeps whole; a longer one keeps its size, SHA-256 and a prefix (e.g. 1KiB; 0 keeps all)")
	fs.Var(&a.maxBytes, "audit-max-bytes", "decision log: the size it is pruned to, oldest rows first (e.g. 64MiB; 0 keeps every size)")
	fs.DurationVar(&a.maxAge, "audit-max-age", plughost.DefaultAuditMaxAge, "decision log: how long a row is kept (0 keeps every age)")
	a.logs.register(fs)
}

// attemptLogFlags bound the logs of attempt processes (the board's
// LogLimits): what each process and each attempt keeps, then, as for the
// decision log, how long and how much of them is kept.
type attemptLogFlags struct {
	processMax, attemptMax, maxBytes byteSize
	maxAge                           time.Duration
}

func (l *attemptLogFlags) register(fs *flag.FlagSet) {
	l.processMax = byteSize(plughost.DefaultAttemptLogProcessMax)
	l.attemptMax = byteSize(plughost.DefaultAttemptLogAttemptMax)
	l.maxBytes = byteSize(plughost.DefaultAttemptLogMaxBytes)
	fs.Var(&l.processMax, "attempt-logs-process-max", "attempt logs: what one process's log keeps (its entries' stored bytes); further output is dropped, counted and marked on stdout and stderr (e.g. 8MiB; 0 keeps all)")
	fs.Var(&l.attemptMax, "attempt-logs-attempt-max", "attempt logs: what the logs of all of one attempt's processes keep together (e.g. 32MiB; 0 keeps all)")
	fs.Var(&l.maxBytes, "attempt-logs-max-bytes", "attempt logs: the size they are pruned to, oldest process logs first, never those of a running attempt (e.g. 1GiB; 0 keeps every size)")
	fs.DurationVar(&l.maxAge, "attempt-logs-max-age", plughost.DefaultAttemptLogMaxAge, "attempt logs: how long a process's log is kept after its last entry, never one of a running attempt (0 keeps every age)")
}

// limits are the attempt logs' bounds as the flags set them.
func (l *attemptLogFlags) limits() *plughost.AttemptLogLimits {
	return &plughost.AttemptLogLimits{ProcessMax: max(int64(l.processMax), 0), AttemptMax: max(int64(l.attemptMax), 0),
		MaxAge: max(l.maxAge, 0), MaxBytes: max(int64(l.maxBytes), 0)}
}

// options are the decision log's bounds as the flags set them.
func (a *auditFlags) options() plughost.AuditOptions {
	o := plughost.DefaultAuditOptions()
	o.PayloadMax, o.MaxBytes, o.MaxAge = int(a.payloadMax), int64(a.maxBytes), max(a.maxAge, 0)
	return o
}

// byteSize is a flag of a size in bytes: a whole number with an optional
// unit, KiB, MiB or GiB (K, KB, M, MB, G, GB mean the same binary units;
// config.ParseByteSize, which the configuration file's sizes share).
type byteSize int64

func (b *byteSize) String() string { return strconv.FormatInt(int64(*b), 10) }

func (b *byteSize) Set(s string) error {
	n, err := config.ParseByteSize(s)
	if err != nil {
		return err
	}
	*b = byteSize(n)
	return nil
}
