package tasks

import "encoding/json"

// Tool inputs and outputs of the task tools. The board takes most inputs
// as its operations' arguments and answers most with the outputs themselves
// (see board.go for the exceptions).

// NoInput is the input of a tool without arguments.
type NoInput struct{}

// ---- discovery ----

// ProjectsOut answers list_projects.
type ProjectsOut struct {
	Projects []Project `json:"projects" jsonschema:"every project, by name; empty when none exist"`
}

// Project is one project.
type Project struct {
	ProjectID string `json:"project_id" jsonschema:"project id (UUID); pass it to list_repos, list_tasks and create_task"`
	Name      string `json:"name" jsonschema:"project name, unique on this board"`
	RepoCount int    `json:"repo_count" jsonschema:"number of git repos in the project (0 or more)"`
	CreatedAt string `json:"created_at" jsonschema:"when the project was created (RFC3339)"`
	UpdatedAt string `json:"updated_at" jsonschema:"when the project last changed (RFC3339)"`
}

// ProjectIn identifies a project.
type ProjectIn struct {
	ProjectID string `json:"project_id" jsonschema:"project id (UUID) from list_projects"`
}

// ReposOut answers list_repos.
type ReposOut struct {
	ProjectID string `json:"project_id" jsonschema:"the project listed (UUID)"`
	Repos     []Repo `json:"repos" jsonschema:"the project's git repos, by name; an attempt works on all of them unless start_task_attempt.repos selects some"`
}

// Repo is one repo of a project.
type Repo struct {
	RepoID           string `json:"repo_id" jsonschema:"repo id (UUID); pass it in start_task_attempt.repos[].repo_id"`
	RepoName         string `json:"repo_name" jsonschema:"repo name; attempt file paths start with it (repo_name/path)"`
	TargetBranch     string `json:"target_branch" jsonschema:"git branch attempts start from and merge back into, unless start_task_attempt overrides it"`
	HasSetupScript   bool   `json:"has_setup_script" jsonschema:"true when a setup script runs in the worktree before the agent (run_reason setupscript)"`
	HasCleanupScript bool   `json:"has_cleanup_script" jsonschema:"true when a cleanup script runs after each agent run (run_reason cleanupscript)"`
}

// ExecutorsOut answers list_executors.
type ExecutorsOut struct {
	Executors []Executor `json:"executors" jsonschema:"every executor profile on this host"`
}

// Executor is one executor profile.
type Executor struct {
	Executor       string   `json:"executor" jsonschema:"executor id in SCREAMING_SNAKE_CASE (e.g. CLAUDE_CODE, CODEX, GEMINI); pass it to start_task_attempt.executor as it is"`
	Variants       []string `json:"variants" jsonschema:"variant names usable as variant (e.g. DEFAULT, PLAN, APPROVALS); may be empty"`
	DefaultVariant *string  `json:"default_variant" jsonschema:"the variant used when none is passed; null when the executor has none"`
	SupportsMCP    bool     `json:"supports_mcp" jsonschema:"true when the agent can call MCP tools (this server) while it works"`
	Available      bool     `json:"available" jsonschema:"true when the executor's CLI is installed on this host; start_task_attempt refuses executors with false"`
	OutputFormat   string   `json:"output_format" jsonschema:"how the agent's output is parsed into normalized log entries (e.g. claude-stream-json, codex-json, lines)"`
}

// ---- tasks ----

// ListTasksIn are list_tasks' arguments.
type ListTasksIn struct {
	ProjectID string     `json:"project_id" jsonschema:"project id (UUID) from list_projects"`
	Status    TaskStatus `json:"status,omitempty" jsonschema:"only tasks in this status: todo | inprogress | inreview | done | cancelled; default all"`
	Limit     int        `json:"limit,omitempty" jsonschema:"most tasks to return, newest first; default 50, capped at 200"`
}

// TasksOut answers list_tasks.
type TasksOut struct {
	ProjectID string       `json:"project_id" jsonschema:"the project listed (UUID)"`
	Tasks     []TaskDetail `json:"tasks" jsonschema:"the tasks, newest first, each with its latest attempt summary"`
	Count     int          `json:"count" jsonschema:"number of tasks returned (at most limit)"`
}

// Task is a task as create_task and update_task return it.
type Task struct {
	TaskID      string     `json:"task_id" jsonschema:"task id (UUID); pass it to get_task, start_task_attempt and list_task_attempts"`
	ProjectID   string     `json:"project_id" jsonschema:"the task's project (UUID)"`
	Title       string     `json:"title" jsonschema:"short task title"`
	Description string     `json:"description" jsonschema:"task details given to the agent with the title; may be empty"`
	Status      TaskStatus `json:"status" jsonschema:"todo | inprogress (an attempt runs) | inreview (a run ended) | done | cancelled"`
	CreatedAt   string     `json:"created_at" jsonschema:"when the task was created (RFC3339)"`
	UpdatedAt   string     `json:"updated_at" jsonschema:"when the task last changed (RFC3339)"`
}

