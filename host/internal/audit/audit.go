// Package audit owns the decision log: one row per tool call (who called
// which tool with what input, and how it ended: result or envelope,
// duration, attempts) and the deliberate entries agents write with
// log_decision. It implements dispatch.Auditor for the dispatcher and
// Deliberate for the board API; `plugboard audit tail` reads what it
// writes.
//
// A call costs the log one INSERT (Invoked) and one UPDATE (Finished),
// written off the call's path: the call only queues them, and one writer
// applies what has queued in one transaction, in order (SQLite commits
// cost about 0.1 ms each; a call through the host about 0.02 ms). The
// writer collects for a moment (linger) before it writes, so a call that
// finishes within it costs one INSERT of the finished row, written after
// the call. Flush
// waits for what is queued; Close drains the queue and stops the writer.
// A write that fails is logged and never fails the call. Inputs are stored
// with the tool's sensitive top-level fields masked as "***", and input,
// result, error and HTTP requests with the plugin's secrets (its settings'
// values from the environment and secret files) masked as *** wherever
// they appear. Each HTTP request the plugin made is kept in the row (the
// http column).
//
// The log is bounded (Options): a payload (input, result, error) longer
// than PayloadMax is stored as its size, SHA-256 and a prefix — masked
// before, so neither the prefix nor the hash is of a secret — and rows
// older than MaxAge, then the oldest beyond MaxBytes, are pruned at start
// and every PruneEvery.
//
// It keeps no state of its own: the rows live in the board's store
// (decision_log, host/internal/store).
package audit

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/abi/tasks"
	"github.com/plugboard/plugboard/host/internal/dispatch"
	"github.com/plugboard/plugboard/host/internal/store"
)

// Store is what a store must offer the decision log: its rows
// (store.Decision, decision_log). host/internal/store (SQLite)
// implements it.
type Store interface {
	// InsertDecision adds one row (log_decision's); ID and CreatedAt are
	// set.
	InsertDecision(ctx context.Context, d store.Decision) error
	// WriteDecisions applies writes in order in one transaction (the
	// writer's batch of many calls' rows); a Finish of a missing row is
	// skipped.
	WriteDecisions(ctx context.Context, writes []store.DecisionWrite) error
	// PruneDecisions deletes the rows created before before (a
	// store.TimeFormat time; "" keeps every age), then, newest kept first,
	// the rows beyond maxBytes of size (0 keeps every size), and returns
	// how many it deleted.
	PruneDecisions(ctx context.Context, before string, maxBytes int64) (int64, error)
}

var _ Store = (*store.Store)(nil)

// StoreFunc returns the board's store once it is open (the host opens the
// board in the background); an error means there is none.
type StoreFunc func(ctx context.Context) (Store, error)

// Static returns a StoreFunc for an open store.
func Static(st Store) StoreFunc {
	return func(context.Context) (Store, error) { return st, nil }
}

// Options bound the decision log; 0 turns a limit off. DefaultOptions are
// what New uses.
type Options struct {
	// PayloadMax is the longest input, result or error stored as it is, in
	// bytes; a longer one is stored capped (see Capped).
	PayloadMax int
	// MaxAge is how long a row is kept.
	MaxAge time.Duration
	// MaxBytes is the budget of the whole log: the sum of its rows' sizes
	// (their payloads and store.DecisionRowOverhead each); the oldest rows
	// beyond it are pruned.
	MaxBytes int64
	// PruneEvery is how often rows are pruned (default DefaultPruneEvery).
	PruneEvery time.Duration
}

// The defaults: a 1 KiB payload keeps whole most tool inputs (ids, titles,
// a short prompt) and the head of the rest; a month of history; 64 MiB of
// rows, some 40,000 calls at 1.5 KiB each, far less than the 178 MB that
// 40,000 uncapped calls once took.
const (
	DefaultPayloadMax       = 1 << 10
	DefaultMaxAge           = 30 * 24 * time.Hour
	DefaultMaxBytes   int64 = 64 << 20
	DefaultPruneEvery       = time.Minute
)

