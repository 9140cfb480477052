package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestPluginSettings: a plugins.settings entry with every field is read,
// its paths resolved from the file's directory and its values from the
// environment and secret files.
func TestPluginSettings(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "work"), 0o755)
	os.MkdirAll(filepath.Join(dir, "cache"), 0o755)
	os.WriteFile(filepath.Join(dir, "gh-token"), []byte("ghp_file_secret\n"), 0o600)
	t.Setenv("PB_TEST_API_KEY", "env-secret-value")
	file := filepath.Join(dir, "pb.json")
	c, err := Parse(file, []byte(`{"plugins": {"settings": {
  "github": {
    "source": "oci://ghcr.io/org/github-plugin:1.2.0",
    "config": {"api_url": "https://api.github.com", "token": {"secret_file": "gh-token"}, "key": "${PB_TEST_API_KEY}"},
    "allowed_hosts": ["api.github.com", "*.GitHubusercontent.com:443", "10.0.0.1", "[::1]:8080"],
    "allow_private": true,
    "allowed_paths": [{"path": "work", "mount": "/work", "writable": true}, {"path": "cache"}],
    "memory_limit_mib": 64, "call_timeout": "45s", "max_instances": 2, "stateful": true,
    "max_var_bytes": "256KiB", "max_vars": 100, "max_log_bytes": 65536, "max_notification_bytes": "1MiB",
    "max_http_requests": 32, "max_http_connections": 4, "max_http_header_bytes": "16KiB",
    "prefix": "gh_", "skip": ["delete_repo"], "rename": {"create_issue": "new_issue"}
  },
  "echo": {"source": "plugins/echo.wasm"},
  "textdiff": {}
}}}`))
	if err != nil {
		t.Fatal(err)
	}
	gh := c.Plugins.Settings["github"]
	if gh.Source != "oci://ghcr.io/org/github-plugin:1.2.0" || c.Plugins.Settings["echo"].Source != filepath.Join(dir, "plugins", "echo.wasm") {
		t.Errorf("sources: %q, %q", gh.Source, c.Plugins.Settings["echo"].Source)
	}
	for key, want := range map[string]struct {
		value  string
		secret bool
	}{"api_url": {"https://api.github.com", false}, "token": {"ghp_file_secret", true}, "key": {"env-secret-value", true}} {
		v := gh.Config[key]
		if v.Value() != want.value || v.Secret() != want.secret {
			t.Errorf("config.%s = %q secret %v, want %q secret %v", key, v.Value(), v.Secret(), want.value, want.secret)
		}
	}
	if !slices.Equal(gh.AllowedHosts, []string{"api.github.com", "*.githubusercontent.com:443", "10.0.0.1", "[::1]:8080"}) {
		t.Errorf("allowed_hosts %v", gh.AllowedHosts)
	}
	if want := []AllowedPath{{Path: filepath.Join(dir, "work"), Mount: "/work", Writable: true},
		{Path: filepath.Join(dir, "cache"), Mount: filepath.ToSlash(filepath.Join(dir, "cache"))}}; !slices.Equal(gh.AllowedPaths, want) {
		t.Errorf("allowed_paths %v, want %v", gh.AllowedPaths, want)
	}
	if *gh.MemoryLimitMiB != 64 || gh.CallTimeout.D() != 45*time.Second || *gh.MaxInstances != 2 || !gh.Stateful || !gh.AllowPrivate ||
		gh.Prefix != "gh_" || !slices.Equal(gh.Skip, []string{"delete_repo"}) || gh.Rename["create_issue"] != "new_issue" {
		t.Errorf("settings %+v", gh)
	}
	if *gh.MaxVarBytes != 256<<10 || *gh.MaxVars != 100 || *gh.MaxLogBytes != 65536 || *gh.MaxNotificationBytes != 1<<20 ||
		*gh.MaxHTTPRequests != 32 || *gh.MaxHTTPConnections != 4 || *gh.MaxHTTPHeaderBytes != 16<<10 {
		t.Errorf("caps %+v", gh)
	}
	if got := c.Plugins.Sources(); len(got) != 2 || got["github"] == "" {
		t.Errorf("Sources() = %v", got)
	}
	if c.LockFile() != filepath.Join(dir, "plugboard.lock") {
		t.Errorf("LockFile() = %s", c.LockFile())
	}

	// Secrets never show: not in the summary, not printed, not in JSON,
	// not in a log line.
	summary := c.Summary()
	var logged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("settings", "github", gh, "token", gh.Config["token"])
	js, _ := json.Marshal(gh)
	for what, text := range map[string]string{"Summary": summary, "%v": fmt.Sprintf("%v", gh), "%+v": fmt.Sprintf("%+v", gh),
		"%#v": fmt.Sprintf("%#v", gh), "JSON": string(js), "log": logged.String()} {
		for _, secret := range []string{"ghp_file_secret", "env-secret-value"} {
			if strings.Contains(text, secret) {
				t.Errorf("%s shows a secret: %s", what, text)
			}
		}
	}
	if !strings.Contains(string(js), `"token":"***"`) || !strings.Contains(string(js), `"api_url":"https://api.github.com"`) {
		t.Errorf("JSON: %s", js)
	}
	want := "plugins.settings (echo: file source; github: oci source, config (3 values, 2 secrets), 4 allowed hosts, allow_private, " +
		"2 allowed paths, memory_limit_mib, call_timeout, max_instances, stateful, max_var_bytes, max_vars, max_log_bytes, " +
		"max_notification_bytes, max_http_requests, max_http_connections, max_http_header_bytes, prefix gh_, skip 1, rename 1; textdiff: defaults)"
	if !strings.Contains(summary, want) {
		t.Errorf("summary\n  %s\nlacks\n  %s", summary, want)
	}
}

