package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
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

// The host runs foreign plugins as they are (issue 25, the host's part),
// end to end through the real binary (`serve --http --config`, the go-sdk
// client, the dashboard's API, `plugin inspect`, `audit tail`), on a corpus
// of plugins written straight against go-pdk:
//
//   - strictparse refuses any field the Extism MCP call input does not
//     declare: it answers, so the host sends a foreign plugin no "context";
//   - badschema's input schemas cannot be compiled: two tools are served
//     with their arguments left to the plugin and answer, the third (a
//     "required" string, which MCP clients refuse) is not served, and
//     serve's log, the dashboard's problems and inspect give one message
//     for each; a field the broken schema marks sensitive is still masked;
//   - needsconfig needs values the operator has not set: whether it says
//     so, panics or fails on an argument after probing an optional key,
//     the hint names plugins.settings.needsconfig.config.<key>; once the
//     configuration file sets them, serve applies them and the tools answer.
func TestForeignPluginsAsTheyAre(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and the binary")
	}
	pluginDir, wasm := foreignCorpus(t, "testdata/plugins/strictparse", "testdata/plugins/badschema", "testdata/plugins/needsconfig")
	dir := t.TempDir()
	cfg := writeJSON(t, filepath.Join(dir, "plugboard.json"), `{"plugins": {"settings": {"needsconfig": {"call_timeout": "20s"}}}}`)
	data := filepath.Join(dir, "data")
	env := cleanEnv()
	srv := clitest.LaunchHTTP(t, env, []string{"serve", "--http", "127.0.0.1:0", "--config", cfg, "--plugins", pluginDir,
		"--data", data, "--watch", "200ms"})
	s, _, err := connectHTTP(t, srv.URL, "")
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	call := func(t *testing.T, tool string, args any) *mcp.CallToolResult {
		t.Helper()
		return callSession(t, ctx, s, tool, args)
	}
	names := toolNames(t, s)
	if want := []string{"bad_required_inside", "bad_type", "lookup", "strict_echo", "summarize", "transcribe"}; !slices.Equal(names, want) {
		t.Errorf("tools/list %v, want %v", names, want)
	}

	t.Run("a strict parser gets exactly the Extism MCP call input", func(t *testing.T) {
		res := call(t, "strict_echo", map[string]any{"text": "hi"})
		if res.IsError || clitest.Text(res) != "strict: hi" {
			t.Errorf("strict_echo: %s", clitest.Text(res))
		}
		// The host still checks the arguments against a schema it compiles.
		if env := clitest.EnvelopeOf(t, call(t, "strict_echo", nil)); env.Code != abi.CodeMissingRequired {
			t.Errorf("strict_echo without text: %+v", env)
		}
	})

	// The message the host gives for each tool of badschema, from inspect.
	out, errOut, code := runPB(t, dir, env, "plugin", "inspect", "--json", wasm["badschema"])
	var in struct {
		Problems []string `json:"problems"`
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(out), &in); err != nil {
		t.Fatalf("inspect --json: %v\n%s%s", err, out, errOut)
	}

	t.Run("a schema the host cannot compile is served, unchecked, and reported at load", func(t *testing.T) {
		res := call(t, "bad_required_inside", map[string]any{"text": "hi", "secret": "s3cr3t-Vd8q"})
		if res.IsError || clitest.Text(res) != "bad_required_inside: hi" {
			t.Errorf("bad_required_inside: %s", clitest.Text(res))
		}
		// The plugin checks its own arguments: its error is the agent's.
		env := clitest.EnvelopeOf(t, call(t, "bad_required_inside", map[string]any{}))
		if env.Code != abi.CodeToolError || env.Retryable || env.Message != "text is required" {
			t.Errorf("bad_required_inside without text: %+v", env)
		}
		res = call(t, "bad_type", map[string]any{"text": "x", "count": 2})
		if res.IsError || clitest.Text(res) != "bad_type: x x2" {
			t.Errorf("bad_type: %s", clitest.Text(res))
		}

		// inspect: the unservable tool is a problem (exit 1), the others
		// warnings; serve's log and the dashboard give the same words.
		if code != 1 || len(in.Problems) != 1 || len(in.Warnings) != 2 {
			t.Fatalf("inspect: exit %d, problems %q, warnings %q", code, in.Problems, in.Warnings)
		}
		for tool, want := range map[string]string{
			"bad_required_inside": `properties.required: an array, not a schema (an object or a boolean): "required" is a keyword of the object's schema, so it belongs beside "properties", not inside it`,
			"bad_type":            `properties.count.type: "int" is not a JSON Schema type`,
		} {
			i := slices.IndexFunc(in.Warnings, func(w string) bool { return strings.Contains(w, strconv.Quote(tool)) })
			if i < 0 || !strings.Contains(in.Warnings[i], want) || !strings.Contains(in.Warnings[i], "the host does not check the tool's arguments and leaves them to the plugin") {
				t.Errorf("inspect's warning for %s: %q, want %q", tool, in.Warnings, want)
			}
		}
		if p := in.Problems[0]; !strings.Contains(p, `tool "bad_required_string" is not served`) ||
			!strings.Contains(p, `required: a string ("text"), not an array of property names`) {
			t.Errorf("inspect's problem: %q", p)
		}
		for _, msg := range append(slices.Clone(in.Warnings), in.Problems...) {
			if !strings.Contains(srv.Stderr.String(), "err="+strconv.Quote(msg)) {
				t.Errorf("serve's log lacks %q", msg)
			}
		}
		problems := dashboardProblems(t, srv.Addr)
		for _, msg := range append(slices.Clone(in.Warnings), in.Problems...) {
			if !slices.Contains(problems, msg) {
				t.Errorf("the dashboard's problems %q lack %q", problems, msg)
			}
		}
	})

	t.Run("missing configuration is the operator's, whatever the plugin says", func(t *testing.T) {
		for _, c := range []struct {
			tool    string
			args    map[string]any
			key     string
			message string // in the envelope's message
			plugin  string // the plugin's own code, in details.plugin_code
		}{
			{"transcribe", map[string]any{}, "FOO_API_KEY", "FOO_API_KEY config must be set", abi.CodePluginFailed},
			{"transcribe", map[string]any{"as_result": true}, "FOO_API_KEY", "FOO_API_KEY config must be set", abi.CodeToolError},
			{"summarize", map[string]any{}, "BAR_TOKEN", "index out of range", abi.CodePluginFailed},
		} {
			env := clitest.EnvelopeOf(t, call(t, c.tool, c.args))
			setting := "plugins.settings.needsconfig.config." + c.key
			if env.Code != abi.CodeUnavailable || env.Retryable || !strings.Contains(env.Message, c.message) ||
				!strings.Contains(env.Hint, setting) || strings.Contains(env.Hint, "authors") || strings.Contains(env.Hint, "arguments") {
				t.Errorf("%s %v: %+v, want unavailable, not retryable, naming %s for the operator", c.tool, c.args, env, setting)
			}
			if keys, _ := env.Details["missing_config"].([]any); len(keys) != 1 || keys[0] != c.key || env.Details["plugin_code"] != c.plugin {
				t.Errorf("%s %v: details %v", c.tool, c.args, env.Details)
			}
		}
		// A probe of an optional key does not take the agent's own mistake
		// from it: the plugin's code stands, the hint names the setting and
		// the way out.
		env := clitest.EnvelopeOf(t, call(t, "lookup", map[string]any{"city": "Atlantis"}))
		if env.Code != abi.CodeToolError || !strings.Contains(env.Message, "unknown city Atlantis") ||
			!strings.Contains(env.Hint, "plugins.settings.needsconfig.config.BASE_URL") || !strings.Contains(env.Hint, "call lookup again") {
			t.Errorf("lookup: %+v", env)
		}
		if res := call(t, "lookup", map[string]any{"city": "Oslo"}); res.IsError || clitest.Text(res) != "Oslo from https://default.example" {
			t.Errorf("lookup Oslo: %s", clitest.Text(res))
		}

		// The operator sets the values; serve applies them without a
		// restart.
		writeJSON(t, cfg, `{"plugins": {"settings": {"needsconfig": {"call_timeout": "20s", "config": {"FOO_API_KEY": "k3y", "BAR_TOKEN": "t0k"}}}}}`)
		deadline := time.Now().Add(20 * time.Second)
		for {
			res := call(t, "transcribe", map[string]any{})
			if !res.IsError {
				if clitest.Text(res) != "transcribed with a key of 3 bytes" {
					t.Errorf("transcribe: %s", clitest.Text(res))
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the configured key never reached the plugin: %s", clitest.Text(res))
			}
			time.Sleep(100 * time.Millisecond)
		}
		if res := call(t, "summarize", map[string]any{}); res.IsError || clitest.Text(res) != "summarized with a token starting t" {
			t.Errorf("summarize: %s", clitest.Text(res))
		}
	})

	t.Run("a sensitive field of a broken schema stays masked", func(t *testing.T) {
		// The batching writer stores rows off the call's path: wait for
		// the row of the call above.
		deadline := time.Now().Add(20 * time.Second)
		for {
			out, errOut, code := runPB(t, dir, env, "audit", "tail", "--json", "--limit", "200", "--data", data)
			if code != 0 {
				t.Fatalf("audit tail: exit %d\n%s%s", code, out, errOut)
			}
			if strings.Contains(out, "s3cr3t-Vd8q") {
				t.Fatal("the decision log holds the value of a field the schema marks x-sensitive")
			}
			found := false
			sc := bufio.NewScanner(strings.NewReader(out))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				var row struct {
					Tool  string         `json:"tool"`
					Input map[string]any `json:"input"`
				}
				if json.Unmarshal(sc.Bytes(), &row) == nil && row.Tool == "bad_required_inside" && row.Input["text"] == "hi" {
					found = true
					if row.Input["secret"] != "***" {
						t.Errorf("the sensitive field is logged as %v, want ***", row.Input["secret"])
					}
				}
			}
			if found {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no decision-log row of bad_required_inside:\n%s", out)
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
}

// dashboardProblems reads the problems of the dashboard's plugins view
// from a loopback server, as the local operator.
func dashboardProblems(t *testing.T, addr string) []string {
	t.Helper()
	res, err := http.Get("http://" + addr + "/ui/api/plugins")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var view struct {
		Result struct {
			Problems []struct {
				Path  string `json:"path"`
				Error string `json:"error"`
			} `json:"problems"`
		} `json:"result"`
	}
	if res.StatusCode != 200 || json.Unmarshal(b, &view) != nil {
		t.Fatalf("GET /ui/api/plugins: %d %s", res.StatusCode, b)
	}
	var out []string
	for _, p := range view.Result.Problems {
		out = append(out, p.Error)
	}
	return out
}

// foreignCorpus builds test plugins written against go-pdk and writes them
// to a folder as foreign plugins come: without the manifest section
// `plugboard plugin build` embeds, whose abi field (build.Describe fills in
// 1 when describe names none) would make them plugboard's. The host
// describes them, and their manifests declare no ABI.
func foreignCorpus(t *testing.T, srcs ...string) (dir string, wasm map[string]string) {
	t.Helper()
	_, built := buildtest.Plugins(t, srcs...)
	dir, wasm = t.TempDir(), map[string]string{}
	for name, path := range built {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if b, err = plugin.RemoveCustomSection(b, abi.ManifestSection); err != nil {
			t.Fatal(err)
		}
		wasm[name] = filepath.Join(dir, name+".wasm")
		if err := os.WriteFile(wasm[name], b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, wasm
}
