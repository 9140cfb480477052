package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	plughost "github.com/plugboard/plugboard/host"
	"github.com/plugboard/plugboard/host/config"
)

// hostFlags are the flags shared by every command that loads plugins.
type hostFlags struct {
	plugins      stringList
	data         string
	logLevel     string
	callTimeout  time.Duration
	memoryMiB    uint
	maxInstances int
	unloadIdle   time.Duration
	// agents is the agents file (host/internal/policy) and agent the identity of
	// unauthenticated sessions (stdio, the CLI); "" is the local identity.
	agents, agent string
	pol           *plughost.Policy
	boardFlags
	audit auditFlags
	// metrics turns on the host's metrics (serve --metrics).
	metrics bool
	// tracer receives the host's spans (serve --otlp-endpoint); nil: off.
	tracer trace.TracerProvider
}

// boardFlags configure the task board; the board commands share them. They
// also hold --config, the configuration file every command that takes them
// reads (see applyConfig).
type boardFlags struct {
	// configFile is --config. conf is the file it (or $PLUGBOARD_CONFIG)
	// names, once applyConfig has loaded it (nil without one); applied
	// lists the settings the file gave; given are the flags the command
	// line set.
	configFile string
	conf       *config.Config
	applied    []string
	given      map[string]bool
	// fs is the flag set the flags are registered on; configDone and
	// configErr make applyConfig run once.
	fs         *flag.FlagSet
	configDone bool
	configErr  error

	// store is --store: the board's database, a SQLite file or a
	// postgres:// URL ("" is $PLUGBOARD_STORE, else DATA/board.db).
	store     string
	executors string
	guard     string
	grants    string
	attempt   string
	// agentEnv and agentEnvDrop adjust the environment of attempt
	// processes (plughost.AgentEnv).
	agentEnv, agentEnvDrop stringList
	// agentInactivity and agentRunTimeout are the default limits of a
	// coding-agent run (plughost.BoardConfig).
	agentInactivity, agentRunTimeout time.Duration
	// sandbox, sandboxNetwork, sandboxRead and sandboxWrite configure the
	// OS sandbox of attempt processes (plughost.Sandbox).
	sandbox, sandboxNetwork   string
	sandboxRead, sandboxWrite stringList
}

func (b *boardFlags) register(fs *flag.FlagSet) {
	b.fs = fs
	fs.StringVar(&b.configFile, "config", "", "configuration file (default: $"+config.EnvConfig+"); flags, then environment variables, win over it (see docs/operators.md, \"Configuration\")")
	fs.StringVar(&b.store, "store", "", "the board's database: a SQLite file or a postgres://USER@HOST/DB URL shared by several hosts (default: $"+config.EnvStore+", else DATA/board.db)")
	fs.StringVar(&b.executors, "executors", "", "JSON file of executor profiles adding to or replacing the built-in ones")
	fs.StringVar(&b.guard, "guard", "balanced", "diff guard preset for get_attempt_changes: safe, balanced, relaxed or off")
	fs.Var(&b.agentEnv, "agent-env", "give attempt processes KEY=VALUE, or KEY with this process's value (repeatable; see docs/operators.md, \"Executors\")")
	fs.Var(&b.agentEnvDrop, "agent-env-drop", "keep variables matching the glob PATTERN from attempt processes (repeatable; PLUGBOARD_* never reach them)")
	fs.DurationVar(&b.agentInactivity, "agent-inactivity-timeout", plughost.DefaultAgentInactivityTimeout,
		"fail a coding-agent run that shows no progress (warnings and retries aside) for this long, unless its profile sets its own")
	fs.DurationVar(&b.agentRunTimeout, "agent-run-timeout", plughost.DefaultAgentRunTimeout,
		"fail a coding-agent run that runs longer than this, unless its profile sets its own")
	fs.StringVar(&b.sandbox, "sandbox", "landlock", "OS sandbox of attempt processes: landlock, or off to run them unconfined where the kernel has no Landlock")
	fs.StringVar(&b.sandboxNetwork, "sandbox-network", "open", "network of attempt processes: open, or closed (no TCP but to their own board endpoint)")
	fs.Var(&b.sandboxRead, "sandbox-read", "let attempt processes read PATH too, e.g. a toolchain outside the system directories (repeatable)")
	fs.Var(&b.sandboxWrite, "sandbox-write", "let attempt processes read and write PATH too, e.g. a shared build cache (repeatable)")
}

