package board

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/plugboard/plugboard/abi/tasks"
	"github.com/plugboard/plugboard/host/internal/board/executor"
	"github.com/plugboard/plugboard/host/internal/board/gitops"
	"github.com/plugboard/plugboard/host/internal/procsup"
	"github.com/plugboard/plugboard/host/internal/store"
)

// errClosed refuses new processes once Close has begun.
var errClosed = errors.New("board: closing, no new processes")

// run is one process this host supervises.
type run struct {
	row  store.Process
	proc *procsup.Process
	// recorded is closed once the process's end is in the store and its
	// follow-on work (next script, queued follow-up) has been started.
	recorded chan struct{}
	// timedOut holds why the watchdog stopped the run (an inactivity or
	// run timeout), so its end is recorded as a failure with that reason
	// rather than as a stop someone asked for.
	timedOut atomic.Pointer[string]
	// revoke ends the process's credential to the board (Access.Revoke)
	// once it has ended.
	revoke func()
}

// spawnSpec describes a process to start.
type spawnSpec struct {
	attempt   store.Attempt
	sessionID *string
	reason    string
	dir       string
	argv      []string
	stdin     string
	format    string // executor output format, for the normaliser
	prompt    string // the turn's prompt, for coding agents
	env       []string
	// Limits of a coding-agent run (zero: none): no progress for
	// inactivity, or running longer than runTimeout, stops it as failed.
	inactivity, runTimeout time.Duration
	// resumeMissing lists the texts by which the CLI says the session a
	// resumed run asked for does not exist (executor.Profile.ResumeMissing).
	resumeMissing []string
	// onExit runs after the end is recorded, with the final row.
	onExit func(store.Process)
	// onResumeMissing, when set, runs instead of onExit for a run that
	// failed after printing one of resumeMissing. It gets the run's row
	// before its end is recorded, and record, which records it and
	// returns the final row: the fresh run it starts must exist before
	// the failed one ends, or get_attempt_status would show the attempt
	// failed in between (an agent polling for the end would stop there).
	onResumeMissing func(failed store.Process, record func() store.Process)
	// repos are the attempt's clones and profile its coding agent's
	// profile (nil for scripts): what the sandbox grants (confinement).
	repos   []store.AttemptRepo
	profile *executor.Profile
}

// spawn records a process, starts it and supervises it in the background.
// A process that cannot start is recorded as failed, with the reason as an
// error_message entry, and onExit still runs: to an agent it is a run that
// failed at once, visible through the usual status and log tools.
func (b *Board) spawn(ctx context.Context, s spawnSpec) (store.Process, error) {
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return store.Process{}, errClosed
	}
	row := store.Process{AttemptID: s.attempt.ID, SessionID: s.sessionID, RunReason: s.reason,
		Command: commandLine(s.argv), Owner: b.owner}
	if err := b.store.CreateProcess(ctx, &row); err != nil {
		return store.Process{}, fmt.Errorf("record process: %w", err)
	}
	if s.reason == store.ReasonCodingAgent && s.sessionID != nil {
		if _, err := b.store.AddTurn(ctx, *s.sessionID, row.ID, s.prompt); err != nil {
			return store.Process{}, fmt.Errorf("record turn: %w", err)
		}
	}
	b.store.TouchAttempt(ctx, s.attempt.ID)
	pump := newLogPump(ctx, b, row, executor.NewNormalizer(s.format))
	pump.resumeMissing = s.resumeMissing
	// s.env is the whole environment (processEnv): the host's own is not
	// inherited, so its secrets stay out.
	spec, revoke, err := b.processSpec(ctx, s)
	var proc *procsup.Process
	if err == nil {
		proc, err = procsup.Start(ctx, spec, pump.onLine)
	}
	if err != nil {
		revoke()
		pump.note("error_message", "process did not start: "+err.Error())
		pump.close()
		b.store.FinishProcess(context.WithoutCancel(ctx), row.ID, store.ProcFailed, nil, "start failed: "+err.Error())
		final, _ := b.store.GetProcess(context.WithoutCancel(ctx), row.ID)
		b.chainStarted()
		go func() {
			defer b.chainDone()
			if s.onExit != nil {
				s.onExit(final)
			}
		}()
		return final, nil
	}
	// The handle, not just the identity: recovery and other hosts end the
	// whole tree from it.
	b.store.SetProcessPID(ctx, row.ID, proc.PID(), proc.Handle())
	row.PID = proc.PID()
	r := &run{row: row, proc: proc, recorded: make(chan struct{}), revoke: revoke}
	b.mu.Lock()
	b.running[row.ID] = r
	b.mu.Unlock()
	b.chainStarted()
	go b.supervise(r, pump, s)
	if s.inactivity > 0 || s.runTimeout > 0 {
		go b.watch(r, pump, s)
	}
	b.log.Info("process started", "execution_process_id", row.ID, "attempt_id", row.AttemptID, "run_reason", row.RunReason, "pid", row.PID)
	return row, nil
}

