// Package host is plugboard's embedding API: configure a host, open it
// (plugins loaded, the task board opening, the decision log and mail
// running), serve MCP over a transport or make calls, and close it. The
// plugboard command is built on it, and a team can run plugboard inside its
// own Go program the same way (see Example).
//
// It owns the host's lifecycle: the parts are opened in order, each
// registering how it closes; a failure at any step closes what was opened,
// in reverse; Close is the one shutdown path, with one grace period for the
// calls in flight. What each part does belongs to its own package.
package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/config"
	"github.com/plugboard/plugboard/host/internal/audit"
	"github.com/plugboard/plugboard/host/internal/board"
	"github.com/plugboard/plugboard/host/internal/boardapi"
	"github.com/plugboard/plugboard/host/internal/datadir"
	"github.com/plugboard/plugboard/host/internal/dispatch"
	"github.com/plugboard/plugboard/host/internal/grants"
	"github.com/plugboard/plugboard/host/internal/hostkey"
	"github.com/plugboard/plugboard/host/internal/idempotency"
	"github.com/plugboard/plugboard/host/internal/mail"
	"github.com/plugboard/plugboard/host/internal/mcpserver"
	"github.com/plugboard/plugboard/host/internal/policy"
	"github.com/plugboard/plugboard/host/internal/registry"
	"github.com/plugboard/plugboard/host/internal/runtime"
	"github.com/plugboard/plugboard/host/internal/store"
	"github.com/plugboard/plugboard/host/internal/tracing"
)

// Defaults of Config's zero values.
const (
	DefaultCallTimeout    = 30 * time.Second
	DefaultMemoryLimitMiB = 128
	// DefaultUnloadIdle is how long a plugin without a call stays loaded.
	DefaultUnloadIdle = 2 * time.Minute
	// ShutdownGrace is how long Close waits for calls in flight.
	ShutdownGrace = 10 * time.Second
)

// Config configures a Host. Only DataDir is required.
type Config struct {
	// DataDir holds the task board, the compiled-code and manifest caches
	// and, unless PluginDirs says otherwise, the plugins (DataDir/plugins).
	// It is made absolute: attempts get it as PLUGBOARD_DATA.
	DataDir string
	// PluginDirs are searched recursively for .wasm plugins.
	PluginDirs []string
	// CallTimeout is the deadline of a call whose tool declares none.
	CallTimeout time.Duration
	// MemoryLimitMiB caps each plugin instance's linear memory.
	MemoryLimitMiB uint
	// MaxInstances caps concurrent instances per plugin (0: the engine's
	// default).
	MaxInstances int
	// UnloadIdle is how long a plugin without a call keeps its compiled
	// code (≈ 20 MB for a Go guest) and its idle instances; its next call
	// then loads it from the compile cache in DataDir (≈ 50 ms). 0 is
	// DefaultUnloadIdle; < 0 keeps every plugin loaded. The background
	// warm-up only fills the cache: a plugin is loaded by its first call.
	UnloadIdle time.Duration
	// Logger receives the host's log (nil: discarded).
	Logger *slog.Logger
	// Policy is the agents configuration (nil: no agents file, every
	// caller is the local SUPERVISOR); Host.SetPolicy replaces it while
	// the host runs. Agent names the identity of sessions no transport
	// authenticated ("": the local identity).
	Policy *Policy
	Agent  string
	// GrantsFile narrows the capabilities each plugin receives ("": what
	// each declares). Grants, when set, is that policy instead (GrantsFile
	// is then not read).
	GrantsFile string
	Grants     *Grants
	// Board configures the task board; its DataDir and Logger are the
	// host's. ContextAttemptID, when set, lists get_context.
	Board BoardConfig
	// Audit bounds the decision log.
	Audit AuditOptions
	// Idempotency is the retention of request_id records (zero: the
	// defaults of IdempotencyFromEnv with an empty environment).
	Idempotency *IdempotencyConfig
	// PluginSettings are the operator's settings of each plugin, by plugin
	// name (the configuration file's plugins.settings): configuration
	// values and secrets, egress, mounts, limits, tool names, and the
	// source of a plugin not in PluginDirs. SetPluginSettings replaces
	// them while the host runs.
	PluginSettings map[string]PluginSetting
	// ConfigFile is the configuration file the settings come from: the
	// lockfile pinning the plugins with a source (LockFileName) is in its
	// directory. Without one, no source plugin is loaded.
	ConfigFile string
	// Metrics turns on the host's Prometheus metrics (calls, plugins,
	// egress, store, attempts, sessions), served by ServeMetrics; off,
	// nothing is recorded.
	Metrics bool
	// Tracer receives the host's OpenTelemetry spans: each MCP request, a
	// child of the trace context the client sent in params._meta (or the
	// HTTP traceparent header), the call's dispatch, each run of its
	// plugin, the host functions the plugin calls and the board store's
	// statements. Spans carry names and codes, never arguments or results.
	// nil (or the noop provider) is off, at no cost on the call path. The
	// host never uses otel's global provider. The embedder owns tp and
	// shuts it down after Close; Close flushes it when it has ForceFlush
	// (the SDK's TracerProvider does).
	Tracer trace.TracerProvider
}