// sandboxConfig is what the --sandbox flags say; protected are the
// operator's files no grant may reach.
func (b *boardFlags) sandboxConfig(protected ...string) (plughost.Sandbox, error) {
	sb := plughost.Sandbox{ReadOnly: b.sandboxRead, ReadWrite: b.sandboxWrite}
	switch b.sandbox {
	case "landlock":
	case "off":
		sb.Off = true
	default:
		return sb, usageError("--sandbox %q: landlock or off", b.sandbox)
	}
	switch b.sandboxNetwork {
	case "open":
	case "closed":
		sb.NetworkClosed = true
	default:
		return sb, usageError("--sandbox-network %q: open or closed", b.sandboxNetwork)
	}
	for _, p := range append(slices.Clone(b.sandboxRead), b.sandboxWrite...) {
		if !filepath.IsAbs(p) {
			return sb, usageError("--sandbox-read/--sandbox-write %q: give an absolute path", p)
		}
	}
	for _, p := range append(protected, b.configFile, os.Getenv(config.EnvConfig), b.executors, b.grants) {
		if p != "" {
			if abs, err := filepath.Abs(p); err == nil {
				sb.Protected = append(sb.Protected, abs)
			}
		}
	}
	return sb, nil
}

// applyConfig loads the configuration file — --config, else
// $PLUGBOARD_CONFIG, else none — once the flags are parsed, and gives every
// flag the command line left unset the file's value, unless an environment
// variable wins over it (config.Apply: flags over environment over file).
// The agents, grants and executors sections apply unless --agents,
// --grants or --executors was given. A file with problems stops the
// command (exit 2), listing them.
func (b *boardFlags) applyConfig() error {
	if !b.configDone {
		b.configDone = true
		b.configErr = b.loadConfig()
		if b.configErr == nil {
			b.configErr = b.checkStore()
		}
	}
	return b.configErr
}

// checkStore refuses a store of an unknown form (mysql://…, postgress://…)
// before anything is opened or created: it would otherwise be a SQLite
// file named like the URL.
func (b *boardFlags) checkStore() error {
	target := b.storeTarget()
	if err := config.CheckStore(target); err != nil {
		from := "--store"
		if b.store == "" {
			from = "$" + config.EnvStore
		}
		return &exitError{code: 2, err: fmt.Errorf("%s: %w", from, err)}
	}
	return nil
}

func (b *boardFlags) loadConfig() error {
	if b.fs == nil {
		return nil
	}
	b.given = config.Given(b.fs)
	path := b.configFile
	if !b.given["config"] {
		path = os.Getenv(config.EnvConfig)
	}
	if path == "" {
		return nil
	}
	// The plugins' secrets are read only by the commands that load
	// plugins (hostFlags.open): a board command or audit tail must not
	// need them.
	conf, err := config.LoadDeferred(path)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	if b.applied, err = conf.Apply(b.fs, os.Getenv); err != nil {
		return &exitError{code: 2, err: err}
	}
	b.conf = conf
	return nil
}

// agentEnvConfig is what --agent-env and --agent-env-drop say.
func (b *boardFlags) agentEnvConfig() plughost.AgentEnv {
	return plughost.AgentEnv{Set: b.agentEnv, Drop: b.agentEnvDrop}
}

// boardConfig is the task board's configuration the flags give (its data
// directory and logger are the opener's).
func (b *boardFlags) boardConfig() (plughost.BoardConfig, error) {
	sb, err := b.sandboxConfig()
	if err != nil {
		return plughost.BoardConfig{}, err
	}
	cfg := plughost.BoardConfig{Store: b.storeTarget(), ExecutorsFile: b.executors, Guard: b.guard,
		ContextAttemptID: b.attempt, AgentEnv: b.agentEnvConfig(),
		AgentInactivityTimeout: b.agentInactivity, AgentRunTimeout: b.agentRunTimeout, Sandbox: sb}
	if b.conf != nil && !b.given["executors"] {
		cfg.Executors = b.conf.Executors
	}
	return cfg, nil
}

// storeTarget is --store, else $PLUGBOARD_STORE ("": DATA/board.db).
func (b *boardFlags) storeTarget() string {
	if b.store != "" {
		return b.store
	}
	return os.Getenv(config.EnvStore)
}

