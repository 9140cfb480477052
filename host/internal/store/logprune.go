package store

import (
	"context"
	"encoding/json"
	"fmt"
)

// Retention of attempt logs. A process's log is pruned whole: its entries
// of both channels are deleted and each channel keeps one marker entry,
// which the board writes (it knows the entries' shapes), at the index
// after the last one deleted. Indexes are never reused, so a reader's
// after_entry_index cursor meets the marker instead of silently finding
// nothing, and a tail page is the marker alone.
//
// The logs of an attempt with a process still running are never pruned:
// its tail (which tail_attempt_logs reads by default) and every cursor into
// it stay as they were; the caps, not retention, bound what such a log
// takes. A process is claimed for pruning by zeroing its log_bytes in the
// transaction that replaces its entries, so hosts sharing a store that
// prune at once prune each log once.

// PrunedLog is one channel of a process log retention removes: what its
// marker entry says.
type PrunedLog struct {
	ProcessID string
	Channel   string
	// Entries and Bytes are what was removed (Bytes: the entries' own
	// bytes, without LogRowOverhead).
	Entries, Bytes int64
	// ByAge says the log was older than the age bound; else it was beyond
	// the size bound.
	ByAge bool
}

// LogMarker makes the entry that replaces a pruned channel's log.
type LogMarker func(PrunedLog) json.RawMessage

// AttemptLogBytes is what the attempt's logs take: the sum of its
// processes' log_bytes (LogRowSize over their entries), which a new
// process's log counts against the attempt's cap.
func (s *Store) AttemptLogBytes(ctx context.Context, attemptID string) (int64, error) {
	var n int64
	err := s.db.QueryRowContext(ctx, `SELECT CAST(COALESCE(SUM(log_bytes), 0) AS BIGINT) FROM execution_processes
		WHERE attempt_id = ?`, attemptID).Scan(&n)
	return n, err
}

// AllLogBytes is what every attempt log takes together, as retention by
// size counts it.
func (s *Store) AllLogBytes(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.QueryRowContext(ctx, `SELECT CAST(COALESCE(SUM(log_bytes), 0) AS BIGINT) FROM execution_processes
		WHERE log_bytes > 0`).Scan(&n)
	return n, err
}

// notRunning keeps the processes of attempts with a process running out of
// a prune (see the comment at the top).
const notRunning = `status <> 'running' AND attempt_id NOT IN (SELECT attempt_id FROM execution_processes WHERE status = 'running')`

// PruneLogs replaces by markers (marker makes them) the logs of the
// processes last written before before (a TimeFormat time; "" keeps every
// age), then, newest kept first, those beyond maxBytes of log_bytes (0
// keeps every size); the logs of attempts still running are kept but
// counted. It returns how many process logs it pruned.
func (s *Store) PruneLogs(ctx context.Context, before string, maxBytes int64, marker LogMarker) (int64, error) {
	var total int64
	if before != "" {
		ids, err := s.pruneCandidates(ctx, `SELECT id FROM execution_processes
			WHERE log_bytes > 0 AND updated_at < ? AND `+notRunning+` ORDER BY updated_at, id`, before)
		if err != nil {
			return 0, err
		}
		n, err := s.pruneProcessLogs(ctx, ids, true, marker)
		total += n
		if err != nil {
			return total, err
		}
	}
	if maxBytes > 0 {
		// The running total of log_bytes, newest first, over the
		// processes with a log; every log past the budget goes, but for
		// those of running attempts, which still count.
		ids, err := s.pruneCandidates(ctx, `SELECT id FROM (
				SELECT id, status, attempt_id, updated_at, SUM(log_bytes) OVER (ORDER BY updated_at DESC, id DESC ROWS UNBOUNDED PRECEDING) AS running
				FROM execution_processes WHERE log_bytes > 0) AS r
			WHERE running > ? AND `+notRunning+` ORDER BY updated_at, id`, maxBytes)
		if err != nil {
			return total, err
		}
		n, err := s.pruneProcessLogs(ctx, ids, false, marker)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

func (s *Store) pruneCandidates(ctx context.Context, query string, arg any) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, query, arg)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// pruneProcessLogs prunes each process's log in a transaction of its own,
// so a long prune never holds the store's write lock for long (SQLite has
// one writer: a running agent's log waits for it).
func (s *Store) pruneProcessLogs(ctx context.Context, ids []string, byAge bool, marker LogMarker) (int64, error) {
	var n int64
	for _, id := range ids {
		pruned := false
		err := s.tx(ctx, func(tx *Tx) error {
			pruned = false
			// The claim: a process another host pruned meanwhile, or that
			// runs again (never: an ended process does not restart, but
			// the check costs nothing), is left alone.
			res, err := tx.ExecContext(ctx, `UPDATE execution_processes SET log_bytes = 0
				WHERE id = ? AND log_bytes > 0 AND `+notRunning, id)
			if err != nil {
				return err
			}
			if k, _ := res.RowsAffected(); k == 0 {
				return nil
			}
			for _, channel := range []string{ChannelRaw, ChannelNormalized} {
				var count, last, size int64
				if err := tx.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(MAX(entry_index), -1),
					CAST(COALESCE(SUM(octet_length(entry)), 0) AS BIGINT) FROM log_entries
					WHERE process_id = ? AND channel = ?`, id, channel).Scan(&count, &last, &size); err != nil {
					return err
				}
				if count == 0 {
					continue
				}
				if _, err := tx.ExecContext(ctx, `DELETE FROM log_entries WHERE process_id = ? AND channel = ?`, id, channel); err != nil {
					return err
				}
				entry := marker(PrunedLog{ProcessID: id, Channel: channel, Entries: count, Bytes: size, ByAge: byAge})
				if _, err := tx.ExecContext(ctx, `INSERT INTO log_entries (process_id, channel, entry_index, entry) VALUES (?, ?, ?, ?)`,
					id, channel, last+1, string(entry)); err != nil {
					return fmt.Errorf("log marker of %s/%s: %w", id, channel, err)
				}
			}
			pruned = true
			return nil
		})
		if err != nil {
			return n, fmt.Errorf("prune log of process %s: %w", id, err)
		}
		if pruned {
			n++
		}
	}
	return n, nil
}
