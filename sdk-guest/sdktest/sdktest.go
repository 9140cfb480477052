// Package sdktest runs the tools of a plugboard plugin from the plugin's own
// Go tests, two ways:
//
//   - natively, in the test process: [Call] runs a tool through the SDK's
//     own decoding and encoding (sdk.HandleCall, exactly what the call export
//     runs), with the configuration values, HTTP server and directories an
//     [Env] supplies — what sdk.Config, sdk.HTTP and sdk.OpenDir read in
//     place of the operator's settings. [Use] installs an Env for a test that
//     calls its handler functions itself.
//   - through the real runtime: [Build] builds the plugin with `plugboard
//     plugin build`, and [Plugin.Call] calls a tool with `plugboard call`
//     (sandbox, limits, argument validation against the schema, the host's
//     envelopes), the Env given as the plugin's settings
//     (plugins.settings.<plugin>) in a configuration file. The binary is
//     $PLUGBOARD_BIN, else plugboard on PATH; without either, and under
//     go test -short, Build skips the test, saying so.
//
// Both decode a tool's success into out and return its envelope as an
// *abi.Envelope error; a failure of the test's own making (arguments that
// do not encode, a result that does not decode into out, a plugboard that
// cannot start) fails the test instead.
//
// In a plugin's main_test.go (plugboard plugin new writes one; this
// package's own tests and internal/demo are another example):
//
//	func TestGreet(t *testing.T) {
//		env := sdktest.Env{Config: map[string]string{"greeting": "Hi"}}
//		var out Output
//		if err := sdktest.Call(t, env, "greet", Input{Name: "Ada"}, &out); err != nil {
//			t.Fatal(err) // the tool's envelope
//		}
//		p := sdktest.Build(t, ".") // skips without a plugboard binary
//		if err := p.Call(t, env, "greet", Input{Name: "Ada"}, &out); err != nil {
//			t.Fatal(err)
//		}
//	}
//
// An Env is process-wide while installed, as a plugin's settings are in
// WebAssembly: tests with different environments must not run in parallel.
//
// sdktest needs only the standard library, sdk and abi: a plugin's module
// lists nothing more for it.
package sdktest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/abi"
)

// Env is what the operator would give the plugin: its settings. The zero
// value is the default sandbox, with nothing beyond the call.
type Env struct {
	// Config holds the configuration values sdk.Config reads
	// (plugins.settings.<plugin>.config; in the runtime a value of the form
	// ${VAR} is the environment variable VAR, as in a configuration file).
	Config map[string]string
	// Server is the one HTTP server the plugin may reach with sdk.HTTP:
	// natively through the server's own client, to its address only; in the
	// runtime as the plugin's allowed_hosts (its host:port) with
	// allow_private, since it listens on loopback.
	Server *httptest.Server
	// Dirs maps the directories the plugin sees (absolute, such as /data) to
	// directories of the test (t.TempDir()), which sdk.OpenDir opens,
	// writable (plugins.settings.<plugin>.allowed_paths).
	Dirs map[string]string
}

func (e Env) empty() bool { return len(e.Config) == 0 && e.Server == nil && len(e.Dirs) == 0 }

// Plugin is a plugin built by Build, which Call runs through plugboard.
type Plugin struct {
	// Name is the plugin's name, as its manifest declares it: the key of its
	// settings.
	Name string
	// Wasm is the built module.
	Wasm string

	bin     string // the plugboard binary
	plugins string // the folder holding Wasm alone
	data    string // the data directory of every call, so compiled code is cached
}

// Binary returns the plugboard binary the runtime path runs: $PLUGBOARD_BIN,
// else plugboard on PATH, else "".
func Binary() string {
	if b := os.Getenv("PLUGBOARD_BIN"); b != "" {
		return b
	}
	if b, err := exec.LookPath("plugboard"); err == nil {
		return b
	}
	return ""
}

