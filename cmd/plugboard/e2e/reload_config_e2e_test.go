package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/plugin"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// Reloads and configuration, end to end through the real binary: a served
// plugin replaced by a file that does not load keeps its last good version
// (issue 26), a withdrawn tool answers an envelope, a store of an unknown
// form stops the start, the start-up log says what is in force, and a
// command that loads no plugins needs none of their secrets.

// serveWatched runs `plugboard serve ARGS...` in a clean environment.
func serveWatched(t *testing.T, args ...string) *server {
	t.Helper()
	return dialServe(t, cleanEnv(), nil, args...)
}

// keptCopies counts the copies of plugin versions the server keeps: the
// unlinked files in its data directory it holds open.
func keptCopies(pid int) int {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	fds, _ := os.ReadDir(dir)
	n := 0
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join(dir, fd.Name())); err == nil &&
			strings.Contains(target, ".plugboard-kept-") && strings.HasSuffix(target, "(deleted)") {
			n++
		}
	}
	return n
}

// eventually waits up to 30 s for done.
func eventually(t *testing.T, what string, done func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !done(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not seen within 30 s", what)
		}
	}
}

// toolDescription is the description tools/list gives name, and whether
// it lists it.
func toolDescription(t *testing.T, s *server, name string) (string, bool) {
	t.Helper()
	res, err := s.session.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if tool.Name == name {
			return tool.Description, true
		}
	}
	return "", false
}

// TestReloadKeepsLastGoodVersion: serve --watch with echo; echo replaced
// by a truncated copy still answers, and the log says once why the new
// file was refused; fixed (a new version), the new version is served;
// deleted, a call to echo answers a tool_not_found envelope as a tool
// result, not a protocol error.
func TestReloadKeepsLastGoodVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	_, wasm := buildtest.Plugins(t, "plugins/echo")
	good, err := os.ReadFile(wasm["echo"])
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	echo := filepath.Join(dir, "echo.wasm")
	// replace puts a new file in place whole, as a build or a deploy does.
	replace := func(b []byte) {
		t.Helper()
		if err := os.WriteFile(echo+".new", b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(echo+".new", echo); err != nil {
			t.Fatal(err)
		}
	}
	replace(good)
	s := serveWatched(t, "--plugins", dir, "--data", t.TempDir(), "--watch", "100ms")
	ctx := context.Background()
	answers := func(what string) {
		t.Helper()
		res := s.call(t, ctx, "echo", map[string]any{"text": what})
		if res.IsError || !strings.Contains(clitest.Text(res), what) {
			t.Fatalf("echo %q: %s", what, clitest.Text(res))
		}
	}
	answers("before")
	eventually(t, "a copy of echo's version kept", func() bool { return keptCopies(s.pid) == 1 })

	replace(good[:len(good)/2])
	const refused = "plugin file refused; still serving its previous version"
	eventually(t, "the refusal logged", func() bool { return strings.Contains(s.stderr.String(), refused) })
	answers("still served")
	if _, listed := toolDescription(t, s, "echo"); !listed {
		t.Error("echo is no longer listed")
	}
	time.Sleep(600 * time.Millisecond) // six polls
	log := s.stderr.String()
	if n := strings.Count(log, refused); n != 1 {
		t.Errorf("the refusal logged %d times, want once:\n%s", n, log)
	}
	line := firstLineWith(log, refused)
	if !strings.Contains(line, "level=ERROR") || !strings.Contains(line, "path="+echo) ||
		!strings.Contains(line, "not a loadable WebAssembly module") || !strings.Contains(line, "sha256=") {
		t.Errorf("the refusal does not name the file, the version kept and the reason: %s", line)
	}

	// Fixed, as a new version whose description says so.
	raw, ok, err := plugin.CustomSection(good, abi.ManifestSection)
	if err != nil || !ok {
		t.Fatalf("echo's manifest: %v %v", ok, err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	tool := m["tools"].([]any)[0].(map[string]any)
	tool["description"] = tool["description"].(string) + " (v2)"
	if raw, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	v2, err := plugin.SetCustomSection(good, abi.ManifestSection, raw)
	if err != nil {
		t.Fatal(err)
	}
	replace(v2)
	eventually(t, "the new version served", func() bool {
		d, _ := toolDescription(t, s, "echo")
		return strings.HasSuffix(d, "(v2)")
	})
	answers("the new version")

	if err := os.Remove(echo); err != nil {
		t.Fatal(err)
	}
	eventually(t, "echo withdrawn", func() bool { _, listed := toolDescription(t, s, "echo"); return !listed })
	res, err := s.session.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "gone"}})
	if err != nil {
		t.Fatalf("a call to a withdrawn tool answered a protocol error: %v", err)
	}
	if env := clitest.EnvelopeOf(t, res); env.Code != abi.CodeToolNotFound || env.Hint == "" || env.Details["tool"] != "echo" {
		t.Errorf("a call to a withdrawn tool: %+v, want tool_not_found naming it, with a hint", env)
	}
}

