package config

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plugboard/plugboard/host/internal/idempotency"
)

// readmeExample is the first JSON block of the "Configuration" section of
// docs/operators.md, the operators' guide (the README's until the guides
// took its reference sections).
func readmeExample(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "operators.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Configuration\n")
	if !ok {
		t.Fatal(`docs/operators.md has no "## Configuration" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	_, block, ok := strings.Cut(section, "```json\n")
	if !ok {
		t.Fatal(`docs/operators.md's "Configuration" section has no json block`)
	}
	block, _, _ = strings.Cut(block, "```")
	return []byte(block)
}

// TestReadmeExample: the example in docs/operators.md loads, and every
// section says what the guide shows.
func TestReadmeExample(t *testing.T) {
	c, err := Parse("/etc/plugboard/plugboard.json", readmeExample(t))
	if err != nil {
		t.Fatalf("docs/operators.md's example configuration: %v", err)
	}
	if c.Data != "/var/lib/plugboard" || c.LogLevel != "info" {
		t.Errorf("data %q, log_level %q", c.Data, c.LogLevel)
	}
	p := c.Plugins
	if !slices.Equal(p.Dirs, []string{"/opt/plugboard/plugins"}) || p.CallTimeout.D() != 30*time.Second || *p.MemoryLimitMiB != 128 ||
		*p.MaxInstances != 8 || p.Watch.D() != 2*time.Second || len(p.Settings) != 1 {
		t.Errorf("plugins %+v", p)
	}
	if gh := p.Settings["github"]; gh.Source != "oci://ghcr.io/example/github-mcp:1.4.0" || gh.Config["api_url"].Value() != "https://api.github.com" ||
		gh.Prefix != "gh_" || len(gh.AllowedHosts) != 1 {
		t.Errorf("plugins.settings.github %+v", gh)
	}
	if a, ok := c.Agents.Agent("worker1"); !ok || a.Type != "WORKER" || a.Supervisor != "sup" {
		t.Errorf("agents: worker1 = %+v", a)
	}
	if c.Grants.Default != "declared" || !slices.Equal(c.Grants.Plugins["tasks-workspace"], []string{"workspace.read"}) {
		t.Errorf("grants %+v", c.Grants)
	}
	if e, ok := c.Executors.Get("MY_AGENT"); !ok || e.Binary != "my-agent" {
		t.Errorf("executors: MY_AGENT = %+v", e)
	}
	if _, ok := c.Executors.Get("CLAUDE_CODE"); !ok {
		t.Error("executors: the built-in profiles are gone")
	}
	if e := c.AgentEnv; !slices.Equal(e.Set, []string{"GIT_AUTHOR_NAME=agent", "AWS_REGION"}) || !slices.Equal(e.Drop, []string{"AWS_*"}) ||
		e.InactivityTimeout.D() != 10*time.Minute || e.RunTimeout.D() != 2*time.Hour {
		t.Errorf("agent_env %+v", e)
	}
	if *c.Board.Guard != "balanced" {
		t.Errorf("board %+v", c.Board)
	}
	if sb := c.Sandbox; *sb.Mode != "landlock" || *sb.Network != "open" || !slices.Equal(sb.ReadOnly, []string{"/home/ops/.cargo"}) {
		t.Errorf("sandbox %+v", sb)
	}
	if a := c.Audit; *a.PayloadMax != 1024 || a.MaxAge.D() != 720*time.Hour || *a.MaxBytes != 64<<20 {
		t.Errorf("audit %+v", a)
	}
	if i := c.Idempotency; i.CompletedTTL.D() != 168*time.Hour || i.InProgressTTL.D() != time.Hour {
		t.Errorf("idempotency %+v", i)
	}
	if h := c.HTTP; *h.Addr != "127.0.0.1:8080" || *h.TokenFile != "/home/ops/.config/plugboard/http-token" || h.ReadTimeout.D() != 30*time.Second ||
		h.SessionIdle.D() != time.Hour || *h.MaxSessions != 64 {
		t.Errorf("http %+v", h)
	}
	want := "/etc/plugboard/plugboard.json: ok: data /var/lib/plugboard; log_level info; " +
		"plugins (1 dir, call_timeout, memory_limit_mib, max_instances, watch); " +
		"plugins.settings (github: oci source, config (1 value, 0 secrets), 1 allowed host, prefix gh_); agents (2 agents, 0 with a token); " +
		"grants (default declared, 1 plugin); executors (MY_AGENT); agent_env; board.guard balanced; sandbox; audit; idempotency; " +
		"http (127.0.0.1:8080, token_file, limits)"
	if got := c.Summary(); got != want {
		t.Errorf("summary\n  %s\nwant\n  %s", got, want)
	}
}

// TestErrorsNameFileLineColumnAndField: the example of the issue — a
// section's own check (host/internal/policy's agent types) is placed in the
// configuration file.
func TestErrorsNameFileLineColumnAndField(t *testing.T) {
	file := `{
  "data": "board",
  "agents": {
    "agents": [
      {
        "id": "sup",
        "type": "SUPERVISOR"
      },
      {
        "id": "w1",
        "supervisor": "sup",
        "type": "WORKR"
      }
    ]
  }
}`
	_, err := Parse("plugboard.json", []byte(file))
	want := `plugboard.json:12:17: agents.agents[1].type: unknown type "WORKR" (agent "w1"; one of SUPERVISOR, ORCHESTRATOR, WORKER)`
	if err == nil || err.Error() != want {
		t.Fatalf("error\n  %v\nwant\n  %s", err, want)
	}
}

// TestStrict: an unknown field anywhere — the file's own sections and the
// sections other packages decode — is an error, and every problem of the
// file is reported at once, top to bottom.
func TestStrict(t *testing.T) {
	file := `{
  "dta": "x",
  "plugins": {"dirs": ["p"], "call_timeout": 30, "memory_limit_mib": 0, "max_instances": -1, "settings": {"echo": {"greeting": "hi"}}},
  "agents": {"agents": [{"id": "a", "type": "WORKER", "tokn": "t"}]},
  "grants": {"default": "some", "plugin": {}},
  "executors": [{"executor": "X", "binary": "x", "output_format": "xml", "varients": {}}],
  "agent_env": {"set": ["PLUGBOARD_DATA=/x"], "drop": ["="], "run_timeout": "-1s"},
  "board": {"guard": "strict"},
  "audit": {"payload_max": "1TiB", "max_age": "forever"},
  "idempotency": {"completed_ttl": "-1h"},
  "http": {"addr": "8080", "token": "secret-in-a-file", "read_timeout": "0s", "max_sessions": -1},
  "log_level": "loud"
}`
	_, err := Parse("/srv/plugboard.json", []byte(file))
	if err == nil {
		t.Fatal("accepted")
	}
	want := []string{
		`/srv/plugboard.json:2:3: dta: unknown field "dta" (did you mean "data"?)`,
		`/srv/plugboard.json:3:46: plugins.call_timeout: want a duration string such as "90s", "10m" or "2h", got 30`,
		`/srv/plugboard.json:3:70: plugins.memory_limit_mib: want 1 to 4096`,
		`/srv/plugboard.json:3:90: plugins.max_instances: must not be negative (0: 2 x CPUs, at least 4), got -1`,
		`/srv/plugboard.json:3:116: plugins.settings.echo.greeting: unknown field "greeting"`,
		`/srv/plugboard.json:4:55: agents.agents[0].tokn: unknown field "tokn" (did you mean "token"?)`,
		`/srv/plugboard.json:5:25: grants.default: "some" is no default; use "declared" or "none"`,
		`/srv/plugboard.json:5:33: grants.plugin: unknown field "plugin" (did you mean "plugins"?)`,
		`/srv/plugboard.json:6:17: executors[0].variants: executor X: none defined`,
		`/srv/plugboard.json:6:67: executors[0].output_format: executor X: unknown format "xml"`,
		`/srv/plugboard.json:6:74: executors[0].varients: unknown field "varients" (did you mean "variants"?)`,
		`/srv/plugboard.json:7:25: agent_env.set[0]: PLUGBOARD_DATA is set by the board for each attempt`,
		`/srv/plugboard.json:7:56: agent_env.drop[0]: drop pattern "=" is not a glob over variable names`,
		`/srv/plugboard.json:7:77: agent_env.run_timeout: must not be negative, got -1s`,
		`/srv/plugboard.json:8:22: board.guard: unknown guard "strict" (one of safe, balanced, relaxed, off)`,
		`/srv/plugboard.json:9:28: audit.payload_max: want a size such as 1048576, 512KiB or 64MiB, got "1TiB"`,
		`/srv/plugboard.json:9:47: audit.max_age: duration "forever": write it like "90s", "10m" or "2h"`,
		`/srv/plugboard.json:10:36: idempotency.completed_ttl: must not be negative (0 keeps records for ever), got -1h0m0s`,
		`/srv/plugboard.json:11:20: http.addr: want HOST:PORT`,
		`/srv/plugboard.json:11:37: http.token: a token never goes in the configuration file`,
		`/srv/plugboard.json:11:73: http.read_timeout: must be positive, got 0s`,
		`/srv/plugboard.json:11:95: http.max_sessions: must not be negative (0: no cap), got -1`,
		`/srv/plugboard.json:12:16: log_level: unknown level "loud"`,
	}
	got := strings.Split(err.Error(), "\n")
	for _, w := range want {
		if !slices.ContainsFunc(got, func(g string) bool { return strings.HasPrefix(g, w) }) {
			t.Errorf("no error starting\n  %s\namong\n  %s", w, strings.Join(got, "\n  "))
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d errors, want %d:\n%s", len(got), len(want), err)
	}
	// The errors read top to bottom.
	if !slices.IsSortedFunc(got, func(a, b string) int { return lineOf(a) - lineOf(b) }) {
		t.Errorf("not in file order:\n%s", err)
	}
}

func lineOf(e string) int {
	var line int
	parts := strings.SplitN(e, ":", 3)
	if len(parts) == 3 {
		for _, c := range parts[1] {
			line = line*10 + int(c-'0')
		}
	}
	return line
}

// TestPluginSection: plugin limits are checked like their flags, and paths
// are taken from the file's directory (plugins.settings: TestPluginSettings).
func TestPluginSection(t *testing.T) {
	dir := t.TempDir()
	c, err := Parse(filepath.Join(dir, "pb.json"), []byte(`{"data": "board", "plugins": {"dirs": ["p", "/abs/q"], "settings": {}},
		"http": {"token_file": "secret/token"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Data != filepath.Join(dir, "board") || !slices.Equal(c.Plugins.Dirs, []string{filepath.Join(dir, "p"), "/abs/q"}) ||
		*c.HTTP.TokenFile != filepath.Join(dir, "secret", "token") {
		t.Errorf("paths: data %s, dirs %v, token_file %s", c.Data, c.Plugins.Dirs, *c.HTTP.TokenFile)
	}
	for body, want := range map[string]string{
		`{"plugins": {"memory_limit_mib": 4097}}`:                     `pb.json:1:34: plugins.memory_limit_mib: want 1 to 4096`,
		`{"plugins": {"memory_limit_mib": -1}}`:                       `pb.json:1:34: plugins.memory_limit_mib: want a whole number, 0 or more`,
		`{"plugins": {"dirs": [""]}}`:                                 `pb.json:1:23: plugins.dirs[0]: is empty`,
		`{"plugins": {"watch": "-1s"}}`:                               `pb.json:1:23: plugins.watch: must not be negative (0 turns watching off)`,
		`{"plugins": {"call_timeout": "0s"}}`:                         `pb.json:1:30: plugins.call_timeout: must be positive`,
		`{"plugins": []}`:                                             `pb.json:1:13: plugins: want an object, got an array`,
		`{"data": ""}`:                                                `pb.json:1:10: data: is empty`,
		`{"executors": {"executors": []}}`:                            `pb.json:1:15: executors: want an array, got an object`,
		`{"agents": {"agents": [{"id": "local", "type": "WORKER"}]}}`: `pb.json:1:31: agents.agents[0].id: "local" is reserved`,
		`{"agents": {"agents": [{"id": "a", "type": 5}]}}`:            `pb.json:1:44: agents.agents[0].type: want a string, got a number`,
		`{"http": {"session_idle": "-1m", "addr": ":80"}}`:            `pb.json:1:27: http.session_idle: must not be negative`,
	} {
		_, err := Parse("pb.json", []byte(body))
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s:\n  %v\nwant it to start\n  %s", body, err, want)
		}
	}
}

// flags registers a few of plugboard's flags as cmd/plugboard does.
func flags() (*flag.FlagSet, *string, *list, *time.Duration, *string, *string, *string) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	data := fs.String("data", "", "")
	plugins := &list{}
	fs.Var(plugins, "plugins", "")
	timeout := fs.Duration("call-timeout", 30*time.Second, "")
	level := fs.String("log-level", "info", "")
	tokenFile := fs.String("http-token-file", "", "")
	token := fs.String("http-token", "", "")
	return fs, data, plugins, timeout, level, tokenFile, token
}

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// TestApplyPrecedence: flags over environment over file over defaults.
func TestApplyPrecedence(t *testing.T) {
	c, err := Parse("/etc/pb.json", []byte(`{"data": "/from/file", "log_level": "debug",
		"plugins": {"dirs": ["/file/p1", "/file/p2"], "call_timeout": "5s", "memory_limit_mib": 64},
		"http": {"token_file": "/file/token", "session_idle": "5m"}}`))
	if err != nil {
		t.Fatal(err)
	}

	// The file alone: it gives every flag it sets and the command has
	// (memory-limit and http-session-idle are not registered here).
	fs, data, plugins, timeout, level, tokenFile, _ := flags()
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	applied, err := c.Apply(fs, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if *data != "/from/file" || !slices.Equal(*plugins, []string{"/file/p1", "/file/p2"}) || *timeout != 5*time.Second ||
		*level != "debug" || *tokenFile != "/file/token" {
		t.Errorf("file: data %s, plugins %v, timeout %v, level %s, token file %s", *data, *plugins, *timeout, *level, *tokenFile)
	}
	if want := []string{"data", "log_level", "plugins.dirs", "plugins.call_timeout", "http.token_file"}; !slices.Equal(applied, want) {
		t.Errorf("applied %v, want %v", applied, want)
	}

	// The environment over the file: the flag is left for the code that
	// reads the variable.
	fs, data, _, _, _, tokenFile, _ = flags()
	_ = fs.Parse(nil)
	if _, err := c.Apply(fs, env(map[string]string{EnvData: "/from/env", EnvHTTPToken: "t"})); err != nil {
		t.Fatal(err)
	}
	if *data != "" || *tokenFile != "" {
		t.Errorf("environment: data %q, token file %q: the file won", *data, *tokenFile)
	}

	// Flags over both; a repeatable flag replaces the file's list; a flag
	// given empty still wins; --http-token wins over the file's token_file.
	fs, data, plugins, timeout, level, tokenFile, _ = flags()
	if err := fs.Parse([]string{"--data", "/from/flag", "--plugins", "/flag/p", "--call-timeout", "1s", "--log-level", "", "--http-token", "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Apply(fs, env(map[string]string{EnvData: "/from/env"})); err != nil {
		t.Fatal(err)
	}
	if *data != "/from/flag" || !slices.Equal(*plugins, []string{"/flag/p"}) || *timeout != time.Second || *level != "" || *tokenFile != "" {
		t.Errorf("flags: data %s, plugins %v, timeout %v, level %q, token file %q", *data, *plugins, *timeout, *level, *tokenFile)
	}

	// No file: nothing applies, the defaults stay.
	fs, _, _, timeout, _, _, _ = flags()
	_ = fs.Parse(nil)
	if applied, err := (*Config)(nil).Apply(fs, env(nil)); err != nil || applied != nil || *timeout != 30*time.Second {
		t.Errorf("nil config: %v %v %v", applied, err, *timeout)
	}
}

// TestIdempotencyPrecedence: the variables over the file over the
// defaults.
func TestIdempotencyPrecedence(t *testing.T) {
	c, err := Parse("pb.json", []byte(`{"idempotency": {"completed_ttl": "2h", "in_progress_ttl": "0s"}}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := (*Config)(nil).IdempotencyConfig(env(nil))
	if err != nil || got.CompletedTTL != idempotency.DefaultCompletedTTL || got.InProgressTTL != idempotency.DefaultInProgressTTL {
		t.Errorf("defaults: %+v %v", got, err)
	}
	got, err = c.IdempotencyConfig(env(nil))
	if err != nil || got.CompletedTTL != 2*time.Hour || got.InProgressTTL != 0 {
		t.Errorf("file: %+v %v", got, err)
	}
	got, err = c.IdempotencyConfig(env(map[string]string{idempotency.EnvInProgressTTL: "90"}))
	if err != nil || got.CompletedTTL != 2*time.Hour || got.InProgressTTL != 90*time.Second {
		t.Errorf("environment over file: %+v %v", got, err)
	}
	if _, err := c.IdempotencyConfig(env(map[string]string{idempotency.EnvCompletedTTL: "1h"})); err == nil ||
		!strings.Contains(err.Error(), idempotency.EnvCompletedTTL) {
		t.Errorf("a bad variable: %v", err)
	}
}

func TestLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pb.json")
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "pb.json") {
		t.Errorf("missing file: %v", err)
	}
	if err := os.WriteFile(path, []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil || c.File != path || !strings.HasSuffix(c.Summary(), "ok, sets nothing (every setting from flags, environment and defaults)") {
		t.Errorf("empty object: %+v %v", c, err)
	}
}

func TestParseByteSize(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "1024": 1024, "1KiB": 1 << 10, "64MiB": 64 << 20, "2g": 2 << 30, " 3 MB ": 3 << 20} {
		if got, err := ParseByteSize(in); err != nil || got != want {
			t.Errorf("%q: %d %v, want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "1TiB", "KiB", "1.5MiB"} {
		if _, err := ParseByteSize(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

// TestStore: the file's store is a SQLite file relative to the file, or a
// PostgreSQL URL kept as it is; the summary never shows its password.
func TestStore(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ json, store, summary string }{
		{`{"store": "board/b.db"}`, filepath.Join(dir, "board/b.db"), "store " + filepath.Join(dir, "board/b.db")},
		{`{"store": "postgres://pb:s3cret-pass@db.internal:5432/plugboard?sslmode=require"}`,
			"postgres://pb:s3cret-pass@db.internal:5432/plugboard?sslmode=require", "store postgres db.internal:5432/plugboard"},
	} {
		path := filepath.Join(dir, "pb.json")
		if err := os.WriteFile(path, []byte(c.json), 0o600); err != nil {
			t.Fatal(err)
		}
		conf, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if conf.Store != c.store {
			t.Errorf("%s: store %q, want %q", c.json, conf.Store, c.store)
		}
		if sum := conf.Summary(); !strings.Contains(sum, c.summary) || strings.Contains(sum, "s3cret") {
			t.Errorf("%s: summary %q, want %q and no password", c.json, sum, c.summary)
		}
	}
}
