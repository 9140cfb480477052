package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/plugboard/plugboard/abi/tasks"
	"github.com/plugboard/plugboard/host/internal/board"
	"github.com/plugboard/plugboard/host/internal/board/store"
	"github.com/plugboard/plugboard/host/internal/datadir"
)

// Types of the operator's board API that are not agent-facing wire types
// (those are abi/tasks'). They are the board's own, named here so a
// program outside this module can use them.
type (
	// BoardConfig configures the task board (Config.Board, OpenBoard).
	BoardConfig = board.Config
	// AgentEnv says what of the host's environment attempt processes get.
	AgentEnv = board.AgentEnv
	// Sandbox configures the OS sandbox of attempt processes
	// (BoardConfig.Sandbox).
	Sandbox = board.Sandbox
	// RepoSpec is one repository of a project being created.
	RepoSpec = board.RepoSpec
	// Project is a project with its repositories, as the operator sees it.
	Project = store.Project
	// ProjectRepo is one repository of a project.
	ProjectRepo = store.ProjectRepo
	// Process is one execution process of an attempt.
	Process = store.Process
	// Decision is one row of the decision log.
	Decision = store.Decision
	// DecisionFilter selects decision log rows.
	DecisionFilter = store.DecisionFilter
	// LogsArgs, LogsResult and LogEntry are tail_attempt_logs' arguments
	// and answer with each entry as stored (JSON).
	LogsArgs   = board.LogsArgs
	LogsResult = board.LogsResult
	LogEntry   = board.LogEntry
	// HostInfo is one host sharing the board's store (Board.Hosts).
	HostInfo = board.HostInfo
)

// Errors the operator's board API returns (wrapped; test with errors.Is).
var (
	// ErrNotFound: no such project (FindProject).
	ErrNotFound = store.ErrNotFound
	// ErrProjectExists: a project of that name exists (CreateProject).
	ErrProjectExists = store.ErrProjectExists
)

// Decision log row kinds and statuses (Decision.Kind, Decision.Status).
const (
	DecisionKindCall     = store.DecisionKindCall
	DecisionKindDecision = store.DecisionKindDecision
	DecisionOK           = store.DecisionOK
	DecisionError        = store.DecisionError
)

// Board defaults and limits the operator's commands show.
const (
	// TimeFormat is how the board writes times.
	TimeFormat = store.TimeFormat
	// DefaultAgentInactivityTimeout and DefaultAgentRunTimeout are the
	// limits of a coding-agent run whose profile sets none.
	DefaultAgentInactivityTimeout = board.DefaultAgentInactivityTimeout
	DefaultAgentRunTimeout        = board.DefaultAgentRunTimeout
	// DefaultStopGrace is how long a stop waits before killing.
	DefaultStopGrace = board.DefaultStopGrace
	// DefaultTaskLimit and MaxTaskLimit bound list_tasks.
	DefaultTaskLimit = board.DefaultTaskLimit
	MaxTaskLimit     = board.MaxTaskLimit
	// DefaultLogLimit and MaxLogLimit bound tail_attempt_logs.
	DefaultLogLimit = board.DefaultLogLimit
	MaxLogLimit     = board.MaxLogLimit
)

// Board is the task board as its operator drives it: the plugboard
// command's project, repo, task and attempt commands use it, and a program
// embedding plugboard can too. Arguments and results are the shapes agents
// see (abi/tasks). It acts as the operator: no agent's scope applies, and
// nothing goes through the decision log. Its methods are safe for
// concurrent use.
type Board struct {
	b *board.Board
	// own is set when OpenBoard opened it: Close then closes it.
	own bool
}

// OpenBoard opens the task board in cfg.DataDir (created if missing)
// alone, without plugins, for a program that only drives the board. The
// board recovers what a host that is gone left running. Close closes it.
func OpenBoard(ctx context.Context, cfg BoardConfig) (*Board, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("board: no data directory")
	}
	if err := datadir.Prepare(cfg.DataDir); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	b, err := board.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &Board{b: b, own: true}, nil
}

// Close closes a board OpenBoard opened; a Host's board closes with the
// Host.
func (b *Board) Close() error {
	if !b.own {
		return nil
	}
	return b.b.Close()
}

// Hosts lists the hosts sharing the board's store: alive or not, their
// serving processes and their attempts with a running process. A board
// OpenBoard opened is not counted as serving its host; a Host's is.
func (b *Board) Hosts(ctx context.Context) ([]HostInfo, error) {
	return b.b.Hosts(ctx, !b.own)
}

// CreateProject creates a project with its repositories.
func (b *Board) CreateProject(ctx context.Context, name string, repos []RepoSpec) (Project, error) {
	return b.b.CreateProject(ctx, name, repos)
}

// AddRepo adds a repository to a project.
func (b *Board) AddRepo(ctx context.Context, projectID string, repo RepoSpec) (Project, error) {
	return b.b.AddRepo(ctx, projectID, repo)
}

// FindProject returns the project whose id, else whose name, is ref
// (ErrNotFound when neither is).
func (b *Board) FindProject(ctx context.Context, ref string) (Project, error) {
	st := b.b.Store()
	p, err := st.GetProject(ctx, ref)
	if err == nil || !errors.Is(err, store.ErrNotFound) {
		return p, err
	}
	return st.FindProjectByName(ctx, ref)
}

// ListProjects is list_projects.
func (b *Board) ListProjects(ctx context.Context) (tasks.ProjectsOut, error) {
	return b.b.ListProjects(ctx)
}