// TestStoreUnknownSchemeRefused: a store that is neither a SQLite path nor
// a PostgreSQL URL — from --store, $PLUGBOARD_STORE or the configuration
// file — stops serve and the board commands at start, naming the forms
// accepted, and creates nothing.
func TestStoreUnknownSchemeRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	plugins := t.TempDir()
	for _, c := range []struct {
		name string
		env  []string
		args []string
		want []string
	}{
		{"serve --store postgress://", nil, []string{"serve", "--store", "postgress://u:hunter2@db/board"}, []string{"--store: ", `unknown scheme "postgress"`}},
		{"serve --store mysql://", nil, []string{"serve", "--store", "mysql://x/y"}, []string{"--store: ", `unknown scheme "mysql"`}},
		{"serve $PLUGBOARD_STORE", []string{"PLUGBOARD_STORE=mysql://x/y"}, []string{"serve"}, []string{"$PLUGBOARD_STORE: ", `unknown scheme "mysql"`}},
		{"project list --store", nil, []string{"project", "list", "--store", "mysql://x/y"}, []string{`unknown scheme "mysql"`}},
		{"audit tail --store", nil, []string{"audit", "tail", "--store", "postgress://x"}, []string{`unknown scheme "postgress"`}},
		{"serve --config with store", nil, []string{"serve", "--config", "STOREFILE"}, []string{"pb.json:1:11: store: ", `unknown scheme "mysql"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			work := t.TempDir()
			data := filepath.Join(work, "data")
			args := slices.Clone(c.args)
			if i := slices.Index(args, "STOREFILE"); i >= 0 {
				args[i] = writeJSON(t, filepath.Join(t.TempDir(), "pb.json"), `{"store": "mysql://x/y"}`)
			}
			args = append(args, "--data", data)
			if args[0] == "serve" {
				args = append(args, "--plugins", plugins)
			}
			_, stderr, code := runPB(t, work, cleanEnv(c.env...), args...)
			for _, want := range append(c.want, "a SQLite file path", "postgres://USER@HOST/DB") {
				if !strings.Contains(stderr, want) {
					t.Errorf("exit %d, stderr lacks %q:\n%s", code, want, stderr)
				}
			}
			if code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
			if strings.Contains(stderr, "hunter2") {
				t.Errorf("the error shows the URL's password:\n%s", stderr)
			}
			if entries, _ := os.ReadDir(work); len(entries) != 0 {
				t.Errorf("the refused start created %v in its working directory", entries)
			}
		})
	}
}

// TestStartupLog: serve's log says, one line each, the attempt sandbox,
// the store (its kind, and a PostgreSQL URL without its password), the
// plugins loaded and their folders, the transport and the dashboard; an
// empty plugin set is a warning naming what to set.
func TestStartupLog(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	plugins, _ := buildtest.Plugins(t, "plugins/echo")
	data := t.TempDir()
	once := func(t *testing.T, log string, wants ...string) {
		t.Helper()
		for _, want := range wants {
			if n := strings.Count(log, want); n != 1 {
				t.Errorf("%q logged %d times, want once", want, n)
			}
		}
	}

	t.Run("stdio", func(t *testing.T) {
		s := serveWatched(t, "--plugins", plugins, "--data", data)
		s.call(t, context.Background(), "echo", map[string]any{"text": "x"})
		log := s.stderr.String()
		once(t, log, `msg="attempt sandbox" mode=`, `msg=store kind=sqlite location=`+filepath.Join(data, "board.db")+"\n",
			`msg="plugins loaded" dirs=[`+plugins+`] plugins=1 `, `msg="MCP transport" transport=stdio`, `msg=dashboard on=false`)
		if strings.Contains(log, "no plugins loaded") {
			t.Errorf("a served plugin set was warned about:\n%s", log)
		}
	})

	t.Run("http, postgres, no plugins", func(t *testing.T) {
		empty := t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, buildtest.Binary(t), "serve", "--http", "127.0.0.1:0", "--plugins", empty, "--data", t.TempDir(),
			"--store", "postgres://board:s3cr3t-pw@127.0.0.1:1/plugboard?sslmode=disable")
		cmd.Env = cleanEnv()
		stderr := &clitest.SyncBuffer{}
		cmd.Stderr = stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		eventually(t, "serve listening", func() bool { return strings.Contains(stderr.String(), `msg=dashboard on=true`) })
		log := stderr.String()
		once(t, log, `msg=store kind=postgres location="postgres://board:***@127.0.0.1:1/plugboard?sslmode=disable"`,
			`msg="plugins loaded" dirs=[`+empty+`] plugins=0 `, `msg="MCP transport" transport=http addr=127.0.0.1:`, `msg=dashboard on=true url=http://127.0.0.1:`)
		warn := firstLineWith(log, "no plugins loaded")
		if !strings.Contains(warn, "level=WARN") || !strings.Contains(warn, "--plugins DIR") || !strings.Contains(warn, "plugins.dirs") {
			t.Errorf("the empty plugin set is not a warning naming --plugins DIR and plugins.dirs: %q", warn)
		}
		if strings.Contains(log, "s3cr3t-pw") {
			t.Errorf("the log shows the store's password:\n%s", log)
		}
	})
}

