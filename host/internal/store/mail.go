package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
)

// Mail is one message between agents, or from an agent to the human inbox
// (ToAgentID "human"). ThreadID is the id of the first mail of its thread.
type Mail struct {
	ID            string
	FromAgentID   string
	FromAgentType string
	ToAgentID     string
	Subject       string
	Body          string
	InReplyTo     *string
	ThreadID      string
	ReadAt        *string
	CreatedAt     string
}

// EventMailSent is the event InsertMail records with each mail.
const EventMailSent = "mail.sent"

// InsertMail stores m and records its mail.sent event in the same
// transaction, which signals it to other hosts. ID, ThreadID and CreatedAt must be set.
func (s *Store) InsertMail(ctx context.Context, m Mail) error {
	data, err := json.Marshal(map[string]any{"mail_id": m.ID, "from_agent_id": m.FromAgentID, "to_agent_id": m.ToAgentID,
		"is_for_human": m.ToAgentID == "human", "subject": m.Subject, "thread_id": m.ThreadID})
	if err != nil {
		return err
	}
	return s.tx(ctx, func(tx *Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO mail (id, from_agent_id, from_agent_type, to_agent_id, subject, body,
			in_reply_to, thread_id, read_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			m.ID, m.FromAgentID, m.FromAgentType, m.ToAgentID, m.Subject, m.Body, m.InReplyTo, m.ThreadID, m.ReadAt, m.CreatedAt); err != nil {
			return err
		}
		if err := insertEvent(ctx, tx, EventMailSent, m.ID, data, m.CreatedAt); err != nil {
			return err
		}
		return tx.signal(ctx, SignalMail, m.ID)
	})
}

const mailColumns = `id, from_agent_id, from_agent_type, to_agent_id, subject, body, in_reply_to, thread_id, read_at, created_at`

func scanMail(sc interface{ Scan(...any) error }) (Mail, error) {
	var (
		m              Mail
		inReply, readA sql.NullString
	)
	err := sc.Scan(&m.ID, &m.FromAgentID, &m.FromAgentType, &m.ToAgentID, &m.Subject, &m.Body, &inReply, &m.ThreadID, &readA, &m.CreatedAt)
	m.InReplyTo, m.ReadAt = nullString(inReply), nullString(readA)
	return m, err
}

// GetMail returns one mail, or ErrNotFound.
func (s *Store) GetMail(ctx context.Context, id string) (Mail, error) {
	m, err := scanMail(s.db.QueryRowContext(ctx, `SELECT `+mailColumns+` FROM mail WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return m, notFound("mail", id)
	}
	return m, err
}

// MailSince returns the mail stored with a created_at at or after since,
// oldest first, at most limit: what a host polls to notify its sessions
// of mail other hosts stored.
func (s *Store) MailSince(ctx context.Context, since string, limit int) ([]Mail, error) {
	return s.queryMails(ctx, `SELECT `+mailColumns+` FROM mail WHERE created_at >= ? ORDER BY created_at, id LIMIT ?`, since, limit)
}

// ListInbox returns the mail addressed to to, newest first, at most limit
// (default 50); read mail only when includeRead.
func (s *Store) ListInbox(ctx context.Context, to string, includeRead bool, limit int) ([]Mail, error) {
	if limit <= 0 {
		limit = 50
	}
	q := `SELECT ` + mailColumns + ` FROM mail WHERE to_agent_id = ?`
	if !includeRead {
		q += ` AND read_at IS NULL`
	}
	return s.queryMails(ctx, q+` ORDER BY created_at DESC, id DESC LIMIT ?`, to, limit)
}

// queryMails runs a query over mailColumns and scans every row.
func (s *Store) queryMails(ctx context.Context, q string, args ...any) ([]Mail, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Mail
	for rows.Next() {
		m, err := scanMail(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// CountMail returns how many mails to holds, and how many are unread.
func (s *Store) CountMail(ctx context.Context, to string) (total, unread int, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT COUNT(*), COUNT(*) FILTER (WHERE read_at IS NULL) FROM mail WHERE to_agent_id = ?`, to).
		Scan(&total, &unread)
	return total, unread, err
}

// MarkMailRead sets the read time of mail id unless it is already read,
// and returns the mail as it now is.
func (s *Store) MarkMailRead(ctx context.Context, id, at string) (Mail, error) {
	if _, err := s.db.ExecContext(ctx, `UPDATE mail SET read_at = ? WHERE id = ? AND read_at IS NULL`, at, id); err != nil {
		return Mail{}, err
	}
	return s.GetMail(ctx, id)
}