// supervise waits for a process to end and records how it ended.
func (b *Board) supervise(r *run, pump *logPump, s spawnSpec) {
	defer b.chainDone()
	ctx := context.Background()
	<-r.proc.Done()
	r.revoke()
	res := r.proc.Result()
	pump.close()
	status, reason := store.ProcFailed, ""
	var exit *int
	timedOut := r.timedOut.Load()
	switch {
	case timedOut != nil:
		reason = *timedOut
	case res.StoppedBy != "":
		status, reason = store.ProcKilled, "stopped ("+res.StoppedBy+")"
	case res.Signal != "":
		reason = "signal: " + res.Signal
	case res.ExitCode == 0 && res.Err == nil:
		status = store.ProcCompleted
	}
	// A run the watchdog stopped did not exit on its own: its exit code
	// (whatever the CLI does on SIGTERM) would only confuse the summary.
	if res.Signal == "" && res.ExitCode >= 0 && timedOut == nil {
		code := res.ExitCode
		exit = &code
	}
	if res.Err != nil && reason == "" {
		reason = res.Err.Error()
	}
	if s.reason == store.ReasonCodingAgent {
		if summary := pump.norm.Summary(); summary != "" {
			b.store.SetTurnSummary(ctx, r.row.ID, summary)
		}
		if id := pump.norm.AgentSessionID(); id != "" && s.sessionID != nil {
			b.store.SetAgentSessionID(ctx, *s.sessionID, id)
		}
		if status == store.ProcFailed {
			reason = withAgentReason(reason, pump.norm.FailureReason())
		}
	}
	record := func() store.Process {
		if err := b.store.FinishProcess(ctx, r.row.ID, status, exit, reason); err != nil {
			b.log.Error("record process end", "execution_process_id", r.row.ID, "err", err)
		}
		b.store.TouchAttempt(ctx, r.row.AttemptID)
		b.log.Info("process ended", "execution_process_id", r.row.ID, "status", status, "exit_code", res.ExitCode, "reason", reason)
		b.mu.Lock()
		delete(b.running, r.row.ID)
		b.mu.Unlock()
		final, err := b.store.GetProcess(ctx, r.row.ID)
		if err != nil {
			final = r.row
			final.Status = status
		}
		return final
	}
	switch {
	case s.onResumeMissing != nil && status == store.ProcFailed && pump.sawResumeMissing.Load():
		s.onResumeMissing(r.row, sync.OnceValue(record))
	case s.onExit != nil:
		s.onExit(record())
	default:
		record()
	}
	close(r.recorded)
}

// withAgentReason joins the host's reason for a failure (a timeout, a
// signal; "" when the agent just exited non-zero) with the agent's own
// account of it, so failure_summary says "Not logged in", not only an exit
// code.
func withAgentReason(reason, agent string) string {
	switch {
	case agent == "":
		return reason
	case reason == "":
		return agent
	default:
		return reason + "; the agent's last report: " + agent
	}
}

// watch stops a coding-agent run that makes no progress for s.inactivity
// or runs longer than s.runTimeout, recording why first.
func (b *Board) watch(r *run, pump *logPump, s spawnSpec) {
	started := time.Now()
	shortest := s.inactivity
	if shortest == 0 || (s.runTimeout > 0 && s.runTimeout < shortest) {
		shortest = s.runTimeout
	}
	tick := time.NewTicker(min(max(shortest/10, 50*time.Millisecond), time.Second))
	defer tick.Stop()
	for {
		select {
		case <-r.proc.Done():
			return
		case now := <-tick.C:
			var why string
			switch {
			case s.runTimeout > 0 && now.Sub(started) >= s.runTimeout:
				why = fmt.Sprintf("ran longer than the run timeout (%s)", s.runTimeout)
			case s.inactivity > 0 && now.Sub(pump.lastProgress()) >= s.inactivity:
				why = fmt.Sprintf("no progress for %s (inactivity timeout; warnings and retry notices do not count)", s.inactivity)
			default:
				continue
			}
			r.timedOut.Store(&why)
			b.log.Warn("agent run timed out", "execution_process_id", r.row.ID, "attempt_id", r.row.AttemptID, "reason", why)
			r.proc.Stop(false, b.cfg.StopGrace)
			return
		}
	}
}

