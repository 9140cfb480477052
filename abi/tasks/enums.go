package tasks

// Enum-like string types. Each has a schema of its own in the tools'
// schemas (an enum of the values below); a field's description comes from
// its jsonschema tag.
type (
	// TaskStatus is todo | inprogress | inreview | done | cancelled.
	TaskStatus string
	// AttemptState is idle | running | completed | failed.
	AttemptState string
	// RunReason is setupscript | cleanupscript | codingagent | devserver.
	RunReason string
	// ProcessStatus is running | completed | failed | killed.
	ProcessStatus string
	// Channel is normalized | raw.
	Channel string
	// EntryType is the kind of a normalized log entry.
	EntryType string
	// Stream is stdout | stderr.
	Stream string
	// Action is send | queue | cancel.
	Action string
	// Delivery is send | queue (ActionSend, ActionQueue): how
	// request_changes delivered the feedback.
	Delivery string
	// FileStatus is added | modified | deleted | renamed.
	FileStatus string
	// Encoding is utf-8 | base64.
	Encoding string
	// ChangesBlockedReason is summary_failed | threshold_exceeded.
	ChangesBlockedReason string
	// PatchBlockedReason is why get_attempt_patch returned no patch.
	PatchBlockedReason string
	// FileBlockedReason is path_outside_workspace | size_exceeded.
	FileBlockedReason string
	// BlockedCode is blocked_guardrails.
	BlockedCode string
	// MergedVia is worktree | ref | up_to_date.
	MergedVia string
)

// TaskStatus values, in workflow order.
const (
	StatusTodo       = "todo"
	StatusInProgress = "inprogress"
	StatusInReview   = "inreview"
	StatusDone       = "done"
	StatusCancelled  = "cancelled"
)

// AttemptState values: the state of an attempt's newest process other than
// a dev server (none: idle; failed or killed: failed).
const (
	StateIdle      = "idle"
	StateRunning   = "running"
	StateCompleted = "completed"
	StateFailed    = "failed"
)

// RunReason values: what an execution process is.
const (
	RunSetupScript   = "setupscript"
	RunCleanupScript = "cleanupscript"
	RunCodingAgent   = "codingagent"
	RunDevServer     = "devserver"
)

// ProcessStatus values.
const (
	ProcessRunning   = "running"
	ProcessCompleted = "completed"
	ProcessFailed    = "failed"
	ProcessKilled    = "killed"
)

// Channel values: the two logs of a process.
const (
	ChannelNormalized = "normalized"
	ChannelRaw        = "raw"
)

// EntryType values.
const (
	EntryUserMessage      = "user_message"
	EntryAssistantMessage = "assistant_message"
	EntryToolUse          = "tool_use"
	EntryThinking         = "thinking"
	EntrySystemMessage    = "system_message"
	EntryErrorMessage     = "error_message"
)

// Stream values: where a raw log line came from.
const (
	StreamStdout = "stdout"
	StreamStderr = "stderr"
)

// Action values (and, send and queue, Delivery values).
const (
	ActionSend   = "send"
	ActionQueue  = "queue"
	ActionCancel = "cancel"
)

// FileStatus values.
const (
	FileAdded    = "added"
	FileModified = "modified"
	FileDeleted  = "deleted"
	FileRenamed  = "renamed"
)

// Encoding values of a file slice's content.
const (
	EncodingUTF8   = "utf-8"
	EncodingBase64 = "base64"
)

// Blocked reasons of the artifact tools (ChangesBlockedReason,
// PatchBlockedReason and FileBlockedReason values).
const (
	ReasonSummaryFailed        = "summary_failed"
	ReasonThresholdExceeded    = "threshold_exceeded"
	ReasonTooManyPaths         = "too_many_paths"
	ReasonSizeExceeded         = "size_exceeded"
	ReasonPathOutsideWorkspace = "path_outside_workspace"
)

// CodeBlockedGuardrails is the code a blocked artifact result carries when
// a guardrail (diff guard, path count, size cap) blocked it.
const CodeBlockedGuardrails = "blocked_guardrails"

// MergedVia values.
const (
	MergedViaWorktree = "worktree"
	MergedViaRef      = "ref"
	MergedViaUpToDate = "up_to_date"
)

// TaskStatuses lists the task statuses in workflow order (a new slice each
// call).
func TaskStatuses() []string {
	return []string{StatusTodo, StatusInProgress, StatusInReview, StatusDone, StatusCancelled}
}
