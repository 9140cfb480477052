package board

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/plugboard/plugboard/abi/tasks"
	"github.com/plugboard/plugboard/host/internal/board/executor"
	"github.com/plugboard/plugboard/host/internal/store"
)

// LogLimits bound what attempt processes' logs keep in the store, which
// on PostgreSQL every host sharing it pays for. Each is off at 0.
//
// The caps count what a log stores (store.LogRowSize of each raw and
// normalized entry), not what the process printed: a line costs its text
// twice, in both channels, and its JSON, so 8 MiB keeps some 2 MiB of
// ordinary text. Once a process's log reaches a cap, the rest of its
// output is read (the process is never blocked) but dropped and counted;
// marker entries say so on stdout, on stderr and in the normalized log,
// when the cap is reached and, with the totals, when the process ends.
type LogLimits struct {
	// ProcessMax caps one process's log, AttemptMax the logs of all the
	// processes of one attempt (scripts, the agent, follow-ups).
	ProcessMax, AttemptMax int64
	// MaxAge prunes the logs of processes last written longer ago;
	// MaxBytes prunes, oldest first, the logs beyond that size in all
	// (store.PruneLogs). The logs of an attempt with a process running
	// are never pruned.
	MaxAge   time.Duration
	MaxBytes int64
}

// The defaults: a coding agent's run logs some MiB of stream-json; 8 MiB
// keeps such a run whole and 32 MiB a few follow-ups, while 48 MiB of
// text once grew the store by 319 MiB. The age is the decision log's
// (audit.DefaultMaxAge); 1 GiB holds dozens of attempts at their cap.
const (
	DefaultLogProcessMax int64 = 8 << 20
	DefaultLogAttemptMax int64 = 32 << 20
	DefaultLogMaxAge           = 30 * 24 * time.Hour
	DefaultLogMaxBytes   int64 = 1 << 30
	// LogPruneEvery is how often RunLogRetention prunes, as the decision
	// log does (audit.DefaultPruneEvery).
	LogPruneEvery = time.Minute
)

// DefaultLogLimits are the limits of a Config without Logs.
func DefaultLogLimits() LogLimits {
	return LogLimits{ProcessMax: DefaultLogProcessMax, AttemptMax: DefaultLogAttemptMax,
		MaxAge: DefaultLogMaxAge, MaxBytes: DefaultLogMaxBytes}
}

func (b *Board) logLimits() LogLimits {
	if b.cfg.Logs != nil {
		return *b.cfg.Logs
	}
	return DefaultLogLimits()
}

// logStore is what the caps and retention need of the store beyond Store;
// store.Store has it. A Store without it caps each process's log alone
// and is not pruned.
type logStore interface {
	AttemptLogBytes(ctx context.Context, attemptID string) (int64, error)
	PruneLogs(ctx context.Context, before string, maxBytes int64, marker store.LogMarker) (int64, error)
}

var _ logStore = (*store.Store)(nil)

// logBudgets are the attempts' budgets under AttemptMax, one per attempt
// with a process capturing output, shared by its processes (a dev server
// may run beside the agent). The zero value is ready.
type logBudgets struct {
	mu sync.Mutex
	m  map[string]*logBudget
}

type logBudget struct {
	used int64 // what the attempt's logs take; under logBudgets.mu
	refs int
}

// acquire returns the attempt's budget, counting what its logs already take
// in the store (earlier processes, on this host or another before it).
func (lb *logBudgets) acquire(ctx context.Context, st Store, attemptID string) *logBudget {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	if b := lb.m[attemptID]; b != nil {
		b.refs++
		return b
	}
	b := &logBudget{refs: 1}
	if ls, ok := st.(logStore); ok {
		b.used, _ = ls.AttemptLogBytes(ctx, attemptID)
	}
	if lb.m == nil {
		lb.m = map[string]*logBudget{}
	}
	lb.m[attemptID] = b
	return b
}

func (lb *logBudgets) release(attemptID string) {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	if b := lb.m[attemptID]; b != nil {
		if b.refs--; b.refs <= 0 {
			delete(lb.m, attemptID)
		}
	}
}

// take counts size against the budget if it fits under max.
func (lb *logBudgets) take(b *logBudget, size, max int64) bool {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	if b.used+size > max {
		return false
	}
	b.used += size
	return true
}

// compactRun is the shortest run of one control byte (or of bytes that are
// not UTF-8) written as a count: "␀×65536" for 64 KiB of NUL bytes.
const compactRun = 4