// AttemptSummary is a task's latest attempt, by attempt created_at.
type AttemptSummary struct {
	LatestAttemptID       *string `json:"latest_attempt_id" jsonschema:"the most recently created attempt (UUID); null when the task has no attempt"`
	LatestWorkspaceBranch *string `json:"latest_workspace_branch" jsonschema:"git branch of the latest attempt; null when the task has no attempt"`
	LatestSessionID       *string `json:"latest_session_id" jsonschema:"latest session of the latest attempt (UUID), for follow_up; null when there is none yet"`
	LatestSessionExecutor *string `json:"latest_session_executor" jsonschema:"executor of that session (e.g. CLAUDE_CODE); null when there is no session"`
	HasInProgressAttempt  bool    `json:"has_in_progress_attempt" jsonschema:"true when a process (other than a dev server) of some attempt of the task is running"`
	LastAttemptFailed     bool    `json:"last_attempt_failed" jsonschema:"true when the latest attempt's newest process (other than a dev server) failed or was killed"`
}

// TaskDetail is a task with its attempt summary (get_task, list_tasks).
type TaskDetail struct {
	Task
	AttemptSummary
}

// TaskIn identifies a task.
type TaskIn struct {
	TaskID string `json:"task_id" jsonschema:"task id (UUID) from list_tasks or create_task"`
}

// CreateTaskIn are create_task's arguments.
type CreateTaskIn struct {
	ProjectID   string `json:"project_id" jsonschema:"project id (UUID) from list_projects"`
	Title       string `json:"title" jsonschema:"short task title, 1-500 bytes, not blank"`
	Description string `json:"description,omitempty" jsonschema:"task details for the agent (markdown); default empty"`
	RequestID   string `json:"request_id,omitempty" jsonschema:"idempotency key: retrying with the same request_id and the same arguments returns the first result without a second effect; 1-128 characters, e.g. a UUID"`
}

// UpdateTaskIn are update_task's arguments; absent fields stay as they are.
type UpdateTaskIn struct {
	TaskID      string      `json:"task_id" jsonschema:"task id (UUID) from list_tasks"`
	Title       *string     `json:"title,omitempty" jsonschema:"new title, 1-500 bytes, not blank; omit to keep"`
	Description *string     `json:"description,omitempty" jsonschema:"new description; empty string clears it; omit to keep"`
	Status      *TaskStatus `json:"status,omitempty" jsonschema:"new status: todo | inprogress | inreview | done | cancelled; omit to keep"`
}

// DeleteTaskOut answers delete_task.
type DeleteTaskOut struct {
	TaskID           string `json:"task_id" jsonschema:"the deleted task (UUID)"`
	Deleted          bool   `json:"deleted" jsonschema:"true when the task and everything below it are gone"`
	StoppedProcesses int    `json:"stopped_processes" jsonschema:"running processes that were killed first"`
	RemovedWorktrees int    `json:"removed_worktrees" jsonschema:"attempt worktrees (with their branches) removed"`
}

// ---- attempts ----

// AttemptsOut answers list_task_attempts.
type AttemptsOut struct {
	TaskID          string    `json:"task_id" jsonschema:"the task listed (UUID)"`
	Attempts        []Attempt `json:"attempts" jsonschema:"the task's attempts, newest created first (ties by attempt_id)"`
	LatestAttemptID *string   `json:"latest_attempt_id" jsonschema:"the first attempt of attempts (UUID); null when there is none"`
	LatestSessionID *string   `json:"latest_session_id" jsonschema:"latest session of that attempt (UUID); null when it has none yet"`
}

// Attempt is one attempt of a task.
type Attempt struct {
	AttemptID             string  `json:"attempt_id" jsonschema:"attempt id (UUID); pass it to get_attempt_status, tail_attempt_logs, follow_up and the other attempt tools"`
	WorkspaceBranch       string  `json:"workspace_branch" jsonschema:"git branch the attempt works on, in every repo"`
	Executor              string  `json:"executor" jsonschema:"executor the attempt was started with (e.g. CLAUDE_CODE)"`
	CreatedAt             string  `json:"created_at" jsonschema:"when the attempt was started (RFC3339)"`
	UpdatedAt             string  `json:"updated_at" jsonschema:"when the attempt last changed (RFC3339)"`
	LatestSessionID       *string `json:"latest_session_id" jsonschema:"the attempt's latest session (UUID), for follow_up or tail_session_messages; null when none yet"`
	LatestSessionExecutor *string `json:"latest_session_executor" jsonschema:"executor of that session; null when there is no session"`
}

// AttemptIn identifies an attempt.
type AttemptIn struct {
	AttemptID string `json:"attempt_id" jsonschema:"attempt id (UUID) from list_task_attempts or start_task_attempt"`
}