// DefaultOptions returns the default bounds.
func DefaultOptions() Options {
	return Options{PayloadMax: DefaultPayloadMax, MaxAge: DefaultMaxAge, MaxBytes: DefaultMaxBytes, PruneEvery: DefaultPruneEvery}
}

// Log is the decision log. It is safe for concurrent use.
type Log struct {
	store StoreFunc
	log   *slog.Logger
	now   func() time.Time
	opts  Options
	// stopPruning ends the pruner; pruned is closed when it has.
	stopPruning context.CancelFunc
	pruned      chan struct{}

	// mu guards closed against sends on a closed queue.
	mu     sync.RWMutex
	closed bool
	queue  chan write
	done   chan struct{}
	// kick ends the writer's linger (Flush).
	kick chan struct{}
}

// write is one queued write, or (flushed set) a flush marker.
type write struct {
	store.DecisionWrite
	flushed chan struct{}
}

// queueSize bounds the writes waiting for the writer; a call that finds
// the queue full waits (back-pressure rather than a lost row).
const queueSize = 4096

// maxBatch bounds the writes of one transaction.
const maxBatch = 512

var _ dispatch.Auditor = (*Log)(nil)

// New returns the decision log kept in the store st returns, bounded by
// DefaultOptions, and starts its writer and pruner (Close stops them). log
// receives write failures; nil discards them.
func New(st StoreFunc, log *slog.Logger) *Log {
	return NewWithOptions(st, log, DefaultOptions())
}

