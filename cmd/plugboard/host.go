package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/audit"
	"github.com/plugboard/plugboard/host/board"
	"github.com/plugboard/plugboard/host/board/store"
	"github.com/plugboard/plugboard/host/boardapi"
	"github.com/plugboard/plugboard/host/dispatch"
	"github.com/plugboard/plugboard/host/grants"
	"github.com/plugboard/plugboard/host/idempotency"
	"github.com/plugboard/plugboard/host/mail"
	"github.com/plugboard/plugboard/host/policy"
	"github.com/plugboard/plugboard/host/registry"
	"github.com/plugboard/plugboard/host/runtime"
)

// hostFlags are the flags shared by every command that loads plugins.
type hostFlags struct {
	plugins      stringList
	data         string
	logLevel     string
	callTimeout  time.Duration
	memoryMiB    uint
	maxInstances int
	// agents is the agents file (host/policy) and agent the identity of
	// unauthenticated sessions (stdio, the CLI); "" is the local identity.
	agents, agent string
	pol           *policy.Policy
	boardFlags
	audit auditFlags
}

// boardFlags configure the task board; the board commands share them.
type boardFlags struct {
	executors string
	guard     string
	grants    string
	attempt   string
	// agentEnv and agentEnvDrop adjust the environment of attempt
	// processes (board.AgentEnv).
	agentEnv, agentEnvDrop stringList
	// agentInactivity and agentRunTimeout are the default limits of a
	// coding-agent run (board.Config).
	agentInactivity, agentRunTimeout time.Duration
}

func (b *boardFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&b.executors, "executors", "", "JSON file of executor profiles adding to or replacing the built-in ones")
	fs.StringVar(&b.guard, "guard", "balanced", "diff guard preset for get_attempt_changes: safe, balanced, relaxed or off")
	fs.Var(&b.agentEnv, "agent-env", "give attempt processes KEY=VALUE, or KEY with this process's value (repeatable; see README \"Executors\")")
	fs.Var(&b.agentEnvDrop, "agent-env-drop", "keep variables matching the glob PATTERN from attempt processes (repeatable; PLUGBOARD_* never reach them)")
	fs.DurationVar(&b.agentInactivity, "agent-inactivity-timeout", board.DefaultAgentInactivityTimeout,
		"fail a coding-agent run that shows no progress (warnings and retries aside) for this long, unless its profile sets its own")
	fs.DurationVar(&b.agentRunTimeout, "agent-run-timeout", board.DefaultAgentRunTimeout,
		"fail a coding-agent run that runs longer than this, unless its profile sets its own")
}

// agentEnvConfig is what --agent-env and --agent-env-drop say.
func (b *boardFlags) agentEnvConfig() board.AgentEnv {
	return board.AgentEnv{Set: b.agentEnv, Drop: b.agentEnvDrop}
}

// openBoard opens the task board in data.
func (b *boardFlags) openBoard(ctx context.Context, data string, log *slog.Logger) (*board.Board, error) {
	return board.Open(ctx, board.Config{DataDir: data, ExecutorsFile: b.executors, Guard: b.guard,
		ContextAttemptID: b.attempt, AgentEnv: b.agentEnvConfig(), Logger: log,
		AgentInactivityTimeout: b.agentInactivity, AgentRunTimeout: b.agentRunTimeout})
}

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func (h *hostFlags) register(fs *flag.FlagSet) {
	fs.Var(&h.plugins, "plugins", "directory of .wasm plugins, searched recursively (repeatable; default DATA/plugins)")
	fs.StringVar(&h.data, "data", "", "data directory: compiled-code and manifest caches (default: $PLUGBOARD_DATA, else the per-user data directory)")
	fs.StringVar(&h.logLevel, "log-level", "info", "log level on stderr: debug, info, warn or error")
	fs.DurationVar(&h.callTimeout, "call-timeout", 30*time.Second, "deadline of a tool call unless its manifest declares one")
	fs.UintVar(&h.memoryMiB, "memory-limit", 128, "linear-memory cap of each plugin instance, MiB")
	fs.IntVar(&h.maxInstances, "max-instances", 0, "concurrent instances per plugin (default: 2 x CPUs, at least 4)")
	fs.StringVar(&h.grants, "grants", "", "JSON file narrowing the capabilities each plugin receives (default: what it declares)")
	fs.StringVar(&h.agents, "agents", "", "JSON file of the agents (id, type, supervisor, token), their types' permissions and the critical tools (default: none; the caller is the local SUPERVISOR)")
	fs.StringVar(&h.agent, "agent", "", "serve as this agent of --agents (stdio, and HTTP requests without a token); default: the local identity with SUPERVISOR rights")
	fs.StringVar(&h.attempt, "attempt", os.Getenv("PLUGBOARD_ATTEMPT_ID"), "attempt this server runs inside, for get_context (default: $PLUGBOARD_ATTEMPT_ID, else the attempt whose worktree holds the working directory)")
	h.boardFlags.register(fs)
	h.audit.register(fs)
}

