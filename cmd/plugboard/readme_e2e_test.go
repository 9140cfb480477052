package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// TestREADMEShellBlocks runs every sh block of README.md and the guides
// (docFiles) that no marker sets aside (see readmeBlocks), in docFiles
// order, each in its own bash (-euo pipefail; a continued block in the
// shell of the block before it), as a reader would run them in a checkout
// after `make build`; subtests and failures name a block FILE:LINE:
//
//   - the working directory is a copy of the checkout (every file a
//     symbolic link, real directories) whose bin/plugboard and
//     dist/plugins/*.wasm are the binary and first-party plugins the tests
//     build, newer than their sources, so `make build` has nothing to do;
//     bin/ is on PATH, so `plugboard` is that binary too;
//   - HOME, TMPDIR and the default data directory are the test's own, no
//     PLUGBOARD_* variable is set, and git has an identity;
//   - /abs/path/ is a directory holding plugboard (that checkout), myapp (a
//     git repository with one commit) and board; 127.0.0.1:8080 is a free
//     port; my.wasm (in the checkout) is the echo plugin.
//
// Some lines are not run as they are written, because a reader would not
// run them that way either:
//
//   - `bin/plugboard serve` (or `plugboard serve`) serves until stopped: over
//     stdio the test sends initialize and tools/list and closes stdin once
//     the tools arrive; with --http it waits for /healthz to answer ok, then
//     sends SIGTERM; either way the server must exit 0;
//   - a command whose comment starts with an error code (abi.Codes) must
//     exit 1 printing an envelope with that code;
//   - make runs only `make build` (and fails if it would build anything).
//
// A block shown with its output right below it (a json block, no blank
// line between) must print that JSON: equal, or, where the README elides
// values with "…", of the same shape.
func TestREADMEShellBlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and the plugins and runs the README's commands")
	}
	root := buildtest.Root(t)
	blocks := shellBlocks(t, root)
	env := newReadmeEnv(t, root)

	codes := map[string]bool{}
	for _, c := range abi.Codes() {
		codes[c.Code] = true
	}
	for i := 0; i < len(blocks); i++ {
		bl := blocks[i]
		if !bl.runs() {
			t.Logf("%s: not run here (%s: %s)", bl.where(), bl.marker.kind, bl.marker.text)
			continue
		}
		unit := []*readmeBlock{bl}
		for i+1 < len(blocks) && blocks[i+1].marker.kind == "continues" {
			i++
			unit = append(unit, blocks[i])
		}
		t.Run(bl.where(), func(t *testing.T) {
			env.run(t, unit, codes)
		})
	}
}

// readmeFixtures set up what a fixture block needs and return the
// variables the block gets.
var readmeFixtures = map[string]func(t *testing.T, e *readmeEnv) []string{
	// agents-http: `plugboard serve --http` on the README's address with an
	// agents file naming sup, orch and worker1 (as in "Agents, roles and
	// permissions"), stopped when the block ends; $WORKER1_TOKEN is
	// worker1's token.
	"agents-http": func(t *testing.T, e *readmeEnv) []string {
		tokens := map[string]string{}
		for _, id := range []string{"sup", "orch", "worker1"} {
			b := make([]byte, 32)
			_, _ = rand.Read(b)
			tokens[id] = hex.EncodeToString(b)
		}
		agents := fmt.Sprintf(`{"agents": [
  {"id": "sup", "type": "SUPERVISOR", "token": %q},
  {"id": "orch", "type": "ORCHESTRATOR", "supervisor": "sup", "token": %q},
  {"id": "worker1", "type": "WORKER", "supervisor": "orch", "token": %q}
]}`, tokens["sup"], tokens["orch"], tokens["worker1"])
		file := filepath.Join(e.tmp, "agents.json")
		if err := os.WriteFile(file, []byte(agents), 0o600); err != nil {
			t.Fatal(err)
		}
		s := clitest.LaunchHTTP(t, e.env, []string{"serve", "--http", e.addr, "--agents", file,
			"--plugins", filepath.Join(e.checkout, "dist", "plugins"), "--data", filepath.Join(e.abs, "board")})
		if s.Addr != e.addr {
			t.Fatalf("the server serves %s, not %s", s.Addr, e.addr)
		}
		return []string{"WORKER1_TOKEN=" + tokens["worker1"]}
	},
}

