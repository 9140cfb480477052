// Package config owns plugboard's one configuration: the configuration file
// (JSON, named by --config or $PLUGBOARD_CONFIG), the sections it has, reading
// it strictly — an unknown field is an error, and every error is placed at
// FILE:LINE:COL with the field's path — and the one precedence rule: a flag
// given on the command line wins over an environment variable, which wins
// over the file, which wins over the built-in default.
//
// The file holds what the flags, the agents, grants and executors files and
// the PLUGBOARD_IDEMPOTENCY_* variables say, one section each (see Config).
// What a setting means belongs to the package it configures: the agents
// section is host/internal/policy's agents file, grants host/internal/grants', executors
// host/internal/board/executor's profiles, and the other values are checked here as
// their flags would check them. Apply layers the file under a command's
// flags; the sections with no flag value are taken by the command unless
// their file flag (--agents, --grants, --executors) was given.
//
// plugins.settings holds each plugin's own settings (PluginSetting): the
// values resolved from the environment and secret files are secrets, which
// nothing here prints (Summary, errors) and ConfigValue masks.
package config

import (
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/plugboard/plugboard/host/internal/board"
	"github.com/plugboard/plugboard/host/internal/board/executor"
	"github.com/plugboard/plugboard/host/internal/board/gitops"
	"github.com/plugboard/plugboard/host/internal/grants"
	"github.com/plugboard/plugboard/host/internal/idempotency"
	"github.com/plugboard/plugboard/host/internal/jsonfile"
	"github.com/plugboard/plugboard/host/internal/policy"
	"github.com/plugboard/plugboard/host/internal/store"
)

// Environment variables the configuration reads.
const (
	// EnvConfig names the configuration file when --config is not given.
	EnvConfig = "PLUGBOARD_CONFIG"
	// EnvData is the data directory; it wins over the file's data.
	EnvData = "PLUGBOARD_DATA"
	// EnvStore is the board's store (a SQLite file or a postgres:// URL);
	// it wins over the file's store.
	EnvStore = "PLUGBOARD_STORE"
	// EnvHTTPToken is the local identity's bearer token; it wins over the
	// file's http.token_file.
	EnvHTTPToken = "PLUGBOARD_HTTP_TOKEN"
)

// Config is a checked configuration file. Every field is optional: a zero
// value (nil, "", an empty list) is a setting the file leaves to the
// environment and the defaults.
type Config struct {
	// File is the file's name as given.
	File string
	// Data is the data directory (--data), absolute.
	Data string
	// Store is the board's store (--store): a SQLite file, absolute, or a
	// postgres:// URL. It is a secret when the URL holds a password: the
	// summary names only its kind and host.
	Store string
	// LogLevel is debug, info, warn or error (--log-level).
	LogLevel string
	Plugins  Plugins
	// Agents is the agents section: an agents file's content (--agents
	// FILE), inline.
	Agents *policy.Policy
	// Grants is the grants section: a grants file's content (--grants
	// FILE), inline.
	Grants *grants.Policy
	// Executors are the built-in executor profiles with the executors
	// section's profiles added or replacing them (--executors FILE holds
	// the same list under "executors").
	Executors   *executor.Registry
	AgentEnv    AgentEnv
	Board       Board
	Sandbox     Sandbox
	Audit       Audit
	AttemptLogs AttemptLogs
	Idempotency Idempotency
	HTTP        HTTP
	Metrics     Metrics
	Telemetry   Telemetry

	// executorIDs are the ids of the executors section's profiles.
	executorIDs []string
	// doc is the file as read: ResolveSecrets places its problems in it.
	doc *jsonfile.Doc
}

// Plugins is the plugins section: where plugins are and the limits of
// every plugin instance.
type Plugins struct {
	// Dirs are searched recursively for .wasm plugins (--plugins, each
	// absolute or relative to the file's directory).
	Dirs []string `json:"dirs,omitempty"`
	// CallTimeout is the deadline of a call whose tool declares none
	// (--call-timeout).
	CallTimeout *Duration `json:"call_timeout,omitempty"`
	// MemoryLimitMiB caps each instance's linear memory (--memory-limit).
	MemoryLimitMiB *uint `json:"memory_limit_mib,omitempty"`
	// MaxInstances caps concurrent instances per plugin (--max-instances).
	MaxInstances *int `json:"max_instances,omitempty"`
	// UnloadIdle is how long a plugin without a call stays loaded
	// (--unload-idle; 0 keeps every plugin loaded).
	UnloadIdle *Duration `json:"unload_idle,omitempty"`
	// Watch is how often serve polls the plugin folders (serve --watch).
	Watch *Duration `json:"watch,omitempty"`
	// Settings are the operator's settings of each plugin, keyed by plugin
	// name (see PluginSetting): the configuration values it reads, the
	// hosts and paths it may reach, its own limits and tool names, and the
	// source of a plugin that is not in Dirs.
	Settings map[string]PluginSetting `json:"settings,omitempty"`
}

