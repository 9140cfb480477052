package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/config"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// The configuration file end to end: the real binary with --config (or
// $PLUGBOARD_CONFIG) for call, serve and a board command, a setting from
// each source — flag, environment, file — and which wins, and `config
// check` on a good and a bad file.

// cleanEnv is the environment without any PLUGBOARD_* variable of the
// caller's, plus extra.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PLUGBOARD_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// runPB runs the binary in dir with env and returns stdout, stderr and the
// exit code.
func runPB(t *testing.T, dir string, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(buildtest.Binary(t), args...)
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), code
}

func writeJSON(t *testing.T, path, body string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func boardExists(data string) bool {
	_, err := os.Stat(filepath.Join(data, "board.db"))
	return err == nil
}

var ttlLine = regexp.MustCompile(`in-progress TTL is shorter.* ttl=(\S+)`)

// TestConfigCall: call with a configuration file. Paths in the file are
// taken from its directory; data comes from --data over $PLUGBOARD_DATA over
// the file; the idempotency TTL from $PLUGBOARD_IDEMPOTENCY_* over the file;
// the agents section applies unless --agents is given.
func TestConfigCall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	plugins, _ := buildtest.Plugins(t, "plugins/echo")
	dir := t.TempDir()
	writeJSON(t, filepath.Join(dir, "pb.json"), `{
  "data": "data-file",
  "log_level": "warn",
  "plugins": {"dirs": [`+jsonString(plugins)+`], "call_timeout": "20s", "settings": {}},
  "agents": {"agents": [{"id": "w1", "type": "WORKER"}]},
  "idempotency": {"in_progress_ttl": "1m"}
}`)
	echo := []string{"call", "echo", `{"text":"hi"}`}

	// The file alone: its data directory (relative to the file), its
	// plugin folder, its TTL.
	out, errOut, code := runPB(t, dir, cleanEnv(), append(echo, "--config", "pb.json")...)
	if code != 0 || !strings.Contains(out, `"text": "hi"`) {
		t.Fatalf("call with the file: exit %d\n%s%s", code, out, errOut)
	}
	if !boardExists(filepath.Join(dir, "data-file")) {
		t.Errorf("no board in the file's data directory")
	}
	if m := ttlLine.FindStringSubmatch(errOut); m == nil || m[1] != "1m0s" {
		t.Errorf("TTL from the file: %q\n%s", m, errOut)
	}

	// The environment over the file: $PLUGBOARD_DATA, the TTL variable,
	// and $PLUGBOARD_CONFIG naming the file.
	envData := filepath.Join(dir, "data-env")
	env := cleanEnv(config.EnvConfig+"=pb.json", config.EnvData+"="+envData, "PLUGBOARD_IDEMPOTENCY_IN_PROGRESS_TTL_SECS"+"=120")
	out, errOut, code = runPB(t, dir, env, echo...)
	if code != 0 || !strings.Contains(out, `"text": "hi"`) || !boardExists(envData) {
		t.Fatalf("call with the environment: exit %d, board in %s: %v\n%s%s", code, envData, boardExists(envData), out, errOut)
	}
	if m := ttlLine.FindStringSubmatch(errOut); m == nil || m[1] != "2m0s" {
		t.Errorf("TTL from the environment: %q\n%s", m, errOut)
	}

	// Flags over both.
	flagData := filepath.Join(dir, "data-flag")
	out, errOut, code = runPB(t, dir, env, append(echo, "--data", flagData, "--log-level", "error")...)
	if code != 0 || !boardExists(flagData) || ttlLine.MatchString(errOut) {
		t.Fatalf("call with flags: exit %d, board in %s: %v (--log-level error hides the TTL warning)\n%s%s", code, flagData, boardExists(flagData), out, errOut)
	}

	// The agents section: w1 is a WORKER, which may not call echo; with
	// --agents FILE the file's agents replace the section.
	out, errOut, code = runPB(t, dir, cleanEnv(), append(echo, "--config", "pb.json", "--agent", "w1")...)
	if code != 1 || !strings.Contains(out, `"permission_denied"`) || !strings.Contains(out, `"agent_type": "WORKER"`) {
		t.Fatalf("w1 from the agents section: exit %d\n%s%s", code, out, errOut)
	}
	agents := writeJSON(t, filepath.Join(dir, "agents.json"), `{"agents": [{"id": "w1", "type": "SUPERVISOR"}]}`)
	out, errOut, code = runPB(t, dir, cleanEnv(), append(echo, "--config", "pb.json", "--agents", agents, "--agent", "w1")...)
	if code != 0 || !strings.Contains(out, `"text": "hi"`) {
		t.Fatalf("w1 from --agents: exit %d\n%s%s", code, out, errOut)
	}

	// --config '' wins over $PLUGBOARD_CONFIG: no file, so no plugin
	// folder but DATA/plugins, and no echo.
	out, errOut, code = runPB(t, dir, env, append(echo, "--config", "", "--data", flagData)...)
	if code != 1 || !strings.Contains(out, `"`+abi.CodeToolNotFound+`"`) {
		t.Fatalf("--config '': exit %d\n%s%s", code, out, errOut)
	}
}