// readmeEnv is where the README's blocks run.
type readmeEnv struct {
	checkout string // /abs/path/plugboard, the working directory
	abs      string // what /abs/path stands for
	tmp      string // TMPDIR
	addr     string // what 127.0.0.1:8080 stands for
	env      []string
}

// Placeholders of README.md and what the test makes of them.
const (
	readmeAbsPath = "/abs/path/"
	readmeAddr    = "127.0.0.1:8080"
)

func newReadmeEnv(t *testing.T, root string) *readmeEnv {
	t.Helper()
	bin := buildtest.Binary(t)
	plugins, _ := buildtest.Plugins(t, clitest.FirstPartyPlugins(t)...)

	base := t.TempDir()
	e := &readmeEnv{abs: filepath.Join(base, "abs"), tmp: filepath.Join(base, "tmp"), addr: freeAddr(t)}
	e.checkout = filepath.Join(e.abs, "plugboard")
	home := filepath.Join(base, "home")
	for _, d := range []string{e.checkout, e.tmp, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	linkCheckout(t, root, e.checkout)

	// bin/plugboard and dist/plugins as `make build` leaves them: newer than
	// every source, the plugins newer than the binary.
	now := time.Now()
	copyDated(t, bin, filepath.Join(e.checkout, "bin", "plugboard"), 0o755, now.Add(-2*time.Second))
	wasms, err := filepath.Glob(filepath.Join(plugins, "*.wasm"))
	if err != nil || len(wasms) == 0 {
		t.Fatalf("no plugins built: %v", err)
	}
	for _, w := range wasms {
		copyDated(t, w, filepath.Join(e.checkout, "dist", "plugins", filepath.Base(w)), 0o644, now.Add(-time.Second))
	}
	copyDated(t, filepath.Join(plugins, "echo.wasm"), filepath.Join(e.checkout, "my.wasm"), 0o644, now)
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[user]\n\tname = README reader\n\temail = reader@example.com\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "PLUGBOARD_"), k == "HOME", k == "TMPDIR", k == "XDG_DATA_HOME", k == "PATH",
			strings.HasPrefix(k, "GIT_"), k == "MAKEFLAGS", k == "MFLAGS", k == "MAKELEVEL":
			continue
		}
		e.env = append(e.env, kv)
	}
	e.env = append(e.env, "HOME="+home, "TMPDIR="+e.tmp,
		"PATH="+filepath.Join(e.checkout, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	// Go's caches and settings stay the reader's own, wherever HOME is: a
	// fresh build cache would compile the standard library for wasip1, a
	// fresh module cache download every module.
	goenv, err := exec.Command("go", "env", "-json", "GOCACHE", "GOMODCACHE", "GOPATH", "GOENV").Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	var settings map[string]string
	if err := json.Unmarshal(goenv, &settings); err != nil {
		t.Fatalf("go env: %v", err)
	}
	for k, v := range settings {
		if v != "" {
			e.env = append(e.env, k+"="+v)
		}
	}

	// /abs/path/myapp: a repository of the reader's, with a commit.
	myapp := filepath.Join(e.abs, "myapp")
	for _, args := range [][]string{{"init", "-q", "-b", "main", myapp}, {"-C", myapp, "commit", "-q", "--allow-empty", "-m", "initial"}} {
		cmd := exec.Command("git", args...)
		cmd.Env = e.env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return e
}

// linkCheckout makes dst a copy of the checkout at root that git knows of
// (tracked and untracked files, .gitignore respected): real directories,
// every file a symbolic link to the original.
func linkCheckout(t *testing.T, root, dst string) {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files in %s: %v", root, err)
	}
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		src := filepath.Join(root, f)
		if _, err := os.Lstat(src); err != nil {
			continue // deleted in the work tree
		}
		link := filepath.Join(dst, f)
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(src, link); err != nil {
			t.Fatal(err)
		}
	}
}