// Host is an open plugboard host. Its methods are safe for concurrent use.
type Host struct {
	// stateKey seals requestStates (mcpserver.Options.StateKey).
	stateKey   []byte
	cfg        Config
	log        *slog.Logger
	registry   *registry.Registry
	dispatcher *dispatch.Dispatcher
	board      *boardReady
	policy     *policy.Live
	tokens     httpTokens
	caller     *abi.Caller
	mail       *mail.Service
	decisions  *audit.Log
	idem       idempotency.Config
	parts      lifecycle
	// access is the agent endpoint attempt processes reach the board
	// through (attemptaccess.go); nil when the embedder issues their
	// access itself.
	access *attemptAccess
	// callsRunning is set at Close when calls outlived the grace period:
	// the engine is then left to the process exit.
	callsRunning bool
	// metrics are the host's metrics (metrics.go); nil without
	// Config.Metrics.
	metrics *hostMetrics
	// tracer starts the spans of MCP requests and calls (Config.Tracer).
	tracer *tracing.Tracer
}

// Open opens a host: the board starts opening in the background (tools
// are listed without waiting for it; a board call waits), the decision log
// and mail system start, plugins load. If any step fails, what was opened
// is closed again and the error says which step.
func Open(ctx context.Context, cfg Config) (_ *Host, err error) {
	if cfg.DataDir == "" {
		return nil, errors.New("host: no data directory")
	}
	if cfg.DataDir, err = filepath.Abs(cfg.DataDir); err != nil {
		return nil, fmt.Errorf("host: data directory: %w", err)
	}
	if cfg.ConfigFile != "" {
		if cfg.ConfigFile, err = filepath.Abs(cfg.ConfigFile); err != nil {
			return nil, fmt.Errorf("host: configuration file: %w", err)
		}
	}
	if cfg.CallTimeout == 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	if cfg.MemoryLimitMiB == 0 {
		cfg.MemoryLimitMiB = DefaultMemoryLimitMiB
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Policy == nil {
		if cfg.Policy, err = policy.Load(""); err != nil {
			return nil, err
		}
	}
	h := &Host{cfg: cfg, log: cfg.Logger, policy: policy.NewLive(cfg.Policy), caller: policy.Local()}
	if cfg.Agent != "" {
		c, ok := cfg.Policy.Caller(cfg.Agent)
		if !ok {
			return nil, fmt.Errorf("host: no agent %q in the agents configuration", cfg.Agent)
		}
		h.caller = c
	}
	verifier, err := h.newVerifier(cfg.Policy)
	if err != nil {
		return nil, fmt.Errorf("host: %w", err)
	}
	h.tokens.oauth.Store(verifier)
	defer func() {
		if err != nil {
			h.parts.close(context.WithoutCancel(ctx), h.log)
		}
	}()
	if err := h.open(ctx); err != nil {
		return nil, err
	}
	return h, nil
}

// open provisions the parts in order; each registers its closing with
// h.parts, so Open's failure path and Close undo exactly what exists.
func (h *Host) open(ctx context.Context) error {
	cfg := h.cfg
	// Opened first, so closed last: every span a part makes is ended,
	// then flushed.
	h.tracer = tracing.New(cfg.Tracer)
	if f, ok := cfg.Tracer.(interface{ ForceFlush(context.Context) error }); ok && h.tracer.On() {
		h.parts.add("traces", f.ForceFlush)
	}
	if err := cfg.Board.AgentEnv.Validate(); err != nil {
		return err
	}
	// A store of an unknown form would be a SQLite file named like the
	// URL, and the board opens in the background: refuse it now.
	if err := store.CheckTarget(cfg.Board.Store); err != nil {
		return err
	}
	// A secret the caller left unread would reach its plugin as "".
	if err := config.SecretsRead(cfg.PluginSettings); err != nil {
		return err
	}
	if err := datadir.Prepare(cfg.DataDir); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	dirs := cfg.PluginDirs
	if len(dirs) == 0 {
		dirs = []string{filepath.Join(cfg.DataDir, "plugins")}
		if err := os.MkdirAll(dirs[0], 0o755); err != nil {
			return fmt.Errorf("plugin directory: %w", err)
		}
	}
	var err error
	grantsPolicy := cfg.Grants
	if grantsPolicy == nil {
		if grantsPolicy, err = grants.Load(cfg.GrantsFile); err != nil {
			return err
		}
	}
	if cfg.Idempotency != nil {
		h.idem = idempotency.Config{CompletedTTL: cfg.Idempotency.CompletedTTL, InProgressTTL: cfg.Idempotency.InProgressTTL}
	} else if h.idem, err = idempotency.ConfigFromEnv(func(string) string { return "" }); err != nil {
		return err
	}
	h.idem.Logger = h.log
	h.idem.ScopeOf = scopeFingerprint(h.policy)
	// A claim younger than the longest call must not go stale, or a slow
	// call could run twice.
	if longest := max(5*time.Minute, cfg.CallTimeout, longestCallTimeout(cfg.PluginSettings)); h.idem.InProgressTTL > 0 && h.idem.InProgressTTL < longest {
		h.log.Warn("the request_id in-progress TTL is shorter than the longest call; a retry of a slow call may run it again",
			"ttl", h.idem.InProgressTTL, "longest_call", longest, "setting", "$"+idempotency.EnvInProgressTTL+" or the configuration's idempotency.in_progress_ttl")
	}

	// The board opens (migrations, crash recovery) while plugins load:
	// tools/list does not wait for it, a board call does. It closes last:
	// the decision log and calls in flight write to its store, and its
	// agents do not outlive the host that records them.
	bc := cfg.Board
	bc.DataDir, bc.Logger = cfg.DataDir, h.log
	// Every part records into the host's metrics (nil: none).
	bc.Metrics = h.openMetrics()
	// The plugins' secrets are theirs: no attempt process gets the
	// variables they are read from, nor may reach their files.
	secretVars, secretFiles := config.SecretSources(cfg.PluginSettings)
	bc.AgentEnv.Never = append(slices.Clip(bc.AgentEnv.Never), secretVars...)
	// Nor the headers the host's OTLP exporter authenticates with.
	bc.AgentEnv.Never = append(bc.AgentEnv.Never, tracing.SecretEnv...)
	bc.Sandbox.Protected = append(slices.Clip(bc.Sandbox.Protected), secretFiles...)
	if cfg.ConfigFile != "" {
		bc.Sandbox.Protected = append(bc.Sandbox.Protected, cfg.ConfigFile)
	}
	// Attempt processes reach the board through the host's agent
	// endpoint, as their attempt's WORKER, unless the embedder issues
	// their access itself.
	if bc.Access == nil {
		h.access = &attemptAccess{h: h}
		bc.Access = h.access.issue
	}
	h.board = &boardReady{ready: make(chan struct{})}
	h.parts.add("task board", func(context.Context) error { return h.board.close() })
	h.log.Info("attempt sandbox", "mode", board.SandboxMode(bc.Sandbox))
	target := board.StoreTarget(cfg.DataDir, bc.Store)
	h.log.Info("store", "kind", store.Kind(target), "location", store.Redact(target))

	// The decision log (every call, and log_decision) and the mail system
	// (mail tools, and escalations of calls that failed for good) keep
	// their records in the board's store.
	h.decisions = audit.NewWithOptions(func(ctx context.Context) (audit.Store, error) { return h.board.store(ctx) }, h.log, audit.Options(cfg.Audit))
	h.parts.add("decision log", func(context.Context) error { return h.decisions.Close() })
	var directory mail.Agents
	if len(cfg.Policy.Agents()) > 0 {
		directory = mail.FromPolicy(h.policy)
	}
	h.mail = mail.New(func(ctx context.Context) (mail.Store, error) { return h.board.store(ctx) }, mail.Options{Agents: directory, Logger: h.log})
	// Mail other hosts sharing the store deliver reaches this host's
	// sessions too.
	watchCtx, stopWatch := context.WithCancel(context.WithoutCancel(ctx))
	watchDone := make(chan struct{})
	go func() { defer close(watchDone); h.mail.Watch(watchCtx) }()
	h.parts.add("mail watch", func(context.Context) error { stopWatch(); <-watchDone; return nil })
	h.board.start(context.WithoutCancel(ctx), bc, h.log, func(b *board.Board) *boardapi.API {
		// Each caller reaches only the board work its scope holds (a
		// WORKER its own task or attempt).
		return boardapi.New(b, h.log, boardapi.WithMail(h.mail), boardapi.WithDecisions(h.decisions),
			boardapi.WithScopes(h.policy.Scope))
	})

	// Everything the engine and the registry read back from their caches
	// is authenticated with the host's key (host/internal/hostkey).
	cacheKey, err := hostkey.Load(cfg.DataDir)
	if err != nil {
		return err
	}
	// requestStates are sealed under a key of their own, derived from the
	// host's: they survive a restart, and hosts with other data
	// directories need a shared key (HTTPOptions.StateKey).
	h.stateKey = hostkey.Derive(cacheKey, "mcp requestState")
	engineConfig := runtime.Config{
		CacheDir:         filepath.Join(cfg.DataDir, "compiled"),
		CacheKey:         cacheKey,
		MemoryLimitPages: uint32(cfg.MemoryLimitMiB * 16),
		MaxInstances:     cfg.MaxInstances,
		CodeIdleTimeout:  cfg.UnloadIdle,
		Logger:           h.log,
		Board:            h.board.handle,
		Metrics:          bc.Metrics,
	}
	engine, err := runtime.New(ctx, engineConfig)
	if err != nil {
		return fmt.Errorf("plugin engine: %w", err)
	}
	// The interpreter serves first calls to plugins that have never been
	// compiled, while the engine compiles them (registry's tier.go). It
	// has no cache: nothing it loads is kept.
	interpConfig := engineConfig
	interpConfig.CacheDir, interpConfig.Interpreter = "", true
	interp, err := runtime.New(ctx, interpConfig)
	if err != nil {
		_ = engine.Close(ctx)
		return fmt.Errorf("plugin interpreter: %w", err)
	}
	// The engine closes only when no call still runs in it: unmapping
	// memory a guest is using would crash the process (see Close).
	h.parts.add("plugin engine", func(ctx context.Context) error {
		if h.callsRunning {
			return nil
		}
		return errors.Join(engine.Close(ctx), interp.Close(ctx))
	})
	var conditions []string
	// get_context is served inside an attempt, and to attempt identities
	// on the agent endpoint (callPolicy hides it from the others).
	if cfg.Board.ContextAttemptID != "" || h.access != nil {
		conditions = append(conditions, abi.WhenAttemptContext)
	}
	settings, sources := registrySettings(ctx, cfg.PluginSettings, cfg.ConfigFile, cfg.DataDir, h.log)
	h.registry, err = registry.Load(ctx, registry.Options{Dirs: dirs, DataDir: cfg.DataDir, CacheKey: cacheKey, Engine: engine, Interpreter: interp, Logger: h.log,
		Grants: grantsPolicy, Conditions: conditions, Settings: settings, Sources: sources, Metrics: bc.Metrics})
	if err != nil {
		return err
	}
	// Calls in flight end first: they still write decision-log rows and
	// use the board.
	h.parts.add("plugin calls", func(ctx context.Context) error {
		if err := h.registry.Close(ctx); err != nil {
			h.callsRunning = true
			h.log.Warn("plugin calls still running at shutdown; leaving them to the process exit", "err", err)
		}
		return nil
	})
	// Keyed calls (tools declaring a request_id field) are deduplicated in
	// the board's store; such a call waits for the board to open.
	guard := idempotency.NewGuard(h.board.idempotencyStore, h.idem)
	h.dispatcher = dispatch.New(h.registry, dispatch.Options{DefaultTimeout: cfg.CallTimeout, Logger: h.log, Idempotency: guard,
		Policy: h.callPolicy(), Auditor: h.decisions, Escalator: h.mail, Metrics: bc.Metrics, Tracer: h.tracer})
	h.log.Info("plugins loaded", "dirs", dirs, "plugins", len(h.registry.Plugins()), "tools", len(h.registry.Tools()),
		"problems", len(h.registry.Problems()), "agents", len(cfg.Policy.Agents()))
	if len(h.registry.Plugins()) == 0 {
		h.log.Warn("no plugins loaded: clients will see no tools", "dirs", dirs, "problems", len(h.registry.Problems()),
			"fix", "put .wasm plugins in one of dirs, or name their folder: serve --plugins DIR, or plugins.dirs in the configuration file")
	}
	// The agent endpoint starts with the first attempt process; it closes
	// before calls in flight are waited for, like any listener.
	if h.access != nil {
		h.parts.add("agent endpoint", h.access.arm())
	}
	return nil
}

// Close is the one shutdown path: it stops background work, waits up to
// ShutdownGrace for calls in flight (their contexts are cancelled by then,
// so they stop at their next check), then closes the parts in reverse
// order of opening. If calls are still running, the plugin engine is left
// to the process exit: closing it would unmap memory a guest still uses.
func (h *Host) Close(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, ShutdownGrace)
	defer cancel()
	return h.parts.close(ctx, h.log)
}