// TestConfigBoardCommand: a board command takes the executors section,
// and --executors FILE replaces it.
func TestConfigBoardCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	writeJSON(t, filepath.Join(dir, "pb.json"), `{"data": "board", "executors": [
  {"executor": "MY_AGENT", "binary": "my-agent", "output_format": "lines", "variants": {"DEFAULT": {"argv": ["my-agent", "{prompt}"]}}}
]}`)
	other := writeJSON(t, filepath.Join(dir, "executors.json"), `{"executors": [
  {"executor": "OTHER_AGENT", "binary": "other", "output_format": "lines", "variants": {"DEFAULT": {"argv": ["other", "{prompt}"]}}}
]}`)
	executors := func(args ...string) []string {
		t.Helper()
		out, errOut, code := runPB(t, dir, cleanEnv(), append([]string{"attempt", "executors", "--json", "--config", "pb.json"}, args...)...)
		if code != 0 {
			t.Fatalf("attempt executors %v: exit %d\n%s%s", args, code, out, errOut)
		}
		var list struct {
			Executors []struct{ Executor string } `json:"executors"`
		}
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		var ids []string
		for _, e := range list.Executors {
			ids = append(ids, e.Executor)
		}
		return ids
	}
	if ids := executors(); !slices.Contains(ids, "MY_AGENT") || !slices.Contains(ids, "CLAUDE_CODE") || slices.Contains(ids, "OTHER_AGENT") {
		t.Errorf("from the file: %v", ids)
	}
	if !boardExists(filepath.Join(dir, "board")) {
		t.Errorf("the board command did not use the file's data directory")
	}
	if ids := executors("--executors", other); slices.Contains(ids, "MY_AGENT") || !slices.Contains(ids, "OTHER_AGENT") {
		t.Errorf("with --executors: %v", ids)
	}
}