// AgentEnv is the agent_env section: the environment and limits of
// attempt processes.
type AgentEnv struct {
	// Set and Drop are --agent-env KEY[=VALUE] and --agent-env-drop
	// PATTERN, one entry each.
	Set  []string `json:"set,omitempty"`
	Drop []string `json:"drop,omitempty"`
	// InactivityTimeout and RunTimeout are --agent-inactivity-timeout and
	// --agent-run-timeout.
	InactivityTimeout *Duration `json:"inactivity_timeout,omitempty"`
	RunTimeout        *Duration `json:"run_timeout,omitempty"`
}

// Board is the board section.
type Board struct {
	// Guard is the diff guard preset (--guard).
	Guard *string `json:"guard,omitempty"`
}

// Sandbox is the sandbox section: the OS sandbox of attempt processes.
type Sandbox struct {
	// Mode is "landlock" (the default) or "off", the operator's explicit
	// opt-out where the kernel has no Landlock (--sandbox).
	Mode *string `json:"mode,omitempty"`
	// Network is "open" (the default: agents reach their model APIs) or
	// "closed" (--sandbox-network).
	Network *string `json:"network,omitempty"`
	// ReadOnly and ReadWrite are further paths every attempt may read, or
	// read and write (--sandbox-read, --sandbox-write; absolute or
	// relative to the file's directory).
	ReadOnly  []string `json:"read_only,omitempty"`
	ReadWrite []string `json:"read_write,omitempty"`
}

// Audit is the audit section: the decision log's bounds.
type Audit struct {
	PayloadMax *ByteSize `json:"payload_max,omitempty"` // --audit-payload-max
	MaxAge     *Duration `json:"max_age,omitempty"`     // --audit-max-age
	MaxBytes   *ByteSize `json:"max_bytes,omitempty"`   // --audit-max-bytes
}

// AttemptLogs is the attempt_logs section: what attempt processes' logs
// keep, and their retention.
type AttemptLogs struct {
	ProcessMax *ByteSize `json:"process_max,omitempty"` // --attempt-logs-process-max
	AttemptMax *ByteSize `json:"attempt_max,omitempty"` // --attempt-logs-attempt-max
	MaxAge     *Duration `json:"max_age,omitempty"`     // --attempt-logs-max-age
	MaxBytes   *ByteSize `json:"max_bytes,omitempty"`   // --attempt-logs-max-bytes
}

// Idempotency is the idempotency section: how long request_id records are
// kept ($PLUGBOARD_IDEMPOTENCY_COMPLETED_TTL_SECS and
// $PLUGBOARD_IDEMPOTENCY_IN_PROGRESS_TTL_SECS win over it). 0 disables
// that expiry.
type Idempotency struct {
	CompletedTTL  *Duration `json:"completed_ttl,omitempty"`
	InProgressTTL *Duration `json:"in_progress_ttl,omitempty"`
}

// HTTP is the http section: serve's streamable HTTP transport. It never
// holds a token: token_file names the file that does.
type HTTP struct {
	// Addr serves MCP over HTTP at http://ADDR/mcp (--http).
	Addr *string `json:"addr,omitempty"`
	// TokenFile holds the local identity's bearer token (--http-token-file;
	// absolute or relative to the file's directory).
	TokenFile *string `json:"token_file,omitempty"`
	// ReadTimeout, SessionIdle and MaxSessions are --http-read-timeout,
	// --http-session-idle and --http-max-sessions.
	ReadTimeout *Duration `json:"read_timeout,omitempty"`
	SessionIdle *Duration `json:"session_idle,omitempty"`
	MaxSessions *int      `json:"max_sessions,omitempty"`
	// Stateless is --http-stateless.
	Stateless *bool `json:"stateless,omitempty"`
	// StateKeyFile holds the key sealing requestStates, shared by hosts
	// behind one balancer (--http-state-key-file; absolute or relative to
	// the file's directory).
	StateKeyFile *string `json:"state_key_file,omitempty"`
}

// Metrics is the metrics section: serve's Prometheus endpoint, on a
// listener of its own, off unless listen is set. It never holds a token:
// token_file names the file that does.
type Metrics struct {
	// Listen serves GET /metrics at http://ADDR/metrics (--metrics).
	Listen *string `json:"listen,omitempty"`
	// TokenFile holds the bearer token a scrape must present, at least 32
	// bytes (--metrics-token-file; absolute or relative to the file's
	// directory).
	TokenFile *string `json:"token_file,omitempty"`
}

