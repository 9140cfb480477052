package board

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/plugboard/plugboard/host/internal/board/executor"
	"github.com/plugboard/plugboard/host/internal/board/gitops"
	"github.com/plugboard/plugboard/host/internal/metrics"
	"github.com/plugboard/plugboard/host/internal/procsup"
	"github.com/plugboard/plugboard/host/internal/store"
)

// DefaultStopGrace is how long a graceful stop waits after the interrupt
// before it kills the process group.
const DefaultStopGrace = 5 * time.Second

// Defaults of the per-run limits on coding agents. A run that prints
// nothing but warnings and retry notices for the inactivity timeout, or
// runs longer than the run timeout, is stopped and recorded as failed with
// the reason.
const (
	DefaultAgentInactivityTimeout = 10 * time.Minute
	DefaultAgentRunTimeout        = 2 * time.Hour
)

// Config configures a Board.
type Config struct {
	// DataDir holds the database (board.db), the attempts' clones
	// (worktrees/<attempt_id>/<repo_name>) and the host's git dirs over
	// them (gitdirs/<attempt_id>/<repo_name>).
	DataDir string
	// Store is the board's database: a SQLite file or a postgres:// URL
	// ("" is DataDir/board.db). DataDir keeps what is local to this host
	// (worktrees, git dirs) either way.
	Store string
	// ExecutorsFile is an optional JSON file of executor profiles that add
	// to or replace the built-in ones.
	ExecutorsFile string
	// Executors, when set, are the profiles instead (ExecutorsFile is then
	// not read): the executors section of the configuration file.
	Executors *executor.Registry
	// Guard is the diff guard preset name ("" = balanced).
	Guard string
	// StopGrace overrides DefaultStopGrace.
	StopGrace time.Duration
	// ContextAttemptID, when set, is the attempt get_context describes
	// (the server runs inside that attempt).
	ContextAttemptID string
	// AgentEnv says what of the host's environment attempt processes get.
	AgentEnv AgentEnv
	// Sandbox confines every attempt process tree (see Sandbox).
	Sandbox Sandbox
	// Access, when set, gives each attempt process its own way to the
	// board (an endpoint and an attempt-scoped token); without it attempt
	// processes get no way to the board at all.
	Access AccessIssuer
	// AgentInactivityTimeout and AgentRunTimeout are the defaults for
	// executor profiles that set none of their own (0 here means
	// DefaultAgentInactivityTimeout and DefaultAgentRunTimeout).
	AgentInactivityTimeout time.Duration
	AgentRunTimeout        time.Duration
	// Logs bound what attempt processes' logs keep (nil:
	// DefaultLogLimits; logcaps.go).
	Logs *LogLimits
	// RunningAsRoot overrides the check of the effective user id that
	// decides whether root-only refusals apply (nil: os.Geteuid() == 0).
	RunningAsRoot *bool
	// Logger receives process and recovery events.
	Logger *slog.Logger
	// Metrics times the store's operations and the commands forwarded to
	// other hosts; nil records nothing.
	Metrics *metrics.Metrics
}

// Board is the task engine. Its methods are safe for concurrent use.
type Board struct {
	cfg Config
	// store is where the board keeps its records (see Store); Open opens
	// it (a SQLite file in DataDir, or Config.Store). state is the same
	// database as the concrete type the rest of the host shares (Store()).
	store     Store
	state     *store.Store
	executors *executor.Registry
	guard     gitops.Guard
	// owner names this process ("pid/boot/starttime"); hostID the data
	// directory it serves (hosts.go). stopHosts ends the lease, sweep and
	// command loop; hostsDone is closed when it has.
	owner     string
	hostID    string
	stopHosts context.CancelFunc
	hostsDone chan struct{}
	// peers is set while another process holds a fresh lease (hosts.go).
	peers atomic.Bool
	log   *slog.Logger
	// hostEnv is the host's environment as the board found it at Open;
	// attempt processes get it filtered (see AgentEnv and agentEnviron).
	hostEnv []string

	mu      sync.Mutex
	running map[string]*run // by process id, this host's processes only
	// stops counts stops under way per attempt id.
	stops map[string]int
	// approving holds the tasks an approve_attempt is merging.
	approving map[string]bool
	closed    bool
	// chains counts background work (process waits, queued follow-ups)
	// so Close can wait for it; pending is the same count, readable.
	chains  sync.WaitGroup
	pending atomic.Int64
	// logBudgets are the attempts' log budgets (logcaps.go).
	logBudgets logBudgets
}