// TestConfigServeHTTP: serve takes its HTTP transport from the file —
// address and token file — and $PLUGBOARD_HTTP_TOKEN wins over the file's
// token file.
func TestConfigServeHTTP(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	plugins, _ := buildtest.Plugins(t, "plugins/echo")
	dir := t.TempDir()
	fileToken := strings.Repeat("f", 40)
	envToken := strings.Repeat("e", 40)
	writeJSON(t, filepath.Join(dir, "token"), fileToken+"\n")
	cfg := writeJSON(t, filepath.Join(dir, "pb.json"), `{"data": "data", "plugins": {"dirs": [`+jsonString(plugins)+`]},
  "http": {"addr": "127.0.0.1:0", "token_file": "token", "max_sessions": 2, "stateless": true}}`)
	body := `{"agentId":"local","toolName":"echo","input":{"text":"hi"}}`

	s := clitest.LaunchHTTP(t, cleanEnv(), []string{"serve", "--config", cfg})
	if status, r := rest(t, s, fileToken, body); status != http.StatusOK || !r.Success || string(r.Data) != `{"text":"hi"}` {
		t.Fatalf("the file's token: %d %+v", status, r)
	}
	if status, _ := rest(t, s, "", body); status != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", status)
	}
	if !strings.Contains(s.Stderr.String(), "max_sessions=2") {
		t.Errorf("http.max_sessions not applied:\n%s", s.Stderr.String())
	}
	if !strings.Contains(s.Stderr.String(), "stateless=true") {
		t.Errorf("http.stateless not applied:\n%s", s.Stderr.String())
	}

	s = clitest.LaunchHTTP(t, cleanEnv(config.EnvHTTPToken+"="+envToken), []string{"serve", "--config", cfg})
	if status, r := rest(t, s, envToken, body); status != http.StatusOK || !r.Success {
		t.Fatalf("the environment's token: %d %+v", status, r)
	}
	if status, _ := rest(t, s, fileToken, body); status != http.StatusUnauthorized {
		t.Errorf("the file's token with $%s set: %d, want 401", config.EnvHTTPToken, status)
	}
}

// TestConfigCheck: `config check` sums up a good file (exit 0) and lists
// every problem of a bad one (exit 1), each at FILE:LINE:COL and the
// field; serve refuses the bad file (exit 2) the same way.
func TestConfigCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	writeJSON(t, filepath.Join(dir, "good.json"), `{"data": "/srv/board", "http": {"addr": "127.0.0.1:8080"},
  "agents": {"agents": [{"id": "sup", "type": "SUPERVISOR"}]}}`)
	out, errOut, code := runPB(t, dir, cleanEnv(), "config", "check", "good.json")
	// The second line is the attempt sandbox in force on this machine.
	summary, mode, _ := strings.Cut(out, "\n")
	if code != 0 || summary != "good.json: ok: data /srv/board; agents (1 agent, 0 with a token); http (127.0.0.1:8080)" ||
		!strings.HasPrefix(mode, "sandbox: ") || errOut != "" {
		t.Fatalf("good file: exit %d\nstdout: %q\nstderr: %q", code, out, errOut)
	}

	writeJSON(t, filepath.Join(dir, "bad.json"), `{
  "agents": {"agents": [
    {"id": "sup", "type": "SUPERVISOR"},
    {"id": "w1", "type": "WORKR", "supervisor": "sup"}
  ]},
  "http": {"addr": "127.0.0.1:8080", "token": "never-here"},
  "plugins": {"call_timeout": "soon"}
}`)
	want := `bad.json:4:26: agents.agents[1].type: unknown type "WORKR" (agent "w1"; one of SUPERVISOR, ORCHESTRATOR, WORKER)
bad.json:6:47: http.token: a token never goes in the configuration file: name the file holding it in http.token_file, or set $PLUGBOARD_HTTP_TOKEN
bad.json:7:31: plugins.call_timeout: duration "soon": write it like "90s", "10m" or "2h"
bad.json: 3 problems
`
	out, errOut, code = runPB(t, dir, cleanEnv(), "config", "check", "bad.json")
	if code != 1 || out != "" || errOut != want {
		t.Fatalf("bad file: exit %d\nstdout: %q\nstderr:\n%s\nwant:\n%s", code, out, errOut, want)
	}
	_, errOut, code = runPB(t, dir, cleanEnv(config.EnvConfig+"=bad.json"), "serve")
	if code != 2 || !strings.Contains(errOut, "plugboard: "+strings.Split(want, "\n")[0]) {
		t.Fatalf("serve with the bad file in $%s: exit %d\n%s", config.EnvConfig, code, errOut)
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