// StatusOut answers get_attempt_status.
type StatusOut struct {
	AttemptID                string     `json:"attempt_id" jsonschema:"the attempt (UUID)"`
	TaskID                   string     `json:"task_id" jsonschema:"the attempt's task (UUID)"`
	TaskStatus               TaskStatus `json:"task_status" jsonschema:"the task's status: todo | inprogress | inreview | done | cancelled"`
	WorkspaceBranch          string     `json:"workspace_branch" jsonschema:"git branch the attempt works on"`
	Executor                 string     `json:"executor" jsonschema:"executor the attempt was started with (e.g. CLAUDE_CODE)"`
	CreatedAt                string     `json:"created_at" jsonschema:"when the attempt was started (RFC3339)"`
	UpdatedAt                string     `json:"updated_at" jsonschema:"when the attempt last changed (RFC3339)"`
	LatestSessionID          *string    `json:"latest_session_id" jsonschema:"the attempt's latest session (UUID), for follow_up and tail_session_messages; null until the agent has started"`
	LatestExecutionProcessID *string    `json:"latest_execution_process_id" jsonschema:"the process that decides state (UUID), the one tail_attempt_logs reads; null when none ran"`
	LatestRunReason          *RunReason `json:"latest_run_reason" jsonschema:"what that process is: setupscript | cleanupscript | codingagent | devserver; null when none ran"`
	// State holds an AttemptState value. It is a plain string, not an
	// AttemptState, because Go callers of the host's board print it as one
	// (cmd/plugboard); taskapi's generator gives it AttemptState's enum.
	State          string  `json:"state" jsonschema:"idle (no process yet) | running | completed | failed (failed or killed); dev servers do not count"`
	LastActivityAt *string `json:"last_activity_at" jsonschema:"when a process of the attempt last logged or changed (RFC3339); null when none ran"`
	FailureSummary *string `json:"failure_summary" jsonschema:"short reason when state is failed, e.g. failed (exit_code=1) or killed; null otherwise; details in tail_attempt_logs"`
	QueuedFollowUp bool    `json:"queued_follow_up" jsonschema:"true when a follow_up action=queue message waits for the running process to complete"`
}

// LogsIn are tail_attempt_logs' arguments.
type LogsIn struct {
	AttemptID       string  `json:"attempt_id" jsonschema:"attempt id (UUID); the log of its latest process is read"`
	Channel         Channel `json:"channel,omitempty" jsonschema:"normalized (agent messages and tool calls) | raw (stdout/stderr lines); default normalized"`
	Limit           int     `json:"limit,omitempty" jsonschema:"most entries to return; default 50, max 500"`
	Cursor          *int64  `json:"cursor,omitempty" jsonschema:"page older history: pass page.next_cursor of the previous call; returns entries with entry_index below it; not with after_entry_index"`
	AfterEntryIndex *int64  `json:"after_entry_index,omitempty" jsonschema:"fetch only newer entries: pass page.last_index of the previous call (-1 to read from the first entry); not with cursor"`
}

// LogsOut answers tail_attempt_logs (the board answers BoardLogs).
type LogsOut struct {
	AttemptID          string         `json:"attempt_id" jsonschema:"the attempt (UUID)"`
	ExecutionProcessID *string        `json:"execution_process_id" jsonschema:"the process whose log this is (UUID); null when the attempt has no process yet"`
	RunReason          *RunReason     `json:"run_reason" jsonschema:"what that process is: setupscript | cleanupscript | codingagent | devserver; null when no process"`
	ProcessStatus      *ProcessStatus `json:"process_status" jsonschema:"that process's status: running | completed | failed | killed; null when no process"`
	Channel            Channel        `json:"channel" jsonschema:"the channel read: normalized | raw"`
	Entries            []LogEntry     `json:"entries" jsonschema:"log entries in chronological order (ascending entry_index); empty when there are none"`
	Page               Page           `json:"page" jsonschema:"where this page sits in the log, for the next call"`
}

// LogEntry is one log entry, normalized or raw, as tail_attempt_logs
// returns it: the board's BoardLogEntry flattened.
type LogEntry struct {
	EntryIndex int64           `json:"entry_index" jsonschema:"position of the entry in the process's log, dense from 0"`
	Timestamp  string          `json:"timestamp" jsonschema:"when the entry was logged (RFC3339)"`
	EntryType  EntryType       `json:"entry_type,omitempty" jsonschema:"normalized channel only: user_message | assistant_message | tool_use | thinking | system_message | error_message"`
	Stream     Stream          `json:"stream,omitempty" jsonschema:"raw channel only: stdout | stderr"`
	Content    string          `json:"content" jsonschema:"the entry's text (a raw line, a message, or a tool call summary)"`
	Metadata   json.RawMessage `json:"metadata,omitempty" jsonschema:"normalized channel only, when present: structured details (e.g. tool name, input, result, truncated)"`
}

// Page locates a page of history.
type Page struct {
	HasMore    bool   `json:"has_more" jsonschema:"without after_*: older entries exist before this page; with after_*: newer entries exist beyond it"`
	NextCursor *int64 `json:"next_cursor" jsonschema:"pass as cursor to read the next older page; null when there is nothing older"`
	LastIndex  *int64 `json:"last_index" jsonschema:"index of the newest item returned (or the after_* value when none); pass as after_* to poll for newer ones; null when nothing was returned"`
}

// MessagesIn are tail_session_messages' arguments.
type MessagesIn struct {
	AttemptID      string `json:"attempt_id,omitempty" jsonschema:"attempt id (UUID); reads its latest session; give attempt_id or session_id, not both"`
	SessionID      string `json:"session_id,omitempty" jsonschema:"session id (UUID) from get_attempt_status.latest_session_id; give session_id or attempt_id, not both"`
	Limit          int    `json:"limit,omitempty" jsonschema:"most messages to return; default 20, max 200"`
	Cursor         *int64 `json:"cursor,omitempty" jsonschema:"page older history: pass page.next_cursor of the previous call; returns turns with turn_index below it; not with after_turn_index"`
	AfterTurnIndex *int64 `json:"after_turn_index,omitempty" jsonschema:"fetch only newer turns: pass page.last_index of the previous call; not with cursor"`
}