// policy loads the agents file once and checks --agent against it.
func (h *hostFlags) policy() (*policy.Policy, error) {
	if h.pol != nil {
		return h.pol, nil
	}
	pol, err := policy.Load(h.agents)
	if err != nil {
		return nil, &exitError{code: 2, err: err}
	}
	if h.agent != "" {
		if h.agents == "" {
			return nil, usageError("--agent %s needs --agents FILE, which configures it", h.agent)
		}
		if _, ok := pol.Agent(h.agent); !ok {
			return nil, usageError("--agent %s: no such agent in %s", h.agent, h.agents)
		}
	}
	h.pol = pol
	return pol, nil
}

// caller is the identity of unauthenticated sessions: --agent, else the
// local identity.
func (h *hostFlags) caller() *abi.Caller {
	if h.agent != "" {
		if c, ok := h.pol.Caller(h.agent); ok {
			return c
		}
	}
	return policy.Local()
}

// dataDir is the --data value, else defaultDataDir, made absolute: the board
// hands it to attempts (PLUGBOARD_DATA), which run in their worktrees, where
// a relative path would name a new board.
func dataDir(flagValue string) (string, error) {
	data := flagValue
	if data == "" {
		var err error
		if data, err = defaultDataDir(); err != nil {
			return "", err
		}
	}
	abs, err := filepath.Abs(data)
	if err != nil {
		return "", fmt.Errorf("data directory %s: %w", data, err)
	}
	return abs, nil
}

// defaultDataDir is $PLUGBOARD_DATA, else $XDG_DATA_HOME/plugboard, else
// ~/.local/share/plugboard.
func defaultDataDir() (string, error) {
	if d := os.Getenv("PLUGBOARD_DATA"); d != "" {
		return d, nil
	}
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "plugboard"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no --data given and no home directory: %w", err)
	}
	return filepath.Join(home, ".local", "share", "plugboard"), nil
}

// host is everything a loaded plugboard needs to dispatch calls.
type host struct {
	log        *slog.Logger
	engine     *runtime.Engine
	registry   *registry.Registry
	dispatcher *dispatch.Dispatcher
	board      *boardHandle
	// policy is the agents configuration; caller the identity of
	// unauthenticated sessions.
	policy *policy.Policy
	caller *abi.Caller
	// mail is the mail system (the dispatcher's escalator); decisions the
	// decision log (its auditor).
	mail      *mail.Service
	decisions *audit.Log
	dataDir   string
	// idempotency is the retention of request_id records.
	idempotency idempotency.Config
	// stopPruner ends the idempotency pruner and waits for it; nil when
	// none runs.
	stopPruner func()
}

