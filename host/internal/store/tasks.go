package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"

	"github.com/plugboard/plugboard/abi/tasks"
)

// Task statuses (tasks.TaskStatus values).
const (
	StatusTodo       = tasks.StatusTodo
	StatusInProgress = tasks.StatusInProgress
	StatusInReview   = tasks.StatusInReview
	StatusDone       = tasks.StatusDone
	StatusCancelled  = tasks.StatusCancelled
)

// TaskStatuses lists the valid task statuses in workflow order.
var TaskStatuses = []string{StatusTodo, StatusInProgress, StatusInReview, StatusDone, StatusCancelled}

// Task is one unit of work on a project.
type Task struct {
	ID          string
	ProjectID   string
	Title       string
	Description string
	Status      string
	CreatedAt   string
	UpdatedAt   string
}

// AttemptSummary is the per-task view of its attempts that list_tasks
// shows: the latest attempt (created_at DESC, id ASC) and its latest session.
type AttemptSummary struct {
	LatestAttemptID       *string
	LatestWorkspaceBranch *string
	LatestSessionID       *string
	LatestSessionExecutor *string
	HasInProgressAttempt  bool
	LastAttemptFailed     bool
}

// TaskWithSummary is a task and its attempt summary.
type TaskWithSummary struct {
	Task
	AttemptSummary
}

// CreateTask inserts a task in status todo.
func (s *Store) CreateTask(ctx context.Context, projectID, title, description string) (Task, error) {
	now := Now()
	t := Task{ID: NewID(), ProjectID: projectID, Title: title, Description: description, Status: StatusTodo, CreatedAt: now, UpdatedAt: now}
	// conn: created inside a keyed call, the task commits with its
	// journal row (RunEffect).
	_, err := s.conn(ctx).ExecContext(ctx, `INSERT INTO tasks (id, project_id, title, description, status, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, t.ID, t.ProjectID, t.Title, t.Description, t.Status, t.CreatedAt, t.UpdatedAt)
	if isForeignKey(err) {
		return Task{}, notFound("project", projectID)
	}
	return t, err
}

// GetTask returns one task.
func (s *Store) GetTask(ctx context.Context, id string) (Task, error) {
	return scanTask(s.db.QueryRowContext(ctx, `SELECT id, project_id, title, description, status, created_at, updated_at
		FROM tasks WHERE id = ?`, id), id)
}

func scanTask(row *sql.Row, id string) (Task, error) {
	var t Task
	err := row.Scan(&t.ID, &t.ProjectID, &t.Title, &t.Description, &t.Status, &t.CreatedAt, &t.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return Task{}, notFound("task", id)
	}
	return t, err
}

// TaskUpdate holds the fields to change; nil leaves a field as it is.
type TaskUpdate struct {
	Title       *string
	Description *string
	Status      *string
}

// UpdateTask changes the given fields and returns the task as it is now.
func (s *Store) UpdateTask(ctx context.Context, id string, u TaskUpdate) (Task, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE tasks SET
			title = COALESCE(?, title), description = COALESCE(?, description), status = COALESCE(?, status), updated_at = ?
		WHERE id = ?`, u.Title, u.Description, u.Status, Now(), id)
	if err != nil {
		return Task{}, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return Task{}, notFound("task", id)
	}
	return s.GetTask(ctx, id)
}

// SetTaskStatus moves a task to status.
func (s *Store) SetTaskStatus(ctx context.Context, id, status string) error {
	_, err := s.UpdateTask(ctx, id, TaskUpdate{Status: &status})
	return err
}

