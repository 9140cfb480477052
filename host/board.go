package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/plugboard/plugboard/abi/tasks"
	"github.com/plugboard/plugboard/host/internal/board"
	"github.com/plugboard/plugboard/host/internal/datadir"
	"github.com/plugboard/plugboard/host/internal/store"
)

// The board's configuration, named here so a program outside this module
// can fill it in. They are aliases of host/internal/board's because
// Config.Board is handed to the board as it is (its Executors and Metrics
// are set by the host, not by a caller).
type (
	// BoardConfig configures the task board (Config.Board, OpenBoard).
	BoardConfig = board.Config
	// AgentEnv says what of the host's environment attempt processes get.
	AgentEnv = board.AgentEnv
	// Sandbox configures the OS sandbox of attempt processes
	// (BoardConfig.Sandbox).
	Sandbox = board.Sandbox
)

// LogsResult and LogEntry are tail_attempt_logs' answer with each entry as
// stored (JSON). They are aliases because the shape is abi/tasks' public
// contract (BoardLogs), the same agents receive; only the entry type is
// fixed here.
type (
	LogsResult = tasks.BoardLogs[json.RawMessage]
	LogEntry   = tasks.BoardLogEntry[json.RawMessage]
)

// The board's own records as the operator reads them. They are types of
// this package, not the store's rows: a row's columns are the schema's to
// change, and each of these is converted from its row in one function
// below, so a schema change stops there instead of reaching callers.

// RepoSpec is one repository of a project being created.
type RepoSpec struct {
	// Path is the repository's directory (a git work tree).
	Path string
	// Name is the repository's name in the project ("" = the directory's
	// base name).
	Name string
	// TargetBranch is the branch attempts start from ("" = the
	// repository's current branch).
	TargetBranch string
	// SetupScript and CleanupScript are optional shell scripts run in
	// each attempt's clone before and after the agent.
	SetupScript   string
	CleanupScript string
}

// Project is a project with its repositories, as the operator sees it.
// Its JSON is what `plugboard project` commands print with --json.
type Project struct {
	ID   string `json:"project_id"`
	Name string `json:"name"`
	// CreatedAt and UpdatedAt are in TimeFormat.
	CreatedAt string        `json:"created_at"`
	UpdatedAt string        `json:"updated_at"`
	Repos     []ProjectRepo `json:"repos"`
}

// ProjectRepo is one repository of a project: where it is, the branch
// attempts start from and the optional scripts run around the agent.
type ProjectRepo struct {
	ID   string `json:"repo_id"`
	Name string `json:"repo_name"`
	// Path is the repository's absolute path.
	Path          string `json:"path"`
	CreatedAt     string `json:"created_at"`
	UpdatedAt     string `json:"updated_at"`
	TargetBranch  string `json:"target_branch"`
	SetupScript   string `json:"setup_script,omitempty"`
	CleanupScript string `json:"cleanup_script,omitempty"`
}

// Process is one execution process of an attempt: a setup or cleanup
// script, the coding agent, a dev server.
type Process struct {
	ID        string
	AttemptID string
	// SessionID is the agent session it continues (nil for a script).
	SessionID *string
	// RunReason is why it ran (tasks.RunSetupScript, tasks.RunCodingAgent,
	// tasks.RunDevServer, …); Status where it is (running, completed,
	// failed, killed).
	RunReason string
	Status    string
	Command   string
	PID       int
	// ExitCode is nil until it has exited; EndReason says why it ended
	// when the exit code does not (a signal, a start failure, "host
	// exited").
	ExitCode  *int
	EndReason string
	// Times are in TimeFormat; CompletedAt is nil while it runs.
	StartedAt   string
	CompletedAt *string
	CreatedAt   string
	UpdatedAt   string
}

