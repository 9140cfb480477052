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

// LogRowOverhead is what a log row costs beyond its entry: its key
// (process id, channel, index) and the page's slack. The caps on attempt
// logs and retention by size count it (LogRowSize), so that a flood of
// empty lines weighs too, not only long ones.
const LogRowOverhead = 64

// LogRowSize is what one entry counts against the caps and the retention
// of attempt logs: the bytes it stores.
func LogRowSize(entry []byte) int64 { return LogRowOverhead + int64(len(entry)) }

// maxLogPageBytes bounds the entries of one page of a log: a page of long
// lines (500 of 64 KiB) would exceed what a plugin may answer (4 MiB) and
// leave the log unreadable through tail_attempt_logs. A page holds at
// least one entry whatever its size; one is at most some 400 KiB (a 64 KiB
// line of escaped characters), and a plugin re-encoding the page's text
// stays within its cap.
const maxLogPageBytes = 512 << 10

// AppendLogs writes rows in one transaction and bumps the updated_at of
// every process they belong to, which is what last_activity_at reads, and
// its log_bytes, the sum of LogRowSize over its entries, which the caps
// and retention of attempt logs read (logprune.go). Indexes are assigned
// by the caller, dense from 0 per process and channel; the primary key
// refuses a duplicate.
func (s *Store) AppendLogs(ctx context.Context, rows []LogRow) error {
	if len(rows) == 0 {
		return nil
	}
	return s.tx(ctx, func(tx *Tx) error {
		touched := map[string]int64{}
		for _, r := range rows {
			touched[r.ProcessID] += LogRowSize(r.Entry)
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
		for id, size := range touched {
			if _, err := tx.ExecContext(ctx, `UPDATE execution_processes SET updated_at = ?, log_bytes = log_bytes + ? WHERE id = ?`, now, size, id); err != nil {
				return err
			}
		}
		return nil
	})
}

// LogCount returns the next index to append to a process channel: the
// number of entries while they are dense from 0, as they are until
// retention replaces a log by its marker (logprune.go), which keeps the
// index after the last entry it removed.
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
// 0 means from the end), oldest first, fewer when they would exceed
// maxLogPageBytes. Each page is one range scan on the primary key,
// whatever the log's length.
func (s *Store) LogTail(ctx context.Context, processID, channel string, before int64, limit int) (LogPage, error) {
	if before < 0 {
		before = 1<<63 - 1
	}
	// One row more than the page says whether older entries exist:
	// indexes are not dense from 0 once retention replaced a log by its
	// marker (logprune.go), so the oldest index returned cannot tell.
	rows, err := s.db.QueryContext(ctx, `SELECT entry_index, entry FROM log_entries
		WHERE process_id = ? AND channel = ? AND entry_index < ? ORDER BY entry_index DESC LIMIT ?`,
		processID, channel, before, limit+1)
	if err != nil {
		return LogPage{}, err
	}
	entries, err := scanEntries(rows)
	if err != nil {
		return LogPage{}, err
	}
	page := LogPage{}
	if n := pageFits(entries, limit); n < len(entries) {
		entries, page.HasMore = entries[:n], true
	}
	for i, j := 0, len(entries)-1; i < j; i, j = i+1, j-1 {
		entries[i], entries[j] = entries[j], entries[i]
	}
	page.Entries = entries
	if page.HasMore && len(entries) > 0 {
		c := entries[0].Index
		page.NextCursor = &c
	}
	return page, nil
}

// pageFits is how many of entries, in the order read, make a page: at most
// limit, and no more than maxLogPageBytes of entries but at least one.
func pageFits(entries []LogEntry, limit int) int {
	n, size := 0, 0
	for n < len(entries) && n < limit {
		size += len(entries[n].Entry)
		if n > 0 && size > maxLogPageBytes {
			break
		}
		n++
	}
	return n
}

// LogAfter returns up to limit entries with index > after, oldest first,
// fewer when they would exceed maxLogPageBytes.
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
	if n := pageFits(entries, limit); n < len(entries) {
		page.Entries, page.HasMore = entries[:n], true
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