// TestNoPluginSecretsWithoutPlugins: a configuration file whose plugin
// setting reads an environment variable that is not set serves the board
// commands and audit tail, which load no plugins; a command that loads
// them (call) still stops at the unset variable.
func TestNoPluginSecretsWithoutPlugins(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	plugins, _ := buildtest.Plugins(t, "plugins/echo")
	dir := t.TempDir()
	conf := writeJSON(t, filepath.Join(dir, "pb.json"), `{
  "data": "data",
  "plugins": {"dirs": ["`+plugins+`"], "settings": {"echo": {"config": {"token": "${PB_E2E_UNSET_SECRET}"}}}}
}`)
	env := cleanEnv()
	if _, stderr, code := runPB(t, dir, env, "project", "create", "demo", "--config", conf); code != 0 {
		t.Fatalf("project create with an unset plugin secret: exit %d\n%s", code, stderr)
	}
	if _, stderr, code := runPB(t, dir, env, "audit", "tail", "--config", conf); code != 0 {
		t.Errorf("audit tail with an unset plugin secret: exit %d\n%s", code, stderr)
	}
	_, stderr, code := runPB(t, dir, env, "call", "echo", `{"text":"x"}`, "--config", conf)
	if code != 2 || !strings.Contains(stderr, "plugins.settings.echo.config.token: environment variable PB_E2E_UNSET_SECRET is not set") {
		t.Errorf("call with an unset plugin secret: exit %d, want 2 naming the variable:\n%s", code, stderr)
	}
	out, stderr, code := runPB(t, dir, cleanEnv("PB_E2E_UNSET_SECRET=now-set"), "call", "echo", `{"text":"set"}`, "--config", conf)
	if code != 0 || !strings.Contains(out, "set") {
		t.Errorf("call with the secret set: exit %d\n%s\n%s", code, out, stderr)
	}
}

// firstLineWith is the first line of log containing msg.
func firstLineWith(log, msg string) string {
	for l := range strings.Lines(log) {
		if strings.Contains(l, msg) {
			return l
		}
	}
	return ""
}