// Build builds the plugin whose main package is in dir ("." for the test's
// own package) with `plugboard plugin build` into the test's temporary
// directory, or skips the test when there is no plugboard binary (see
// Binary) or under -short. The build needs the go command on PATH. Call
// Build once per test and use the Plugin in its subtests: each Build
// compiles the plugin again.
func Build(t testing.TB, dir string) *Plugin {
	t.Helper()
	if testing.Short() {
		t.Skip("sdktest: -short: not building the plugin to call it through plugboard")
	}
	bin := Binary()
	if bin == "" {
		t.Skip("sdktest: no plugboard binary to call the plugin through the real runtime: " +
			"set PLUGBOARD_BIN to one, or put plugboard on PATH (the native tests ran)")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	p := &Plugin{bin: bin, plugins: t.TempDir(), data: t.TempDir()}
	p.Wasm = filepath.Join(p.plugins, filepath.Base(abs)+".wasm")
	if _, err := p.run(abs, "plugin", "build", abs, "-o", p.Wasm); err != nil {
		t.Fatalf("sdktest: %v", err)
	}
	out, err := p.run(abs, "plugin", "inspect", "--json", p.Wasm)
	if err != nil {
		t.Fatalf("sdktest: %v", err)
	}
	var in struct{ Manifest *abi.Manifest }
	if err := json.Unmarshal(out, &in); err != nil || in.Manifest == nil {
		t.Fatalf("sdktest: plugboard plugin inspect --json %s printed no manifest (%v):\n%s", p.Wasm, err, out)
	}
	p.Name = in.Manifest.Plugin.Name
	return p
}

// Call calls tool with the arguments in (JSON-encoded) through `plugboard
// call`, with env as the plugin's settings, and decodes the tool's
// structured result into out (nil: not decoded). A tool answering with
// content items instead prints {"content": [...]}, which is what out gets.
// The error is the envelope (an *abi.Envelope) the tool or the host
// answered with.
func (p *Plugin) Call(t testing.TB, env Env, tool string, in, out any) error {
	t.Helper()
	args := marshalArgs(t, tool, in)
	cfg := filepath.Join(t.TempDir(), "plugboard.json")
	b, err := json.MarshalIndent(p.config(env), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, err := p.run("", "call", tool, string(args), "--config", cfg, "--data", p.data, "--progress=false")
	var exit *exec.ExitError
	switch {
	case err == nil:
		return decodeInto(t, tool, stdout, out)
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		var env abi.Envelope
		if json.Unmarshal(stdout, &env) == nil && env.Code != "" {
			return &env
		}
	}
	t.Fatalf("sdktest: %v", err)
	return nil
}

// settings is one plugin's entry under plugins.settings.
type settings struct {
	Config       map[string]string `json:"config,omitempty"`
	AllowedHosts []string          `json:"allowed_hosts,omitempty"`
	AllowPrivate bool              `json:"allow_private,omitempty"`
	AllowedPaths []allowedPath     `json:"allowed_paths,omitempty"`
}

// allowedPath is one entry of a plugin's allowed_paths.
type allowedPath struct {
	Path     string `json:"path"`
	Mount    string `json:"mount"`
	Writable bool   `json:"writable"`
}

// config is the configuration file of a call: this plugin's folder alone,
// and env as its settings.
func (p *Plugin) config(env Env) map[string]any {
	plugins := map[string]any{"dirs": []string{p.plugins}}
	if !env.empty() {
		s := settings{Config: env.Config}
		if env.Server != nil {
			s.AllowedHosts = []string{env.Server.Listener.Addr().String()}
			s.AllowPrivate = true
		}
		for guest, host := range env.Dirs {
			abs, err := filepath.Abs(host)
			if err != nil {
				abs = host
			}
			s.AllowedPaths = append(s.AllowedPaths, allowedPath{Path: abs, Mount: guest, Writable: true})
		}
		sort.Slice(s.AllowedPaths, func(i, j int) bool { return s.AllowedPaths[i].Mount < s.AllowedPaths[j].Mount })
		plugins["settings"] = map[string]settings{p.Name: s}
	}
	return map[string]any{"plugins": plugins}
}

// run runs plugboard with args in dir ("": the current directory) and
// returns its stdout; the error carries stderr. PLUGBOARD_* variables (a
// configuration file, a data directory, an attempt) are not passed on.
func (p *Plugin) run(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command(p.bin, args...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PLUGBOARD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), &runError{cmd: append([]string{p.bin}, args...), err: err, stdout: stdout.String(), stderr: stderr.String()}
	}
	return stdout.Bytes(), nil
}

type runError struct {
	cmd            []string
	err            error
	stdout, stderr string
}

func (e *runError) Error() string {
	return fmt.Sprintf("%s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(e.cmd, " "), e.err, e.stdout, e.stderr)
}

func (e *runError) Unwrap() error { return e.err }

func marshalArgs(t testing.TB, tool string, in any) []byte {
	t.Helper()
	if in == nil {
		return []byte("{}")
	}
	args, err := json.Marshal(in)
	if err != nil {
		t.Fatalf("sdktest: the arguments of %s do not encode: %v", tool, err)
	}
	return args
}

// decodeInto decodes a result into out.
func decodeInto(t testing.TB, tool string, result []byte, out any) error {
	t.Helper()
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(result, out); err != nil {
		t.Fatalf("sdktest: the result of %s does not decode into %T: %v\n%s", tool, out, err, result)
	}
	return nil
}