// Telemetry is the telemetry section: where serve sends its traces.
type Telemetry struct {
	// OTLPEndpoint is the base URL of an OTLP/HTTP receiver (e.g.
	// http://127.0.0.1:4318; traces are posted to its /v1/traces). The
	// flag --otlp-endpoint and $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
	// $OTEL_EXPORTER_OTLP_ENDPOINT win over it; none set, traces are off.
	OTLPEndpoint *string `json:"otlp_endpoint,omitempty"`
}

// shape is the file as JSON: the sections other packages own are decoded
// by them.
type shape struct {
	Data        *string         `json:"data"`
	Store       *string         `json:"store"`
	LogLevel    *string         `json:"log_level"`
	Plugins     Plugins         `json:"plugins"`
	Agents      json.RawMessage `json:"agents"`
	Grants      json.RawMessage `json:"grants"`
	Executors   json.RawMessage `json:"executors"`
	AgentEnv    AgentEnv        `json:"agent_env"`
	Board       Board           `json:"board"`
	Sandbox     Sandbox         `json:"sandbox"`
	Audit       Audit           `json:"audit"`
	AttemptLogs AttemptLogs     `json:"attempt_logs"`
	Idempotency Idempotency     `json:"idempotency"`
	HTTP        httpShape       `json:"http"`
	Metrics     Metrics         `json:"metrics"`
	Telemetry   Telemetry       `json:"telemetry"`
}

// httpShape is the http section with the field a token would be put in,
// to refuse it by name.
type httpShape struct {
	HTTP
	Token json.RawMessage `json:"token" jsonfile:"hidden"`
}

// Duration is a time.Duration written as a Go duration string: "90s",
// "10m", "2h". A bare number is refused: nobody can tell its unit.
type Duration time.Duration

// D returns the duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalJSON writes the duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a duration string; null leaves d as it is.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration string such as \"90s\", \"10m\" or \"2h\", got %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: write it like \"90s\", \"10m\" or \"2h\"", s)
	}
	*d = Duration(v)
	return nil
}

// ByteSize is a size in bytes: a whole number, or a string with a unit
// ("512KiB", "64MiB"; see ParseByteSize).
type ByteSize int64

// UnmarshalJSON reads a number of bytes or a size string; null leaves b
// as it is.
func (b *ByteSize) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		s = string(data)
	}
	n, err := ParseByteSize(s)
	if err != nil {
		return err
	}
	*b = ByteSize(n)
	return nil
}

// ParseByteSize reads a size in bytes: a whole number with an optional
// unit, KiB, MiB or GiB (K, KB, M, MB, G, GB mean the same binary units).
// The --audit-* flags read sizes with it too.
func ParseByteSize(s string) (int64, error) {
	num := strings.TrimRightFunc(strings.TrimSpace(s), func(r rune) bool { return r >= 'A' && r <= 'z' })
	unit := strings.ToUpper(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s), num)))
	shift, ok := map[string]uint{"": 0, "B": 0, "K": 10, "KB": 10, "KIB": 10, "M": 20, "MB": 20, "MIB": 20, "G": 30, "GB": 30, "GIB": 30}[unit]
	n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
	if !ok || err != nil || n < 0 || n > (1<<62)>>shift {
		return 0, fmt.Errorf("want a size such as 1048576, 512KiB or 64MiB, got %q", s)
	}
	return n << shift, nil
}

// Load reads and checks a configuration file.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("configuration file: %w", err)
	}
	return Parse(path, data)
}

// Parse reads and checks a configuration file's content; name (the file)
// starts every error, and relative paths in it are taken from name's
// directory. It reports every problem at once, each at FILE:LINE:COL with
// the field's path.
func Parse(name string, data []byte) (*Config, error) { return parse(name, data, resolveStrict) }

// LoadDeferred reads and checks a configuration file as Load does, but
// leaves the plugins' secret configuration values — "${VAR}" and
// {"secret_file": PATH} — unread: a command that loads no plugins (the
// board commands, audit tail) must not need the environment and files
// holding them. A command that loads plugins calls ResolveSecrets before
// it uses the settings; until then a secret's Value is "".
func LoadDeferred(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("configuration file: %w", err)
	}
	return parse(path, data, resolveLater)
}

// LoadLenient reads and checks a configuration file as Load does, except
// that a plugin's "${VAR}" configuration value whose variable is not set is
// no problem: it is left unset (ConfigValue.EnvUnset). For config check,
// which reports what a file gives each plugin without needing the
// environment holding the secrets.
func LoadLenient(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("configuration file: %w", err)
	}
	return parse(path, data, resolveLenient)
}

// resolveMode is when parse reads the plugins' secret values.
type resolveMode int

const (
	// resolveStrict reads them, and a "${VAR}" whose variable is not set
	// is a problem (Load, Parse).
	resolveStrict resolveMode = iota
	// resolveLenient reads them, leaving such a value unset (LoadLenient).
	resolveLenient
	// resolveLater leaves them to ResolveSecrets (LoadDeferred).
	resolveLater
)