// DeleteTask removes a task and, by cascade, its attempts, sessions,
// processes, logs and turns. The caller removes worktrees first.
func (s *Store) DeleteTask(ctx context.Context, id string) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM tasks WHERE id = ?`, id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return notFound("task", id)
	}
	return nil
}

// summaryColumns computes AttemptSummary for the task aliased t. The latest
// attempt is the newest by created_at, ties broken by the smaller id; the
// latest session within it likewise. An attempt is in progress while any
// of its non-dev-server processes runs; the last attempt failed when its
// newest non-dev-server process failed or was killed.
const summaryColumns = `
	la.id, la.branch, ls.id, ls.executor,
	EXISTS (SELECT 1 FROM attempts a2 JOIN execution_processes p2 ON p2.attempt_id = a2.id
		WHERE a2.task_id = t.id AND p2.status = 'running' AND p2.run_reason <> 'devserver'),
	COALESCE((SELECT p3.status IN ('failed','killed') FROM execution_processes p3
		WHERE p3.attempt_id = la.id AND p3.run_reason <> 'devserver'
		ORDER BY p3.created_at DESC, p3.id ASC LIMIT 1), FALSE)`

const summaryJoins = `
	LEFT JOIN attempts la ON la.id = (SELECT a.id FROM attempts a WHERE a.task_id = t.id ORDER BY a.created_at DESC, a.id ASC LIMIT 1)
	LEFT JOIN sessions ls ON ls.id = (SELECT s.id FROM sessions s WHERE s.attempt_id = la.id ORDER BY s.created_at DESC, s.id ASC LIMIT 1)`

// noLimit is a LIMIT that keeps every row: SQLite's LIMIT -1 is an error
// on PostgreSQL, and PostgreSQL's LIMIT NULL one on SQLite.
const noLimit = math.MaxInt64

// ListTasks returns a project's tasks, newest first, optionally only those
// in status, at most limit (0 = no limit), each with its attempt summary.
func (s *Store) ListTasks(ctx context.Context, projectID, status string, limit int) ([]TaskWithSummary, error) {
	if limit <= 0 {
		limit = noLimit
	}
	rows, err := s.db.QueryContext(ctx, `SELECT t.id, t.project_id, t.title, t.description, t.status, t.created_at, t.updated_at,`+
		summaryColumns+` FROM tasks t`+summaryJoins+`
		WHERE t.project_id = ? AND (? = '' OR t.status = ?)
		ORDER BY t.created_at DESC, t.id ASC LIMIT ?`, projectID, status, status, limit)
	if err != nil {
		return nil, err
	}
	return scanTasks(rows)
}

// ReviewQueue returns the tasks in inreview, of one project or (projectID
// "") of every project, oldest updated_at first (a task's updated_at is
// when it entered review unless it was edited since), at most limit (0 = no
// limit), each with its attempt summary.
func (s *Store) ReviewQueue(ctx context.Context, projectID string, limit int) ([]TaskWithSummary, error) {
	if limit <= 0 {
		limit = noLimit
	}
	rows, err := s.db.QueryContext(ctx, `SELECT t.id, t.project_id, t.title, t.description, t.status, t.created_at, t.updated_at,`+
		summaryColumns+` FROM tasks t`+summaryJoins+`
		WHERE t.status = ? AND (? = '' OR t.project_id = ?)
		ORDER BY t.updated_at ASC, t.id ASC LIMIT ?`, StatusInReview, projectID, projectID, limit)
	if err != nil {
		return nil, err
	}
	return scanTasks(rows)
}

func scanTasks(rows *sql.Rows) ([]TaskWithSummary, error) {
	defer rows.Close()
	out := []TaskWithSummary{}
	for rows.Next() {
		var (
			t                      TaskWithSummary
			aid, branch, sid, sexe sql.NullString
		)
		if err := rows.Scan(&t.ID, &t.ProjectID, &t.Title, &t.Description, &t.Status, &t.CreatedAt, &t.UpdatedAt,
			&aid, &branch, &sid, &sexe, &t.HasInProgressAttempt, &t.LastAttemptFailed); err != nil {
			return nil, fmt.Errorf("scan task: %w", err)
		}
		t.LatestAttemptID, t.LatestWorkspaceBranch = nullString(aid), nullString(branch)
		t.LatestSessionID, t.LatestSessionExecutor = nullString(sid), nullString(sexe)
		out = append(out, t)
	}
	return out, rows.Err()
}

// TaskSummary returns the attempt summary of one task.
func (s *Store) TaskSummary(ctx context.Context, taskID string) (AttemptSummary, error) {
	var (
		sum                    AttemptSummary
		aid, branch, sid, sexe sql.NullString
	)
	err := s.db.QueryRowContext(ctx, `SELECT `+summaryColumns+` FROM tasks t`+summaryJoins+` WHERE t.id = ?`, taskID).
		Scan(&aid, &branch, &sid, &sexe, &sum.HasInProgressAttempt, &sum.LastAttemptFailed)
	if errors.Is(err, sql.ErrNoRows) {
		return sum, notFound("task", taskID)
	}
	sum.LatestAttemptID, sum.LatestWorkspaceBranch = nullString(aid), nullString(branch)
	sum.LatestSessionID, sum.LatestSessionExecutor = nullString(sid), nullString(sexe)
	return sum, err
}
