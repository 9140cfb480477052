package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/plugboard/plugboard/abi/tasks"
)

// Process run reasons (tasks.RunReason values).
const (
	ReasonSetupScript   = tasks.RunSetupScript
	ReasonCleanupScript = tasks.RunCleanupScript
	ReasonCodingAgent   = tasks.RunCodingAgent
	ReasonDevServer     = tasks.RunDevServer
)

// Process statuses (tasks.ProcessStatus values).
const (
	ProcRunning   = tasks.ProcessRunning
	ProcCompleted = tasks.ProcessCompleted
	ProcFailed    = tasks.ProcessFailed
	ProcKilled    = tasks.ProcessKilled
)

// Process is one execution process of an attempt.
type Process struct {
	ID        string
	AttemptID string
	SessionID *string
	RunReason string
	Status    string
	Command   string
	PID       int
	// Identity tells this OS process apart from a later one reusing its
	// pid (see procsup.Identity).
	Identity string
	// Owner is the identity of the host process supervising it.
	Owner    string
	ExitCode *int
	// EndReason says why a process ended when the exit code does not: the
	// signal that killed it, a start failure, "host exited".
	EndReason   string
	StartedAt   string
	CompletedAt *string
	CreatedAt   string
	UpdatedAt   string
}

// CreateProcess inserts a process in status running. p.ID and times are
// filled in when empty.
func (s *Store) CreateProcess(ctx context.Context, p *Process) error {
	if p.ID == "" {
		p.ID = NewID()
	}
	now := Now()
	if p.CreatedAt == "" {
		p.CreatedAt = now
	}
	p.StartedAt, p.UpdatedAt, p.Status = p.CreatedAt, p.CreatedAt, ProcRunning
	_, err := s.db.ExecContext(ctx, `INSERT INTO execution_processes (id, attempt_id, session_id, run_reason, status, command,
			pid, owner, started_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		p.ID, p.AttemptID, p.SessionID, p.RunReason, p.Status, p.Command, p.PID, p.Owner, p.StartedAt, p.CreatedAt, p.UpdatedAt)
	return err
}

// SetProcessPID records the OS pid and identity once the process started.
func (s *Store) SetProcessPID(ctx context.Context, id string, pid int, identity string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE execution_processes SET pid = ?, identity = ?, updated_at = ? WHERE id = ?`,
		pid, identity, Now(), id)
	return err
}

// FinishProcess records a process's end. Only a running process changes,
// so a late report cannot overwrite a status set by crash recovery.
func (s *Store) FinishProcess(ctx context.Context, id, status string, exitCode *int, endReason string) error {
	now := Now()
	_, err := s.db.ExecContext(ctx, `UPDATE execution_processes SET status = ?, exit_code = ?, end_reason = ?,
			completed_at = ?, updated_at = ? WHERE id = ? AND status = 'running'`, status, exitCode, endReason, now, now, id)
	return err
}

const processColumns = `id, attempt_id, session_id, run_reason, status, command, pid, identity, owner, exit_code, end_reason,
	started_at, completed_at, created_at, updated_at`

func scanProcess(sc interface{ Scan(...any) error }) (Process, error) {
	var (
		p         Process
		sid, done sql.NullString
		code      sql.NullInt64
	)
	err := sc.Scan(&p.ID, &p.AttemptID, &sid, &p.RunReason, &p.Status, &p.Command, &p.PID, &p.Identity, &p.Owner, &code, &p.EndReason,
		&p.StartedAt, &done, &p.CreatedAt, &p.UpdatedAt)
	p.SessionID, p.CompletedAt = nullString(sid), nullString(done)
	if code.Valid {
		c := int(code.Int64)
		p.ExitCode = &c
	}
	return p, err
}

func (s *Store) queryProcesses(ctx context.Context, query string, args ...any) ([]Process, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+processColumns+` FROM execution_processes `+query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Process{}
	for rows.Next() {
		p, err := scanProcess(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// GetProcess returns one process.
func (s *Store) GetProcess(ctx context.Context, id string) (Process, error) {
	p, err := scanProcess(s.db.QueryRowContext(ctx, `SELECT `+processColumns+` FROM execution_processes WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Process{}, notFound("execution process", id)
	}
	return p, err
}

// LatestProcess returns the attempt's newest process that decides its
// state — a coding agent, setup or cleanup script, never a dev server — or
// ErrNotFound when there is none.
func (s *Store) LatestProcess(ctx context.Context, attemptID string) (Process, error) {
	p, err := scanProcess(s.db.QueryRowContext(ctx, `SELECT `+processColumns+` FROM execution_processes
		WHERE attempt_id = ? AND run_reason <> 'devserver' ORDER BY created_at DESC, id ASC LIMIT 1`, attemptID))
	if errors.Is(err, sql.ErrNoRows) {
		return Process{}, fmt.Errorf("process of attempt %s: %w", attemptID, ErrNotFound)
	}
	return p, err
}

// AttemptProcesses returns an attempt's processes, oldest first.
func (s *Store) AttemptProcesses(ctx context.Context, attemptID string) ([]Process, error) {
	return s.queryProcesses(ctx, `WHERE attempt_id = ? ORDER BY created_at ASC, id DESC`, attemptID)
}

// RunningProcesses returns every process still marked running, optionally
// only those of one attempt ("" = all).
func (s *Store) RunningProcesses(ctx context.Context, attemptID string) ([]Process, error) {
	return s.queryProcesses(ctx, `WHERE status = 'running' AND (? = '' OR attempt_id = ?) ORDER BY created_at, id`, attemptID, attemptID)
}

// RunningInSession reports the running coding-agent process of a session.
func (s *Store) RunningInSession(ctx context.Context, sessionID string) (Process, bool, error) {
	ps, err := s.queryProcesses(ctx, `WHERE session_id = ? AND status = 'running' AND run_reason = 'codingagent'
		ORDER BY created_at DESC, id ASC LIMIT 1`, sessionID)
	if err != nil || len(ps) == 0 {
		return Process{}, false, err
	}
	return ps[0], true, nil
}

// LastActivity returns the newest process timestamp of an attempt.
func (s *Store) LastActivity(ctx context.Context, attemptID string) (*string, error) {
	var at sql.NullString
	err := s.db.QueryRowContext(ctx, `SELECT MAX(COALESCE(completed_at, updated_at)) FROM execution_processes
		WHERE attempt_id = ?`, attemptID).Scan(&at)
	return nullString(at), err
}