// compactLine makes a line of output cheap to store as JSON text: encoding/json
// writes each control byte as \u00XX (6 bytes) and each byte that is not
// UTF-8 as \ufffd (6 bytes), so 4 MiB of NUL bytes stored 24 MiB in each
// channel. A run of compactRun or more of one control byte, or of bytes
// that are not UTF-8, becomes its symbol and a count; a shorter run of a
// control byte becomes its symbol (the Control Pictures block, 3 bytes), of
// bad bytes U+FFFD. Tabs are kept, and so are ESC (terminal colours, which
// the normalisers strip) and \b, \f, \r (JSON writes them in 2 bytes) when
// fewer than compactRun. A line needing none of it is returned as it is.
// The stored text is the line as a person reads it, not its bytes: a
// count such as "␀×4" in the output itself reads the same.
func compactLine(line []byte) []byte {
	i := 0
	for i < len(line) {
		c := line[i]
		if c < utf8.RuneSelf {
			if special(c) {
				break
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(line[i:])
		if r == utf8.RuneError && n == 1 {
			break
		}
		i += n
	}
	if i == len(line) {
		return line
	}
	out := make([]byte, 0, len(line))
	out = append(out, line[:i]...)
	for i < len(line) {
		c := line[i]
		if c < utf8.RuneSelf && !special(c) {
			out = append(out, c)
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			if r, n := utf8.DecodeRune(line[i:]); r != utf8.RuneError || n > 1 {
				out = append(out, line[i:i+n]...)
				i += n
				continue
			}
			// A run of bytes that are not UTF-8 (binary output).
			j := i
			for j < len(line) {
				if r, n := utf8.DecodeRune(line[j:]); r != utf8.RuneError || n > 1 {
					break
				}
				j++
			}
			out = appendRun(out, utf8.RuneError, j-i)
			i = j
			continue
		}
		j := i + 1
		for j < len(line) && line[j] == c {
			j++
		}
		switch n := j - i; {
		case n < compactRun && (c == 0x1b || c == '\b' || c == '\f' || c == '\r'):
			out = append(out, line[i:j]...)
		default:
			out = appendRun(out, controlPicture(c), n)
		}
		i = j
	}
	return out
}

// special says whether an ASCII byte is one compactLine rewrites: a control
// byte other than tab.
func special(c byte) bool { return (c < 0x20 && c != '\t') || c == 0x7f }

// controlPicture is the visible symbol of a control byte: U+2400 + c for
// C0, U+2421 for DEL.
func controlPicture(c byte) rune {
	if c == 0x7f {
		return '\u2421'
	}
	return '\u2400' + rune(c)
}

// appendRun writes n times the symbol r: as r×n from compactRun on.
func appendRun(out []byte, r rune, n int) []byte {
	if n < compactRun {
		for range n {
			out = utf8.AppendRune(out, r)
		}
		return out
	}
	out = utf8.AppendRune(out, r)
	out = append(out, "×"...)
	return strconv.AppendInt(out, int64(n), 10)
}

// encodeEntry is json.Marshal without HTML escaping: an entry's <, > and &
// would each take 6 bytes (\u003c), and nothing renders entries as HTML
// from their JSON.
func encodeEntry(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// capName says which cap a log reached, for its markers.
func capName(which string, limit int64) string {
	if which == "attempt" {
		return fmt.Sprintf("the cap of %s per attempt (--attempt-logs-attempt-max)", sizeText(limit))
	}
	return fmt.Sprintf("the cap of %s per process (--attempt-logs-process-max)", sizeText(limit))
}

// sizeText writes a size as people read it: 21 bytes, 8 MiB, 40.5 MiB.
func sizeText(n int64) string {
	switch {
	case n < 1<<10:
		return plural(n, "byte")
	case n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n < 1<<20 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
}

func plural(n int64, unit string) string {
	switch {
	case n == 1:
		return "1 " + unit
	case strings.HasSuffix(unit, "y"):
		return strconv.FormatInt(n, 10) + " " + strings.TrimSuffix(unit, "y") + "ies"
	default:
		return strconv.FormatInt(n, 10) + " " + unit + "s"
	}
}

// warningMeta marks a host note as a warning (executor.IsWarning): it is
// not the agent's progress.
func warningMeta(extra map[string]any) map[string]any {
	m := map[string]any{"level": "warning", "truncated": true}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// PruneLogs applies the log retention of the board's LogLimits now and
// returns how many process logs it pruned, each replaced by a marker
// entry per channel.
func (b *Board) PruneLogs(ctx context.Context) (int64, error) {
	ls, ok := b.store.(logStore)
	lim := b.logLimits()
	if !ok || (lim.MaxAge <= 0 && lim.MaxBytes <= 0) {
		return 0, nil
	}
	before := ""
	if lim.MaxAge > 0 {
		before = store.FormatTime(time.Now().Add(-lim.MaxAge))
	}
	now := time.Now().UTC().Format(time.RFC3339Nano)
	marker := func(p store.PrunedLog) json.RawMessage {
		why := fmt.Sprintf("it was beyond the %s all attempt logs keep (--attempt-logs-max-bytes)", sizeText(lim.MaxBytes))
		if p.ByAge {
			why = fmt.Sprintf("it was older than %s (--attempt-logs-max-age)", lim.MaxAge)
		}
		text := fmt.Sprintf("[plugboard] this log was pruned by retention: %s (%s) removed; %s", plural(p.Entries, "entry"), sizeText(p.Bytes), why)
		var v any = rawEntry{Timestamp: now, Stream: "stdout", Content: text}
		if p.Channel == store.ChannelNormalized {
			v = executor.Entry{Timestamp: now, EntryType: tasks.EntrySystemMessage, Content: text,
				Metadata: warningMeta(map[string]any{"pruned": true, "entries": p.Entries, "bytes": p.Bytes})}
		}
		data, _ := encodeEntry(v)
		return data
	}
	return ls.PruneLogs(ctx, before, lim.MaxBytes, marker)
}

// RunLogRetention prunes at once, then every LogPruneEvery, until ctx ends
// (the decision log's pruner runs the same way). Every host sharing a
// store may run it: each log is pruned once.
func (b *Board) RunLogRetention(ctx context.Context) {
	if lim := b.logLimits(); lim.MaxAge <= 0 && lim.MaxBytes <= 0 {
		return
	}
	t := time.NewTicker(LogPruneEvery)
	defer t.Stop()
	for {
		n, err := b.PruneLogs(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			b.log.Warn("attempt logs: prune", "err", err)
		case n > 0:
			b.log.Info("attempt logs pruned", "processes", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
