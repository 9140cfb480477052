package tasks

// Board arguments and answers that differ from the tools' inputs and
// outputs. They carry no descriptions: no schema is generated from them.

// ---- arguments: a tool's input without request_id ----

// CreateTaskArgs are the arguments of abi.OpCreateTask: CreateTaskIn
// without request_id.
type CreateTaskArgs struct {
	ProjectID   string `json:"project_id"`
	Title       string `json:"title"`
	Description string `json:"description,omitempty"`
}

// StartArgs are the arguments of abi.OpStartTaskAttempt: StartIn without
// request_id.
type StartArgs struct {
	TaskID   string      `json:"task_id"`
	Executor string      `json:"executor"`
	Variant  string      `json:"variant,omitempty"`
	Repos    []StartRepo `json:"repos,omitempty"`
}

// FollowUpArgs are the arguments of abi.OpFollowUp: FollowUpIn without
// request_id.
type FollowUpArgs struct {
	Action    Action `json:"action"`
	AttemptID string `json:"attempt_id,omitempty"`
	SessionID string `json:"session_id,omitempty"`
	Prompt    string `json:"prompt,omitempty"`
	Variant   string `json:"variant,omitempty"`
}

// RequestChangesArgs are the arguments of abi.OpRequestChanges:
// RequestChangesIn without request_id.
type RequestChangesArgs struct {
	AttemptID string `json:"attempt_id"`
	Feedback  string `json:"feedback"`
}

// ---- answers the tools reshape ----

// BoardLogs is the answer of abi.OpTailAttemptLogs: LogsOut with each entry
// as it is stored, {entry_index, entry: {...}}, which tail_attempt_logs
// flattens. E is the stored entry: json.RawMessage on the host, which
// passes it through as stored, and LogEntry in the plugin, which decodes
// it ({timestamp, entry_type, content, metadata} normalized, {timestamp,
// stream, content} raw).
type BoardLogs[E any] struct {
	AttemptID          string             `json:"attempt_id"`
	ExecutionProcessID *string            `json:"execution_process_id"`
	RunReason          *RunReason         `json:"run_reason"`
	ProcessStatus      *ProcessStatus     `json:"process_status"`
	Channel            Channel            `json:"channel"`
	Entries            []BoardLogEntry[E] `json:"entries"`
	Page               Page               `json:"page"`
}

// BoardLogEntry is one stored log entry and its index.
type BoardLogEntry[E any] struct {
	EntryIndex int64 `json:"entry_index"`
	Entry      E     `json:"entry"`
}

// BoardFile is the answer of abi.OpGetAttemptFile, which get_attempt_file
// turns into FileOut: fields that do not apply are left empty (omitted, or
// an empty encoding when blocked) rather than null.
type BoardFile struct {
	AttemptID string `json:"attempt_id"`
	// Path is the repo-prefixed path read, cleaned; a refused path is
	// echoed as given.
	Path  string `json:"path"`
	Start int64  `json:"start"`
	// Size is the whole file's size in bytes.
	Size int64 `json:"size"`
	// Content is the bytes from Start on: UTF-8 text when they are valid
	// UTF-8, else base64 (see Encoding).
	Content  string   `json:"content"`
	Encoding Encoding `json:"encoding"`
	// Truncated is true when bytes follow the slice; NextStart is then the
	// start of the next slice.
	Truncated bool `json:"truncated"`
	// Blocked is true when nothing was read because the request was
	// refused; BlockedReason says why and Hint what to do instead.
	Blocked       bool              `json:"blocked"`
	BlockedReason FileBlockedReason `json:"blocked_reason,omitempty"`
	Hint          string            `json:"hint,omitempty"`
	NextStart     *int64            `json:"next_start,omitempty"`
}

// BoardMail is a mail as abi.OpMailRead and abi.OpMailListInbox answer it
// (as stored), which the mail tools turn into Mail.
type BoardMail struct {
	ID            string  `json:"id"`
	FromAgentID   string  `json:"from_agent_id"`
	FromAgentType string  `json:"from_agent_type"`
	ToAgentID     string  `json:"to_agent_id"`
	Subject       string  `json:"subject"`
	Body          string  `json:"body"`
	InReplyTo     *string `json:"in_reply_to"`
	ThreadID      string  `json:"thread_id"`
	ReadAt        *string `json:"read_at"`
	CreatedAt     string  `json:"created_at"`
}

// BoardInbox is the answer of abi.OpMailListInbox, which mail_list_inbox
// turns into InboxOut.
type BoardInbox struct {
	// Count is the number of mails listed.
	Count int `json:"count"`
	// UnreadCount is the number of unread mails in the inbox.
	UnreadCount int         `json:"unread_count"`
	Mails       []BoardMail `json:"mails"`
}
