package store

import (
	"context"
	"database/sql"
	"errors"
)

// Turn is one coding-agent run in a session: the prompt it was given and
// the summary (its final message) once it finished.
type Turn struct {
	ID        string
	SessionID string
	ProcessID *string
	Index     int64
	Prompt    string
	Summary   *string
	CreatedAt string
	UpdatedAt string
}

// AddTurn appends a turn to a session with the next dense index.
func (s *Store) AddTurn(ctx context.Context, sessionID, processID, prompt string) (Turn, error) {
	now := Now()
	t := Turn{ID: NewID(), SessionID: sessionID, ProcessID: &processID, Prompt: prompt, CreatedAt: now, UpdatedAt: now}
	err := s.tx(ctx, func(tx *Tx) error {
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(turn_index) + 1, 0) FROM turns WHERE session_id = ?`,
			sessionID).Scan(&t.Index); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO turns (id, session_id, process_id, turn_index, prompt, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, t.ID, t.SessionID, processID, t.Index, t.Prompt, t.CreatedAt, t.UpdatedAt)
		return err
	})
	return t, err
}

// SetTurnSummary records the summary of the turn run by processID.
func (s *Store) SetTurnSummary(ctx context.Context, processID, summary string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE turns SET summary = ?, updated_at = ? WHERE process_id = ?`, summary, Now(), processID)
	return err
}

// TurnPage is one page of a session transcript, oldest first.
type TurnPage struct {
	Turns      []Turn
	HasMore    bool
	NextCursor *int64
}

// TurnTail returns the newest limit turns with index < before (before < 0
// means from the end), oldest first.
func (s *Store) TurnTail(ctx context.Context, sessionID string, before int64, limit int) (TurnPage, error) {
	if before < 0 {
		before = 1<<63 - 1
	}
	return s.turnPage(ctx, `WHERE session_id = ? AND turn_index < ? ORDER BY turn_index DESC LIMIT ?`, true, limit, sessionID, before, limit)
}

// TurnAfter returns up to limit turns with index > after, oldest first.
func (s *Store) TurnAfter(ctx context.Context, sessionID string, after int64, limit int) (TurnPage, error) {
	return s.turnPage(ctx, `WHERE session_id = ? AND turn_index > ? ORDER BY turn_index ASC LIMIT ?`, false, limit, sessionID, after, limit+1)
}

func (s *Store) turnPage(ctx context.Context, where string, tail bool, limit int, args ...any) (TurnPage, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, session_id, process_id, turn_index, prompt, summary, created_at, updated_at
		FROM turns `+where, args...)
	if err != nil {
		return TurnPage{}, err
	}
	defer rows.Close()
	turns := []Turn{}
	for rows.Next() {
		var (
			t            Turn
			pid, summary sql.NullString
		)
		if err := rows.Scan(&t.ID, &t.SessionID, &pid, &t.Index, &t.Prompt, &summary, &t.CreatedAt, &t.UpdatedAt); err != nil {
			return TurnPage{}, err
		}
		t.ProcessID, t.Summary = nullString(pid), nullString(summary)
		turns = append(turns, t)
	}
	if err := rows.Err(); err != nil {
		return TurnPage{}, err
	}
	page := TurnPage{Turns: turns}
	if tail {
		for i, j := 0, len(turns)-1; i < j; i, j = i+1, j-1 {
			turns[i], turns[j] = turns[j], turns[i]
		}
		if len(turns) > 0 && turns[0].Index > 0 {
			c := turns[0].Index
			page.HasMore, page.NextCursor = true, &c
		}
	} else if len(turns) > limit {
		page.Turns, page.HasMore = turns[:limit], true
	}
	return page, nil
}

// QueuedMessage is the one follow-up waiting for a session's running
// process to finish.
type QueuedMessage struct {
	SessionID string
	Prompt    string
	Variant   string
	CreatedAt string
}

// QueueMessage stores the session's queued message, replacing any
// previous one.
func (s *Store) QueueMessage(ctx context.Context, sessionID, prompt, variant string) (QueuedMessage, error) {
	q := QueuedMessage{SessionID: sessionID, Prompt: prompt, Variant: variant, CreatedAt: Now()}
	_, err := s.db.ExecContext(ctx, `INSERT INTO queued_messages (session_id, prompt, variant, created_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (session_id) DO UPDATE SET prompt = excluded.prompt, variant = excluded.variant, created_at = excluded.created_at`,
		q.SessionID, q.Prompt, q.Variant, q.CreatedAt)
	if isForeignKey(err) {
		return QueuedMessage{}, notFound("session", sessionID)
	}
	return q, err
}

// QueuedMessage returns the session's queued message, if any.
func (s *Store) QueuedMessage(ctx context.Context, sessionID string) (*QueuedMessage, error) {
	var q QueuedMessage
	err := s.db.QueryRowContext(ctx, `SELECT session_id, prompt, variant, created_at FROM queued_messages WHERE session_id = ?`,
		sessionID).Scan(&q.SessionID, &q.Prompt, &q.Variant, &q.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &q, nil
}

// TakeQueuedMessage removes and returns the session's queued message, so
// exactly one consumer starts it.
func (s *Store) TakeQueuedMessage(ctx context.Context, sessionID string) (*QueuedMessage, error) {
	var q QueuedMessage
	err := s.db.QueryRowContext(ctx, `DELETE FROM queued_messages WHERE session_id = ? RETURNING session_id, prompt, variant, created_at`,
		sessionID).Scan(&q.SessionID, &q.Prompt, &q.Variant, &q.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &q, nil
}

// DiscardQueuedForAttempt deletes the queued messages of every session of
// an attempt, returning how many there were.
func (s *Store) DiscardQueuedForAttempt(ctx context.Context, attemptID string) (int64, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM queued_messages WHERE session_id IN
		(SELECT id FROM sessions WHERE attempt_id = ?)`, attemptID)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