// ListRepos is list_repos.
func (b *Board) ListRepos(ctx context.Context, a tasks.ProjectIn) (tasks.ReposOut, error) {
	return b.b.ListRepos(ctx, a)
}

// ListExecutors is list_executors.
func (b *Board) ListExecutors(ctx context.Context) (tasks.ExecutorsOut, error) {
	return b.b.ListExecutors(ctx)
}

// ExecutorVerifiedWith is the CLI release an executor's profile was
// checked against ("" when unknown or not recorded).
func (b *Board) ExecutorVerifiedWith(executor string) string {
	if p, ok := b.b.Executors().Get(executor); ok {
		return p.VerifiedWith
	}
	return ""
}

// ListTasks is list_tasks.
func (b *Board) ListTasks(ctx context.Context, a tasks.ListTasksIn) (tasks.TasksOut, error) {
	return b.b.ListTasks(ctx, a)
}

// CreateTask is create_task.
func (b *Board) CreateTask(ctx context.Context, a tasks.CreateTaskArgs) (tasks.Task, error) {
	return b.b.CreateTask(ctx, a)
}

// ListTaskAttempts is list_task_attempts.
func (b *Board) ListTaskAttempts(ctx context.Context, a tasks.TaskIn) (tasks.AttemptsOut, error) {
	return b.b.ListTaskAttempts(ctx, a)
}

// StartTaskAttempt is start_task_attempt. The attempt's processes belong
// to this process: they stop when it closes the board.
func (b *Board) StartTaskAttempt(ctx context.Context, a tasks.StartArgs) (tasks.StartOut, error) {
	return b.b.StartTaskAttempt(ctx, a)
}

// GetAttemptStatus is get_attempt_status.
func (b *Board) GetAttemptStatus(ctx context.Context, a tasks.AttemptIn) (tasks.StatusOut, error) {
	return b.b.GetAttemptStatus(ctx, a)
}

// TailAttemptLogs is tail_attempt_logs, each entry as stored.
func (b *Board) TailAttemptLogs(ctx context.Context, a LogsArgs) (LogsResult, error) {
	return b.b.TailAttemptLogs(ctx, a)
}

// StopAttempt is stop_attempt.
func (b *Board) StopAttempt(ctx context.Context, a tasks.StopIn) (tasks.StopOut, error) {
	return b.b.StopAttempt(ctx, a)
}

// RecordIdleAttempt records an attempt of a task as it is between its
// creation and its first process — no worktree, session or process — on
// branch, with dir as its directory: a fixture for tests and conformance
// scenarios that need an idle attempt. It returns the attempt's id.
func (b *Board) RecordIdleAttempt(ctx context.Context, taskID, branch, dir string) (string, error) {
	now := store.Now()
	a := store.Attempt{ID: store.NewID(), TaskID: taskID, Branch: branch, Executor: "SHELL",
		Variant: "DEFAULT", Dir: dir, CreatedAt: now, UpdatedAt: now}
	if err := b.b.Store().CreateAttempt(ctx, a, nil); err != nil {
		return "", err
	}
	return a.ID, nil
}

// Processes lists an attempt's execution processes, oldest first.
func (b *Board) Processes(ctx context.Context, attemptID string) ([]Process, error) {
	return b.b.Store().AttemptProcesses(ctx, attemptID)
}

// Decisions lists decision log rows (see DecisionFilter).
func (b *Board) Decisions(ctx context.Context, f DecisionFilter) ([]Decision, error) {
	return b.b.Store().ListDecisions(ctx, f)
}

// Recover marks killed what a host that is gone left running (see
// OpenBoard); it returns how many processes it marked.
func (b *Board) Recover(ctx context.Context) (int, error) { return b.b.Recover(ctx) }

// Busy reports whether processes this process started still run, or a
// step after one (cleanup script, queued follow-up) is still to start.
func (b *Board) Busy() bool { return b.b.Busy() }

// RunningAttempts lists the attempts with a process this process runs.
func (b *Board) RunningAttempts() []string { return b.b.RunningAttempts() }

// WaitIdle waits until the board is not Busy, or ctx ends.
func (b *Board) WaitIdle(ctx context.Context) error { return b.b.WaitIdle(ctx) }

// DecisionLog opens the decision log of a board for reading only, without
// opening the board (no recovery, no processes): what `plugboard audit
// tail` reads while a server writes. storeTarget is the board's store (a
// SQLite file or a postgres:// URL); "" is dataDir/board.db.
func DecisionLog(ctx context.Context, dataDir, storeTarget string) (*DecisionReader, error) {
	st, err := store.OpenURL(ctx, board.StoreTarget(dataDir, storeTarget))
	if err != nil {
		return nil, err
	}
	return &DecisionReader{st: st}, nil
}

// DecisionReader reads a decision log (DecisionLog).
type DecisionReader struct{ st *store.Store }

// Decisions lists rows (see DecisionFilter).
func (r *DecisionReader) Decisions(ctx context.Context, f DecisionFilter) ([]Decision, error) {
	return r.st.ListDecisions(ctx, f)
}

// Close closes the reader.
func (r *DecisionReader) Close() error { return r.st.Close() }

// Now is the board's clock in TimeFormat.
func Now() string { return store.Now() }

// FormatTime writes t in TimeFormat.
func FormatTime(t time.Time) string { return store.FormatTime(t) }

// SandboxMode says what confines attempt processes of a board configured
// with sb on this machine: "landlock (ABI n, network open|closed)", "off
// (...)" or "unavailable: <the kernel's reason>" (attempts then refuse to
// start).
func SandboxMode(sb Sandbox) string { return board.SandboxMode(sb) }