// StartPruner deletes expired request_id records, and prunes attempt logs
// by the board's retention (BoardConfig.Logs), now and periodically until
// ctx ends or the host closes (see idempotency.Pruner and
// board.RunLogRetention).
func (h *Host) StartPruner(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		idempotency.NewPruner(h.board.idempotencyStore, h.idem).Run(ctx)
	}()
	logsDone := make(chan struct{})
	go func() {
		defer close(logsDone)
		if b, err := h.board.wait(ctx); err == nil {
			b.RunLogRetention(ctx)
		}
	}()
	// They use the board's store, so they stop before anything closes.
	h.parts.add("request_id and attempt log pruners", func(context.Context) error { cancel(); <-done; <-logsDone; return nil })
}

// Call makes one tool call through the whole pipeline (policy, validation,
// idempotency, the plugin, the decision log) as the host's own caller.
func (h *Host) Call(ctx context.Context, tool string, args json.RawMessage, progress func(abi.ProgressRequest)) *Result {
	return resultOf(h.dispatcher.Call(ctx, dispatch.Request{Tool: tool, Arguments: args, Caller: h.caller, Progress: progress}))
}

// serverOptions are the MCP server's options for this host: the local
// caller for sessions no transport authenticated, the agents file's
// identities for the others, and the decision log.
func (h *Host) serverOptions(name, version string) mcpserver.Options {
	return mcpserver.Options{Name: name, Version: version, Logger: h.log, Caller: h.caller, Tracer: h.tracer,
		Callers: func(id string) *abi.Caller { c, _ := h.policy.Caller(id); return c },
		Auditor: h.decisions, StateKey: h.stateKey}
}

