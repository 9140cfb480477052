package board

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/plugboard/plugboard/host/board/executor"
	"github.com/plugboard/plugboard/host/board/procsup"
	"github.com/plugboard/plugboard/host/board/store"
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
	// onExit runs after the end is recorded, with the final row.
	onExit func(store.Process)
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
	pump := newLogPump(b, row.ID, executor.NewNormalizer(s.format))
	// s.env is the whole environment (processEnv): the host's own is not
	// inherited, so its secrets stay out.
	proc, err := procsup.Start(ctx, procsup.Spec{Dir: s.dir, Argv: s.argv, Env: s.env, NoInheritEnv: true, Stdin: s.stdin}, pump.onLine)
	if err != nil {
		pump.note("error_message", "process did not start: "+err.Error())
		pump.close()
		b.store.FinishProcess(context.WithoutCancel(ctx), row.ID, store.ProcFailed, nil, "start failed: "+err.Error())
		final, _ := b.store.GetProcess(context.WithoutCancel(ctx), row.ID)
		b.chains.Add(1)
		go func() {
			defer b.chains.Done()
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
	r := &run{row: row, proc: proc, recorded: make(chan struct{})}
	b.mu.Lock()
	b.running[row.ID] = r
	b.mu.Unlock()
	b.chains.Add(1)
	go b.supervise(r, pump, s)
	b.log.Info("process started", "execution_process_id", row.ID, "attempt_id", row.AttemptID, "run_reason", row.RunReason, "pid", row.PID)
	return row, nil
}

// supervise waits for a process to end and records how it ended.
func (b *Board) supervise(r *run, pump *logPump, s spawnSpec) {
	defer b.chains.Done()
	ctx := context.Background()
	<-r.proc.Done()
	res := r.proc.Result()
	pump.close()
	status, reason := store.ProcFailed, ""
	var exit *int
	switch {
	case res.StoppedBy != "":
		status, reason = store.ProcKilled, "stopped ("+res.StoppedBy+")"
	case res.Signal != "":
		reason = "signal: " + res.Signal
	case res.ExitCode == 0 && res.Err == nil:
		status = store.ProcCompleted
	}
	if res.Signal == "" && res.ExitCode >= 0 {
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
	}
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
	if s.onExit != nil {
		s.onExit(final)
	}
	close(r.recorded)
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
// fills) instead of growing memory.
const (
	logQueue      = 1024
	logBatch      = 512
	logFlushEvery = 50 * time.Millisecond
)

type logPump struct {
	b          *Board
	processID  string
	norm       executor.Normalizer
	rawN, nrmN int64
	rows       chan store.LogRow
	done       chan struct{}
}

func newLogPump(b *Board, processID string, norm executor.Normalizer) *logPump {
	p := &logPump{b: b, processID: processID, norm: norm, rows: make(chan store.LogRow, logQueue), done: make(chan struct{})}
	go p.write()
	return p
}

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
	raw, _ := json.Marshal(rawEntry{Timestamp: now.UTC().Format(time.RFC3339Nano), Stream: string(stream), Content: string(line)})
	p.rows <- store.LogRow{ProcessID: p.processID, Channel: store.ChannelRaw, Index: p.rawN, Entry: raw}
	p.rawN++
	p.emit(p.norm.Line(string(stream), line, now))
}

func (p *logPump) emit(entries []executor.Entry) {
	for _, e := range entries {
		data, err := json.Marshal(e)
		if err != nil {
			continue
		}
		p.rows <- store.LogRow{ProcessID: p.processID, Channel: store.ChannelNormalized, Index: p.nrmN, Entry: data}
		p.nrmN++
	}
}

// note adds a normalised entry the host itself writes.
func (p *logPump) note(entryType, content string) {
	p.emit([]executor.Entry{{Timestamp: time.Now().UTC().Format(time.RFC3339Nano), EntryType: entryType, Content: content}})
}

// close flushes the normaliser and waits until everything is stored.
func (p *logPump) close() {
	p.emit(p.norm.Finish(time.Now()))
	close(p.rows)
	<-p.done
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