// MessagesOut answers tail_session_messages.
type MessagesOut struct {
	SessionID string    `json:"session_id" jsonschema:"the session read (UUID)"`
	AttemptID string    `json:"attempt_id" jsonschema:"the session's attempt (UUID)"`
	Executor  string    `json:"executor" jsonschema:"the session's executor (e.g. CLAUDE_CODE)"`
	Messages  []Message `json:"messages" jsonschema:"one message per agent turn, in chronological order (ascending turn_index)"`
	Page      Page      `json:"page" jsonschema:"where this page sits in the transcript, for the next call"`
}

// Message is one agent turn of a session.
type Message struct {
	TurnID             string  `json:"turn_id" jsonschema:"turn id (UUID)"`
	SessionID          string  `json:"session_id" jsonschema:"the turn's session (UUID)"`
	ExecutionProcessID *string `json:"execution_process_id" jsonschema:"the coding-agent process of the turn (UUID); null when it did not start"`
	TurnIndex          int64   `json:"turn_index" jsonschema:"position of the turn in the session, dense from 0"`
	Prompt             string  `json:"prompt" jsonschema:"what the agent was asked in this turn"`
	Summary            *string `json:"summary" jsonschema:"the agent's final message of the turn; null while it runs or when it gave none"`
	CreatedAt          string  `json:"created_at" jsonschema:"when the turn started (RFC3339)"`
	UpdatedAt          string  `json:"updated_at" jsonschema:"when the turn last changed (RFC3339)"`
}

// ContextOut answers get_context.
type ContextOut struct {
	ProjectID       string        `json:"project_id" jsonschema:"the attempt's project (UUID)"`
	ProjectName     string        `json:"project_name" jsonschema:"the project's name"`
	TaskID          string        `json:"task_id" jsonschema:"the attempt's task (UUID)"`
	TaskTitle       string        `json:"task_title" jsonschema:"the task's title"`
	TaskStatus      TaskStatus    `json:"task_status" jsonschema:"the task's status: todo | inprogress | inreview | done | cancelled"`
	AttemptID       string        `json:"attempt_id" jsonschema:"the attempt this server runs in (UUID)"`
	WorkspaceBranch string        `json:"workspace_branch" jsonschema:"git branch the attempt works on"`
	WorkspaceRepos  []AttemptRepo `json:"workspace_repos" jsonschema:"the repos the attempt works on"`
}

// AttemptRepo is one repo of an attempt.
type AttemptRepo struct {
	RepoID       string `json:"repo_id" jsonschema:"repo id (UUID)"`
	RepoName     string `json:"repo_name" jsonschema:"repo name; the prefix of the attempt's file paths (repo_name/path)"`
	TargetBranch string `json:"target_branch" jsonschema:"git branch the attempt started from"`
	BaseCommit   string `json:"base_commit" jsonschema:"commit (hex SHA) of target_branch the attempt started from; changes are measured against it"`
}

// ---- control ----

// StartIn are start_task_attempt's arguments.
type StartIn struct {
	TaskID    string      `json:"task_id" jsonschema:"task id (UUID) from list_tasks or create_task"`
	Executor  string      `json:"executor" jsonschema:"executor from list_executors, passed as listed (e.g. CLAUDE_CODE; claude-code is read as CLAUDE_CODE); must be available"`
	Repos     []StartRepo `json:"repos,omitempty" jsonschema:"repos to work on, from list_repos; default every repo of the task's project"`
	Variant   string      `json:"variant,omitempty" jsonschema:"executor variant from list_executors.variants (e.g. PLAN); default the executor's default_variant"`
	RequestID string      `json:"request_id,omitempty" jsonschema:"idempotency key: retrying with the same request_id and the same arguments returns the first result without a second effect; 1-128 characters, e.g. a UUID"`
}

// StartRepo selects a repo for an attempt.
type StartRepo struct {
	RepoID       string `json:"repo_id" jsonschema:"repo id (UUID) from list_repos"`
	TargetBranch string `json:"target_branch,omitempty" jsonschema:"git branch to start from; default the repo's target_branch"`
}

// StartOut answers start_task_attempt.
type StartOut struct {
	AttemptID          string        `json:"attempt_id" jsonschema:"the new attempt (UUID); pass it to get_attempt_status, tail_attempt_logs and follow_up"`
	TaskID             string        `json:"task_id" jsonschema:"the attempt's task (UUID); its status is now inprogress"`
	WorkspaceBranch    string        `json:"workspace_branch" jsonschema:"git branch created for the attempt in every repo"`
	Executor           string        `json:"executor" jsonschema:"the executor running, normalised (e.g. CLAUDE_CODE)"`
	Variant            string        `json:"variant" jsonschema:"the variant used (e.g. DEFAULT)"`
	Repos              []AttemptRepo `json:"repos" jsonschema:"the repos the attempt works on"`
	ExecutionProcessID string        `json:"execution_process_id" jsonschema:"the first process started (UUID): a setup script or the coding agent"`
	RunReason          RunReason     `json:"run_reason" jsonschema:"what that process is: setupscript (a repo has a setup script) or codingagent; never cleanupscript or devserver"`
	CreatedAt          string        `json:"created_at" jsonschema:"when the attempt was created (RFC3339)"`
}