// Open opens the board in cfg.DataDir, applying migrations, and recovers
// processes a crashed host left running.
func Open(ctx context.Context, cfg Config) (*Board, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("board: no data directory")
	}
	// Attempts get it as PLUGBOARD_DATA and run in their worktrees: a
	// relative path would name a new board inside each worktree.
	data, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("board: data directory: %w", err)
	}
	cfg.DataDir = data
	if err := cfg.AgentEnv.Validate(); err != nil {
		return nil, fmt.Errorf("board: %w", err)
	}
	// Before anything runs in a worktree (git included): nothing started
	// from here may read this process's environment or memory.
	procsup.SealHost()
	if cfg.StopGrace == 0 {
		cfg.StopGrace = DefaultStopGrace
	}
	if cfg.AgentInactivityTimeout < 0 || cfg.AgentRunTimeout < 0 {
		return nil, errors.New("board: agent timeouts must not be negative")
	}
	if cfg.AgentInactivityTimeout == 0 {
		cfg.AgentInactivityTimeout = DefaultAgentInactivityTimeout
	}
	if cfg.AgentRunTimeout == 0 {
		cfg.AgentRunTimeout = DefaultAgentRunTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	guard, err := gitops.GuardByName(cfg.Guard)
	if err != nil {
		return nil, fmt.Errorf("board: %w", err)
	}
	execs := cfg.Executors
	if execs == nil {
		if execs, err = executor.Load(cfg.ExecutorsFile); err != nil {
			return nil, fmt.Errorf("board: %w", err)
		}
	}
	st, err := store.OpenURL(ctx, StoreTarget(cfg.DataDir, cfg.Store))
	if err != nil {
		return nil, err
	}
	st.SetMetrics(cfg.Metrics)
	self, err := procsup.Identity(os.Getpid())
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("board: identify this process: %w", err)
	}
	hostID, err := hostIDOf(cfg.DataDir)
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("board: host id: %w", err)
	}
	b := &Board{
		cfg: cfg, store: st, state: st, executors: execs, guard: guard, log: cfg.Logger,
		owner:   strconv.Itoa(os.Getpid()) + "/" + self,
		hostID:  hostID,
		hostEnv: os.Environ(),
		running: map[string]*run{},
		stops:   map[string]int{},
	}
	// The lease first: another host sweeping now must see this one alive.
	if err := st.HeartbeatHost(ctx, b.owner, b.hostID); err != nil {
		st.Close()
		return nil, fmt.Errorf("board: host lease: %w", err)
	}
	if _, err := b.Recover(ctx); err != nil {
		st.Close()
		return nil, err
	}
	b.startHosts()
	return b, nil
}

// Store returns the database the board opened (Config.Store), which the
// rest of the host shares: the idempotency journal, the decision log, mail
// and the dashboard's sessions live there too, each reaching it through an
// interface of its own. The board itself reaches it only through Store
// (the interface). Open is the one constructor, so the result is never nil.
func (b *Board) Store() *store.Store { return b.state }

// Executors exposes the executor registry.
func (b *Board) Executors() *executor.Registry { return b.executors }

// Recover marks killed every process left running by a host that is gone
// (crashed or killed), kills what is left of its process tree (its cgroup,
// group, session and every process carrying its tree marker: setsid and
// double forks included), and moves the affected tasks to inreview, so
// nothing stays stuck in running or keeps running.
// Processes of a live host (another plugboard serve on the same data
// directory) are left alone. It returns how many processes it marked.
func (b *Board) Recover(ctx context.Context) (int, error) { return b.sweep(ctx) }

// sweep is Recover: Open runs it, and every host again each
// hostHeartbeat, so the processes of a host that died while others run are
// marked within hostLeaseTTL + hostHeartbeat.
func (b *Board) sweep(ctx context.Context) (int, error) {
	procs, err := b.store.RunningProcesses(ctx, "")
	if err != nil {
		return 0, fmt.Errorf("board: recover: %w", err)
	}
	if len(procs) == 0 {
		return 0, nil
	}
	live, err := b.liveOwners(ctx)
	if err != nil {
		return 0, fmt.Errorf("board: recover: %w", err)
	}
	marked := 0
	for _, p := range procs {
		if !b.ownerGone(p.Owner, live) {
			continue
		}
		if p.PID > 0 {
			if _, err := procsup.KillTree(p.PID, p.Identity); err != nil {
				b.log.Warn("recover: kill leftover process tree", "pid", p.PID, "err", err)
			}
		}
		if err := b.store.FinishProcess(ctx, p.ID, store.ProcKilled, nil, "host exited"); err != nil {
			return marked, fmt.Errorf("board: recover %s: %w", p.ID, err)
		}
		marked++
		b.log.Info("recover: process of an exited host marked killed", "execution_process_id", p.ID, "attempt_id", p.AttemptID, "pid", p.PID)
		if a, err := b.store.GetAttempt(ctx, p.AttemptID); err == nil {
			b.store.DiscardQueuedForAttempt(ctx, a.ID)
			b.attemptFinished(ctx, a)
			b.settleTask(ctx, a.TaskID)
		}
	}
	return marked, nil
}

// ownerAlive reports whether the host identified by owner ("pid/identity")
// still runs.
func ownerAlive(owner string) bool {
	pidText, identity, ok := strings.Cut(owner, "/")
	if !ok {
		return false
	}
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 {
		return false
	}
	now, err := procsup.Identity(pid)
	return err == nil && now == identity
}

// Close stops every process this host runs (gracefully, then by force
// after the grace period), records them killed, and closes the store.
// Agents do not outlive the host that supervises them: nobody would record
// their end.
func (b *Board) Close() error {
	b.mu.Lock()
	b.closed = true
	runs := make([]*run, 0, len(b.running))
	for _, r := range b.running {
		runs = append(runs, r)
	}
	b.mu.Unlock()
	if b.stopHosts != nil {
		b.stopHosts()
		<-b.hostsDone
	}
	var wg sync.WaitGroup
	for _, r := range runs {
		wg.Add(1)
		go func() { defer wg.Done(); r.proc.Stop(false, b.cfg.StopGrace) }()
	}
	wg.Wait()
	b.chains.Wait()
	// Its processes are recorded killed: the lease can go at once.
	if err := b.store.DropHost(context.Background(), b.owner); err != nil {
		b.log.Warn("host lease not dropped", "err", err)
	}
	return b.store.Close()
}

// StoreTarget is the store a board in dataDir uses: store when set, else
// the SQLite file dataDir/board.db.
func StoreTarget(dataDir, store string) string {
	if store != "" {
		return store
	}
	return filepath.Join(dataDir, "board.db")
}