// TestPluginSettingsErrors: every mistake in plugins.settings is placed at
// its field, and none shows a secret.
func TestPluginSettingsErrors(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "afile"), []byte("x"), 0o644)
	t.Setenv("PB_TEST_SET", "the-env-secret")
	for body, want := range map[string]string{
		`{"plugins": {"settings": {"x": {"sorce": "a.wasm"}}}}`:                   `pb.json:1:33: plugins.settings.x.sorce: unknown field "sorce" (did you mean "source"?)`,
		`{"plugins": {"settings": {"x y": {}}}}`:                                  `pb.json:1:34: plugins.settings.x y: plugin name "x y"`,
		`{"plugins": {"settings": {"x": {"source": "http://example.com/x"}}}}`:    `pb.json:1:43: plugins.settings.x.source: "http://example.com/x" is plain http`,
		`{"plugins": {"settings": {"x": {"source": "oci://ghcr.io/a/b"}}}}`:       `pb.json:1:43: plugins.settings.x.source: "oci://ghcr.io/a/b" is not an OCI reference`,
		`{"plugins": {"settings": {"x": {"config": {"k": "${PB_TEST_UNSET}"}}}}}`: `pb.json:1:49: plugins.settings.x.config.k: environment variable PB_TEST_UNSET is not set`,
		`{"plugins": {"settings": {"x": {"config": {"k": "a${PB_TEST_SET}"}}}}}`:  `pb.json:1:49: plugins.settings.x.config.k: "${VAR}" must be the whole value`,
		`{"plugins": {"settings": {"x": {"config": {"k": 5}}}}}`:                  `pb.json:1:49: plugins.settings.x.config.k: want a string, "${VAR}"`,
		`{"plugins": {"settings": {"x": {"config": {"k": {"secret": "f"}}}}}}`:    `pb.json:1:49: plugins.settings.x.config.k: want {"secret_file": "PATH"}`,
		`{"plugins": {"settings": {"x": {"config": {"k": {"secret_file": "nope"}}}}}}`: `pb.json:1:65: plugins.settings.x.config.k.secret_file: open ` +
			filepath.Join(dir, "nope") + `: no such file or directory`,
		`{"plugins": {"settings": {"x": {"allowed_hosts": ["*"]}}}}`:                                                         `pb.json:1:51: plugins.settings.x.allowed_hosts[0]: "*" would allow every host`,
		`{"plugins": {"settings": {"x": {"allowed_hosts": ["*.com"]}}}}`:                                                     `pb.json:1:51: plugins.settings.x.allowed_hosts[0]: host "*.com": *.com would match a whole top-level domain`,
		`{"plugins": {"settings": {"x": {"allowed_hosts": ["a.*.com"]}}}}`:                                                   `pb.json:1:51: plugins.settings.x.allowed_hosts[0]: host "a.*.com": a * only as the whole first label`,
		`{"plugins": {"settings": {"x": {"allowed_hosts": ["api.example.com:99999"]}}}}`:                                     `pb.json:1:51: plugins.settings.x.allowed_hosts[0]: host "api.example.com:99999": port "99999" is not 1 to 65535`,
		`{"plugins": {"settings": {"x": {"allowed_hosts": ["https://x.com"]}}}}`:                                             `pb.json:1:51: plugins.settings.x.allowed_hosts[0]: host "https://x.com"`,
		`{"plugins": {"settings": {"x": {"allowed_paths": [{"path": "missing"}]}}}}`:                                         `pb.json:1:60: plugins.settings.x.allowed_paths[0].path: stat ` + filepath.Join(dir, "missing") + `: no such file or directory`,
		`{"plugins": {"settings": {"x": {"allowed_paths": [{"path": "afile"}]}}}}`:                                           `pb.json:1:60: plugins.settings.x.allowed_paths[0].path: ` + filepath.Join(dir, "afile") + ` is not a directory`,
		`{"plugins": {"settings": {"x": {"allowed_paths": [{"path": ".", "mount": "data"}]}}}}`:                              `pb.json:1:74: plugins.settings.x.allowed_paths[0].mount: guest path "data" is not absolute`,
		`{"plugins": {"settings": {"x": {"allowed_paths": [{"path": ".", "mount": "/d"}, {"path": ".", "mount": "/d/"}]}}}}`: `pb.json:1:104: plugins.settings.x.allowed_paths[1].mount: /d is mounted by allowed_paths[0] already`,
		`{"plugins": {"settings": {"x": {"allowed_paths": [{"mount": "/d"}]}}}}`:                                             `pb.json:1:51: plugins.settings.x.allowed_paths[0].path: is empty`,
		`{"plugins": {"settings": {"x": {"memory_limit_mib": 5000}}}}`:                                                       `pb.json:1:53: plugins.settings.x.memory_limit_mib: want 1 to 4096`,
		`{"plugins": {"settings": {"x": {"call_timeout": "0s"}}}}`:                                                           `pb.json:1:49: plugins.settings.x.call_timeout: must be positive`,
		`{"plugins": {"settings": {"x": {"call_timeout": 30}}}}`:                                                             `pb.json:1:49: plugins.settings.x.call_timeout: want a duration string`,
		`{"plugins": {"settings": {"x": {"max_instances": 0}}}}`:                                                             `pb.json:1:50: plugins.settings.x.max_instances: must be at least 1`,
		`{"plugins": {"settings": {"x": {"stateful": "yes"}}}}`:                                                              `pb.json:1:45: plugins.settings.x.stateful: want true or false, got a string`,
		`{"plugins": {"settings": {"x": {"max_var_bytes": 0}}}}`:                                                             `pb.json:1:50: plugins.settings.x.max_var_bytes: want 1 to 1GiB (a size such as 1048576 or 512KiB), got 0`,
		`{"plugins": {"settings": {"x": {"max_var_bytes": "2GiB"}}}}`:                                                        `pb.json:1:50: plugins.settings.x.max_var_bytes: want 1 to 1GiB`,
		`{"plugins": {"settings": {"x": {"max_var_bytes": "lots"}}}}`:                                                        `pb.json:1:50: plugins.settings.x.max_var_bytes: want a size such as 1048576, 512KiB or 64MiB, got "lots"`,
		`{"plugins": {"settings": {"x": {"max_vars": 0}}}}`:                                                                  `pb.json:1:45: plugins.settings.x.max_vars: want 1 to 1048576, got 0`,
		`{"plugins": {"settings": {"x": {"max_log_bytes": -5}}}}`:                                                            `pb.json:1:50: plugins.settings.x.max_log_bytes: want a size`,
		`{"plugins": {"settings": {"x": {"max_notification_bytes": 0}}}}`:                                                    `pb.json:1:59: plugins.settings.x.max_notification_bytes: want 1 to 1GiB`,
		`{"plugins": {"settings": {"x": {"max_http_requests": 0}}}}`:                                                         `pb.json:1:54: plugins.settings.x.max_http_requests: want 1 to 1048576, got 0`,
		`{"plugins": {"settings": {"x": {"max_http_connections": 100000}}}}`:                                                 `pb.json:1:57: plugins.settings.x.max_http_connections: want 1 to 65536, got 100000`,
		`{"plugins": {"settings": {"x": {"max_http_connections": "4"}}}}`:                                                    `pb.json:1:57: plugins.settings.x.max_http_connections: want a number, got a string`,
		`{"plugins": {"settings": {"x": {"max_http_header_bytes": "128MiB"}}}}`:                                              `pb.json:1:58: plugins.settings.x.max_http_header_bytes: want 1 to 64MiB`,
		`{"plugins": {"settings": {"x": {"prefix": "gh:"}}}}`:                                                                `pb.json:1:43: plugins.settings.x.prefix: prefix "gh:"`,
		`{"plugins": {"settings": {"x": {"skip": ["a b"]}}}}`:                                                                `pb.json:1:42: plugins.settings.x.skip[0]: tool name "a b"`,
		`{"plugins": {"settings": {"x": {"rename": {"a": "b c"}}}}}`:                                                         `pb.json:1:49: plugins.settings.x.rename.a: new name "b c"`,
		`{"plugins": {"settings": {"x": {"skip": ["a"], "rename": {"a": "b"}}}}}`:                                            `pb.json:1:64: plugins.settings.x.rename.a: tool a is also in skip`,
		`{"plugins": {"settings": {"x": {"rename": {"a": "c", "b": "c"}}}}}`:                                                 `pb.json:1:59: plugins.settings.x.rename.b: c is also the new name of a`,
	} {
		_, err := Parse(filepath.Join(dir, "pb.json"), []byte(body))
		if err == nil {
			t.Errorf("%s: accepted", body)
			continue
		}
		got := strings.TrimPrefix(err.Error(), dir+string(filepath.Separator))
		if !strings.HasPrefix(got, want) {
			t.Errorf("%s:\n  %v\nwant it to start\n  %s", body, got, want)
		}
		if strings.Contains(got, "the-env-secret") {
			t.Errorf("%s: the error shows a secret: %v", body, got)
		}
	}
}