// FollowUpIn are follow_up's arguments.
type FollowUpIn struct {
	Action    Action `json:"action" jsonschema:"send: start a new agent run with prompt now | queue: run prompt when the current run completes successfully | cancel: clear the queued message (does not stop a run; use stop_attempt)"`
	AttemptID string `json:"attempt_id,omitempty" jsonschema:"attempt id (UUID); targets its latest session; give attempt_id or session_id, not both"`
	SessionID string `json:"session_id,omitempty" jsonschema:"session id (UUID) from get_attempt_status.latest_session_id; give session_id or attempt_id, not both"`
	Prompt    string `json:"prompt,omitempty" jsonschema:"the message for the agent; required for send and queue, not allowed for cancel"`
	Variant   string `json:"variant,omitempty" jsonschema:"executor variant from list_executors.variants for this run (send and queue only); default the session's variant"`
	RequestID string `json:"request_id,omitempty" jsonschema:"idempotency key: retrying with the same request_id and the same arguments returns the first result without a second effect; 1-128 characters; send and queue only"`
}

// FollowUpOut answers follow_up.
type FollowUpOut struct {
	Action             Action      `json:"action" jsonschema:"the action done: send | queue | cancel"`
	AttemptID          string      `json:"attempt_id" jsonschema:"the session's attempt (UUID)"`
	SessionID          string      `json:"session_id" jsonschema:"the session acted on (UUID)"`
	ExecutionProcessID *string     `json:"execution_process_id" jsonschema:"the agent process started by send (UUID); null for queue and cancel"`
	Queue              QueueStatus `json:"queue" jsonschema:"the session's follow-up queue after the action"`
}

// QueueStatus is a session's follow-up queue.
type QueueStatus struct {
	Queued         bool    `json:"queued" jsonschema:"true when a message is queued (at most one per session)"`
	Prompt         *string `json:"prompt" jsonschema:"the queued prompt; null when nothing is queued"`
	Variant        *string `json:"variant" jsonschema:"the queued message's variant; null when none was given or nothing is queued"`
	QueuedAt       *string `json:"queued_at" jsonschema:"when the message was queued (RFC3339); null when nothing is queued"`
	ProcessRunning bool    `json:"process_running" jsonschema:"true when a coding agent runs in the session now; a queued message starts only after it completes successfully (it is discarded if the run fails or is killed)"`
}

// StopIn are stop_attempt's arguments.
type StopIn struct {
	AttemptID string `json:"attempt_id" jsonschema:"attempt id (UUID) from list_task_attempts"`
	Force     bool   `json:"force,omitempty" jsonschema:"true kills at once; false interrupts, waits 5 s, then kills; default false"`
}

// StopOut answers stop_attempt.
type StopOut struct {
	AttemptID               string       `json:"attempt_id" jsonschema:"the attempt (UUID)"`
	Stopped                 []string     `json:"stopped_execution_process_ids" jsonschema:"the processes stopped (UUIDs); empty when nothing was running"`
	Force                   bool         `json:"force" jsonschema:"true when the processes were killed at once"`
	State                   AttemptState `json:"state" jsonschema:"the attempt's state after the stop: idle | running | completed | failed (a stopped process counts as failed, killed)"`
	FailureSummary          *string      `json:"failure_summary" jsonschema:"short reason when state is failed (e.g. killed); null otherwise"`
	DiscardedQueuedFollowUp bool         `json:"discarded_queued_follow_up" jsonschema:"true when a queued follow_up message was dropped"`
	TaskStatus              TaskStatus   `json:"task_status" jsonschema:"the task's status after the stop: todo | inprogress | inreview (once nothing runs) | done | cancelled"`
	AlreadyFinished         bool         `json:"already_finished" jsonschema:"true when nothing was running, so nothing was stopped"`
}

// ---- workspace ----

// ChangesIn are get_attempt_changes' arguments.
type ChangesIn struct {
	AttemptID string `json:"attempt_id" jsonschema:"attempt id (UUID) from list_task_attempts"`
	Force     bool   `json:"force,omitempty" jsonschema:"true lists the files even when the diff guard would block; default false"`
}

// ChangesOut answers get_attempt_changes.
type ChangesOut struct {
	AttemptID     string                `json:"attempt_id" jsonschema:"the attempt (UUID)"`
	Summary       Summary               `json:"summary" jsonschema:"totals over every changed file of every repo, against the attempt's base commits; zero when blocked_reason is summary_failed"`
	Guard         Guard                 `json:"guard" jsonschema:"the diff guard in force; exceeding any one limit blocks the file list"`
	Blocked       bool                  `json:"blocked" jsonschema:"true when files was withheld; see blocked_reason, code and hint"`
	BlockedReason *ChangesBlockedReason `json:"blocked_reason" jsonschema:"summary_failed (the worktree could not be measured) | threshold_exceeded (over the guard; retry with force=true); null when not blocked"`
	// Code is set by the tool from BlockedReason; the board leaves it empty.
	Code   BlockedCode   `json:"code,omitempty" jsonschema:"blocked_guardrails when the guard blocked (threshold_exceeded); absent otherwise"`
	Reason string        `json:"reason,omitempty" jsonschema:"details of the block (which limit, or the error); absent when not blocked"`
	Hint   string        `json:"hint,omitempty" jsonschema:"what to call next when blocked; absent otherwise"`
	Files  []ChangedFile `json:"files" jsonschema:"the changed files; empty when blocked"`
	// Outside is measured whether or not files was withheld.
	Outside OutsideFiles `json:"outside" jsonschema:"files outside any repository (not merged): written in the attempt folder beside the repo folders, in no repo, so approve_attempt cannot merge them; count 0 when none"`
}

