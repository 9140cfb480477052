package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/plugboard/plugboard/abi/tasks"
)

// Log channels (tasks.Channel values).
const (
	ChannelRaw        = tasks.ChannelRaw
	ChannelNormalized = tasks.ChannelNormalized
)

// LogRow is one log entry to append.
type LogRow struct {
	ProcessID string
	Channel   string
	Index     int64
	Entry     json.RawMessage
}

// LogEntry is one stored entry.
type LogEntry struct {
	Index int64
	Entry json.RawMessage
}

// logChunk is how many log rows one PostgreSQL INSERT carries (4
// parameters each, far below the protocol's 65,535).
const logChunk = 200

// AppendLogs writes rows in one transaction and bumps the updated_at of
// every process they belong to, which is what last_activity_at reads.
// Indexes are assigned by the caller, dense from 0 per process and
// channel; the primary key refuses a duplicate.
func (s *Store) AppendLogs(ctx context.Context, rows []LogRow) error {
	if len(rows) == 0 {
		return nil
	}
	return s.tx(ctx, func(tx *Tx) error {
		touched := map[string]bool{}
		for _, r := range rows {
			touched[r.ProcessID] = true
		}
		if s.Postgres() {
			// A round trip per row is ≈ 125 µs on PostgreSQL: rows go in
			// multi-row INSERTs of up to logChunk (SQLite's prepared
			// statement costs ≈ 3.5 µs a row, without a round trip).
			for start := 0; start < len(rows); start += logChunk {
				chunk := rows[start:min(start+logChunk, len(rows))]
				args := make([]any, 0, 4*len(chunk))
				for _, r := range chunk {
					args = append(args, r.ProcessID, r.Channel, r.Index, string(r.Entry))
				}
				q := `INSERT INTO log_entries (process_id, channel, entry_index, entry) VALUES (?, ?, ?, ?)` +
					strings.Repeat(`, (?, ?, ?, ?)`, len(chunk)-1)
				if _, err := tx.ExecContext(ctx, q, args...); err != nil {
					return fmt.Errorf("append log %s/%s#%d..%d: %w", chunk[0].ProcessID, chunk[0].Channel, chunk[0].Index, chunk[len(chunk)-1].Index, err)
				}
			}
		} else {
			ins, err := tx.PrepareContext(ctx, `INSERT INTO log_entries (process_id, channel, entry_index, entry) VALUES (?, ?, ?, ?)`)
			if err != nil {
				return err
			}
			defer ins.Close()
			for _, r := range rows {
				if _, err := ins.ExecContext(ctx, r.ProcessID, r.Channel, r.Index, string(r.Entry)); err != nil {
					return fmt.Errorf("append log %s/%s#%d: %w", r.ProcessID, r.Channel, r.Index, err)
				}
			}
		}
		now := Now()
		for id := range touched {
			if _, err := tx.ExecContext(ctx, `UPDATE execution_processes SET updated_at = ? WHERE id = ?`, now, id); err != nil {
				return err
			}
		}
		return nil
	})
}

// LogCount returns the number of entries of a process channel, which is
// also the next index to append (indexes are dense from 0).
func (s *Store) LogCount(ctx context.Context, processID, channel string) (int64, error) {
	var n int64
	err := s.db.QueryRowContext(ctx, `SELECT COALESCE(MAX(entry_index) + 1, 0) FROM log_entries
		WHERE process_id = ? AND channel = ?`, processID, channel).Scan(&n)
	return n, err
}

// LogPage is one page of a log, in chronological order.
type LogPage struct {
	Entries []LogEntry
	// HasMore says, for a tail or cursor page, that older entries exist;
	// for an after page, that newer entries exist beyond this page.
	HasMore bool
	// NextCursor is the index of the oldest entry returned when older
	// entries exist (pass it as cursor for the next older page).
	NextCursor *int64
}

// LogTail returns the newest limit entries with index < before (before <
// 0 means from the end), oldest first. Each page is one range scan on the
// primary key, whatever the log's length.
func (s *Store) LogTail(ctx context.Context, processID, channel string, before int64, limit int) (LogPage, error) {
	if before < 0 {
		before = 1<<63 - 1
	}
	rows, err := s.db.QueryContext(ctx, `SELECT entry_index, entry FROM log_entries
		WHERE process_id = ? AND channel = ? AND entry_index < ? ORDER BY entry_index DESC LIMIT ?`,
		processID, channel, before, limit)
	if err != nil {
		return LogPage{}, err
	}
	entries, err := scanEntries(rows)
	if err != nil {
		return LogPage{}, err
	}
	for i, j := 0, len(entries)-1; i < j; i, j = i+1, j-1 {
		entries[i], entries[j] = entries[j], entries[i]
	}
	page := LogPage{Entries: entries}
	// Indexes are dense from 0, so older entries exist exactly when the
	// oldest returned is not 0.
	if len(entries) > 0 && entries[0].Index > 0 {
		page.HasMore = true
		c := entries[0].Index
		page.NextCursor = &c
	}
	return page, nil
}

// LogAfter returns up to limit entries with index > after, oldest first.
func (s *Store) LogAfter(ctx context.Context, processID, channel string, after int64, limit int) (LogPage, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT entry_index, entry FROM log_entries
		WHERE process_id = ? AND channel = ? AND entry_index > ? ORDER BY entry_index ASC LIMIT ?`,
		processID, channel, after, limit+1)
	if err != nil {
		return LogPage{}, err
	}
	entries, err := scanEntries(rows)
	if err != nil {
		return LogPage{}, err
	}
	page := LogPage{Entries: entries}
	if len(entries) > limit {
		page.Entries, page.HasMore = entries[:limit], true
	}
	return page, nil
}

func scanEntries(rows interface {
	Next() bool
	Scan(...any) error
	Err() error
	Close() error
}) ([]LogEntry, error) {
	defer rows.Close()
	out := []LogEntry{}
	for rows.Next() {
		var (
			e    LogEntry
			text string
		)
		if err := rows.Scan(&e.Index, &text); err != nil {
			return nil, err
		}
		e.Entry = json.RawMessage(text)
		out = append(out, e)
	}
	return out, rows.Err()
}