// openBoard opens the task board in data.
func (b *boardFlags) openBoard(ctx context.Context, data string, log *slog.Logger) (*plughost.Board, error) {
	cfg, err := b.boardConfig()
	if err != nil {
		return nil, err
	}
	cfg.DataDir, cfg.Logger = data, log
	return plughost.OpenBoard(ctx, cfg)
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
	fs.DurationVar(&h.unloadIdle, "unload-idle", 2*time.Minute, "unload a plugin's compiled code and instances after this long without a call; its next call loads it from the compile cache (about 50 ms); 0 keeps every plugin loaded")
	fs.StringVar(&h.grants, "grants", "", "JSON file narrowing the capabilities each plugin receives (default: what it declares)")
	fs.StringVar(&h.agents, "agents", "", "JSON file of the agents (id, type, supervisor, token), their types' permissions and the critical tools (default: none; the caller is the local SUPERVISOR)")
	fs.StringVar(&h.agent, "agent", "", "serve as this agent of --agents (stdio, and HTTP requests without a token); default: the local identity with SUPERVISOR rights")
	fs.StringVar(&h.attempt, "attempt", os.Getenv("PLUGBOARD_ATTEMPT_ID"), "attempt this server runs inside, for get_context (default: $PLUGBOARD_ATTEMPT_ID, else the attempt whose worktree holds the working directory)")
	h.boardFlags.register(fs)
	h.audit.register(fs)
}

// policy loads the agents — --agents FILE, else the configuration file's
// agents section — once and checks --agent against them.
func (h *hostFlags) policy() (*plughost.Policy, error) {
	if h.pol != nil {
		return h.pol, nil
	}
	if err := h.applyConfig(); err != nil {
		return nil, err
	}
	pol, from := h.confAgents()
	if pol == nil {
		var err error
		if pol, err = plughost.LoadAgents(h.agents); err != nil {
			return nil, &exitError{code: 2, err: err}
		}
	}
	if h.agent != "" {
		if from == "" {
			return nil, usageError("--agent %s needs --agents FILE, or an agents section in the configuration file, which configures it", h.agent)
		}
		if _, ok := pol.Agent(h.agent); !ok {
			return nil, usageError("--agent %s: no such agent in %s", h.agent, from)
		}
	}
	h.pol = pol
	return pol, nil
}

// confAgents returns the configuration file's agents section when it
// applies (no --agents given), and where the agents come from: the file
// --agents names, the configuration file's section, or "" for none.
func (h *hostFlags) confAgents() (*plughost.Policy, string) {
	if h.conf != nil && h.conf.Agents != nil && !h.given["agents"] {
		return h.conf.Agents, h.conf.File + " (agents section)"
	}
	return nil, h.agents
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
// ~/.local/share/plugboard — but none inside an attempt: its processes
// run as the host's user, and the per-user directory may well be the
// board the attempt runs on. There only --data opens one.
func defaultDataDir() (string, error) {
	if a, inside := insideAttempt(); inside {
		return "", &exitError{code: 2, err: fmt.Errorf("inside %s, no data directory is assumed: this process reaches the board only "+
			"through $%s, as the attempt's WORKER (plugboard serve, plugboard call); give --data DIR to open a board of your own",
			a.name(), plughost.EnvAttemptURL)}
	}
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

// open opens the host the flags describe (see the host package, which
// owns the parts and their lifecycle).
func (h *hostFlags) open(ctx context.Context, stderr io.Writer) (*plughost.Host, error) {
	if err := h.applyConfig(); err != nil {
		return nil, err
	}
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
	if h.attempt == "" {
		if wd, err := os.Getwd(); err == nil {
			h.attempt = attemptOfDir(data, wd)
		}
	}
	// The file's idempotency section, under the PLUGBOARD_IDEMPOTENCY_*
	// variables.
	idem, err := h.conf.IdempotencyConfig(os.Getenv)
	if err != nil {
		return nil, err
	}
	bc, err := h.boardConfig()
	if err != nil {
		return nil, err
	}
	bc.Logs = h.audit.logs.limits()
	cfg := plughost.Config{
		DataDir: data, PluginDirs: h.plugins, CallTimeout: h.callTimeout, MemoryLimitMiB: h.memoryMiB,
		MaxInstances: h.maxInstances, UnloadIdle: unloadIdle(h.unloadIdle), Logger: log, Policy: pol, Agent: h.agent, GrantsFile: h.grants,
		Board: bc, Audit: h.audit.options(), Idempotency: &idem,
	}
	cfg.Metrics = h.metrics
	cfg.Tracer = h.tracer
	if h.conf != nil {
		if err := h.conf.ResolveSecrets(); err != nil {
			return nil, &exitError{code: 2, err: err}
		}
		if !h.given["grants"] {
			cfg.Grants = h.conf.Grants
		}
		// Per-plugin settings have no flag: the file's apply whole.
		cfg.PluginSettings, cfg.ConfigFile = h.conf.Plugins.Settings, h.conf.File
		log.Info("configuration file", "file", h.conf.File, "applied", h.applied, "plugin_settings", len(cfg.PluginSettings))
	}
	return plughost.Open(ctx, cfg)
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

// unloadIdle is --unload-idle as host.Config.UnloadIdle: the flag's 0
// (keep every plugin loaded) is the Config's "< 0".
func unloadIdle(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}