// copyDated copies src to dst with the given mode and modification time.
func copyDated(t *testing.T, src, dst string, mode os.FileMode, mtime time.Time) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(dst, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

// freeAddr returns a loopback address with a port free right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// readmePrelude is the start of every script: the shell options and the
// functions the rewritten lines call.
const readmePrelude = `set -euo pipefail

# make: only make build, which must have nothing to do.
make() {
	if [ "$*" != build ]; then
		echo "README test: cannot run 'make $*' in a test; mark the block (<!-- illustrative: ... -->)" >&2
		return 1
	fi
	if ! command make -q build; then
		echo "README test: make build would build something: the test's bin/ and dist/ are older than a source" >&2
		return 1
	fi
	command make build
}

# pb_fails CODE COMMAND...: COMMAND exits 1 printing an envelope with CODE.
pb_fails() {
	local code=$1 out rc=0
	shift
	out=$("$@") || rc=$?
	printf '%s\n' "$out"
	if [ "$rc" != 1 ]; then
		echo "README test: $(printf '%q ' "$@")exited $rc; the README says it fails with $code (exit status 1)" >&2
		return 1
	fi
	if ! grep -q "\"code\": *\"$code\"" <<<"$out"; then
		echo "README test: $(printf '%q ' "$@")printed no envelope with code $code" >&2
		return 1
	fi
}

# pb_serve COMMAND...: a server, run until it is seen to serve, then
# stopped; it must exit 0.
pb_serve() {
	local dir rc=0
	dir=$(mktemp -d)
	case " $* " in
	*" --http "*)
		"$@" </dev/null >"$dir/out" 2>"$dir/err" &
		local pid=$! url="" i
		for i in $(seq 600); do
			url=$(sed -n 's|.*serving MCP over HTTP at http://\([^/ ]*\)/mcp.*|\1|p' "$dir/err")
			if [ -n "$url" ] || ! kill -0 "$pid" 2>/dev/null; then break; fi
			sleep 0.1
		done
		if [ -z "$url" ]; then
			echo "README test: $(printf '%q ' "$@")did not start serving:" >&2
			cat "$dir/err" >&2
			kill -KILL "$pid" 2>/dev/null || true
			return 1
		fi
		local answer
		exec 5<>"/dev/tcp/${url%:*}/${url##*:}"
		printf 'GET /healthz HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n' "$url" >&5
		answer=$(cat <&5)
		exec 5<&-
		kill -TERM "$pid"
		wait "$pid" || rc=$?
		if ! grep -q '^HTTP/1.1 200' <<<"$answer" || [ "$(tail -n 1 <<<"$answer" | tr -d '\r\n')" != ok ]; then
			echo "README test: GET /healthz on $url answered:" >&2
			printf '%s\n' "$answer" >&2
			return 1
		fi
		;;
	*)
		{
			printf '%s\n' \
				'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"readme-test","version":"0"}}}' \
				'{"jsonrpc":"2.0","method":"notifications/initialized"}' \
				'{"jsonrpc":"2.0","id":2,"method":"tools/list"}'
			for i in $(seq 600); do
				if grep -q '^{"jsonrpc":"2.0","id":2,"result":{.*"tools":\[{"' "$dir/out" 2>/dev/null; then break; fi
				sleep 0.1
			done
		} | "$@" >"$dir/out" 2>"$dir/err" || rc=$?
		if ! grep -q '^{"jsonrpc":"2.0","id":2,"result":{.*"tools":\[{"' "$dir/out"; then
			echo "README test: $(printf '%q ' "$@")listed no tools over stdio; stdout and stderr:" >&2
			cat "$dir/out" "$dir/err" >&2
			return 1
		fi
		;;
	esac
	if [ "$rc" != 0 ]; then
		echo "README test: $(printf '%q ' "$@")exited $rc when stopped:" >&2
		cat "$dir/err" >&2
		return 1
	fi
}
`

// readmeBlockStart separates the blocks' stdout within a unit.
const readmeBlockStart = "\x1fblock "

// run runs one block, with the blocks that continue it, and checks them.
func (e *readmeEnv) run(t *testing.T, unit []*readmeBlock, codes map[string]bool) {
	env := e.env
	if f := unit[0].marker.fixture; f != "" {
		env = append(slices.Clone(env), readmeFixtures[f](t, e)...)
	}
	var script strings.Builder
	script.WriteString(readmePrelude)
	for _, bl := range unit {
		fmt.Fprintf(&script, "\nprintf '%s%s\\n'\necho '== %s' >&2\n", readmeBlockStart, bl.where(), bl.where())
		body, err := e.rewrite(bl.body, codes)
		if err != nil {
			t.Fatalf("%s: %v; mark the block (<!-- illustrative: REASON -->) or make it runnable", bl.where(), err)
		}
		script.WriteString(body)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Dir = e.checkout
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	// Whatever the script left behind (a server it started) goes with it.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	t.Logf("%s in %s", blockLines(unit), time.Since(start).Round(100*time.Millisecond))
	if err != nil {
		t.Fatalf("%s failed: %v\nscript:\n%s\nstdout:\n%s\nstderr:\n%s", blockLines(unit), err,
			strings.TrimPrefix(script.String(), readmePrelude), stdout.String(), lastLines(stderr.String(), 60))
	}

	outputs := strings.Split(stdout.String(), readmeBlockStart)[1:]
	for i, bl := range unit {
		if bl.output == nil || bl.output.lang != "json" {
			continue
		}
		got := outputs[i]
		_, got, _ = strings.Cut(got, "\n") // the block's FILE:LINE
		if problem := compareJSONOutput(got, bl.output.body); problem != "" {
			t.Errorf("%s prints other than the JSON of %s: %s\nprinted:\n%s\nREADME:\n%s",
				bl.where(), bl.output.where(), problem, got, bl.output.body)
		}
	}
}

func blockLines(unit []*readmeBlock) string {
	var s []string
	for _, bl := range unit {
		s = append(s, bl.where())
	}
	return strings.Join(s, " + ")
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("[%d lines before]", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// rewrite substitutes the placeholders of a block and rewrites the lines
// the test cannot run as written (see TestREADMEShellBlocks).
func (e *readmeEnv) rewrite(body string, codes map[string]bool) (string, error) {
	body = strings.ReplaceAll(body, readmeAbsPath, e.abs+"/")
	body = strings.ReplaceAll(body, readmeAddr, e.addr)
	var out strings.Builder
	lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		logical := lines[i]
		for strings.HasSuffix(logical, `\`) && i+1 < len(lines) {
			i++
			logical = strings.TrimRight(strings.TrimSuffix(logical, `\`), " \t") + " " + strings.TrimSpace(lines[i])
		}
		code, comment, err := splitComment(logical)
		if err != nil {
			return "", err
		}
		words := strings.Fields(code)
		wrap := ""
		switch {
		case len(words) >= 2 && (words[0] == "bin/plugboard" || words[0] == "plugboard") && words[1] == "serve":
			wrap = "pb_serve"
		case codes[firstWord(comment)]:
			wrap = "pb_fails " + firstWord(comment)
		}
		if wrap == "" {
			out.WriteString(logical + "\n")
			continue
		}
		if strings.ContainsAny(unquoted(code), "|&;<>") {
			return "", fmt.Errorf("%q is not a simple command, so it cannot run as %s", strings.TrimSpace(code), wrap)
		}
		out.WriteString(wrap + " " + strings.TrimSpace(code) + "\n")
	}
	return out.String(), nil
}

// splitComment splits a shell line at its comment: a # at the start or
// after a blank, outside quotes.
func splitComment(line string) (code, comment string, err error) {
	var quote rune
	for i, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return line[:i], strings.TrimSpace(line[i+1:]), nil
		}
	}
	if quote != 0 {
		return "", "", fmt.Errorf("unbalanced quote in %q", line)
	}
	return line, "", nil
}

// unquoted is s without its quoted parts.
func unquoted(s string) string {
	var b strings.Builder
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// firstWord is the leading run of letters, digits and underscores of s.
func firstWord(s string) string {
	end := strings.IndexFunc(s, func(r rune) bool {
		return !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	})
	if end < 0 {
		return s
	}
	return s[:end]
}

// compareJSONOutput compares what a block printed with the JSON the README
// shows: equal values, or, when the README elides values with "…", the
// same shape (the same object keys, the same kinds of value).
func compareJSONOutput(printed, shown string) string {
	var got, want any
	if err := json.Unmarshal([]byte(printed), &got); err != nil {
		return "what it printed is not one JSON value: " + err.Error()
	}
	if err := json.Unmarshal([]byte(shown), &want); err != nil {
		return "the README's JSON does not parse: " + err.Error()
	}
	if !strings.Contains(shown, "…") {
		if !reflect.DeepEqual(got, want) {
			return "the values differ"
		}
		return ""
	}
	return sameShape("", got, want)
}

// sameShape compares the kinds of two JSON values and the keys of objects,
// recursively; arrays by their first element.
func sameShape(path string, got, want any) string {
	if reflect.TypeOf(got) != reflect.TypeOf(want) {
		return fmt.Sprintf("%s is %s, the README shows %s", pathOrTop(path), jsonKind(got), jsonKind(want))
	}
	switch w := want.(type) {
	case map[string]any:
		g := got.(map[string]any)
		for k := range w {
			if _, ok := g[k]; !ok {
				return fmt.Sprintf("%s has no %q, which the README shows", pathOrTop(path), k)
			}
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				return fmt.Sprintf("%s has %q, which the README does not show", pathOrTop(path), k)
			}
			if p := sameShape(path+"."+k, g[k], w[k]); p != "" {
				return p
			}
		}
	case []any:
		g := got.([]any)
		if len(w) > 0 && len(g) > 0 {
			return sameShape(path+"[0]", g[0], w[0])
		}
	}
	return ""
}

func pathOrTop(path string) string {
	if path == "" {
		return "the output"
	}
	return strings.TrimPrefix(path, ".")
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%T", v)
}

// TestReadmeRewrite pins how the test reads and rewrites README lines and
// compares outputs, without running anything.
func TestReadmeRewrite(t *testing.T) {
	codes := map[string]bool{"plugin_timeout": true, "missing_required": true}
	e := &readmeEnv{abs: "/T/abs", addr: "127.0.0.1:4321"}
	got, err := e.rewrite(`x=$(mktemp -d)   # a comment
bin/plugboard serve --http 127.0.0.1:8080 --data /abs/path/board \
  --plugins dist/plugins    # serves
plugboard serve
bin/plugboard call spin '{"a":"# not a comment"}'   # plugin_timeout (exit status 1)
bin/plugboard call echo '{}'   # prints missing_required
make build
`, codes)
	if err != nil {
		t.Fatal(err)
	}
	want := `x=$(mktemp -d)   # a comment
pb_serve bin/plugboard serve --http 127.0.0.1:4321 --data /T/abs/board --plugins dist/plugins
pb_serve plugboard serve
pb_fails plugin_timeout bin/plugboard call spin '{"a":"# not a comment"}'
bin/plugboard call echo '{}'   # prints missing_required
make build
`
	if got != want {
		t.Errorf("rewrite:\n%s\nwant:\n%s", got, want)
	}
	for _, bad := range []string{"bin/plugboard serve | tee log", "bin/plugboard call x > out   # plugin_timeout", "echo 'open"} {
		if _, err := e.rewrite(bad+"\n", codes); err == nil {
			t.Errorf("rewrite accepted %q", bad)
		}
	}

	for _, c := range []struct {
		printed, shown string
		ok             bool
	}{
		{`{"a": 1, "b": [1]}`, `{"b":[1],"a":1}`, true},
		{`{"a": 2}`, `{"a": 1}`, false},
		{`{"a": "x", "t": "2026"}`, `{"a": "…", "t": "2020"}`, true},
		{`{"a": "x", "extra": 1}`, `{"a": "…"}`, false},
		{`{"a": null}`, `{"a": "…"}`, false},
		{`{"d": {"k": [{"x": 1}]}}`, `{"d": {"k": [{"x": 0}]}, "e": "…"}`, false},
		{`not json`, `{}`, false},
	} {
		if problem := compareJSONOutput(c.printed, c.shown); (problem == "") != c.ok {
			t.Errorf("compareJSONOutput(%s, %s) = %q, want ok %v", c.printed, c.shown, problem, c.ok)
		}
	}
}
