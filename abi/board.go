package abi

import "maps"

// Capabilities a plugin may declare in Manifest.Capabilities. The operator
// grants them per plugin; first-party plugins get what they declare.
const (
	// CapBoardRead reads projects, repos, executors, tasks, attempts,
	// status, logs and transcripts.
	CapBoardRead = "board.read"
	// CapBoardWrite creates, updates and deletes tasks.
	CapBoardWrite = "board.write"
	// CapBoardControl starts attempts, sends or queues follow-ups and
	// stops processes: it spawns and kills child processes on the host.
	CapBoardControl = "board.control"
	// CapWorkspaceRead reads attempt worktrees: changes, patches, files.
	CapWorkspaceRead = "workspace.read"
	// CapMail acts for the calling agent (the identity the transport
	// authenticated): its mail (send, inbox, read, reply), its own status
	// and its deliberate decision-log entries. An operation under it
	// without a caller identity is refused.
	CapMail = "mail"
)

// FuncBoard is the board API host function: a BoardRequest in, the
// operation's JSON result (or an envelope) in a HostResponse out.
const FuncBoard = "board"

// BoardRequest is the payload of FuncBoard.
type BoardRequest struct {
	// Op is one of BoardOps.
	Op string `json:"op"`
	// Args is the operation's argument object; its fields are documented
	// per operation in host/internal/boardapi.
	Args any `json:"args,omitempty"`
}

// Board operations. Their names follow the task tools they serve; the
// arguments and results are the board's canonical shapes (UUID ids, RFC3339
// times, repo-prefixed paths), which a tool plugin may pass through.
const (
	OpListProjects       = "list_projects"
	OpListRepos          = "list_repos"
	OpListExecutors      = "list_executors"
	OpListTasks          = "list_tasks"
	OpGetTask            = "get_task"
	OpListTaskAttempts   = "list_task_attempts"
	OpGetAttemptStatus   = "get_attempt_status"
	OpTailAttemptLogs    = "tail_attempt_logs"
	OpTailSessionMessage = "tail_session_messages"
	OpGetContext         = "get_context"
	OpCreateTask         = "create_task"
	OpUpdateTask         = "update_task"
	OpDeleteTask         = "delete_task"
	OpStartTaskAttempt   = "start_task_attempt"
	OpFollowUp           = "follow_up"
	OpStopAttempt        = "stop_attempt"
	OpGetAttemptChanges  = "get_attempt_changes"
	OpGetAttemptPatch    = "get_attempt_patch"
	OpGetAttemptFile     = "get_attempt_file"
	OpReviewQueue        = "review_queue"
	OpApproveAttempt     = "approve_attempt"
	OpRequestChanges     = "request_changes"

	// Operations acting for the caller (see CapMail); their arguments and
	// results are host/internal/mail's and host/internal/audit's.
	OpMailSend       = "mail_send"
	OpMailListInbox  = "mail_list_inbox"
	OpMailRead       = "mail_read"
	OpMailReply      = "mail_reply"
	OpAgentGetStatus = "agent_get_status"
	OpAgentGetTask   = "agent_get_task"
	OpLogDecision    = "log_decision"
)

// BoardOps returns a map of every board operation to the capability it
// requires. It is a copy: changing it changes nothing of the ABI.
func BoardOps() map[string]string { return maps.Clone(boardOps) }

// BoardOpCapability returns the capability a board operation requires, and
// whether op is a board operation at all (BoardOps without the copy).
func BoardOpCapability(op string) (capability string, ok bool) {
	capability, ok = boardOps[op]
	return capability, ok
}

var boardOps = map[string]string{
	OpListProjects:       CapBoardRead,
	OpListRepos:          CapBoardRead,
	OpListExecutors:      CapBoardRead,
	OpListTasks:          CapBoardRead,
	OpGetTask:            CapBoardRead,
	OpListTaskAttempts:   CapBoardRead,
	OpGetAttemptStatus:   CapBoardRead,
	OpTailAttemptLogs:    CapBoardRead,
	OpTailSessionMessage: CapBoardRead,
	OpGetContext:         CapBoardRead,
	OpCreateTask:         CapBoardWrite,
	OpUpdateTask:         CapBoardWrite,
	OpDeleteTask:         CapBoardWrite,
	OpStartTaskAttempt:   CapBoardControl,
	OpFollowUp:           CapBoardControl,
	OpStopAttempt:        CapBoardControl,
	OpGetAttemptChanges:  CapWorkspaceRead,
	OpGetAttemptPatch:    CapWorkspaceRead,
	OpGetAttemptFile:     CapWorkspaceRead,
	OpReviewQueue:        CapBoardRead,
	OpApproveAttempt:     CapBoardControl,
	OpRequestChanges:     CapBoardControl,
	OpMailSend:           CapMail,
	OpMailListInbox:      CapMail,
	OpMailRead:           CapMail,
	OpMailReply:          CapMail,
	OpAgentGetStatus:     CapMail,
	OpAgentGetTask:       CapBoardRead,
	OpLogDecision:        CapMail,
}
