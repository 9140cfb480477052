package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
)

// Decision log kinds and statuses (decision_log.kind, decision_log.status).
const (
	DecisionKindCall     = "call"
	DecisionKindDecision = "decision"

	DecisionInvoked = "invoked"
	DecisionOK      = "ok"
	DecisionError   = "error"
)

// Decision is one row of the decision log: a tool call (kind call, status
// invoked until it finishes) or a deliberate entry (kind decision, status
// ok, with title and body). Input, Result and Error are JSON or nil.
type Decision struct {
	ID         string          `json:"id"`
	Kind       string          `json:"kind"`
	AgentID    string          `json:"agent_id"`
	AgentType  string          `json:"agent_type"`
	Tool       string          `json:"tool"`
	RequestID  string          `json:"request_id"`
	Input      json.RawMessage `json:"input,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	ErrorCode  string          `json:"error_code"`
	Error      json.RawMessage `json:"error,omitempty"`
	Status     string          `json:"status"`
	DurationMS *int64          `json:"duration_ms"`
	Attempts   int             `json:"attempts"`
	Title      string          `json:"title"`
	Body       string          `json:"body"`
	CreatedAt  string          `json:"created_at"`
	FinishedAt *string         `json:"finished_at"`
	// HTTP lists the HTTP requests the plugin made during the call (a JSON
	// array; nil when it made none).
	HTTP json.RawMessage `json:"http,omitempty"`
}

// DecisionFinish is how a call row ends.
type DecisionFinish struct {
	Status     string
	Result     json.RawMessage
	ErrorCode  string
	Error      json.RawMessage
	DurationMS int64
	Attempts   int
	FinishedAt string
	HTTP       json.RawMessage
}

// DecisionRowOverhead is what a decision-log row costs beyond its payloads
// (ids, times, the other columns, its four index entries, page slack), as
// measured: a capped 1 KiB echo call takes 1.4 KB of board.db, 0.75 KB of
// it payloads. Retention by size counts it, so that size tracks the file
// and many small rows weigh too.
const DecisionRowOverhead = 640

// decisionSize is the size column of a row: the bytes it stores.
func decisionSize(d *Decision) int64 {
	return DecisionRowOverhead + int64(len(d.Input)+len(d.Result)+len(d.Error)+len(d.Title)+len(d.Body)+len(d.HTTP))
}

func jsonOrNil(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

// InsertDecision adds a row (one INSERT). ID and CreatedAt must be set.
func (s *Store) InsertDecision(ctx context.Context, d Decision) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO decision_log (id, kind, agent_id, agent_type, tool, request_id, input, result,
		error_code, error, status, duration_ms, attempts, title, body, created_at, finished_at, size, http)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		d.ID, d.Kind, d.AgentID, d.AgentType, d.Tool, d.RequestID, jsonOrNil(d.Input), jsonOrNil(d.Result),
		d.ErrorCode, jsonOrNil(d.Error), d.Status, d.DurationMS, d.Attempts, d.Title, d.Body, d.CreatedAt, d.FinishedAt, decisionSize(&d), jsonOrNil(d.HTTP))
	return err
}

// FinishDecision records the outcome of the call row id (one UPDATE).
func (s *Store) FinishDecision(ctx context.Context, id string, f DecisionFinish) error {
	r, err := s.db.ExecContext(ctx, `UPDATE decision_log SET status = ?, result = ?, error_code = ?, error = ?, duration_ms = ?,
		attempts = ?, finished_at = ?, http = ?, size = size + ? WHERE id = ?`,
		f.Status, jsonOrNil(f.Result), f.ErrorCode, jsonOrNil(f.Error), f.DurationMS, f.Attempts, f.FinishedAt, jsonOrNil(f.HTTP),
		len(f.Result)+len(f.Error)+len(f.HTTP), id)
	if err != nil {
		return err
	}
	if n, _ := r.RowsAffected(); n == 0 {
		return notFound("decision", id)
	}
	return nil
}

// DecisionFilter selects decision log rows; its fields combine (AND),
// and an empty one selects every row.
type DecisionFilter struct {
	AgentID string
	Tool    string
	// Status selects one status (DecisionInvoked, DecisionOK,
	// DecisionError).
	Status string
	// ErrorCode selects the calls that failed with this envelope code.
	ErrorCode string
	// CreatedFrom and CreatedBefore select the rows created at or after
	// and before these times (TimeFormat): a time range of calls started.
	CreatedFrom, CreatedBefore string
	// Limit caps the rows (default 50).
	Limit int
	// FinishedAfter, when set, selects rows finished at or after this time
	// (TimeFormat), oldest first: what a follower polls. Without it the
	// newest Limit rows by creation are returned, newest first.
	FinishedAfter string
}

// where returns f's conditions and their arguments.
func (f DecisionFilter) where() (where []string, args []any) {
	for _, c := range []struct {
		cond, value string
	}{
		{"agent_id = ?", f.AgentID}, {"tool = ?", f.Tool}, {"status = ?", f.Status}, {"error_code = ?", f.ErrorCode},
		{"created_at >= ?", f.CreatedFrom}, {"created_at < ?", f.CreatedBefore},
		{"finished_at IS NOT NULL AND finished_at >= ?", f.FinishedAfter},
	} {
		if c.value != "" {
			where, args = append(where, c.cond), append(args, c.value)
		}
	}
	return where, args
}

const decisionColumns = `id, kind, agent_id, agent_type, tool, request_id, input, result, error_code, error, status,
	duration_ms, attempts, title, body, created_at, finished_at, http`

// ListDecisions returns decision log rows (see DecisionFilter).
func (s *Store) ListDecisions(ctx context.Context, f DecisionFilter) ([]Decision, error) {
	if f.Limit <= 0 {
		f.Limit = 50
	}
	where, args := f.where()
	order := "created_at DESC, id DESC"
	if f.FinishedAfter != "" {
		order = "finished_at, id"
	}
	q := `SELECT ` + decisionColumns + ` FROM decision_log`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY ` + order + ` LIMIT ?`
	rows, err := s.db.QueryContext(ctx, q, append(args, f.Limit)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Decision
	for rows.Next() {
		d, err := scanDecision(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// GetDecision returns one row.
func (s *Store) GetDecision(ctx context.Context, id string) (Decision, error) {
	d, err := scanDecision(s.db.QueryRowContext(ctx, `SELECT `+decisionColumns+` FROM decision_log WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return d, notFound("decision", id)
	}
	return d, err
}

type scanner interface{ Scan(...any) error }

func scanDecision(r scanner) (Decision, error) {
	var (
		d                    Decision
		input, result, errJS sql.NullString
		duration             sql.NullInt64
		finished, httpJS     sql.NullString
	)
	err := r.Scan(&d.ID, &d.Kind, &d.AgentID, &d.AgentType, &d.Tool, &d.RequestID, &input, &result, &d.ErrorCode, &errJS,
		&d.Status, &duration, &d.Attempts, &d.Title, &d.Body, &d.CreatedAt, &finished, &httpJS)
	if err != nil {
		return d, err
	}
	if input.Valid {
		d.Input = json.RawMessage(input.String)
	}
	if result.Valid {
		d.Result = json.RawMessage(result.String)
	}
	if errJS.Valid {
		d.Error = json.RawMessage(errJS.String)
	}
	if httpJS.Valid {
		d.HTTP = json.RawMessage(httpJS.String)
	}
	if duration.Valid {
		d.DurationMS = &duration.Int64
	}
	d.FinishedAt = nullString(finished)
	return d, nil
}

// DecisionWrite is one write of WriteDecisions: an Insert, or the Finish
// of row ID.
type DecisionWrite struct {
	Insert *Decision
	ID     string
	Finish *DecisionFinish
}

// WriteDecisions applies writes in order in one transaction: what the
// decision log's writer does with the writes of many calls at once. A
// Finish of a missing row is skipped.
func (s *Store) WriteDecisions(ctx context.Context, writes []DecisionWrite) error {
	return s.tx(ctx, func(tx *Tx) error {
		ins, err := tx.PrepareContext(ctx, `INSERT INTO decision_log (id, kind, agent_id, agent_type, tool, request_id, input, result,
			error_code, error, status, duration_ms, attempts, title, body, created_at, finished_at, size, http)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer ins.Close()
		upd, err := tx.PrepareContext(ctx, `UPDATE decision_log SET status = ?, result = ?, error_code = ?, error = ?, duration_ms = ?,
			attempts = ?, finished_at = ?, http = ?, size = size + ? WHERE id = ?`)
		if err != nil {
			return err
		}
		defer upd.Close()
		for _, w := range writes {
			switch {
			case w.Insert != nil:
				d := w.Insert
				_, err = ins.ExecContext(ctx, d.ID, d.Kind, d.AgentID, d.AgentType, d.Tool, d.RequestID, jsonOrNil(d.Input), jsonOrNil(d.Result),
					d.ErrorCode, jsonOrNil(d.Error), d.Status, d.DurationMS, d.Attempts, d.Title, d.Body, d.CreatedAt, d.FinishedAt, decisionSize(d), jsonOrNil(d.HTTP))
			case w.Finish != nil:
				f := w.Finish
				_, err = upd.ExecContext(ctx, f.Status, jsonOrNil(f.Result), f.ErrorCode, jsonOrNil(f.Error), f.DurationMS, f.Attempts, f.FinishedAt,
					jsonOrNil(f.HTTP), len(f.Result)+len(f.Error)+len(f.HTTP), w.ID)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// PruneDecisions deletes the decision-log rows created before before (a
// TimeFormat time; "" keeps every age), then, newest kept first, the rows
// beyond maxBytes of size (0 keeps every size). It returns how many rows
// it deleted.
func (s *Store) PruneDecisions(ctx context.Context, before string, maxBytes int64) (int64, error) {
	var total int64
	if before != "" {
		res, err := s.db.ExecContext(ctx, `DELETE FROM decision_log WHERE created_at < ?`, before)
		if err != nil {
			return 0, err
		}
		n, _ := res.RowsAffected()
		total += n
	}
	if maxBytes > 0 {
		// The running total of size, newest first, walks the created_at
		// index once; every row past the budget goes.
		res, err := s.db.ExecContext(ctx, `DELETE FROM decision_log WHERE id IN (
			SELECT id FROM (SELECT id, SUM(size) OVER (ORDER BY created_at DESC, id DESC ROWS UNBOUNDED PRECEDING) AS running
				FROM decision_log) AS r WHERE running > ?)`, maxBytes)
		if err != nil {
			return total, err
		}
		n, _ := res.RowsAffected()
		total += n
	}
	return total, nil
}

// DecisionLogSize returns the decision log's row count and the sum of
// their sizes (what retention by size counts).
func (s *Store) DecisionLogSize(ctx context.Context) (rows, bytes int64, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT COUNT(*), CAST(COALESCE(SUM(size), 0) AS BIGINT) FROM decision_log`).Scan(&rows, &bytes)
	return rows, bytes, err
}

// Checkpoint copies the write-ahead log into the database file and
// truncates it, so that the file's size is what the board holds (the
// decision log's benchmarks measure it). On PostgreSQL it does nothing.
func (s *Store) Checkpoint(ctx context.Context) error {
	if s.pg {
		return nil // PostgreSQL checkpoints on its own
	}
	_, err := s.db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
	return err
}