// OutsideFiles are the files of an attempt's folder that are in none of
// its repos (a multi-repo agent starts in the folder holding the repos'
// folders). Found by file metadata alone, never read, and bounded.
type OutsideFiles struct {
	Count      int           `json:"count" jsonschema:"files outside any repository (not merged); a lower bound when partial"`
	TotalBytes int64         `json:"total_bytes" jsonschema:"sum of their sizes in bytes; a lower bound when partial"`
	Files      []OutsideFile `json:"files" jsonschema:"the first of them by path, at most 50 (and 8 KiB of paths); empty when none"`
	Truncated  bool          `json:"truncated" jsonschema:"true when files lists fewer than count"`
	Partial    bool          `json:"partial" jsonschema:"true when the search stopped after reading 10000 directory entries, or a folder could not be read: count and total_bytes are then lower bounds"`
}

// OutsideFile is one file outside any repository.
type OutsideFile struct {
	Path  string `json:"path" jsonschema:"path relative to the attempt folder (not repo-prefixed: it is in no repo), e.g. notes.txt; not readable with get_attempt_file"`
	Bytes int64  `json:"bytes" jsonschema:"size in bytes"`
}

// Summary totals an attempt's changes.
type Summary struct {
	FileCount  int   `json:"file_count" jsonschema:"number of changed files"`
	Added      int   `json:"added" jsonschema:"lines added"`
	Deleted    int   `json:"deleted" jsonschema:"lines deleted"`
	TotalBytes int64 `json:"total_bytes" jsonschema:"sum of the changed files' sizes in bytes"`
}

// Guard is the diff guard: limits on an attempt's changes.
type Guard struct {
	Name     string `json:"name" jsonschema:"preset: safe | balanced | relaxed | off"`
	MaxFiles int    `json:"max_files" jsonschema:"most changed files before the guard blocks; 0 means no limit"`
	MaxLines int    `json:"max_lines" jsonschema:"most added+deleted lines before the guard blocks; 0 means no limit"`
	MaxBytes int64  `json:"max_bytes" jsonschema:"most total bytes before the guard blocks; 0 means no limit"`
}

// ChangedFile is one changed file.
type ChangedFile struct {
	Path    string     `json:"path" jsonschema:"repo-prefixed path (repo_name/path); pass it to get_attempt_patch.paths or get_attempt_file.path"`
	Status  FileStatus `json:"status" jsonschema:"added | modified | deleted | renamed"`
	OldPath string     `json:"old_path,omitempty" jsonschema:"repo-prefixed path before a rename; present only for renamed"`
	Added   int        `json:"added" jsonschema:"lines added; 0 for binary files"`
	Deleted int        `json:"deleted" jsonschema:"lines deleted; 0 for binary files"`
	Binary  bool       `json:"binary,omitempty" jsonschema:"true for a binary file; absent otherwise"`
	Bytes   int64      `json:"bytes" jsonschema:"size of the file now in bytes (for a deletion, its size before)"`
}

// PatchIn are get_attempt_patch's arguments.
type PatchIn struct {
	AttemptID string   `json:"attempt_id" jsonschema:"attempt id (UUID) from list_task_attempts"`
	Paths     []string `json:"paths,omitempty" jsonschema:"repo-prefixed paths (repo_name/path) from get_attempt_changes, at most 100; default every change (then the diff guard applies unless force)"`
	Force     bool     `json:"force,omitempty" jsonschema:"true skips the diff guard when paths is omitted; default false"`
	MaxBytes  int      `json:"max_bytes,omitempty" jsonschema:"most bytes of patch to return; default 204800, cap 1048576 (more is blocked with size_exceeded)"`
}

// PatchOut answers get_attempt_patch.
type PatchOut struct {
	AttemptID     string              `json:"attempt_id" jsonschema:"the attempt (UUID)"`
	Paths         []string            `json:"paths" jsonschema:"the paths asked for (repo-prefixed); empty for every change"`
	Patch         string              `json:"patch" jsonschema:"unified diff (git format) against the base commits, paths repo-prefixed; empty when blocked or nothing changed"`
	Bytes         int                 `json:"bytes" jsonschema:"bytes of patch returned"`
	TotalBytes    int                 `json:"total_bytes" jsonschema:"bytes of the whole patch before truncation"`
	Truncated     bool                `json:"truncated" jsonschema:"true when patch was cut at max_bytes; ask for fewer paths or a larger max_bytes"`
	Blocked       bool                `json:"blocked" jsonschema:"true when no patch was returned; see blocked_reason, code and hint"`
	BlockedReason *PatchBlockedReason `json:"blocked_reason" jsonschema:"size_exceeded (max_bytes over the cap) | too_many_paths (over 100) | path_outside_workspace (a path is not repo_name/path inside the attempt) | threshold_exceeded (all changes are over the diff guard) | summary_failed (git failed); null when not blocked"`
	// Code is set by the tool from BlockedReason; the board leaves it empty.
	Code   BlockedCode `json:"code,omitempty" jsonschema:"blocked_guardrails when a guardrail blocked (size_exceeded, too_many_paths, threshold_exceeded); absent otherwise"`
	Reason string      `json:"reason,omitempty" jsonschema:"details of the block; absent when not blocked"`
	Hint   string      `json:"hint,omitempty" jsonschema:"what to do next when blocked or truncated; absent otherwise"`
}