// NewWithOptions is New with the bounds opts.
func NewWithOptions(st StoreFunc, log *slog.Logger, opts Options) *Log {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.PruneEvery <= 0 {
		opts.PruneEvery = DefaultPruneEvery
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &Log{store: st, log: log, now: time.Now, opts: opts, queue: make(chan write, queueSize), done: make(chan struct{}), kick: make(chan struct{}, 1),
		stopPruning: cancel, pruned: make(chan struct{})}
	go l.writer()
	go l.pruner(ctx)
	return l
}

// pruner prunes once the store is open, then every PruneEvery, until ctx
// ends; it does nothing when neither MaxAge nor MaxBytes is set.
func (l *Log) pruner(ctx context.Context) {
	defer close(l.pruned)
	if l.opts.MaxAge <= 0 && l.opts.MaxBytes <= 0 {
		return
	}
	t := time.NewTicker(l.opts.PruneEvery)
	defer t.Stop()
	for {
		if _, err := l.Prune(ctx); err != nil && ctx.Err() == nil {
			l.log.Warn("decision log: prune", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Prune deletes the rows beyond the log's age and size bounds now, and
// returns how many.
func (l *Log) Prune(ctx context.Context) (int64, error) {
	st, err := l.store(ctx)
	if err != nil {
		return 0, err
	}
	before := ""
	if l.opts.MaxAge > 0 {
		before = store.FormatTime(l.now().Add(-l.opts.MaxAge))
	}
	n, err := st.PruneDecisions(ctx, before, l.opts.MaxBytes)
	if n > 0 {
		l.log.Debug("decision log pruned", "rows", n)
	}
	return n, err
}

// enqueue hands w to the writer; after Close it is written at once.
func (l *Log) enqueue(w write) {
	l.mu.RLock()
	if !l.closed {
		l.queue <- w
		l.mu.RUnlock()
		return
	}
	l.mu.RUnlock()
	if w.flushed != nil {
		close(w.flushed)
		return
	}
	l.apply([]write{w}, nil)
}

// linger is how long the writer collects writes after the first of a
// batch: long enough for a typical call to finish, so its INSERT and
// UPDATE fold into one INSERT written after the call, not during it, and
// for a stream of calls to fill a batch. A row costs SQLite ≈ 170 µs of
// CPU alone in its transaction and ≈ 35–45 µs in a batch of 30 or more;
// on two cores that CPU is taken from the calls (served echo p50, same
// run: unaudited 543 µs, linger 2 ms 608 µs, 20 ms 576 µs). Rows reach
// readers within it, and a process killed with SIGKILL loses at most the
// rows of its last linger (docs/DECISIONS.md).
const linger = 20 * time.Millisecond

// writer applies queued writes in order, as many per transaction as
// queue within linger of the first (or until a flush marker), until Close.
//
// It waits on the queue only for the first write of a batch; while it
// lingers it sleeps (a Flush cuts that short through kick) and then takes
// what has queued, so a call's writes land in the queue's buffer without
// waking it: one wake-up per batch, not one per write.
func (l *Log) writer() {
	defer close(l.done)
	timer := time.NewTimer(linger)
	timer.Stop()
	var sc scratch
	batch := make([]write, 0, maxBatch)
	for w := range l.queue {
		batch = append(batch[:0], w)
		if w.flushed == nil && len(l.queue) < maxBatch-1 {
			timer.Reset(linger)
			select {
			case <-timer.C:
			case <-l.kick:
				timer.Stop()
			}
		}
	more:
		for len(batch) < maxBatch && w.flushed == nil {
			select {
			case next, ok := <-l.queue:
				if !ok {
					break more
				}
				w = next
				batch = append(batch, w)
			default:
				break more
			}
		}
		l.apply(batch, &sc)
		clear(batch) // drop the rows for the GC
	}
}

// scratch is what apply reuses from one batch to the next (the writer's).
type scratch struct {
	writes   []store.DecisionWrite
	inserted map[string]*store.Decision
}

// apply writes a batch in one transaction (one by one if that fails, so
// one bad row does not lose the others), then releases its flush markers.
// sc, when not nil, lends apply its buffers.
func (l *Log) apply(batch []write, sc *scratch) {
	ctx := context.Background()
	if sc == nil {
		sc = &scratch{}
	}
	if sc.inserted == nil {
		sc.inserted = make(map[string]*store.Decision, maxBatch)
	}
	// A call that finished before its row was written costs one INSERT of
	// the finished row instead of an INSERT and an UPDATE.
	writes, inserted := sc.writes[:0], sc.inserted
	defer func() {
		clear(inserted)
		clear(writes)
		sc.writes = writes[:0]
	}()
	for _, w := range batch {
		switch {
		case w.flushed != nil:
		case w.Insert != nil:
			inserted[w.Insert.ID] = w.Insert
			writes = append(writes, w.DecisionWrite)
		case inserted[w.ID] != nil:
			d, f := inserted[w.ID], w.Finish
			d.Status, d.Result, d.ErrorCode, d.Error, d.DurationMS, d.Attempts, d.FinishedAt, d.HTTP =
				f.Status, f.Result, f.ErrorCode, f.Error, &f.DurationMS, f.Attempts, &f.FinishedAt, f.HTTP
		default:
			writes = append(writes, w.DecisionWrite)
		}
	}
	if len(writes) > 0 {
		if st, err := l.store(ctx); err != nil {
			l.log.Warn("decision log unavailable; calls not recorded", "rows", len(writes), "err", err)
		} else if err := st.WriteDecisions(ctx, writes); err != nil && len(writes) > 1 {
			for _, w := range writes {
				if err := st.WriteDecisions(ctx, []store.DecisionWrite{w}); err != nil {
					l.log.Warn("decision log: write", "id", w.ID, "err", err)
				}
			}
		} else if err != nil {
			l.log.Warn("decision log: write", "err", err)
		}
	}
	for _, w := range batch {
		if w.flushed != nil {
			close(w.flushed)
		}
	}
}

// Flush waits until every write queued before it is in the store, or ctx
// ends.
func (l *Log) Flush(ctx context.Context) error {
	ch := make(chan struct{})
	l.enqueue(write{flushed: ch})
	select { // end the writer's linger
	case l.kick <- struct{}{}:
	default:
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close writes what is queued and stops the writer and the pruner. Calls
// audited after Close are written at once, on the call's path.
func (l *Log) Close() error {
	l.stopPruning()
	<-l.pruned
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		close(l.queue)
	}
	l.mu.Unlock()
	<-l.done
	return nil
}

// Masked is what a sensitive field's value is replaced with.
const Masked = `"***"`

// leaveOutKey is the context key of LeaveOut: the tool whose call made
// under the context the log leaves out.
type leaveOutKey struct{}

// LeaveOut returns ctx marked so that a call of tool (its served name)
// made under it writes no row: the call's Invoked returns "" and its
// Finished does nothing. The host marks the dashboard's reads with it (a
// page's refresh every second or three is no decision, and its rows once
// crowded the agents' own out of the size budget: docs/DECISIONS.md).
// Only tool is left out: any other call made under ctx is recorded.
func LeaveOut(ctx context.Context, tool string) context.Context {
	return context.WithValue(ctx, leaveOutKey{}, tool)
}

// leftOut reports whether ctx marks a call of tool to leave out.
func leftOut(ctx context.Context, tool string) bool {
	t, ok := ctx.Value(leaveOutKey{}).(string)
	return ok && t == tool
}

// Invoked queues the call's row, status invoked, and returns its id; a
// call LeaveOut marks gets no row and the id "".
func (l *Log) Invoked(ctx context.Context, call dispatch.AuditCall) string {
	if leftOut(ctx, call.Tool) {
		return ""
	}
	// Masked first: what is capped — its prefix, its hash — holds no secret.
	d := &store.Decision{ID: newID(), Kind: store.DecisionKindCall, Tool: call.Tool, RequestID: call.RequestID,
		Input: l.capped(redact(Mask(call.Input, call.Sensitive), call.Redact)), Status: store.DecisionInvoked, CreatedAt: store.FormatTime(l.now())}
	if c := call.Caller; c != nil {
		d.AgentID, d.AgentType = c.ID, c.Role
	}
	l.enqueue(write{DecisionWrite: store.DecisionWrite{Insert: d}})
	return d.ID
}

// newID returns a random (version 4) UUID, as store.NewID does, without
// fmt: it is on every call's path.
func newID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:36], b[10:16])
	return string(out[:])
}

// Finished queues the outcome of the call id.
func (l *Log) Finished(_ context.Context, id string, o dispatch.AuditOutcome) {
	if id == "" {
		return
	}
	// The result is written later: capped copies it, rather than keep the
	// caller's buffer.
	f := &store.DecisionFinish{Status: store.DecisionOK, Result: o.Result, DurationMS: o.Duration.Milliseconds(),
		Attempts: o.Attempts, FinishedAt: store.FormatTime(l.now())}
	if env := o.Envelope; env != nil {
		f.Status, f.ErrorCode, f.Result = store.DecisionError, env.Code, nil
		b, err := json.Marshal(env)
		if err != nil { // details held something unencodable: keep the rest
			b, _ = json.Marshal(&abi.Envelope{Code: env.Code, Message: env.Message, Hint: env.Hint})
		}
		f.Error = b
	}
	if len(f.Result) > 0 && !json.Valid(f.Result) {
		f.Result, _ = json.Marshal(string(f.Result))
	}
	if len(o.HTTP) > 0 {
		f.HTTP = httpRecords(o.HTTP)
	}
	f.Result, f.Error, f.HTTP = redact(f.Result, o.Redact), redact(f.Error, o.Redact), redact(f.HTTP, o.Redact)
	f.Result, f.Error, f.HTTP = l.capped(f.Result), l.capped(f.Error), l.capped(f.HTTP)
	l.enqueue(write{DecisionWrite: store.DecisionWrite{ID: id, Finish: f}})
}

// redact returns b with the plugin's secrets masked by mask (the
// runtime's Redactor: the value and its JSON, URL-path and URL-query
// escapings become ***, which keeps JSON valid); b itself when mask is nil.
func redact(b json.RawMessage, mask func(string) string) json.RawMessage {
	if mask == nil || len(b) == 0 {
		return b
	}
	return json.RawMessage(mask(string(b)))
}

// HTTPRequest is one HTTP request a plugin made during a call, as the
// decision log keeps it (the http column: a JSON array of them).
type HTTPRequest struct {
	Method string `json:"method"`
	// URL is scheme://host[:port]/path: no user info, query or fragment.
	URL        string `json:"url"`
	Status     int    `json:"status,omitempty"`
	Bytes      int64  `json:"bytes"`
	DurationMS int64  `json:"duration_ms"`
	// Error is why the request failed or was refused.
	Error string `json:"error,omitempty"`
}

func httpRecords(recs []dispatch.HTTPRecord) json.RawMessage {
	out := make([]HTTPRequest, len(recs))
	for i, r := range recs {
		out[i] = HTTPRequest{Method: r.Method, URL: r.URL, Status: r.Status, Bytes: r.Bytes, DurationMS: r.Duration.Milliseconds(), Error: r.Err}
	}
	b, _ := json.Marshal(out)
	return b
}

// capped returns b, copied (it is written later, and the caller may reuse
// its buffer), or Capped(b, PayloadMax) when it is longer than that.
func (l *Log) capped(b json.RawMessage) json.RawMessage {
	if l.opts.PayloadMax > 0 && len(b) > l.opts.PayloadMax {
		return Capped(b, l.opts.PayloadMax)
	}
	return bytes.Clone(b)
}

// CapPrefix is the longest prefix a capped payload keeps.
const CapPrefix = 256

// Capped is what the log stores of a payload longer than its limit max:
// {"truncated":true,"bytes":N,"sha256":HEX,"prefix":TEXT} — its length, the
// SHA-256 of all of it (to tell whether two calls sent the same), and its
// first bytes (at most CapPrefix, cut at a character boundary, fewer when
// their JSON escaping would make the record longer than max).
func Capped(b []byte, max int) json.RawMessage {
	sum := sha256.Sum256(b)
	rec := struct {
		Truncated bool   `json:"truncated"`
		Bytes     int    `json:"bytes"`
		SHA256    string `json:"sha256"`
		Prefix    string `json:"prefix"`
	}{true, len(b), hex.EncodeToString(sum[:]), ""}
	for n := min(len(b), CapPrefix); ; n /= 2 {
		for n > 0 && n < len(b) && !utf8.RuneStart(b[n]) {
			n--
		}
		rec.Prefix = string(b[:n])
		out, _ := json.Marshal(rec)
		if len(out) <= max || n == 0 {
			return out
		}
	}
}

// Entry identifies a deliberate decision-log entry: the answer of
// log_decision (abi/tasks).
type Entry = tasks.DecisionOut

// ErrNoCaller refuses a deliberate entry without an identity.
var ErrNoCaller = errors.New("audit: a decision needs a caller identity")

// Deliberate records a decision an agent chose to log (log_decision):
// kind decision, status ok, with its title and body.
func (l *Log) Deliberate(ctx context.Context, c *abi.Caller, title, body string) (Entry, error) {
	if c == nil || c.ID == "" {
		return Entry{}, ErrNoCaller
	}
	st, err := l.store(ctx)
	if err != nil {
		return Entry{}, err
	}
	now := store.FormatTime(l.now())
	d := store.Decision{ID: store.NewID(), Kind: store.DecisionKindDecision, AgentID: c.ID, AgentType: c.Role,
		Tool: "log_decision", Status: store.DecisionOK, Title: title, Body: body, CreatedAt: now, FinishedAt: &now}
	if err := st.InsertDecision(ctx, d); err != nil {
		return Entry{}, err
	}
	return Entry{LogID: d.ID, Timestamp: now}, nil
}

// Mask returns input with the values of its top-level fields named in
// sensitive replaced by "***". Input that is not a JSON object is returned
// as it is when nothing is sensitive, and replaced whole otherwise.
func Mask(input json.RawMessage, sensitive []string) json.RawMessage {
	if len(sensitive) == 0 || len(bytes.TrimSpace(input)) == 0 {
		return input
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(input, &fields); err != nil || fields == nil {
		return json.RawMessage(Masked)
	}
	changed := false
	for k := range fields {
		if slices.Contains(sensitive, k) {
			fields[k] = json.RawMessage(Masked)
			changed = true
		}
	}
	if !changed {
		return input
	}
	out, err := json.Marshal(fields)
	if err != nil {
		return json.RawMessage(Masked)
	}
	return out
}
