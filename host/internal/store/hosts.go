package store

import (
	"context"
	"database/sql"
	"errors"
)

// States of a HostCommand.
const (
	HostCommandPending = "pending"
	HostCommandRunning = "running"
	HostCommandDone    = "done"
)

// HostCommand is an operation one host queued for another (the host that
// holds an attempt's worktree): the board's name of the operation, its
// arguments and, once done, its answer or error, as JSON.
type HostCommand struct {
	ID        string
	HostID    string
	From      string
	Op        string
	Args      string
	State     string
	ClaimedBy string
	Result    string
	Error     string
	CreatedAt string
	UpdatedAt string
}

// HeartbeatHost records that owner (a process serving hostID) is alive now.
func (s *Store) HeartbeatHost(ctx context.Context, owner, hostID string) error {
	now := Now()
	_, err := s.db.ExecContext(ctx, `INSERT INTO hosts (owner, host_id, started_at, heartbeat_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (owner) DO UPDATE SET heartbeat_at = excluded.heartbeat_at, host_id = excluded.host_id`, owner, hostID, now, now)
	return err
}

// LiveHosts maps the owners whose lease was renewed at or after since to
// their host ids.
func (s *Store) LiveHosts(ctx context.Context, since string) (map[string]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT owner, host_id FROM hosts WHERE heartbeat_at >= ?`, since)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var owner, host string
		if err := rows.Scan(&owner, &host); err != nil {
			return nil, err
		}
		out[owner] = host
	}
	return out, rows.Err()
}

// DropHost removes owner's lease (a clean shutdown).
func (s *Store) DropHost(ctx context.Context, owner string) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM hosts WHERE owner = ?`, owner)
	return err
}

// EnqueueHostCommand queues c, pending, for c.HostID, and signals that host.
func (s *Store) EnqueueHostCommand(ctx context.Context, c HostCommand) error {
	now := Now()
	return s.execSignalled(ctx, SignalHostCommand, c.HostID, `INSERT INTO host_commands (id, host_id, from_host, op, args, state, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, 'pending', ?, ?)`, c.ID, c.HostID, c.From, c.Op, c.Args, now, now)
}

// ClaimHostCommands marks up to limit pending commands for hostID running
// under owner and returns them, oldest first; of concurrent claimers, one
// gets each (the UPDATE checks the state it read).
func (s *Store) ClaimHostCommands(ctx context.Context, hostID, owner string, limit int) ([]HostCommand, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id FROM host_commands WHERE host_id = ? AND state = 'pending'
		ORDER BY created_at, id LIMIT ?`, hostID, limit)
	if err != nil {
		return nil, err
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var out []HostCommand
	for _, id := range ids {
		res, err := s.db.ExecContext(ctx, `UPDATE host_commands SET state = 'running', claimed_by = ?, updated_at = ?
			WHERE id = ? AND state = 'pending'`, owner, Now(), id)
		if err != nil {
			return out, err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			continue // another process of this host took it
		}
		c, err := s.GetHostCommand(ctx, id)
		if err != nil {
			return out, err
		}
		out = append(out, c)
	}
	return out, nil
}

// FinishHostCommand records a command's answer (or error), marks it done
// and signals its caller.
func (s *Store) FinishHostCommand(ctx context.Context, id, result, errText string) error {
	return s.execSignalled(ctx, SignalCommandDone, id, `UPDATE host_commands SET state = 'done', result = ?, error = ?, updated_at = ? WHERE id = ?`,
		result, errText, Now(), id)
}

// GetHostCommand reads one command.
func (s *Store) GetHostCommand(ctx context.Context, id string) (HostCommand, error) {
	var c HostCommand
	err := s.db.QueryRowContext(ctx, `SELECT id, host_id, from_host, op, args, state, claimed_by, result, error, created_at, updated_at
		FROM host_commands WHERE id = ?`, id).Scan(&c.ID, &c.HostID, &c.From, &c.Op, &c.Args, &c.State, &c.ClaimedBy,
		&c.Result, &c.Error, &c.CreatedAt, &c.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return c, notFound("host command", id)
	}
	return c, err
}

// CancelHostCommand withdraws a command no one has claimed.
func (s *Store) CancelHostCommand(ctx context.Context, id string) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM host_commands WHERE id = ? AND state = 'pending'`, id)
	return err
}

// PruneHostCommands deletes commands created before before, and leases not
// renewed since then.
func (s *Store) PruneHostCommands(ctx context.Context, before string) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM host_commands WHERE created_at < ?`, before); err != nil {
		return err
	}
	_, err := s.db.ExecContext(ctx, `DELETE FROM hosts WHERE heartbeat_at < ?`, before)
	return err
}

// HostLease is one process's lease: the host it serves, when it started
// and when it last renewed the lease.
type HostLease struct {
	Owner       string
	HostID      string
	StartedAt   string
	HeartbeatAt string
}

// HostLeases returns every lease still stored (live or lapsed, until
// PruneHostCommands removes it), by host id and owner.
func (s *Store) HostLeases(ctx context.Context) ([]HostLease, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT owner, host_id, started_at, heartbeat_at FROM hosts ORDER BY host_id, owner`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []HostLease
	for rows.Next() {
		var l HostLease
		if err := rows.Scan(&l.Owner, &l.HostID, &l.StartedAt, &l.HeartbeatAt); err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

// RunningAttemptsByHost counts, by the host that holds their worktree, the
// attempts with a running process ("" for attempts older than hosts).
func (s *Store) RunningAttemptsByHost(ctx context.Context) (map[string]int, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT a.host_id, COUNT(DISTINCT a.id) FROM attempts a
		JOIN execution_processes p ON p.attempt_id = a.id WHERE p.status = 'running' GROUP BY a.host_id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var host string
		var n int
		if err := rows.Scan(&host, &n); err != nil {
			return nil, err
		}
		out[host] = n
	}
	return out, rows.Err()
}