// parse is Parse, reading the plugins' secret values as resolve says.
func parse(name string, data []byte, resolve resolveMode) (*Config, error) {
	doc, err := jsonfile.Parse(name, data)
	if err != nil {
		return nil, err
	}
	base, err := filepath.Abs(filepath.Dir(name))
	if err != nil {
		return nil, fmt.Errorf("configuration file %s: %w", name, err)
	}
	var s shape
	filled, err := doc.Decode(&s)
	if !filled {
		return nil, err
	}
	errs := []error{err}
	fail := func(p jsonfile.Path, format string, args ...any) {
		errs = append(errs, doc.Errorf(p, format, args...))
	}
	c := &Config{File: name, Plugins: s.Plugins, AgentEnv: s.AgentEnv, Board: s.Board, Sandbox: s.Sandbox, Audit: s.Audit,
		AttemptLogs: s.AttemptLogs, Idempotency: s.Idempotency, HTTP: s.HTTP.HTTP}
	path := func(p jsonfile.Path, v string) string {
		if v == "" {
			fail(p, "is empty; give a path, or leave the field out")
			return ""
		}
		if filepath.IsAbs(v) {
			return filepath.Clean(v)
		}
		return filepath.Join(base, v)
	}
	if s.Data != nil {
		c.Data = path(jsonfile.Path{"data"}, *s.Data)
	}
	for i, p := range s.Sandbox.ReadOnly {
		c.Sandbox.ReadOnly[i] = path(jsonfile.Path{"sandbox", "read_only", i}, p)
	}
	for i, p := range s.Sandbox.ReadWrite {
		c.Sandbox.ReadWrite[i] = path(jsonfile.Path{"sandbox", "read_write", i}, p)
	}
	if s.Store != nil {
		switch err := store.CheckTarget(*s.Store); {
		case err != nil:
			fail(jsonfile.Path{"store"}, "%v", err)
		case IsPostgresURL(*s.Store):
			c.Store = *s.Store
		default:
			c.Store = path(jsonfile.Path{"store"}, *s.Store)
		}
	}
	if s.LogLevel != nil {
		var level slog.Level
		if err := level.UnmarshalText([]byte(*s.LogLevel)); err != nil || *s.LogLevel == "" {
			fail(jsonfile.Path{"log_level"}, "unknown level %q (debug, info, warn or error)", *s.LogLevel)
		}
		c.LogLevel = *s.LogLevel
	}

	// plugins
	c.Plugins.Dirs = nil
	for i, d := range s.Plugins.Dirs {
		c.Plugins.Dirs = append(c.Plugins.Dirs, path(jsonfile.Path{"plugins", "dirs", i}, d))
	}
	positive(fail, jsonfile.Path{"plugins", "call_timeout"}, s.Plugins.CallTimeout)
	if m := s.Plugins.MemoryLimitMiB; m != nil && (*m < 1 || *m > 4096) {
		fail(jsonfile.Path{"plugins", "memory_limit_mib"}, "want 1 to 4096 (MiB; WebAssembly's 32-bit memory ends at 4 GiB), got %d", *m)
	}
	notNegativeInt(fail, jsonfile.Path{"plugins", "max_instances"}, s.Plugins.MaxInstances, "0: 2 x CPUs, at least 4")
	notNegative(fail, jsonfile.Path{"plugins", "unload_idle"}, s.Plugins.UnloadIdle, "0 keeps every plugin loaded")
	notNegative(fail, jsonfile.Path{"plugins", "watch"}, s.Plugins.Watch, "0 turns watching off")
	checkSettings(c.Plugins.Settings, base, fail)

	// agent_env
	for i, kv := range s.AgentEnv.Set {
		if err := (board.AgentEnv{Set: []string{kv}}).Validate(); err != nil {
			fail(jsonfile.Path{"agent_env", "set", i}, "%s", strings.TrimPrefix(err.Error(), "agent environment: "))
		}
	}
	for i, p := range s.AgentEnv.Drop {
		if err := (board.AgentEnv{Drop: []string{p}}).Validate(); err != nil {
			fail(jsonfile.Path{"agent_env", "drop", i}, "%s", strings.TrimPrefix(err.Error(), "agent environment: "))
		}
	}
	notNegative(fail, jsonfile.Path{"agent_env", "inactivity_timeout"}, s.AgentEnv.InactivityTimeout, "")
	notNegative(fail, jsonfile.Path{"agent_env", "run_timeout"}, s.AgentEnv.RunTimeout, "")

	// board
	if g := s.Board.Guard; g != nil {
		if _, err := gitops.GuardByName(*g); err != nil || *g == "" {
			names := []string{}
			for _, p := range gitops.Presets() {
				names = append(names, p.Name)
			}
			fail(jsonfile.Path{"board", "guard"}, "unknown guard %q (one of %s)", *g, strings.Join(names, ", "))
		}
	}

	// sandbox
	if m := s.Sandbox.Mode; m != nil && *m != "landlock" && *m != "off" {
		fail(jsonfile.Path{"sandbox", "mode"}, "unknown mode %q (landlock or off)", *m)
	}
	if n := s.Sandbox.Network; n != nil && *n != "open" && *n != "closed" {
		fail(jsonfile.Path{"sandbox", "network"}, "unknown network %q (open or closed)", *n)
	}

	// audit
	notNegative(fail, jsonfile.Path{"audit", "max_age"}, s.Audit.MaxAge, "0 keeps every age")
	notNegative(fail, jsonfile.Path{"attempt_logs", "max_age"}, s.AttemptLogs.MaxAge, "0 keeps every age")

	// idempotency
	notNegative(fail, jsonfile.Path{"idempotency", "completed_ttl"}, s.Idempotency.CompletedTTL, "0 keeps records for ever")
	notNegative(fail, jsonfile.Path{"idempotency", "in_progress_ttl"}, s.Idempotency.InProgressTTL, "0 never expires a claim")

	// http
	if s.HTTP.Token != nil {
		fail(jsonfile.Path{"http", "token"}, "a token never goes in the configuration file: name the file holding it in http.token_file, or set $%s", EnvHTTPToken)
	}
	if a := s.HTTP.Addr; a != nil {
		if _, _, err := net.SplitHostPort(*a); err != nil {
			fail(jsonfile.Path{"http", "addr"}, "want HOST:PORT (e.g. 127.0.0.1:8080; port 0 picks a free one), got %q", *a)
		}
	}
	if f := s.HTTP.TokenFile; f != nil {
		v := path(jsonfile.Path{"http", "token_file"}, *f)
		c.HTTP.TokenFile = &v
	}
	if f := s.HTTP.StateKeyFile; f != nil {
		v := path(jsonfile.Path{"http", "state_key_file"}, *f)
		c.HTTP.StateKeyFile = &v
	}
	positive(fail, jsonfile.Path{"http", "read_timeout"}, s.HTTP.ReadTimeout)
	notNegative(fail, jsonfile.Path{"http", "session_idle"}, s.HTTP.SessionIdle, "0: never")
	notNegativeInt(fail, jsonfile.Path{"http", "max_sessions"}, s.HTTP.MaxSessions, "0: no cap")

	// metrics
	c.Metrics = s.Metrics
	if a := s.Metrics.Listen; a != nil {
		if _, _, err := net.SplitHostPort(*a); err != nil {
			fail(jsonfile.Path{"metrics", "listen"}, "want HOST:PORT (e.g. 127.0.0.1:9464; port 0 picks a free one), got %q", *a)
		}
	}
	if f := s.Metrics.TokenFile; f != nil {
		v := path(jsonfile.Path{"metrics", "token_file"}, *f)
		c.Metrics.TokenFile = &v
	}

	// telemetry
	c.Telemetry = s.Telemetry
	if e := s.Telemetry.OTLPEndpoint; e != nil {
		if u, err := url.Parse(*e); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" {
			fail(jsonfile.Path{"telemetry", "otlp_endpoint"}, "want the http or https base URL of an OTLP/HTTP receiver without credentials (e.g. http://127.0.0.1:4318), got %q", *e)
		}
	}

	// The sections other packages own, each reporting every problem.
	if sub, ok := doc.Sub("agents"); ok {
		c.Agents, err = policy.ParseDoc(sub)
		errs = append(errs, err)
	}
	if sub, ok := doc.Sub("grants"); ok {
		c.Grants, err = grants.ParseDoc(sub)
		errs = append(errs, err)
	}
	if sub, ok := doc.Sub("executors"); ok {
		c.Executors, err = executor.ParseProfiles(sub)
		errs = append(errs, err)
		var ids []struct{ Executor string }
		_ = json.Unmarshal(sub.Bytes(), &ids)
		for _, p := range ids {
			c.executorIDs = append(c.executorIDs, executor.NormalizeName(p.Executor))
		}
	}
	c.doc = doc
	if resolve != resolveLater {
		errs = append(errs, c.resolveSecrets(resolve == resolveLenient))
	}
	if err := jsonfile.Join(errs...); err != nil {
		return nil, err
	}
	return c, nil
}