func TestHostPatterns(t *testing.T) {
	for _, ok := range []string{"example.com", "API.Example.com", "*.example.com", "example.com:8443", "*.example.com:443",
		"localhost", "127.0.0.1", "127.0.0.1:8080", "::1", "[::1]", "[2001:db8::1]:443"} {
		if _, err := checkHostPattern(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"*", "*:443", "*.com", "ex*.com", "-a.com", "a..com", "example.com:0", "example.com:http",
		"http://example.com", "example.com/path", "[example.com]:80", "1::2::3", ""} {
		if _, err := checkHostPattern(bad); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

// TestPluginSettingsTools: plugins.settings.NAME.tools, the functions of a
// plain Extism module served as tools, is read whole, and config check's
// summary names the tools.
func TestPluginSettingsTools(t *testing.T) {
	c, err := Parse(filepath.Join(t.TempDir(), "pb.json"), []byte(`{"plugins": {"settings": {"plainfn": {"tools": [
  {"name": "count_vowels", "description": "Counts the vowels of a text.", "input_field": "text", "output": "json",
   "output_schema": {"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]},
   "annotations": {"read_only": true, "idempotent": true, "open_world": false}},
  {"name": "reversed", "export": "reverse", "title": "Reverse", "description": "Reverses a text.",
   "input_schema": {"type": "object", "properties": {"text": {"type": "string", "maxLength": 100}}, "required": ["text"]},
   "input_field": "text"},
  {"name": "echo", "description": "Echoes its arguments.", "input_schema": {"type": "object"}, "output": "text"}
]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	tools := c.Plugins.Settings["plainfn"].Tools
	if len(tools) != 3 {
		t.Fatalf("tools %+v", tools)
	}
	cv, rev, echo := tools[0], tools[1], tools[2]
	if cv.Name != "count_vowels" || cv.Export != "" || cv.InputField != "text" || cv.Output != OutputJSON || len(cv.InputSchema) != 0 ||
		!strings.Contains(string(cv.OutputSchema), `"count"`) || cv.Annotations == nil || !cv.Annotations.ReadOnly ||
		!cv.Annotations.Idempotent || cv.Annotations.OpenWorld == nil || *cv.Annotations.OpenWorld || cv.Annotations.Destructive != nil {
		t.Errorf("count_vowels %+v", cv)
	}
	if rev.Export != "reverse" || rev.Title != "Reverse" || !strings.Contains(string(rev.InputSchema), `"maxLength": 100`) {
		t.Errorf("reversed %+v", rev)
	}
	if echo.Output != OutputText || echo.InputField != "" {
		t.Errorf("echo %+v", echo)
	}
	if want := "plugins.settings (plainfn: 3 tools (count_vowels, reversed, echo))"; !strings.Contains(c.Summary(), want) {
		t.Errorf("summary %s\nlacks %s", c.Summary(), want)
	}
}

// TestPluginSettingsToolsErrors: every mistake in a tools entry is placed
// at its field.
func TestPluginSettingsToolsErrors(t *testing.T) {
	dir := t.TempDir()
	const head = `{"plugins": {"settings": {"p": {"tools": [`
	for body, want := range map[string]string{
		`{"name": "a b", "description": "d", "input_field": "t"}`:                                                                                                `pb.json:1:52: plugins.settings.p.tools[0].name: tool name "a b"`,
		`{"name": "a", "description": "d", "input_field": "t"}, {"name": "a", "description": "d", "input_field": "t"}`:                                           `pb.json:1:107: plugins.settings.p.tools[1].name: a is also the name of tools[0]`,
		`{"name": "a", "export": "b c", "description": "d", "input_field": "t"}`:                                                                                 `pb.json:1:67: plugins.settings.p.tools[0].export: export "b c"`,
		`{"name": "a", "description": " ", "input_field": "t"}`:                                                                                                  `pb.json:1:72: plugins.settings.p.tools[0].description: is empty`,
		`{"name": "a", "input_field": "t"}`:                                                                                                                      `pb.json:1:43: plugins.settings.p.tools[0].description: is empty`,
		`{"name": "a", "description": "d"}`:                                                                                                                      `pb.json:1:43: plugins.settings.p.tools[0]: give input_schema`,
		`{"name": "a", "description": "d", "input_schema": "text"}`:                                                                                              `pb.json:1:93: plugins.settings.p.tools[0].input_schema: want a JSON Schema object`,
		`{"name": "a", "description": "d", "input_schema": {"type": "string"}}`:                                                                                  `pb.json:1:93: plugins.settings.p.tools[0].input_schema: "type" is "string"; an MCP tool's schema describes a JSON object`,
		`{"name": "a", "description": "d", "input_schema": {"properties": {}}}`:                                                                                  `pb.json:1:93: plugins.settings.p.tools[0].input_schema: "type" is no type`,
		`{"name": "a", "description": "d", "input_schema": {"type": "object", "properties": {"x": {"type": "string", "pattern": "("}}}}`:                         `pb.json:1:93: plugins.settings.p.tools[0].input_schema: does not resolve`,
		`{"name": "a", "description": "d", "input_schema": {"type": "object", "required": 5}}`:                                                                   `pb.json:1:93: plugins.settings.p.tools[0].input_schema: not a JSON Schema`,
		`{"name": "a", "description": "d", "input_field": "t", "input_schema": {"type": "object"}}`:                                                              `pb.json:1:92: plugins.settings.p.tools[0].input_field: "t" is not a property of input_schema`,
		`{"name": "a", "description": "d", "input_field": "t", "input_schema": {"type": "object", "properties": {"t": {"type": "integer"}}, "required": ["t"]}}`: `pb.json:1:92: plugins.settings.p.tools[0].input_field: input_schema declares "t" as "integer"`,
		`{"name": "a", "description": "d", "input_field": "t", "input_schema": {"type": "object", "properties": {"t": {"type": "string"}}}}`:                     `pb.json:1:92: plugins.settings.p.tools[0].input_field: "t" is not in input_schema's required`,
		`{"name": "a", "description": "d", "input_field": "t", "output": "xml"}`:                                                                                 `pb.json:1:107: plugins.settings.p.tools[0].output: unknown output "xml"`,
		`{"name": "a", "description": "d", "input_field": "t", "output_schema": {"type": "object"}}`:                                                             `pb.json:1:114: plugins.settings.p.tools[0].output_schema: describes JSON output; set output to "json"`,
		`{"name": "a", "description": "d", "input_field": "t", "output": "json", "output_schema": {"type": "array"}}`:                                            `pb.json:1:132: plugins.settings.p.tools[0].output_schema: "type" is "array"`,
		`{"name": "a", "description": "d", "input_field": "t", "annotations": {"readOnlyHint": true}}`:                                                           `pb.json:1:113: plugins.settings.p.tools[0].annotations.readOnlyHint: unknown field "readOnlyHint"`,
		`{"name": "a", "description": "d", "input_field": "t", "input": "text"}`:                                                                                 `pb.json:1:97: plugins.settings.p.tools[0].input: unknown field "input"`,
	} {
		_, err := Parse(filepath.Join(dir, "pb.json"), []byte(head+body+`]}}}}`))
		if err == nil {
			t.Errorf("%s: accepted", body)
			continue
		}
		got := strings.TrimPrefix(err.Error(), dir+string(filepath.Separator))
		if !strings.HasPrefix(got, want) {
			t.Errorf("%s:\n  %v\nwant it to start\n  %s", body, got, want)
		}
	}
	// The tools setting on its own is fine: whether the plugin is a plain
	// module is the module's to say, at load.
	if _, err := Parse(filepath.Join(dir, "pb.json"), []byte(head+`{"name": "a", "description": "d", "input_field": "t"}]}}}}`)); err != nil {
		t.Errorf("minimal entry: %v", err)
	}
}