func (h *hostFlags) open(ctx context.Context, stderr io.Writer) (*host, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(h.logLevel)); err != nil {
		return nil, usageError("--log-level: %v", err)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	pol, err := h.policy()
	if err != nil {
		return nil, err
	}
	// A malformed --agent-env is the operator's to fix now, not a board
	// that fails to open in the background.
	if err := h.agentEnvConfig().Validate(); err != nil {
		return nil, usageError("%v", err)
	}
	data, err := dataDir(h.data)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	if h.attempt == "" {
		if wd, err := os.Getwd(); err == nil {
			h.attempt = attemptOfDir(data, wd)
		}
	}
	dirs := []string(h.plugins)
	if len(dirs) == 0 {
		dirs = []string{filepath.Join(data, "plugins")}
		if err := os.MkdirAll(dirs[0], 0o755); err != nil {
			return nil, fmt.Errorf("plugin directory: %w", err)
		}
	}
	grantsPolicy, err := grants.Load(h.grants)
	if err != nil {
		return nil, err
	}
	idem, err := idempotency.ConfigFromEnv(os.Getenv)
	if err != nil {
		return nil, err
	}
	idem.Logger = log
	// A claim younger than the longest call must not go stale, or a slow
	// call could run twice.
	if longest := max(5*time.Minute, h.callTimeout); idem.InProgressTTL > 0 && idem.InProgressTTL < longest {
		log.Warn("the request_id in-progress TTL is shorter than the longest call; a retry of a slow call may run it again",
			"ttl", idem.InProgressTTL, "longest_call", longest, "env", idempotency.EnvInProgressTTL)
	}
	// The board opens (migrations, crash recovery) while plugins load:
	// tools/list does not wait for it, a board call does.
	bh := &boardHandle{ready: make(chan struct{})}
	// The decision log (every call, and log_decision) and the mail system
	// (mail tools, and escalations of calls that failed for good) keep
	// their records in the board's store.
	decisions := audit.NewWithOptions(bh.store, log, h.audit.options())
	var directory mail.Agents
	if h.agents != "" {
		directory = mail.FromPolicy(pol)
	}
	mailSvc := mail.New(bh.store, mail.Options{Agents: directory, Logger: log})
	go func() {
		defer close(bh.ready)
		bh.b, bh.err = h.openBoard(context.WithoutCancel(ctx), data, log)
		if bh.err != nil {
			log.Error("task board unavailable; board operations will fail", "data", data, "err", bh.err)
			return
		}
		// Each caller reaches only the board work its scope holds (a
		// WORKER its own task or attempt).
		bh.api = boardapi.New(bh.b, log, boardapi.WithMail(mailSvc), boardapi.WithDecisions(decisions),
			boardapi.WithScopes(pol.Scope))
	}()
	engine, err := runtime.New(ctx, runtime.Config{
		CacheDir:         filepath.Join(data, "compiled"),
		MemoryLimitPages: uint32(h.memoryMiB * 16),
		MaxInstances:     h.maxInstances,
		Logger:           log,
		Board:            bh.handle,
	})
	if err != nil {
		bh.close()
		return nil, err
	}
	var conditions []string
	if h.attempt != "" {
		conditions = append(conditions, abi.WhenAttemptContext)
	}
	reg, err := registry.Load(ctx, registry.Options{Dirs: dirs, DataDir: data, Engine: engine, Logger: log,
		Grants: grantsPolicy, Conditions: conditions})
	if err != nil {
		_ = engine.Close(ctx)
		bh.close()
		return nil, err
	}
	// Keyed calls (tools declaring a request_id field) are deduplicated in
	// the board's store; such a call waits for the board to open.
	guard := idempotency.NewGuard(bh.idempotencyStore, idem)
	d := dispatch.New(reg, dispatch.Options{DefaultTimeout: h.callTimeout, Logger: log, Idempotency: guard,
		Policy: pol, Auditor: decisions, Escalator: mailSvc})
	log.Info("plugins loaded", "dirs", dirs, "plugins", len(reg.Plugins()), "tools", len(reg.Tools()), "problems", len(reg.Problems()),
		"agents", len(pol.Agents()))
	return &host{log: log, engine: engine, registry: reg, dispatcher: d, dataDir: data, board: bh, idempotency: idem,
		policy: pol, caller: h.caller(), mail: mailSvc, decisions: decisions}, nil
}

