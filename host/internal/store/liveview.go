package store

import (
	"context"
	"fmt"
)

// The dashboard's live view: marks that change whenever what a page shows
// of a project or an attempt changes, read by one watcher a few times a
// second (host/internal/dashboard), and the running processes a board's
// cards show. They read the store, not the host's memory, because the
// changes come from every host sharing it and from attempt processes.

// ProjectMarks are a project's marks: Cards changes when a task is made,
// edited, moved or deleted, an attempt starts, or a process starts or ends;
// Activity when a running process logs.
type ProjectMarks struct {
	Cards, Activity string
}

// ProjectMarks reads the marks of project id (empty ones for a project that
// does not exist).
func (s *Store) ProjectMarks(ctx context.Context, id string) (ProjectMarks, error) {
	var (
		tasks, attempts, procs, running int64
		taskAt, attemptAt, doneAt, act  string
	)
	err := s.db.QueryRowContext(ctx, `SELECT
		(SELECT COUNT(*) FROM tasks WHERE project_id = ?),
		(SELECT COALESCE(MAX(updated_at), '') FROM tasks WHERE project_id = ?),
		(SELECT COUNT(*) FROM attempts a JOIN tasks t ON t.id = a.task_id WHERE t.project_id = ?),
		(SELECT COALESCE(MAX(a.updated_at), '') FROM attempts a JOIN tasks t ON t.id = a.task_id WHERE t.project_id = ?)`,
		id, id, id, id).Scan(&tasks, &taskAt, &attempts, &attemptAt)
	if err != nil {
		return ProjectMarks{}, err
	}
	err = s.db.QueryRowContext(ctx, `SELECT COUNT(*),
		COALESCE(SUM(CASE WHEN p.status = 'running' THEN 1 ELSE 0 END), 0),
		COALESCE(MAX(p.completed_at), ''),
		COALESCE(MAX(CASE WHEN p.status = 'running' THEN p.updated_at END), '')
		FROM execution_processes p JOIN attempts a ON a.id = p.attempt_id JOIN tasks t ON t.id = a.task_id
		WHERE t.project_id = ?`, id).Scan(&procs, &running, &doneAt, &act)
	if err != nil {
		return ProjectMarks{}, err
	}
	return ProjectMarks{
		Cards:    fmt.Sprintf("%d|%s|%d|%s|%d|%d|%s", tasks, taskAt, attempts, attemptAt, procs, running, doneAt),
		Activity: act,
	}, nil
}

// AttemptMarks are an attempt's marks: Logs changes when a process logs,
// State when a process starts or ends or the attempt's task changes,
// Messages when a turn starts or ends or the follow-up queue changes.
type AttemptMarks struct {
	Logs, State, Messages string
}

// AttemptMarks reads the marks of attempt id.
func (s *Store) AttemptMarks(ctx context.Context, id string) (AttemptMarks, error) {
	var (
		procs, running, logBytes, turns, queued int64
		doneAt, procAt, taskState, turnAt       string
		queuedAt                                string
	)
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*),
		COALESCE(SUM(CASE WHEN status = 'running' THEN 1 ELSE 0 END), 0),
		COALESCE(MAX(completed_at), ''), COALESCE(SUM(log_bytes), 0), COALESCE(MAX(updated_at), '')
		FROM execution_processes WHERE attempt_id = ?`, id).Scan(&procs, &running, &doneAt, &logBytes, &procAt)
	if err != nil {
		return AttemptMarks{}, err
	}
	err = s.db.QueryRowContext(ctx, `SELECT
		COALESCE((SELECT t.status || ' ' || t.updated_at FROM attempts a JOIN tasks t ON t.id = a.task_id WHERE a.id = ?), ''),
		(SELECT COUNT(*) FROM turns tu JOIN sessions se ON se.id = tu.session_id WHERE se.attempt_id = ?),
		(SELECT COALESCE(MAX(tu.updated_at), '') FROM turns tu JOIN sessions se ON se.id = tu.session_id WHERE se.attempt_id = ?),
		(SELECT COUNT(*) FROM queued_messages q JOIN sessions se ON se.id = q.session_id WHERE se.attempt_id = ?),
		(SELECT COALESCE(MAX(q.created_at), '') FROM queued_messages q JOIN sessions se ON se.id = q.session_id WHERE se.attempt_id = ?)`,
		id, id, id, id, id).Scan(&taskState, &turns, &turnAt, &queued, &queuedAt)
	if err != nil {
		return AttemptMarks{}, err
	}
	return AttemptMarks{
		Logs:     fmt.Sprintf("%d|%s", logBytes, procAt),
		State:    fmt.Sprintf("%d|%d|%s|%s", procs, running, doneAt, taskState),
		Messages: fmt.Sprintf("%d|%s|%d|%s", turns, turnAt, queued, queuedAt),
	}, nil
}

// RunningAgent is the running coding-agent process of an attempt, as a
// board card shows it.
type RunningAgent struct {
	TaskID, AttemptID, Executor string
	// StartedAt is when the process started; ActiveAt when it last logged
	// or changed.
	StartedAt, ActiveAt string
}

// RunningAgents returns the running coding-agent processes of project id's
// tasks, by task (the newest started when a task has several).
func (s *Store) RunningAgents(ctx context.Context, id string) (map[string]RunningAgent, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT a.task_id, a.id, a.executor, p.started_at, p.updated_at
		FROM execution_processes p JOIN attempts a ON a.id = p.attempt_id JOIN tasks t ON t.id = a.task_id
		WHERE p.status = 'running' AND p.run_reason = 'codingagent' AND t.project_id = ?
		ORDER BY p.started_at ASC, p.id ASC`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]RunningAgent{}
	for rows.Next() {
		var r RunningAgent
		if err := rows.Scan(&r.TaskID, &r.AttemptID, &r.Executor, &r.StartedAt, &r.ActiveAt); err != nil {
			return nil, err
		}
		out[r.TaskID] = r
	}
	return out, rows.Err()
}