type failFunc = func(p jsonfile.Path, format string, args ...any)

func positive(fail failFunc, p jsonfile.Path, d *Duration) {
	if d != nil && *d <= 0 {
		fail(p, "must be positive, got %s", d.D())
	}
}

func notNegative(fail failFunc, p jsonfile.Path, d *Duration, zero string) {
	if d != nil && *d < 0 {
		if zero != "" {
			zero = " (" + zero + ")"
		}
		fail(p, "must not be negative%s, got %s", zero, d.D())
	}
}

func notNegativeInt(fail failFunc, p jsonfile.Path, n *int, zero string) {
	if n != nil && *n < 0 {
		fail(p, "must not be negative (%s), got %d", zero, *n)
	}
}

// setting is one value a flag, perhaps an environment variable, and the
// file can all give.
type setting struct {
	path string // in the file
	flag string
	// env, when set in the environment, wins over the file: the code that
	// reads the flag falls back to it, so the flag is left alone.
	env string
	// over lists other flags that, given, win over the file's value too.
	over []string
	// value is the file's value as flag arguments (one per repetition of
	// a repeatable flag); none when the file does not set it.
	value func(*Config) []string
}

func str(s *string) []string {
	if s == nil {
		return nil
	}
	return []string{*s}
}

func dur(d *Duration) []string {
	if d == nil {
		return nil
	}
	return []string{d.D().String()}
}

