package main

import (
	"flag"
	"strconv"
	"time"

	plughost "github.com/plugboard/plugboard/host"
	"github.com/plugboard/plugboard/host/config"
)

// auditFlags bound the decision log (host/internal/audit): what a row keeps of each
// payload, and how long and how much of it is kept.
type auditFlags struct {
	payloadMax byteSize
	maxBytes   byteSize
	maxAge     time.Duration
}

func (a *auditFlags) register(fs *flag.FlagSet) {
	a.payloadMax = byteSize(plughost.DefaultAuditPayloadMax)
	a.maxBytes = byteSize(plughost.DefaultAuditMaxBytes)
	fs.Var(&a.payloadMax, "audit-payload-max", "decision log: the longest input, result or error a row keeps whole; a longer one keeps its size, SHA-256 and a prefix (e.g. 1KiB; 0 keeps all)")
	fs.Var(&a.maxBytes, "audit-max-bytes", "decision log: the size it is pruned to, oldest rows first (e.g. 64MiB; 0 keeps every size)")
	fs.DurationVar(&a.maxAge, "audit-max-age", plughost.DefaultAuditMaxAge, "decision log: how long a row is kept (0 keeps every age)")
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
