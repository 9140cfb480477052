package taskapi

import "github.com/plugboard/plugboard/abi/tasks"

// The task tools' types are defined once, in abi/tasks, which the host's
// board answers with too; these are their names here. A field's
// description comes from its jsonschema tag; the enum types get their
// schemas from typeSchemas.
type (
	TaskStatus           = tasks.TaskStatus
	AttemptState         = tasks.AttemptState
	RunReason            = tasks.RunReason
	ProcessStatus        = tasks.ProcessStatus
	Channel              = tasks.Channel
	EntryType            = tasks.EntryType
	Stream               = tasks.Stream
	Action               = tasks.Action
	Delivery             = tasks.Delivery
	FileStatus           = tasks.FileStatus
	Encoding             = tasks.Encoding
	ChangesBlockedReason = tasks.ChangesBlockedReason
	PatchBlockedReason   = tasks.PatchBlockedReason
	FileBlockedReason    = tasks.FileBlockedReason
	BlockedCode          = tasks.BlockedCode
	MergedVia            = tasks.MergedVia

	NoInput = tasks.NoInput

	// discovery
	ProjectsOut  = tasks.ProjectsOut
	Project      = tasks.Project
	ProjectIn    = tasks.ProjectIn
	ReposOut     = tasks.ReposOut
	Repo         = tasks.Repo
	ExecutorsOut = tasks.ExecutorsOut
	Executor     = tasks.Executor

	// tasks
	ListTasksIn    = tasks.ListTasksIn
	TasksOut       = tasks.TasksOut
	Task           = tasks.Task
	AttemptSummary = tasks.AttemptSummary
	TaskDetail     = tasks.TaskDetail
	TaskIn         = tasks.TaskIn
	CreateTaskIn   = tasks.CreateTaskIn
	UpdateTaskIn   = tasks.UpdateTaskIn
	DeleteTaskOut  = tasks.DeleteTaskOut

	// attempts
	AttemptsOut = tasks.AttemptsOut
	Attempt     = tasks.Attempt
	AttemptIn   = tasks.AttemptIn
	StatusOut   = tasks.StatusOut
	LogsIn      = tasks.LogsIn
	LogsOut     = tasks.LogsOut
	LogEntry    = tasks.LogEntry
	Page        = tasks.Page
	MessagesIn  = tasks.MessagesIn
	MessagesOut = tasks.MessagesOut
	Message     = tasks.Message
	ContextOut  = tasks.ContextOut
	AttemptRepo = tasks.AttemptRepo

	// control
	StartIn     = tasks.StartIn
	StartRepo   = tasks.StartRepo
	StartOut    = tasks.StartOut
	FollowUpIn  = tasks.FollowUpIn
	FollowUpOut = tasks.FollowUpOut
	QueueStatus = tasks.QueueStatus
	StopIn      = tasks.StopIn
	StopOut     = tasks.StopOut

	// workspace
	ChangesIn   = tasks.ChangesIn
	ChangesOut  = tasks.ChangesOut
	Summary     = tasks.Summary
	Guard       = tasks.Guard
	ChangedFile = tasks.ChangedFile
	PatchIn     = tasks.PatchIn
	PatchOut    = tasks.PatchOut
	FileIn      = tasks.FileIn
	FileOut     = tasks.FileOut

	// review
	ReviewQueueIn     = tasks.ReviewQueueIn
	ReviewQueueOut    = tasks.ReviewQueueOut
	ReviewItem        = tasks.ReviewItem
	ReviewRepo        = tasks.ReviewRepo
	ReviewChanges     = tasks.ReviewChanges
	ApproveIn         = tasks.ApproveIn
	ApproveOut        = tasks.ApproveOut
	MergedRepo        = tasks.MergedRepo
	RequestChangesIn  = tasks.RequestChangesIn
	RequestChangesOut = tasks.RequestChangesOut

	// boardLogs is the board's answer to tail_attempt_logs, its stored
	// entries decoded into LogEntry (without entry_index), which
	// tailAttemptLogs flattens.
	boardLogs = tasks.BoardLogs[LogEntry]
	// boardFile is the board's answer to get_attempt_file.
	boardFile = tasks.BoardFile
)

// Values of the enum types used here.
const (
	ChannelNormalized = tasks.ChannelNormalized
	ChannelRaw        = tasks.ChannelRaw

	ActionSend   = tasks.ActionSend
	ActionQueue  = tasks.ActionQueue
	ActionCancel = tasks.ActionCancel

	CodeBlockedGuardrails = tasks.CodeBlockedGuardrails

	ReasonSummaryFailed        = tasks.ReasonSummaryFailed
	ReasonThresholdExceeded    = tasks.ReasonThresholdExceeded
	ReasonTooManyPaths         = tasks.ReasonTooManyPaths
	ReasonSizeExceeded         = tasks.ReasonSizeExceeded
	ReasonPathOutsideWorkspace = tasks.ReasonPathOutsideWorkspace
)