// Server builds the MCP server over this host's tools, named name and
// version to clients; a connected recipient of mail hears of it as a log
// notification. Run it on any go-sdk transport.
func (h *Host) Server(name, version string) *mcp.Server {
	return h.server(h.serverOptions(name, version))
}

func (h *Host) server(opts mcpserver.Options) *mcp.Server {
	srv := mcpserver.New(h.registry, h.dispatcher, opts)
	h.metrics.track(srv)
	h.mail.SetNotifier(mcpserver.NewMailNotifier(srv, opts))
	return srv
}

// ServeStdio serves MCP on stdin and stdout until the client leaves or ctx
// ends.
func (h *Host) ServeStdio(ctx context.Context, name, version string) error {
	return h.Server(name, version).Run(ctx, &mcp.StdioTransport{})
}

// Warm compiles the plugins in the background, one at a time, so first
// calls do not wait for compilation.
func (h *Host) Warm(ctx context.Context) { h.registry.Warm(ctx, 1, h.log) }

// Watch polls the plugin folders every interval until ctx ends, serving
// plugins added, removed or changed (clients get list_changed); an
// interval of 0 does nothing.
func (h *Host) Watch(ctx context.Context, interval time.Duration) { h.registry.Watch(ctx, interval) }

// Caller is the identity of sessions no transport authenticated.
func (h *Host) Caller() *abi.Caller { return h.caller }

