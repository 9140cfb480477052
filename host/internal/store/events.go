package store

import (
	"context"
	"encoding/json"
)

// Event types recorded in the events table. mail.sent is recorded by
// InsertMail; the board records the others with RecordEvent.
const (
	EventTaskCreated     = "task.created"
	EventAttemptFinished = "attempt.finished"
)

// Event is one row of the events table: something that happened, for
// whoever polls (Seq increases).
type Event struct {
	Seq       int64           `json:"seq"`
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	SubjectID string          `json:"subject_id"`
	Data      json.RawMessage `json:"data"`
	CreatedAt string          `json:"created_at"`
}

// RecordEvent appends an event of type typ about subjectID (a task,
// attempt or mail id); data is encoded as JSON (nil is {}).
func (s *Store) RecordEvent(ctx context.Context, typ, subjectID string, data any) error {
	b := []byte("{}")
	if data != nil {
		var err error
		if b, err = json.Marshal(data); err != nil {
			return err
		}
	}
	// conn: an event of an operation run by RunEffect commits with it.
	_, err := s.conn(ctx).ExecContext(ctx, `INSERT INTO events (id, type, subject_id, data, created_at) VALUES (?, ?, ?, ?, ?)`,
		NewID(), typ, subjectID, string(b), Now())
	return err
}

func insertEvent(ctx context.Context, tx *Tx, typ, subjectID string, data []byte, at string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO events (id, type, subject_id, data, created_at) VALUES (?, ?, ?, ?, ?)`,
		NewID(), typ, subjectID, string(data), at)
	return err
}

// ListEvents returns events after seq afterSeq, oldest first, at most limit
// (default 100); typ "" selects every type.
func (s *Store) ListEvents(ctx context.Context, typ string, afterSeq int64, limit int) ([]Event, error) {
	if limit <= 0 {
		limit = 100
	}
	q, args := `SELECT seq, id, type, subject_id, data, created_at FROM events WHERE seq > ?`, []any{afterSeq}
	if typ != "" {
		q, args = q+` AND type = ?`, append(args, typ)
	}
	rows, err := s.db.QueryContext(ctx, q+` ORDER BY seq LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var (
			e    Event
			data string
		)
		if err := rows.Scan(&e.Seq, &e.ID, &e.Type, &e.SubjectID, &data, &e.CreatedAt); err != nil {
			return nil, err
		}
		e.Data = json.RawMessage(data)
		out = append(out, e)
	}
	return out, rows.Err()
}
