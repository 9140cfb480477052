package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/plugboard/plugboard/host/audit"
)

// auditFlags bound the decision log (host/audit): what a row keeps of each
// payload, and how long and how much of it is kept.
type auditFlags struct {
	payloadMax byteSize
	maxBytes   byteSize
	maxAge     time.Duration
}

func (a *auditFlags) register(fs *flag.FlagSet) {
	a.payloadMax = byteSize(audit.DefaultPayloadMax)
	a.maxBytes = byteSize(audit.DefaultMaxBytes)
	fs.Var(&a.payloadMax, "audit-payload-max", "decision log: the longest input, result or error a row keeps whole; a longer one keeps its size, SHA-256 and a prefix (e.g. 1KiB; 0 keeps all)")
	fs.Var(&a.maxBytes, "audit-max-bytes", "decision log: the size it is pruned to, oldest rows first (e.g. 64MiB; 0 keeps every size)")
	fs.DurationVar(&a.maxAge, "audit-max-age", audit.DefaultMaxAge, "decision log: how long a row is kept (0 keeps every age)")
}

// options are the decision log's bounds as the flags set them.
func (a *auditFlags) options() audit.Options {
	o := audit.DefaultOptions()
	o.PayloadMax, o.MaxBytes, o.MaxAge = int(a.payloadMax), int64(a.maxBytes), max(a.maxAge, 0)
	return o
}

// byteSize is a flag of a size in bytes: a whole number with an optional
// unit, KiB, MiB or GiB (K, KB, M, MB, G, GB mean the same binary units).
type byteSize int64

func (b *byteSize) String() string { return strconv.FormatInt(int64(*b), 10) }

func (b *byteSize) Set(s string) error {
	num := strings.TrimRightFunc(strings.TrimSpace(s), func(r rune) bool { return r >= 'A' && r <= 'z' })
	unit := strings.ToUpper(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s), num)))
	shift, ok := map[string]uint{"": 0, "B": 0, "K": 10, "KB": 10, "KIB": 10, "M": 20, "MB": 20, "MIB": 20, "G": 30, "GB": 30, "GIB": 30}[unit]
	n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
	if !ok || err != nil || n < 0 || n > (1<<62)>>shift {
		return fmt.Errorf("want a size such as 1048576, 512KiB or 64MiB, got %q", s)
	}
	*b = byteSize(n << shift)
	return nil
}