// Logger is the host's log.
func (h *Host) Logger() *slog.Logger { return h.log }

// DataDir is the absolute data directory.
func (h *Host) DataDir() string { return h.cfg.DataDir }

// Board waits for the task board to finish opening and returns it, or why
// it could not open. It closes with the Host.
func (h *Host) Board(ctx context.Context) (*Board, error) {
	b, err := h.board.wait(ctx)
	if err != nil {
		return nil, err
	}
	return &Board{b: b}, nil
}

// OpenedBoard returns the task board if it has opened, without waiting;
// nil while it opens or when it failed to.
func (h *Host) OpenedBoard() *Board {
	if b := h.board.opened(); b != nil {
		return &Board{b: b}
	}
	return nil
}

// scopeFingerprint names the board work a caller may reach under p (the
// policy in force), for the idempotency records
// (idempotency.Config.ScopeOf): "" for a caller that reaches everything,
// else its scope's tasks and attempts.
func scopeFingerprint(p *policy.Live) func(*abi.Caller) string {
	return func(c *abi.Caller) string {
		s := p.Scope(c)
		if s.All {
			return ""
		}
		return "tasks=" + strings.Join(slices.Sorted(slices.Values(s.Tasks)), ",") +
			";attempts=" + strings.Join(slices.Sorted(slices.Values(s.Attempts)), ",")
	}
}