func size(b *ByteSize) []string {
	if b == nil {
		return nil
	}
	return []string{strconv.FormatInt(int64(*b), 10)}
}

func integer[T int | uint](n *T) []string {
	if n == nil {
		return nil
	}
	return []string{fmt.Sprint(*n)}
}

func boolean(b *bool) []string {
	if b == nil {
		return nil
	}
	return []string{strconv.FormatBool(*b)}
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// settings are the file's values that have a flag, in the file's order.
var settings = []setting{
	{path: "data", flag: "data", env: EnvData, value: func(c *Config) []string { return nonEmpty(c.Data) }},
	{path: "store", flag: "store", env: EnvStore, value: func(c *Config) []string { return nonEmpty(c.Store) }},
	{path: "log_level", flag: "log-level", value: func(c *Config) []string { return nonEmpty(c.LogLevel) }},
	{path: "plugins.dirs", flag: "plugins", value: func(c *Config) []string { return c.Plugins.Dirs }},
	{path: "plugins.call_timeout", flag: "call-timeout", value: func(c *Config) []string { return dur(c.Plugins.CallTimeout) }},
	{path: "plugins.memory_limit_mib", flag: "memory-limit", value: func(c *Config) []string { return integer(c.Plugins.MemoryLimitMiB) }},
	{path: "plugins.max_instances", flag: "max-instances", value: func(c *Config) []string { return integer(c.Plugins.MaxInstances) }},
	{path: "plugins.unload_idle", flag: "unload-idle", value: func(c *Config) []string { return dur(c.Plugins.UnloadIdle) }},
	{path: "plugins.watch", flag: "watch", value: func(c *Config) []string { return dur(c.Plugins.Watch) }},
	{path: "agent_env.set", flag: "agent-env", value: func(c *Config) []string { return c.AgentEnv.Set }},
	{path: "agent_env.drop", flag: "agent-env-drop", value: func(c *Config) []string { return c.AgentEnv.Drop }},
	{path: "agent_env.inactivity_timeout", flag: "agent-inactivity-timeout", value: func(c *Config) []string { return dur(c.AgentEnv.InactivityTimeout) }},
	{path: "agent_env.run_timeout", flag: "agent-run-timeout", value: func(c *Config) []string { return dur(c.AgentEnv.RunTimeout) }},
	{path: "board.guard", flag: "guard", value: func(c *Config) []string { return str(c.Board.Guard) }},
	{path: "sandbox.mode", flag: "sandbox", value: func(c *Config) []string { return str(c.Sandbox.Mode) }},
	{path: "sandbox.network", flag: "sandbox-network", value: func(c *Config) []string { return str(c.Sandbox.Network) }},
	{path: "sandbox.read_only", flag: "sandbox-read", value: func(c *Config) []string { return c.Sandbox.ReadOnly }},
	{path: "sandbox.read_write", flag: "sandbox-write", value: func(c *Config) []string { return c.Sandbox.ReadWrite }},
	{path: "audit.payload_max", flag: "audit-payload-max", value: func(c *Config) []string { return size(c.Audit.PayloadMax) }},
	{path: "audit.max_age", flag: "audit-max-age", value: func(c *Config) []string { return dur(c.Audit.MaxAge) }},
	{path: "audit.max_bytes", flag: "audit-max-bytes", value: func(c *Config) []string { return size(c.Audit.MaxBytes) }},
	{path: "attempt_logs.process_max", flag: "attempt-logs-process-max", value: func(c *Config) []string { return size(c.AttemptLogs.ProcessMax) }},
	{path: "attempt_logs.attempt_max", flag: "attempt-logs-attempt-max", value: func(c *Config) []string { return size(c.AttemptLogs.AttemptMax) }},
	{path: "attempt_logs.max_age", flag: "attempt-logs-max-age", value: func(c *Config) []string { return dur(c.AttemptLogs.MaxAge) }},
	{path: "attempt_logs.max_bytes", flag: "attempt-logs-max-bytes", value: func(c *Config) []string { return size(c.AttemptLogs.MaxBytes) }},
	{path: "http.addr", flag: "http", value: func(c *Config) []string { return str(c.HTTP.Addr) }},
	{path: "http.token_file", flag: "http-token-file", env: EnvHTTPToken, over: []string{"http-token"},
		value: func(c *Config) []string { return str(c.HTTP.TokenFile) }},
	{path: "http.read_timeout", flag: "http-read-timeout", value: func(c *Config) []string { return dur(c.HTTP.ReadTimeout) }},
	{path: "http.session_idle", flag: "http-session-idle", value: func(c *Config) []string { return dur(c.HTTP.SessionIdle) }},
	{path: "http.max_sessions", flag: "http-max-sessions", value: func(c *Config) []string { return integer(c.HTTP.MaxSessions) }},
	{path: "http.stateless", flag: "http-stateless", value: func(c *Config) []string { return boolean(c.HTTP.Stateless) }},
	{path: "http.state_key_file", flag: "http-state-key-file", value: func(c *Config) []string { return str(c.HTTP.StateKeyFile) }},
	{path: "metrics.listen", flag: "metrics", value: func(c *Config) []string { return str(c.Metrics.Listen) }},
	{path: "metrics.token_file", flag: "metrics-token-file", value: func(c *Config) []string { return str(c.Metrics.TokenFile) }},
}

// Given returns the flags of fs the command line set (after fs.Parse,
// before Apply).
func Given(fs *flag.FlagSet) map[string]bool {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	return given
}

// Apply layers the file under fs's flags, after fs.Parse: each setting of
// the file whose flag fs has, that the command line did not give (nor a
// flag that wins over it) and no environment variable overrides (getenv,
// e.g. os.Getenv), is set on its flag, as if it had been given — so the
// flags' own parsing and defaults apply to the file's values too. It
// returns the paths of the settings it applied. A nil Config applies
// nothing.
//
// The agents, grants, executors and idempotency sections have no flag
// value: a command uses Agents, Grants and Executors unless their file
// flag was given (Given), and IdempotencyConfig for the rest.
func (c *Config) Apply(fs *flag.FlagSet, getenv func(string) string) ([]string, error) {
	if c == nil {
		return nil, nil
	}
	given := Given(fs)
	var applied []string
	for _, s := range settings {
		if fs.Lookup(s.flag) == nil || given[s.flag] || slices.ContainsFunc(s.over, func(f string) bool { return given[f] }) {
			continue
		}
		if s.env != "" && getenv(s.env) != "" {
			continue
		}
		values := s.value(c)
		for _, v := range values {
			if err := fs.Set(s.flag, v); err != nil {
				return applied, fmt.Errorf("%s: %s: %v", c.File, s.path, err)
			}
		}
		if len(values) > 0 {
			applied = append(applied, s.path)
		}
	}
	return applied, nil
}

// IdempotencyRetention is how long request_id records are kept. It is this
// package's type, not the idempotency guard's, whose configuration also
// carries what only the host sets (its logger, its identity in claims).
type IdempotencyRetention struct {
	// CompletedTTL is how long a completed call's result is kept for
	// replays; 0 keeps it forever.
	CompletedTTL time.Duration
	// InProgressTTL is how long an unfinished claim blocks its key before
	// it is presumed dead; 0 never expires one.
	InProgressTTL time.Duration
}

// IdempotencyConfig is the retention of request_id records: the defaults,
// then the file's idempotency section, then
// $PLUGBOARD_IDEMPOTENCY_COMPLETED_TTL_SECS and
// $PLUGBOARD_IDEMPOTENCY_IN_PROGRESS_TTL_SECS through getenv, which win. A
// nil Config is the defaults and the environment.
func (c *Config) IdempotencyConfig(getenv func(string) string) (IdempotencyRetention, error) {
	cfg := idempotency.Config{CompletedTTL: idempotency.DefaultCompletedTTL, InProgressTTL: idempotency.DefaultInProgressTTL}
	if c != nil {
		if d := c.Idempotency.CompletedTTL; d != nil {
			cfg.CompletedTTL = d.D()
		}
		if d := c.Idempotency.InProgressTTL; d != nil {
			cfg.InProgressTTL = d.D()
		}
	}
	cfg, err := idempotency.ApplyEnv(cfg, getenv)
	return IdempotencyRetention{CompletedTTL: cfg.CompletedTTL, InProgressTTL: cfg.InProgressTTL}, err
}

// Summary says in one line what the file configures.
func (c *Config) Summary() string {
	var parts []string
	add := func(format string, args ...any) { parts = append(parts, fmt.Sprintf(format, args...)) }
	if c.Data != "" {
		add("data %s", c.Data)
	}
	if c.Store != "" {
		add("store %s", StoreSummary(c.Store))
	}
	if c.LogLevel != "" {
		add("log_level %s", c.LogLevel)
	}
	var plugins []string
	if n := len(c.Plugins.Dirs); n > 0 {
		plugins = append(plugins, plural(n, "dir"))
	}
	for _, v := range []struct {
		name string
		set  bool
	}{{"call_timeout", c.Plugins.CallTimeout != nil}, {"memory_limit_mib", c.Plugins.MemoryLimitMiB != nil},
		{"max_instances", c.Plugins.MaxInstances != nil}, {"unload_idle", c.Plugins.UnloadIdle != nil},
		{"watch", c.Plugins.Watch != nil}} {
		if v.set {
			plugins = append(plugins, v.name)
		}
	}
	if len(plugins) > 0 {
		add("plugins (%s)", strings.Join(plugins, ", "))
	}
	if len(c.Plugins.Settings) > 0 {
		add("plugins.settings (%s)", settingsSummary(c.Plugins.Settings))
	}
	if c.Agents != nil {
		agents := c.Agents.Agents()
		add("agents (%s, %d with a token)", plural(len(agents), "agent"), len(c.Agents.Tokens()))
	}
	if c.Grants != nil {
		add("grants (default %s, %s)", c.Grants.Default, plural(len(c.Grants.Plugins), "plugin"))
	}
	if c.Executors != nil {
		add("executors (%s)", strings.Join(c.executorIDs, ", "))
	}
	if e := c.AgentEnv; len(e.Set)+len(e.Drop) > 0 || e.InactivityTimeout != nil || e.RunTimeout != nil {
		add("agent_env")
	}
	if c.Board.Guard != nil {
		add("board.guard %s", *c.Board.Guard)
	}
	if sb := c.Sandbox; sb.Mode != nil || sb.Network != nil || len(sb.ReadOnly)+len(sb.ReadWrite) > 0 {
		add("sandbox")
	}
	if a := c.Audit; a.PayloadMax != nil || a.MaxAge != nil || a.MaxBytes != nil {
		add("audit")
	}
	if l := c.AttemptLogs; l.ProcessMax != nil || l.AttemptMax != nil || l.MaxAge != nil || l.MaxBytes != nil {
		add("attempt_logs")
	}
	if i := c.Idempotency; i.CompletedTTL != nil || i.InProgressTTL != nil {
		add("idempotency")
	}
	var http []string
	if h := c.HTTP; h.Addr != nil {
		http = append(http, *h.Addr)
	}
	if c.HTTP.TokenFile != nil {
		http = append(http, "token_file")
	}
	if h := c.HTTP; h.ReadTimeout != nil || h.SessionIdle != nil || h.MaxSessions != nil {
		http = append(http, "limits")
	}
	if h := c.HTTP; h.Stateless != nil && *h.Stateless {
		http = append(http, "stateless")
	}
	if c.HTTP.StateKeyFile != nil {
		http = append(http, "state_key_file")
	}
	if len(http) > 0 {
		add("http (%s)", strings.Join(http, ", "))
	}
	var metrics []string
	if a := c.Metrics.Listen; a != nil {
		metrics = append(metrics, *a)
	}
	if c.Metrics.TokenFile != nil {
		metrics = append(metrics, "token_file")
	}
	if len(metrics) > 0 {
		add("metrics (%s)", strings.Join(metrics, ", "))
	}
	if e := c.Telemetry.OTLPEndpoint; e != nil {
		add("telemetry.otlp_endpoint %s", *e)
	}
	if len(parts) == 0 {
		return c.File + ": ok, sets nothing (every setting from flags, environment and defaults)"
	}
	return c.File + ": ok: " + strings.Join(parts, "; ")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// IsPostgresURL reports whether a store names a PostgreSQL server
// (postgres:// or postgresql://, any case) rather than a SQLite file.
func IsPostgresURL(target string) bool { return store.IsPostgresURL(target) }

// CheckStore refuses a store (--store, $PLUGBOARD_STORE, the file's store)
// that is neither a SQLite file path nor a PostgreSQL URL — mysql://…, a
// misspelt postgress://… — naming the forms it accepts. Without it such a
// store would be a SQLite file named like the URL.
func CheckStore(target string) error { return store.CheckTarget(target) }

// StoreSummary names a store without its secrets: a SQLite file by its
// path, a PostgreSQL URL by its host and database only.
func StoreSummary(target string) string {
	if !IsPostgresURL(target) {
		return target
	}
	u, err := url.Parse(target)
	if err != nil {
		return "postgres (unparsable URL)"
	}
	return "postgres " + u.Host + u.Path
}
