package store

// migrations are applied in order, each once, each in its own transaction;
// schema_migrations records which ran. Never edit a released migration:
// append a new one.
var migrations = []string{
	// 1: the board.
	`
CREATE TABLE projects (
	id         TEXT PRIMARY KEY,
	name       TEXT NOT NULL UNIQUE,
	created_at TEXT NOT NULL,
	updated_at TEXT NOT NULL
);
CREATE TABLE repos (
	id         TEXT PRIMARY KEY,
	name       TEXT NOT NULL,
	path       TEXT NOT NULL UNIQUE,
	created_at TEXT NOT NULL,
	updated_at TEXT NOT NULL
);
CREATE TABLE project_repos (
	project_id     TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
	repo_id        TEXT NOT NULL REFERENCES repos(id) ON DELETE CASCADE,
	target_branch  TEXT NOT NULL,
	setup_script   TEXT NOT NULL DEFAULT '',
	cleanup_script TEXT NOT NULL DEFAULT '',
	created_at     TEXT NOT NULL,
	PRIMARY KEY (project_id, repo_id)
);
CREATE INDEX project_repos_repo ON project_repos(repo_id);
CREATE TABLE tasks (
	id          TEXT PRIMARY KEY,
	project_id  TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
	title       TEXT NOT NULL,
	description TEXT NOT NULL DEFAULT '',
	status      TEXT NOT NULL CHECK (status IN ('todo','inprogress','inreview','done','cancelled')),
	created_at  TEXT NOT NULL,
	updated_at  TEXT NOT NULL
);
CREATE INDEX tasks_project ON tasks(project_id, created_at DESC, id);
CREATE TABLE attempts (
	id         TEXT PRIMARY KEY,
	task_id    TEXT NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
	branch     TEXT NOT NULL,
	executor   TEXT NOT NULL,
	variant    TEXT NOT NULL,
	dir        TEXT NOT NULL,
	created_at TEXT NOT NULL,
	updated_at TEXT NOT NULL
);
CREATE INDEX attempts_task ON attempts(task_id, created_at DESC, id);
CREATE TABLE attempt_repos (
	attempt_id     TEXT NOT NULL REFERENCES attempts(id) ON DELETE CASCADE,
	repo_id        TEXT NOT NULL REFERENCES repos(id),
	repo_name      TEXT NOT NULL,
	worktree_dir   TEXT NOT NULL,
	target_branch  TEXT NOT NULL,
	base_commit    TEXT NOT NULL,
	setup_script   TEXT NOT NULL DEFAULT '',
	cleanup_script TEXT NOT NULL DEFAULT '',
	position       INTEGER NOT NULL,
	PRIMARY KEY (attempt_id, repo_id)
);
CREATE INDEX attempt_repos_repo ON attempt_repos(repo_id);
CREATE TABLE sessions (
	id               TEXT PRIMARY KEY,
	attempt_id       TEXT NOT NULL REFERENCES attempts(id) ON DELETE CASCADE,
	executor         TEXT NOT NULL,
	variant          TEXT NOT NULL,
	agent_session_id TEXT NOT NULL DEFAULT '',
	created_at       TEXT NOT NULL,
	updated_at       TEXT NOT NULL
);
CREATE INDEX sessions_attempt ON sessions(attempt_id, created_at DESC, id);
CREATE TABLE execution_processes (
	id           TEXT PRIMARY KEY,
	attempt_id   TEXT NOT NULL REFERENCES attempts(id) ON DELETE CASCADE,
	session_id   TEXT REFERENCES sessions(id) ON DELETE CASCADE,
	run_reason   TEXT NOT NULL CHECK (run_reason IN ('setupscript','cleanupscript','codingagent','devserver')),
	status       TEXT NOT NULL CHECK (status IN ('running','completed','failed','killed')),
	command      TEXT NOT NULL,
	pid          INTEGER NOT NULL DEFAULT 0,
	identity     TEXT NOT NULL DEFAULT '',
	owner        TEXT NOT NULL DEFAULT '',
	exit_code    INTEGER,
	end_reason   TEXT NOT NULL DEFAULT '',
	started_at   TEXT NOT NULL,
	completed_at TEXT,
	created_at   TEXT NOT NULL,
	updated_at   TEXT NOT NULL
);
CREATE INDEX processes_attempt ON execution_processes(attempt_id, created_at DESC, id);
CREATE INDEX processes_session ON execution_processes(session_id, created_at DESC, id);
CREATE INDEX processes_running ON execution_processes(status) WHERE status = 'running';
CREATE TABLE log_entries (
	process_id  TEXT NOT NULL REFERENCES execution_processes(id) ON DELETE CASCADE,
	channel     TEXT NOT NULL CHECK (channel IN ('raw','normalized')),
	entry_index INTEGER NOT NULL,
	entry       TEXT NOT NULL,
	PRIMARY KEY (process_id, channel, entry_index)
) WITHOUT ROWID;
CREATE TABLE turns (
	id         TEXT PRIMARY KEY,
	session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
	process_id TEXT REFERENCES execution_processes(id) ON DELETE SET NULL,
	turn_index INTEGER NOT NULL,
	prompt     TEXT NOT NULL,
	summary    TEXT,
	created_at TEXT NOT NULL,
	updated_at TEXT NOT NULL,
	UNIQUE (session_id, turn_index)
);
CREATE INDEX turns_process ON turns(process_id);
CREATE TABLE queued_messages (
	session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
	prompt     TEXT NOT NULL,
	variant    TEXT NOT NULL DEFAULT '',
	created_at TEXT NOT NULL
);
CREATE TABLE idempotency_records (
	tool         TEXT NOT NULL,
	request_id   TEXT NOT NULL,
	payload_hash TEXT NOT NULL,
	state        TEXT NOT NULL CHECK (state IN ('in_progress','completed')),
	result       TEXT,
	created_at   TEXT NOT NULL,
	updated_at   TEXT NOT NULL,
	PRIMARY KEY (tool, request_id)
);
CREATE INDEX idempotency_state ON idempotency_records(state, updated_at);
`,
	// 2: the multi-agent layer: the decision log (host/internal/audit), mail
	// between agents and to the human inbox (host/internal/mail), and events.
	`
CREATE TABLE decision_log (
	id          TEXT PRIMARY KEY,
	kind        TEXT NOT NULL CHECK (kind IN ('call','decision')),
	agent_id    TEXT NOT NULL DEFAULT '',
	agent_type  TEXT NOT NULL DEFAULT '',
	tool        TEXT NOT NULL DEFAULT '',
	request_id  TEXT NOT NULL DEFAULT '',
	input       TEXT,
	result      TEXT,
	error_code  TEXT NOT NULL DEFAULT '',
	error       TEXT,
	status      TEXT NOT NULL CHECK (status IN ('invoked','ok','error')),
	duration_ms INTEGER,
	attempts    INTEGER NOT NULL DEFAULT 0,
	title       TEXT NOT NULL DEFAULT '',
	body        TEXT NOT NULL DEFAULT '',
	created_at  TEXT NOT NULL,
	finished_at TEXT
);
CREATE INDEX decision_log_time ON decision_log(created_at DESC, id);
CREATE INDEX decision_log_agent ON decision_log(agent_id, created_at DESC, id);
CREATE INDEX decision_log_tool ON decision_log(tool, created_at DESC, id);
CREATE INDEX decision_log_finished ON decision_log(finished_at) WHERE finished_at IS NOT NULL;
CREATE TABLE mail (
	id              TEXT PRIMARY KEY,
	from_agent_id   TEXT NOT NULL,
	from_agent_type TEXT NOT NULL DEFAULT '',
	to_agent_id     TEXT NOT NULL,
	subject         TEXT NOT NULL,
	body            TEXT NOT NULL,
	in_reply_to     TEXT REFERENCES mail(id) ON DELETE SET NULL,
	thread_id       TEXT NOT NULL,
	read_at         TEXT,
	created_at      TEXT NOT NULL
);
CREATE INDEX mail_inbox ON mail(to_agent_id, created_at DESC, id);
CREATE INDEX mail_unread ON mail(to_agent_id) WHERE read_at IS NULL;
CREATE INDEX mail_thread ON mail(thread_id, created_at);
CREATE TABLE events (
	seq        INTEGER PRIMARY KEY AUTOINCREMENT,
	id         TEXT NOT NULL UNIQUE,
	type       TEXT NOT NULL,
	subject_id TEXT NOT NULL DEFAULT '',
	data       TEXT NOT NULL DEFAULT '{}',
	created_at TEXT NOT NULL
);
CREATE INDEX events_type ON events(type, seq);
`,
	// 3: exactly-once across a crash (host/internal/idempotency): a claim names the
	// process holding it, so a restarted host can release the claims of a
	// dead one at once; and the board operations a keyed call made are
	// journaled with their answers, in the same transaction as the effect
	// where the operation allows, so a call run again after a crash finds
	// what it already did instead of doing it twice.
	`
ALTER TABLE idempotency_records ADD COLUMN owner TEXT NOT NULL DEFAULT '';
CREATE TABLE idempotency_effects (
	tool         TEXT NOT NULL,
	request_id   TEXT NOT NULL,
	payload_hash TEXT NOT NULL,
	op           TEXT NOT NULL,
	args_hash    TEXT NOT NULL,
	seq          INTEGER NOT NULL,
	result       TEXT NOT NULL,
	created_at   TEXT NOT NULL,
	PRIMARY KEY (tool, request_id, payload_hash, op, args_hash, seq)
) WITHOUT ROWID;
CREATE INDEX idempotency_effects_time ON idempotency_effects(created_at);
-- The decision log's retention by size (host/internal/audit) sums size, the bytes
-- a row stores, instead of measuring every payload on every pruning.
ALTER TABLE decision_log ADD COLUMN size INTEGER NOT NULL DEFAULT 0;
UPDATE decision_log SET size = 640 + COALESCE(octet_length(input), 0) + COALESCE(octet_length(result), 0) +
	COALESCE(octet_length(error), 0) + octet_length(title) + octet_length(body);
`,
	// 4: the HTTP requests a plugin made during a call (the egress its
	// settings allow, and the requests refused), a JSON array per row, for
	// the decision log (host/internal/audit).
	`
ALTER TABLE decision_log ADD COLUMN http TEXT;
`,
	// 5: several hosts on one store (host/internal/board/hosts.go): each
	// serving process's lease, the host that holds each attempt's
	// worktrees, and the operations one host queues for another.
	`
CREATE TABLE hosts (
	owner        TEXT PRIMARY KEY,
	host_id      TEXT NOT NULL,
	started_at   TEXT NOT NULL,
	heartbeat_at TEXT NOT NULL
);
CREATE INDEX hosts_heartbeat ON hosts(heartbeat_at);
ALTER TABLE attempts ADD COLUMN host_id TEXT NOT NULL DEFAULT '';
CREATE TABLE host_commands (
	id         TEXT PRIMARY KEY,
	host_id    TEXT NOT NULL,
	from_host  TEXT NOT NULL DEFAULT '',
	op         TEXT NOT NULL,
	args       TEXT NOT NULL,
	state      TEXT NOT NULL CHECK (state IN ('pending','running','done')),
	claimed_by TEXT NOT NULL DEFAULT '',
	result     TEXT NOT NULL DEFAULT '',
	error      TEXT NOT NULL DEFAULT '',
	created_at TEXT NOT NULL,
	updated_at TEXT NOT NULL
);
CREATE INDEX host_commands_pending ON host_commands(host_id, state, created_at);
CREATE INDEX host_commands_time ON host_commands(created_at);
-- Each host polls the mail of the last seconds to notify its sessions of
-- mail other hosts stored (host/internal/mail Watch).
CREATE INDEX mail_time ON mail(created_at, id);
`,
	// 6: dashboard sessions in the store, so that every host sharing it
	// honours a sign-in and a sign-out, and a restart keeps them. The
	// cookie's value is stored only as its SHA-256, the token it was made
	// with likewise.
	`
CREATE TABLE dashboard_sessions (
	id_hash    TEXT PRIMARY KEY,
	identity   TEXT NOT NULL,
	token_hash TEXT NOT NULL,
	csrf       TEXT NOT NULL,
	created_at TEXT NOT NULL,
	seen_at    TEXT NOT NULL
);
CREATE INDEX dashboard_sessions_seen ON dashboard_sessions(seen_at);
`,
	// 7: dashboard sessions bound to the bearer token they were made with.
	// mac is an HMAC, under a key derived from that token, over the row's
	// cookie digest, identity, token digest, CSRF token and creation time
	// (host/internal/dashboard): a row that whoever can write the store
	// copies under another cookie's digest, or rewrites to name another
	// identity, signs no one in. The sessions from before carry none and
	// are dropped: everyone signs in once more. Sessions are capped per
	// identity; the index finds one identity's least recently seen.
	`
DELETE FROM dashboard_sessions;
ALTER TABLE dashboard_sessions ADD COLUMN mac TEXT NOT NULL DEFAULT '';
CREATE INDEX dashboard_sessions_identity ON dashboard_sessions(identity, seen_at);
`,
	// 8: a request_id belongs to the caller that made the call
	// (host/internal/idempotency): the record keeps its identity, and
	// another caller naming the key is refused, never answered from it.
	// Records from before have caller '' and are refused to every
	// identified caller; they expire with their TTL.
	`
ALTER TABLE idempotency_records ADD COLUMN caller TEXT NOT NULL DEFAULT '';
`,
	// 9: attempt logs are capped and pruned (host/internal/board, logprune.go):
	// each process keeps log_bytes, the sum of LogRowSize over its entries,
	// so the caps and retention by size read one row per process instead of
	// measuring every entry. The index finds the logs retention may prune,
	// oldest first; a pruned log's bytes are 0 and it is not listed.
	`
ALTER TABLE execution_processes ADD COLUMN log_bytes INTEGER NOT NULL DEFAULT 0;
UPDATE execution_processes SET log_bytes = COALESCE((SELECT SUM(octet_length(entry)) + 64 * COUNT(*)
	FROM log_entries WHERE log_entries.process_id = execution_processes.id), 0);
CREATE INDEX processes_log_bytes ON execution_processes(updated_at, id) WHERE log_bytes > 0;
`,
}