// Decision is one row of the decision log: a call (DecisionKindCall) or a
// decision an agent recorded (DecisionKindDecision). Its JSON is what
// `plugboard audit tail --json` prints.
type Decision struct {
	ID        string `json:"id"`
	Kind      string `json:"kind"`
	AgentID   string `json:"agent_id"`
	AgentType string `json:"agent_type"`
	Tool      string `json:"tool"`
	RequestID string `json:"request_id"`
	// Input, Result and Error are JSON as logged (payloads beyond
	// AuditOptions' bound are capped).
	Input     json.RawMessage `json:"input,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	ErrorCode string          `json:"error_code"`
	Error     json.RawMessage `json:"error,omitempty"`
	// Status is DecisionOK, DecisionError, or invoked while the call runs.
	Status     string `json:"status"`
	DurationMS *int64 `json:"duration_ms"`
	Attempts   int    `json:"attempts"`
	// Title and Body are a recorded decision's.
	Title      string  `json:"title"`
	Body       string  `json:"body"`
	CreatedAt  string  `json:"created_at"`
	FinishedAt *string `json:"finished_at"`
	// HTTP lists the HTTP requests the plugin made during the call (a JSON
	// array; nil when it made none).
	HTTP json.RawMessage `json:"http,omitempty"`
}

// DecisionFilter selects decision log rows; empty fields select all.
type DecisionFilter struct {
	AgentID string
	Tool    string
	// Status selects one status (DecisionOK, DecisionError, or invoked).
	Status string
	// ErrorCode selects the calls that failed with this envelope code.
	ErrorCode string
	// CreatedFrom and CreatedBefore select the rows created at or after
	// and before these times (TimeFormat): a time range of calls started.
	CreatedFrom, CreatedBefore string
	// Limit caps the rows (default 50).
	Limit int
	// FinishedAfter, when set, selects rows finished at or after this time
	// (TimeFormat), oldest first: what a follower polls. Without it the
	// newest Limit rows by creation are returned, newest first.
	FinishedAfter string
}

// LogsArgs are tail_attempt_logs' arguments (tasks.LogsIn), and the
// process whose log to read instead of the latest one's.
type LogsArgs struct {
	AttemptID string `json:"attempt_id"`
	// Channel is "normalized" (the default) or "raw".
	Channel         string `json:"channel,omitempty"`
	Limit           int    `json:"limit,omitempty"`
	Cursor          *int64 `json:"cursor,omitempty"`
	AfterEntryIndex *int64 `json:"after_entry_index,omitempty"`
	// ExecutionProcessID, when set, reads that process's log.
	ExecutionProcessID string `json:"execution_process_id,omitempty"`
}

// HostInfo is one host sharing the board's store (Board.Hosts).
type HostInfo struct {
	HostID string `json:"host_id"`
	// This is the host of the data directory this board was opened on.
	This bool `json:"this"`
	// Alive: a process serving it is running; Processes counts those.
	Alive     bool `json:"alive"`
	Processes int  `json:"processes"`
	// LastSeen is its newest lease renewal ("" when none is stored).
	LastSeen        string `json:"last_seen"`
	RunningAttempts int    `json:"running_attempts"`
	// Sandbox is what confines its attempt processes (SandboxMode); only
	// This host's is known.
	Sandbox string `json:"sandbox,omitempty"`
}

// projectOf is p as callers see it.
func projectOf(p store.Project) Project {
	out := Project{ID: p.ID, Name: p.Name, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
	if p.Repos != nil {
		out.Repos = make([]ProjectRepo, len(p.Repos))
	}
	for i, r := range p.Repos {
		out.Repos[i] = ProjectRepo{ID: r.ID, Name: r.Name, Path: r.Path, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
			TargetBranch: r.TargetBranch, SetupScript: r.SetupScript, CleanupScript: r.CleanupScript}
	}
	return out
}

// projectResult is projectOf for a store call's answer.
func projectResult(p store.Project, err error) (Project, error) {
	if err != nil {
		return Project{}, err
	}
	return projectOf(p), nil
}

// processesOf is ps as callers see them.
func processesOf(ps []store.Process, err error) ([]Process, error) {
	if err != nil {
		return nil, err
	}
	out := make([]Process, len(ps))
	for i, p := range ps {
		out[i] = Process{ID: p.ID, AttemptID: p.AttemptID, SessionID: p.SessionID, RunReason: p.RunReason,
			Status: p.Status, Command: p.Command, PID: p.PID, ExitCode: p.ExitCode, EndReason: p.EndReason,
			StartedAt: p.StartedAt, CompletedAt: p.CompletedAt, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
	}
	return out, nil
}

// listDecisions reads decision log rows as callers see them. The
// conversions are of identical field lists: a column added to the row
// stops compiling here, where it is decided whether callers get it.
func listDecisions(ctx context.Context, st *store.Store, f DecisionFilter) ([]Decision, error) {
	rows, err := st.ListDecisions(ctx, store.DecisionFilter(f))
	if err != nil {
		return nil, err
	}
	out := make([]Decision, len(rows))
	for i, d := range rows {
		out[i] = Decision(d)
	}
	return out, nil
}

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
	hosts, err := b.b.Hosts(ctx, !b.own)
	if err != nil {
		return nil, err
	}
	out := make([]HostInfo, len(hosts))
	for i, h := range hosts {
		out[i] = HostInfo(h)
	}
	return out, nil
}

// CreateProject creates a project with its repositories.
func (b *Board) CreateProject(ctx context.Context, name string, repos []RepoSpec) (Project, error) {
	specs := make([]board.RepoSpec, len(repos))
	for i, r := range repos {
		specs[i] = board.RepoSpec(r)
	}
	return projectResult(b.b.CreateProject(ctx, name, specs))
}

// AddRepo adds a repository to a project.
func (b *Board) AddRepo(ctx context.Context, projectID string, repo RepoSpec) (Project, error) {
	return projectResult(b.b.AddRepo(ctx, projectID, board.RepoSpec(repo)))
}

// FindProject returns the project whose id, else whose name, is ref
// (ErrNotFound when neither is).
func (b *Board) FindProject(ctx context.Context, ref string) (Project, error) {
	st := b.b.Store()
	p, err := st.GetProject(ctx, ref)
	if err == nil || !errors.Is(err, store.ErrNotFound) {
		return projectResult(p, err)
	}
	return projectResult(st.FindProjectByName(ctx, ref))
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
	return b.b.TailAttemptLogs(ctx, board.LogsArgs(a))
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
	return processesOf(b.b.Store().AttemptProcesses(ctx, attemptID))
}

// Decisions lists decision log rows (see DecisionFilter).
func (b *Board) Decisions(ctx context.Context, f DecisionFilter) ([]Decision, error) {
	return listDecisions(ctx, b.b.Store(), f)
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
	return listDecisions(ctx, r.st, f)
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
