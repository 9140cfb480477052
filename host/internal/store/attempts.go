package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Attempt is one try at a task: a git worktree per repo on a fresh branch.
type Attempt struct {
	ID       string
	TaskID   string
	Branch   string
	Executor string
	Variant  string
	Dir      string
	// HostID is the host whose data directory holds the attempt's
	// worktrees ("" for attempts made before hosts were recorded).
	HostID    string
	CreatedAt string
	UpdatedAt string
}

// AttemptRepo is one repo's worktree in an attempt.
type AttemptRepo struct {
	AttemptID     string
	RepoID        string
	RepoName      string
	WorktreeDir   string
	TargetBranch  string
	BaseCommit    string
	SetupScript   string
	CleanupScript string
}

// Session is one executor conversation within an attempt.
type Session struct {
	ID             string
	AttemptID      string
	Executor       string
	Variant        string
	AgentSessionID string
	CreatedAt      string
	UpdatedAt      string
}

// CreateAttempt inserts an attempt and its repos in one transaction.
func (s *Store) CreateAttempt(ctx context.Context, a Attempt, repos []AttemptRepo) error {
	return s.tx(ctx, func(tx *Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO attempts (id, task_id, branch, executor, variant, dir, host_id, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, a.ID, a.TaskID, a.Branch, a.Executor, a.Variant, a.Dir, a.HostID, a.CreatedAt, a.UpdatedAt)
		if isForeignKey(err) {
			return notFound("task", a.TaskID)
		}
		if err != nil {
			return err
		}
		for i, r := range repos {
			if _, err := tx.ExecContext(ctx, `INSERT INTO attempt_repos (attempt_id, repo_id, repo_name, worktree_dir,
					target_branch, base_commit, setup_script, cleanup_script, position) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				a.ID, r.RepoID, r.RepoName, r.WorktreeDir, r.TargetBranch, r.BaseCommit, r.SetupScript, r.CleanupScript, i); err != nil {
				return err
			}
		}
		return nil
	})
}

const attemptColumns = `id, task_id, branch, executor, variant, dir, host_id, created_at, updated_at`

func scanAttempt(sc interface{ Scan(...any) error }) (Attempt, error) {
	var a Attempt
	err := sc.Scan(&a.ID, &a.TaskID, &a.Branch, &a.Executor, &a.Variant, &a.Dir, &a.HostID, &a.CreatedAt, &a.UpdatedAt)
	return a, err
}

// GetAttempt returns one attempt.
func (s *Store) GetAttempt(ctx context.Context, id string) (Attempt, error) {
	a, err := scanAttempt(s.db.QueryRowContext(ctx, `SELECT `+attemptColumns+` FROM attempts WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Attempt{}, notFound("attempt", id)
	}
	return a, err
}

// ListAttempts returns a task's attempts, newest first (created_at DESC,
// id ASC).
func (s *Store) ListAttempts(ctx context.Context, taskID string) ([]Attempt, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+attemptColumns+` FROM attempts WHERE task_id = ?
		ORDER BY created_at DESC, id ASC`, taskID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Attempt{}
	for rows.Next() {
		a, err := scanAttempt(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// TouchAttempt sets an attempt's updated_at to now.
func (s *Store) TouchAttempt(ctx context.Context, id string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE attempts SET updated_at = ? WHERE id = ?`, Now(), id)
	return err
}

// AttemptRepos returns an attempt's repos in the order they were chosen.
func (s *Store) AttemptRepos(ctx context.Context, attemptID string) ([]AttemptRepo, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT attempt_id, repo_id, repo_name, worktree_dir, target_branch, base_commit,
			setup_script, cleanup_script
		FROM attempt_repos WHERE attempt_id = ? ORDER BY position`, attemptID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []AttemptRepo{}
	for rows.Next() {
		var r AttemptRepo
		if err := rows.Scan(&r.AttemptID, &r.RepoID, &r.RepoName, &r.WorktreeDir, &r.TargetBranch, &r.BaseCommit,
			&r.SetupScript, &r.CleanupScript); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// CreateSession inserts a session.
func (s *Store) CreateSession(ctx context.Context, attemptID, executor, variant string) (Session, error) {
	now := Now()
	se := Session{ID: NewID(), AttemptID: attemptID, Executor: executor, Variant: variant, CreatedAt: now, UpdatedAt: now}
	_, err := s.db.ExecContext(ctx, `INSERT INTO sessions (id, attempt_id, executor, variant, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?)`, se.ID, se.AttemptID, se.Executor, se.Variant, se.CreatedAt, se.UpdatedAt)
	if isForeignKey(err) {
		return Session{}, notFound("attempt", attemptID)
	}
	return se, err
}

const sessionColumns = `id, attempt_id, executor, variant, agent_session_id, created_at, updated_at`

func scanSession(sc interface{ Scan(...any) error }) (Session, error) {
	var se Session
	err := sc.Scan(&se.ID, &se.AttemptID, &se.Executor, &se.Variant, &se.AgentSessionID, &se.CreatedAt, &se.UpdatedAt)
	return se, err
}

// GetSession returns one session.
func (s *Store) GetSession(ctx context.Context, id string) (Session, error) {
	se, err := scanSession(s.db.QueryRowContext(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Session{}, notFound("session", id)
	}
	return se, err
}

// LatestSession returns an attempt's newest session (created_at DESC, id
// ASC), or ErrNotFound when it has none.
func (s *Store) LatestSession(ctx context.Context, attemptID string) (Session, error) {
	se, err := scanSession(s.db.QueryRowContext(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE attempt_id = ?
		ORDER BY created_at DESC, id ASC LIMIT 1`, attemptID))
	if errors.Is(err, sql.ErrNoRows) {
		return Session{}, fmt.Errorf("session of attempt %s: %w", attemptID, ErrNotFound)
	}
	return se, err
}

// SetAgentSessionID records the coding agent's own session id, used to
// resume it on a follow-up.
func (s *Store) SetAgentSessionID(ctx context.Context, sessionID, agentSessionID string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE sessions SET agent_session_id = ?, updated_at = ? WHERE id = ?`,
		agentSessionID, Now(), sessionID)
	return err
}
