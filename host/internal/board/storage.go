package board

import (
	"context"

	"github.com/plugboard/plugboard/host/internal/store"
)

// Store is what a store must offer the board: the board reaches its
// records only through it. host/internal/store (SQLite) implements
// it; its rows (store.Task, store.Process, ...), sentinel errors
// (store.ErrNotFound) and status constants are the vocabulary every
// implementation speaks. Each method means what the SQLite store's method
// of that name documents; lookups of one row fail with store.ErrNotFound
// when there is none.
//
// Writes must join the transaction of an effect journal when ctx carries
// one (boardapi runs create_task inside store.Store.RunEffect with atomic
// set, so the task and its journal row commit together).
type Store interface {
	// Projects and repositories.
	CreateProjectWithRepos(ctx context.Context, name string, repos []store.ProjectRepo) (store.Project, error)
	ListProjects(ctx context.Context) ([]store.Project, error)
	GetProject(ctx context.Context, id string) (store.Project, error)
	EnsureRepo(ctx context.Context, name, path string) (store.Repo, error)
	GetRepo(ctx context.Context, id string) (store.Repo, error)
	AddProjectRepo(ctx context.Context, projectID string, pr store.ProjectRepo) error

	// Tasks.
	CreateTask(ctx context.Context, projectID, title, description string) (store.Task, error)
	GetTask(ctx context.Context, id string) (store.Task, error)
	UpdateTask(ctx context.Context, id string, u store.TaskUpdate) (store.Task, error)
	SetTaskStatus(ctx context.Context, id, status string) error
	// DeleteTask removes the task with its attempts, sessions, processes,
	// logs and turns.
	DeleteTask(ctx context.Context, id string) error
	ListTasks(ctx context.Context, projectID, status string, limit int) ([]store.TaskWithSummary, error)
	ReviewQueue(ctx context.Context, projectID string, limit int) ([]store.TaskWithSummary, error)
	TaskSummary(ctx context.Context, taskID string) (store.AttemptSummary, error)

	// Attempts.
	CreateAttempt(ctx context.Context, a store.Attempt, repos []store.AttemptRepo) error
	GetAttempt(ctx context.Context, id string) (store.Attempt, error)
	ListAttempts(ctx context.Context, taskID string) ([]store.Attempt, error)
	TouchAttempt(ctx context.Context, id string) error
	AttemptRepos(ctx context.Context, attemptID string) ([]store.AttemptRepo, error)

	// Sessions, their turns and their queued follow-up.
	CreateSession(ctx context.Context, attemptID, executor, variant string) (store.Session, error)
	GetSession(ctx context.Context, id string) (store.Session, error)
	LatestSession(ctx context.Context, attemptID string) (store.Session, error)
	SetAgentSessionID(ctx context.Context, sessionID, agentSessionID string) error
	AddTurn(ctx context.Context, sessionID, processID, prompt string) (store.Turn, error)
	SetTurnSummary(ctx context.Context, processID, summary string) error
	TurnTail(ctx context.Context, sessionID string, before int64, limit int) (store.TurnPage, error)
	TurnAfter(ctx context.Context, sessionID string, after int64, limit int) (store.TurnPage, error)
	QueueMessage(ctx context.Context, sessionID, prompt, variant string) (store.QueuedMessage, error)
	QueuedMessage(ctx context.Context, sessionID string) (*store.QueuedMessage, error)
	// TakeQueuedMessage removes and returns the queued message: of
	// concurrent callers, exactly one gets it.
	TakeQueuedMessage(ctx context.Context, sessionID string) (*store.QueuedMessage, error)
	DiscardQueuedForAttempt(ctx context.Context, attemptID string) (int64, error)

	// Execution processes and their logs.
	CreateProcess(ctx context.Context, p *store.Process) error
	SetProcessPID(ctx context.Context, id string, pid int, identity string) error
	// FinishProcess changes only a process still running: a late report
	// does not overwrite what crash recovery recorded.
	FinishProcess(ctx context.Context, id, status string, exitCode *int, endReason string) error
	GetProcess(ctx context.Context, id string) (store.Process, error)
	LatestProcess(ctx context.Context, attemptID string) (store.Process, error)
	// RunningProcesses lists the processes marked running, of one attempt
	// or ("") of every attempt — those of every host sharing the store.
	RunningProcesses(ctx context.Context, attemptID string) ([]store.Process, error)
	RunningInSession(ctx context.Context, sessionID string) (store.Process, bool, error)
	LastActivity(ctx context.Context, attemptID string) (*string, error)
	AppendLogs(ctx context.Context, rows []store.LogRow) error
	LogTail(ctx context.Context, processID, channel string, before int64, limit int) (store.LogPage, error)
	LogAfter(ctx context.Context, processID, channel string, after int64, limit int) (store.LogPage, error)

	// Events.
	RecordEvent(ctx context.Context, typ, subjectID string, data any) error

	// Hosts sharing the store (hosts.go): leases by owner, and the
	// commands one host queues for another.
	HeartbeatHost(ctx context.Context, owner, hostID string) error
	// LiveHosts maps the owners whose lease was renewed at or after since
	// (a FormatTime string) to their host ids.
	LiveHosts(ctx context.Context, since string) (map[string]string, error)
	DropHost(ctx context.Context, owner string) error
	// HostLeases returns every stored lease; RunningAttemptsByHost counts
	// the attempts with a running process by their host.
	HostLeases(ctx context.Context) ([]store.HostLease, error)
	RunningAttemptsByHost(ctx context.Context) (map[string]int, error)
	EnqueueHostCommand(ctx context.Context, c store.HostCommand) error
	// ClaimHostCommands marks up to limit pending commands for hostID as
	// running under owner and returns them: of concurrent claimers, one
	// gets each.
	ClaimHostCommands(ctx context.Context, hostID, owner string, limit int) ([]store.HostCommand, error)
	FinishHostCommand(ctx context.Context, id, result, errText string) error
	GetHostCommand(ctx context.Context, id string) (store.HostCommand, error)
	// CancelHostCommand withdraws a command no one has claimed.
	CancelHostCommand(ctx context.Context, id string) error
	// PruneHostCommands deletes commands created before before, and
	// leases not renewed since then.
	PruneHostCommands(ctx context.Context, before string) error
	// Subscribe returns a channel that receives the key of every signal
	// of kind (store.SignalHostCommand, store.SignalCommandDone) and ""
	// when some may have been missed, and cancel; Notifies reports
	// whether signals come at all (else the channel never receives).
	Subscribe(kind string) (<-chan string, func())
	Notifies() bool

	// Close releases the store; the board calls it from its own Close.
	Close() error
}

var _ Store = (*store.Store)(nil)