// commandLine renders argv for the process record, quoting where needed.
func commandLine(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`|&;<>()*?[]#~") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		parts[i] = a
	}
	line := strings.Join(parts, " ")
	const max = 2048
	if len(line) > max {
		line = line[:max] + "…"
	}
	return line
}

// Log capture: every line becomes one raw entry and zero or more
// normalised entries. Entries go through a bounded channel to one writer
// that appends them in batches, so a chatty process costs one transaction
// per batch, not per line, and a slow disk slows the child (its pipe
// fills) instead of growing memory. What the log keeps is capped
// (LogLimits, logcaps.go): past a cap, lines are read, fed to the
// normaliser (its summary, session id and failure reason still see the
// whole run) and dropped.
const (
	logQueue      = 1024
	logBatch      = 512
	logFlushEvery = 50 * time.Millisecond
)

type logPump struct {
	b          *Board
	processID  string
	attemptID  string
	norm       executor.Normalizer
	rawN, nrmN int64
	rows       chan store.LogRow
	done       chan struct{}
	// progress is when the process last showed progress (unix nanos):
	// any output but warnings, retry notices and stack frames.
	progress atomic.Int64
	// resumeMissing are the texts that say a resumed agent session does
	// not exist; sawResumeMissing is set once a line carried one.
	resumeMissing    []string
	sawResumeMissing atomic.Bool

	// The caps (see LogLimits); procsup serialises onLine, and close runs
	// after the last line, so these need no lock. kept is what this
	// process's entries take (store.LogRowSize); budget is the attempt's.
	limits LogLimits
	budget *logBudget
	kept   int64
	// capped names the cap reached ("process" or "attempt"), "" before;
	// dropped counts what was dropped since, by stream.
	capped  string
	dropped map[procsup.Stream]*droppedOutput
	// droppedFinal counts the normaliser's last entries (Finish) dropped.
	droppedFinal int64
}

// droppedOutput is what a stream lost to a cap.
type droppedOutput struct{ bytes, lines int64 }

func newLogPump(ctx context.Context, b *Board, proc store.Process, norm executor.Normalizer) *logPump {
	p := &logPump{b: b, processID: proc.ID, attemptID: proc.AttemptID, norm: norm, rows: make(chan store.LogRow, logQueue), done: make(chan struct{}),
		limits: b.logLimits(), dropped: map[procsup.Stream]*droppedOutput{}}
	if p.limits.AttemptMax > 0 {
		p.budget = b.logBudgets.acquire(context.WithoutCancel(ctx), b.store, proc.AttemptID)
	}
	p.progress.Store(time.Now().UnixNano())
	go p.write()
	return p
}

func (p *logPump) lastProgress() time.Time { return time.Unix(0, p.progress.Load()) }

// rawEntry is the shape of a raw-channel entry.
type rawEntry struct {
	Timestamp string `json:"timestamp"`
	Stream    string `json:"stream"`
	Content   string `json:"content"`
}

// onLine is procsup's callback; procsup serialises calls, so the counters
// need no lock.
func (p *logPump) onLine(stream procsup.Stream, line []byte) {
	now := time.Now()
	// What the process printed, its line end included (procsup strips
	// it), for the count of what a cap drops.
	printed := len(line) + 1
	// Control bytes and bytes that are not UTF-8 would cost 6 bytes each
	// as JSON: the line is stored, and normalised, compacted.
	line = compactLine(line)
	entries := p.norm.Line(string(stream), line, now)
	if isProgress(stream, entries) {
		p.progress.Store(now.UnixNano())
	}
	if !p.sawResumeMissing.Load() {
		for _, text := range p.resumeMissing {
			if bytes.Contains(line, []byte(text)) {
				p.sawResumeMissing.Store(true)
			}
		}
	}
	if p.capped != "" {
		p.drop(stream, printed)
		return
	}
	raw, err := encodeEntry(rawEntry{Timestamp: now.UTC().Format(time.RFC3339Nano), Stream: string(stream), Content: string(line)})
	if err != nil {
		return
	}
	normalized := p.encode(entries)
	size := store.LogRowSize(raw)
	for _, e := range normalized {
		size += store.LogRowSize(e)
	}
	if !p.admit(size, now) {
		p.drop(stream, printed)
		return
	}
	p.send(store.ChannelRaw, raw)
	for _, e := range normalized {
		p.send(store.ChannelNormalized, e)
	}
}

// admit counts size against the process's and the attempt's caps; the
// first entries that do not fit end what the log keeps, and the markers
// say so at once, so a reader of the log's tail sees why it stopped.
func (p *logPump) admit(size int64, now time.Time) bool {
	if p.capped != "" {
		return false
	}
	switch {
	case p.limits.ProcessMax > 0 && p.kept+size > p.limits.ProcessMax:
		p.capped = "process"
	case p.budget != nil && !p.b.logBudgets.take(p.budget, size, p.limits.AttemptMax):
		p.capped = "attempt"
	default:
		p.kept += size
		return true
	}
	which := capName(p.capped, p.capLimit())
	ts := now.UTC().Format(time.RFC3339Nano)
	for _, stream := range []procsup.Stream{procsup.Stdout, procsup.Stderr} {
		p.sendRaw(ts, stream, fmt.Sprintf("[plugboard] %s dropped from here on: this log reached %s; what was dropped is counted when the process ends", stream, which))
	}
	p.note(tasks.EntrySystemMessage, fmt.Sprintf("Output dropped: this log reached %s; stdout and stderr from here on are not stored (the totals follow when the process ends).", which),
		map[string]any{"cap": p.capped, "limit_bytes": p.capLimit()})
	return false
}

func (p *logPump) capLimit() int64 {
	if p.capped == "attempt" {
		return p.limits.AttemptMax
	}
	return p.limits.ProcessMax
}

func (p *logPump) drop(stream procsup.Stream, n int) {
	d := p.dropped[stream]
	if d == nil {
		d = &droppedOutput{}
		p.dropped[stream] = d
	}
	d.bytes += int64(n)
	d.lines++
}

// isProgress says whether a line shows the agent getting on with its work:
// an entry other than a warning, or a stdout event the normaliser folds
// into a later entry. Warnings, retry notices and stack frames (stderr
// lines that make no entry) do not count, so an agent that only retries an
// unreachable service reaches its inactivity timeout.
func isProgress(stream procsup.Stream, entries []executor.Entry) bool {
	if len(entries) == 0 {
		return stream == procsup.Stdout
	}
	for _, e := range entries {
		if !executor.IsWarning(e) {
			return true
		}
	}
	return false
}

func (p *logPump) encode(entries []executor.Entry) []json.RawMessage {
	out := make([]json.RawMessage, 0, len(entries))
	for _, e := range entries {
		if data, err := encodeEntry(e); err == nil {
			out = append(out, data)
		}
	}
	return out
}

// send queues one entry of channel at the channel's next index.
func (p *logPump) send(channel string, entry json.RawMessage) {
	row := store.LogRow{ProcessID: p.processID, Channel: channel, Entry: entry}
	if channel == store.ChannelRaw {
		row.Index = p.rawN
		p.rawN++
	} else {
		row.Index = p.nrmN
		p.nrmN++
	}
	p.rows <- row
}

// sendRaw queues a raw entry the host itself writes (a marker).
func (p *logPump) sendRaw(ts string, stream procsup.Stream, content string) {
	if raw, err := encodeEntry(rawEntry{Timestamp: ts, Stream: string(stream), Content: content}); err == nil {
		p.send(store.ChannelRaw, raw)
	}
}

// note adds a normalised entry the host itself writes, past the caps:
// notes are few and short. meta, when set, marks it a warning.
func (p *logPump) note(entryType, content string, meta ...map[string]any) {
	e := executor.Entry{Timestamp: time.Now().UTC().Format(time.RFC3339Nano), EntryType: entryType, Content: content}
	if len(meta) > 0 {
		e.Metadata = warningMeta(meta[0])
	}
	for _, data := range p.encode([]executor.Entry{e}) {
		p.send(store.ChannelNormalized, data)
	}
}

// dropNotes writes, once the process has ended, how much of each stream a
// cap dropped: on that stream, and in the normalised log.
func (p *logPump) dropNotes() {
	if p.capped == "" {
		return
	}
	which := capName(p.capped, p.capLimit())
	ts := time.Now().UTC().Format(time.RFC3339Nano)
	var parts []string
	bytesBy, linesBy := map[string]int64{}, map[string]int64{}
	for _, stream := range []procsup.Stream{procsup.Stdout, procsup.Stderr} {
		d := p.dropped[stream]
		if d == nil {
			continue
		}
		text := fmt.Sprintf("%s of %s (%s)", sizeText(d.bytes), stream, plural(d.lines, "line"))
		parts = append(parts, text)
		bytesBy[string(stream)], linesBy[string(stream)] = d.bytes, d.lines
		p.sendRaw(ts, stream, fmt.Sprintf("[plugboard] %s dropped: this log reached %s", text, which))
	}
	if p.droppedFinal > 0 {
		parts = append(parts, "the agent's last "+plural(p.droppedFinal, "normalized entry"))
	}
	p.note(tasks.EntrySystemMessage, fmt.Sprintf("Output dropped: %s not stored; this log reached %s.", strings.Join(parts, " and "), which),
		map[string]any{"cap": p.capped, "limit_bytes": p.capLimit(), "dropped_bytes": bytesBy, "dropped_lines": linesBy})
}

// close flushes the normaliser (its last entries count against the caps
// too), writes what the caps dropped and waits until everything is stored.
func (p *logPump) close() {
	now := time.Now()
	normalized := p.encode(p.norm.Finish(now))
	var size int64
	for _, e := range normalized {
		size += store.LogRowSize(e)
	}
	if len(normalized) > 0 {
		if p.admit(size, now) {
			for _, e := range normalized {
				p.send(store.ChannelNormalized, e)
			}
		} else {
			p.droppedFinal = int64(len(normalized))
		}
	}
	p.dropNotes()
	close(p.rows)
	<-p.done
	if p.budget != nil {
		p.b.logBudgets.release(p.attemptID)
	}
}

func (p *logPump) write() {
	defer close(p.done)
	batch := make([]store.LogRow, 0, logBatch)
	flush := func() {
		if len(batch) == 0 {
			return
		}
		if err := p.b.store.AppendLogs(context.Background(), batch); err != nil {
			p.b.log.Error("store log entries", "execution_process_id", p.processID, "entries", len(batch), "err", err)
		}
		batch = batch[:0]
	}
	timer := time.NewTimer(logFlushEvery)
	defer timer.Stop()
	for {
		select {
		case row, ok := <-p.rows:
			if !ok {
				flush()
				return
			}
			batch = append(batch, row)
			if len(batch) >= logBatch {
				flush()
			}
		case <-timer.C:
			flush()
			timer.Reset(logFlushEvery)
		}
	}
}

// processSpec is how procsup starts s: its environment completed with the
// attempt's temporary directory and its credential to the board (whose
// revoke the caller must call once the process has ended, or at once if it
// does not start), confined by the attempt's sandbox.
func (b *Board) processSpec(ctx context.Context, s spawnSpec) (procsup.Spec, func(), error) {
	revoke := func() {}
	if err := b.sandboxRefusal(); err != nil {
		return procsup.Spec{}, revoke, err
	}
	tmp, err := b.makeTempDir(s.attempt.ID)
	if err != nil {
		return procsup.Spec{}, revoke, err
	}
	// The agent sees each repository's target branch as it is now, as
	// origin/<branch>: it cannot fetch from the repository in its sandbox.
	// The repositories' paths, read once, serve the sandbox too.
	var sources []string
	for _, r := range s.repos {
		c, err := b.clone(ctx, s.attempt.ID, r)
		if err != nil {
			continue
		}
		sources = append(sources, c.Source)
		if err := gitops.SyncOrigin(ctx, c, r.TargetBranch); err != nil {
			b.log.Warn("origin branch not updated in the attempt's clone", "attempt_id", s.attempt.ID, "repo", r.RepoName, "err", err)
		}
	}
	env := append(slices.Clip(s.env), "TMPDIR="+tmp, "TMP="+tmp, "TEMP="+tmp)
	var ports []uint16
	if b.cfg.Access != nil {
		acc, err := b.cfg.Access(s.attempt.ID, s.attempt.TaskID)
		if err != nil {
			return procsup.Spec{}, revoke, fmt.Errorf("attempt credential: %w", err)
		}
		if acc.Revoke != nil {
			revoke = sync.OnceFunc(acc.Revoke)
		}
		env = append(env, acc.Env...)
		ports = acc.Ports
	}
	policy, err := b.confinement(s.attempt, sources, s.profile, s.argv, ports)
	if err != nil {
		revoke()
		return procsup.Spec{}, func() {}, fmt.Errorf("attempt sandbox: %w", err)
	}
	return procsup.Spec{Dir: s.dir, Argv: s.argv, Env: env, NoInheritEnv: true, Stdin: s.stdin,
		Sandbox: policy, Launcher: b.cfg.Sandbox.Launcher}, revoke, nil
}