// startPruner deletes expired request_id records now and periodically
// until ctx ends or the host closes (see idempotency.Pruner).
func (h *host) startPruner(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		idempotency.NewPruner(h.board.idempotencyStore, h.idempotency).Run(ctx)
	}()
	h.stopPruner = func() { cancel(); <-done }
}

// close waits up to shutdownGrace for calls in flight (their contexts are
// cancelled by then, so they stop at their next loop check), then releases
// the engine. If calls are still running, the engine is left to the process
// exit: closing it would unmap memory a guest is still using.
func (h *host) close(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, shutdownGrace)
	defer cancel()
	if h.stopPruner != nil {
		h.stopPruner() // it uses the board's store
	}
	// Calls in flight first: they still write decision-log rows and use
	// the board. Then the decision log's queued rows, then the board (its
	// processes: agents do not outlive the host that records them; and its
	// store, which the log writes to).
	callsDone := h.registry.Close(ctx)
	if callsDone != nil {
		h.log.Warn("plugin calls still running at shutdown; leaving them to the process exit", "err", callsDone)
	}
	if h.decisions != nil {
		h.decisions.Close()
	}
	if err := h.board.close(); err != nil {
		h.log.Warn("close board", "err", err)
	}
	if callsDone == nil {
		_ = h.engine.Close(ctx)
	}
}

const shutdownGrace = 10 * time.Second

// boardHandle is the task board as it opens in the background.
type boardHandle struct {
	ready chan struct{}
	b     *board.Board
	api   *boardapi.API
	err   error
}

// opened returns the board if it has finished opening successfully, nil
// if it is still opening or failed to.
func (bh *boardHandle) opened() *board.Board {
	select {
	case <-bh.ready:
		if bh.err == nil {
			return bh.b
		}
	default:
	}
	return nil
}

// handle serves the board host function once the board is open.
func (bh *boardHandle) handle(ctx context.Context, granted func(string) bool, req []byte) (json.RawMessage, *abi.Envelope) {
	select {
	case <-bh.ready:
	case <-ctx.Done():
		return nil, abi.NewEnvelope(abi.CodeCancelled, "the call ended while the task board was opening", "retry the call")
	}
	if bh.err != nil {
		return nil, abi.NewEnvelope(abi.CodeUnavailable, "the task board could not be opened: "+bh.err.Error(),
			"the operator must fix the data directory (see the server log)")
	}
	return bh.api.Handle(ctx, granted, req)
}

// idempotencyStore returns the board's store for request_id records once
// the board is open (an idempotency.StoreFunc).
func (bh *boardHandle) idempotencyStore(ctx context.Context) (idempotency.Store, error) {
	select {
	case <-bh.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if bh.err != nil {
		return nil, fmt.Errorf("the task board could not be opened: %w", bh.err)
	}
	return bh.b.Store(), nil
}

// store returns the board's store once the board is open (the decision
// log's and the mail system's StoreFunc).
func (bh *boardHandle) store(ctx context.Context) (*store.Store, error) {
	select {
	case <-bh.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if bh.err != nil {
		return nil, fmt.Errorf("the task board could not be opened: %w", bh.err)
	}
	return bh.b.Store(), nil
}

// close waits for the board to open, then closes it.
func (bh *boardHandle) close() error {
	<-bh.ready
	if bh.b == nil {
		return nil
	}
	return bh.b.Close()
}

// attemptOfDir returns the attempt whose worktree holds dir — a server
// started inside DATA/worktrees/<attempt_id>/… runs in that attempt's
// context — or "".
func attemptOfDir(data, dir string) string {
	root, err := filepath.Abs(filepath.Join(data, "worktrees"))
	if err != nil {
		return ""
	}
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return ""
	}
	id, _, _ := strings.Cut(rel, string(filepath.Separator))
	if !attemptIDPattern.MatchString(id) {
		return ""
	}
	return id
}

var attemptIDPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