// FileIn are get_attempt_file's arguments.
type FileIn struct {
	AttemptID string `json:"attempt_id" jsonschema:"attempt id (UUID) from list_task_attempts"`
	Path      string `json:"path" jsonschema:"repo-prefixed path (repo_name/path inside the repo) from get_attempt_changes; no leading /, no .. leaving the repo"`
	Start     int64  `json:"start,omitempty" jsonschema:"byte offset to read from; default 0; pass next_start to read on"`
	MaxBytes  int    `json:"max_bytes,omitempty" jsonschema:"most bytes to read; default 65536, cap 524288 (more is blocked with size_exceeded)"`
}

// FileOut answers get_attempt_file (the board answers BoardFile).
type FileOut struct {
	AttemptID     string             `json:"attempt_id" jsonschema:"the attempt (UUID)"`
	Path          string             `json:"path" jsonschema:"the repo-prefixed path read, cleaned (as given when blocked)"`
	Start         int64              `json:"start" jsonschema:"byte offset the content starts at"`
	Size          int64              `json:"size" jsonschema:"size of the whole file in bytes; 0 when blocked before the file was found"`
	Content       string             `json:"content" jsonschema:"the bytes read, as text (encoding utf-8) or base64 (encoding base64); empty when blocked"`
	Encoding      *Encoding          `json:"encoding" jsonschema:"utf-8 when content is the text itself, base64 when the bytes are not UTF-8; null when blocked"`
	Truncated     bool               `json:"truncated" jsonschema:"true when the file goes on after content; read on from next_start"`
	NextStart     *int64             `json:"next_start" jsonschema:"start of the next slice when truncated; null otherwise"`
	Blocked       bool               `json:"blocked" jsonschema:"true when nothing was read; see blocked_reason, code and hint"`
	BlockedReason *FileBlockedReason `json:"blocked_reason" jsonschema:"path_outside_workspace (path leaves the attempt's repos) | size_exceeded (max_bytes over 524288); null when not blocked"`
	Code          BlockedCode        `json:"code,omitempty" jsonschema:"blocked_guardrails when the size cap blocked (size_exceeded); absent otherwise"`
	Hint          string             `json:"hint,omitempty" jsonschema:"what to do next when blocked; absent otherwise"`
}

// ---- review ----

// ReviewQueueIn are review_queue's arguments.
type ReviewQueueIn struct {
	ProjectID string `json:"project_id,omitempty" jsonschema:"only this project's tasks: project id (UUID) from list_projects; default every project"`
	Limit     int    `json:"limit,omitempty" jsonschema:"most tasks to return, oldest in review first; default 20, capped at 100"`
}

// ReviewQueueOut answers review_queue.
type ReviewQueueOut struct {
	Tasks []ReviewItem `json:"tasks" jsonschema:"tasks in status inreview, oldest updated_at first; empty when nothing waits for review"`
	Count int          `json:"count" jsonschema:"number of tasks returned (at most limit)"`
}

// ReviewItem is a task waiting for review with its latest attempt.
type ReviewItem struct {
	TaskID          string         `json:"task_id" jsonschema:"the task (UUID)"`
	ProjectID       string         `json:"project_id" jsonschema:"the task's project (UUID)"`
	Title           string         `json:"title" jsonschema:"short task title"`
	UpdatedAt       string         `json:"updated_at" jsonschema:"when the task last changed (RFC3339): when it entered review unless edited since; the queue's order"`
	AttemptID       *string        `json:"attempt_id" jsonschema:"the latest attempt (UUID), the one to review, approve or send back; null when the task has no attempt"`
	WorkspaceBranch *string        `json:"workspace_branch" jsonschema:"git branch of that attempt, merged by approve_attempt; null without attempt"`
	Executor        *string        `json:"executor" jsonschema:"executor of that attempt (e.g. CLAUDE_CODE); null without attempt"`
	State           *AttemptState  `json:"state" jsonschema:"that attempt's state: idle | running | completed | failed; null without attempt"`
	FailureSummary  *string        `json:"failure_summary" jsonschema:"short reason when state is failed (e.g. failed (exit_code=1)); null otherwise"`
	Repos           []ReviewRepo   `json:"repos" jsonschema:"the attempt's repos and the branches approve_attempt merges into; empty without attempt"`
	Changes         *ReviewChanges `json:"changes" jsonschema:"summary of the attempt's changes (uncommitted and untracked files included); null without attempt or when not measurable"`
	ChangesError    *string        `json:"changes_error" jsonschema:"why changes could not be measured (e.g. a worktree is gone); null otherwise"`
}

// ReviewRepo is one repo of an attempt under review.
type ReviewRepo struct {
	RepoName     string `json:"repo_name" jsonschema:"repo name; the prefix of the attempt's file paths (repo_name/path)"`
	TargetBranch string `json:"target_branch" jsonschema:"git branch the attempt merges into on approval"`
}

// ReviewChanges sums up an attempt's changes.
type ReviewChanges struct {
	FileCount    int `json:"file_count" jsonschema:"number of changed files; list them with get_attempt_changes"`
	Added        int `json:"added" jsonschema:"lines added"`
	Deleted      int `json:"deleted" jsonschema:"lines deleted"`
	OutsideCount int `json:"outside_count" jsonschema:"files written outside any repository (not merged, not in file_count); see get_attempt_changes outside"`
}

// ApproveIn are approve_attempt's arguments.
type ApproveIn struct {
	AttemptID string `json:"attempt_id" jsonschema:"attempt id (UUID) from review_queue or list_task_attempts; its branch is merged"`
}

// ApproveOut answers approve_attempt.
type ApproveOut struct {
	AttemptID       string       `json:"attempt_id" jsonschema:"the approved attempt (UUID)"`
	TaskID          string       `json:"task_id" jsonschema:"the attempt's task (UUID)"`
	WorkspaceBranch string       `json:"workspace_branch" jsonschema:"the attempt's git branch that was merged"`
	Repos           []MergedRepo `json:"repos" jsonschema:"one entry per repo of the attempt: what was merged into its target branch, or nothing (merged false)"`
	Merged          bool         `json:"merged" jsonschema:"true when at least one repo's target branch gained the attempt's work; false when there was nothing to merge anywhere"`
	Summary         string       `json:"summary" jsonschema:"what was merged, per repo (commits and files, or nothing to merge), and what was not (files outside any repository)"`
	Outside         OutsideFiles `json:"outside" jsonschema:"files outside any repository (not merged): the attempt wrote them beside the repo folders; they stay in the attempt folder; count 0 when none"`
	Warnings        []string     `json:"warnings" jsonschema:"what the reviewer should know: work that was not merged (files outside any repository, or nothing to merge at all); empty when none"`
	TaskStatus      TaskStatus   `json:"task_status" jsonschema:"the task's status after the approval: always done (of todo | inprogress | inreview | done | cancelled)"`
}

// MergedRepo is how one repo was merged.
type MergedRepo struct {
	RepoName      string    `json:"repo_name" jsonschema:"repo name"`
	TargetBranch  string    `json:"target_branch" jsonschema:"the git branch merged into"`
	MergeCommit   string    `json:"merge_commit" jsonschema:"target_branch's commit (hex SHA) now: the merge commit, or the unchanged tip when merged_via is up_to_date"`
	MergedVia     MergedVia `json:"merged_via" jsonschema:"worktree (target_branch is checked out and was merged in that checkout) | ref (checked out nowhere; the branch was moved) | up_to_date (nothing to merge)"`
	ChangesCommit *string   `json:"changes_commit" jsonschema:"commit (hex SHA) that recorded the worktree's uncommitted changes on the attempt branch before merging; null when there were none"`
	Merged        bool      `json:"merged" jsonschema:"true when target_branch moved to a merge commit holding the attempt's commits; false when there was nothing to merge (merged_via up_to_date)"`
	CommitCount   int       `json:"commit_count" jsonschema:"number of the attempt's commits target_branch gained (changes_commit included); 0 when nothing was merged"`
	Commits       []string  `json:"commits" jsonschema:"those commits (hex SHAs), newest first, at most 20; empty when nothing was merged"`
	FileCount     int       `json:"file_count" jsonschema:"number of files the merge changed on target_branch; 0 when nothing was merged"`
	Files         []string  `json:"files" jsonschema:"those files, repo-prefixed (repo_name/path), sorted, at most 100; empty when nothing was merged"`
}

// RequestChangesIn are request_changes' arguments.
type RequestChangesIn struct {
	AttemptID string `json:"attempt_id" jsonschema:"attempt id (UUID) from review_queue; the feedback goes to its latest session"`
	Feedback  string `json:"feedback" jsonschema:"what the agent should change, sent as its next prompt; name files and the expected result"`
	RequestID string `json:"request_id,omitempty" jsonschema:"idempotency key: retrying with the same request_id and the same arguments returns the first result without a second effect; 1-128 characters, e.g. a UUID"`
}

// RequestChangesOut answers request_changes.
type RequestChangesOut struct {
	AttemptID          string      `json:"attempt_id" jsonschema:"the attempt (UUID)"`
	SessionID          string      `json:"session_id" jsonschema:"the session the feedback went to (UUID)"`
	Action             Delivery    `json:"action" jsonschema:"send (nothing was running: a new agent run started with the feedback) | queue (a run is going on: the feedback runs when it completes successfully)"`
	ExecutionProcessID *string     `json:"execution_process_id" jsonschema:"the agent process started (UUID) when action is send; null when queued"`
	Queue              QueueStatus `json:"queue" jsonschema:"the session's follow-up queue after the call"`
	TaskStatus         TaskStatus  `json:"task_status" jsonschema:"the status the call moved the task to: always inprogress (of todo | inprogress | inreview | done | cancelled); it returns to inreview when the run ends"`
}
