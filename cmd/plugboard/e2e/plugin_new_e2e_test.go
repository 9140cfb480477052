package e2e

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// TestPluginNew follows the README's `plugboard plugin new` block as written,
// in a checkout whose bin/plugboard is the binary under test: it scaffolds
// hello beside the checkout, whose tests pass natively and through plugboard
// (make test), which builds (make build); then the built plugin answers
// plugboard call, passes plugboard conformance --strict, and its module lists
// nothing of the host. It also checks what plugin new refuses.
func TestPluginNew(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary, scaffolds a plugin, runs go mod tidy, its tests and its build")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("the README's block runs make, which is not on PATH")
	}
	root := buildtest.Root(t)
	block := pluginNewReadmeBlock(t, root)
	bin := buildtest.Binary(t)

	// The checkout: abi, sdk-guest and go.mod linked from the repository, and
	// bin/plugboard the binary itself (not a link: plugin new finds the
	// checkout above the binary it runs as).
	work := t.TempDir()
	checkout := filepath.Join(work, "plugboard")
	if err := os.MkdirAll(filepath.Join(checkout, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"abi", "sdk-guest", "go.mod", "go.sum"} {
		if err := os.Symlink(filepath.Join(root, name), filepath.Join(checkout, name)); err != nil {
			t.Fatal(err)
		}
	}
	plugboard := filepath.Join(checkout, "bin", "plugboard")
	copyExecutable(t, bin, plugboard)

	// The reader's environment, Go's settings included (as in
	// TestREADMEOwnModule), without plugboard's variables; -v in GOFLAGS makes
	// make test show which tests ran.
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PLUGBOARD_") && !strings.HasPrefix(kv, "GOFLAGS=") {
			env = append(env, kv)
		}
	}
	env = append(env, "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -v"))

	out := newBash(t, checkout, block, env)
	hello := filepath.Join(work, "hello")
	for _, want := range []string{"created ../hello: plugin hello (module hello), tool hello_greet", "--- PASS: TestGreet ", "--- PASS: TestRuntime ",
		"built dist/hello.wasm: plugin hello 0.1.0, tools: hello_greet"} {
		if !strings.Contains(out, want) {
			t.Errorf("the README's block printed no %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "--- SKIP") || strings.Contains(out, "--- FAIL") {
		t.Errorf("the scaffold's tests did not all pass:\n%s", out)
	}

	// go.mod: sdk-guest and abi replaced by the checkout holding the binary.
	var mod struct {
		Module  struct{ Path string }
		Require []struct{ Path, Version string }
		Replace []struct{ Old, New struct{ Path string } }
	}
	if err := json.Unmarshal([]byte(ownGo(t, hello, "mod", "edit", "-json")), &mod); err != nil {
		t.Fatal(err)
	}
	if mod.Module.Path != "hello" {
		t.Errorf("module %q, want hello", mod.Module.Path)
	}
	for _, m := range []string{sdkGuestModule, abiModule} {
		if !slices.ContainsFunc(mod.Require, func(r struct{ Path, Version string }) bool { return r.Path == m }) {
			t.Errorf("go.mod does not require %s: %+v", m, mod.Require)
		}
	}
	checkReplacesCheckout(t, mod.Replace, checkout)
	// Nothing of the host in the module graph, sdktest included.
	own := strings.TrimSpace(ownGo(t, hello, "list", "-m", "-f", "{{.Path}}"))
	for _, m := range strings.Fields(ownGo(t, hello, "list", "-m", "-f", "{{.Path}}", "all")) {
		if m != own && !slices.Contains(sdkModules, m) {
			t.Errorf("the scaffold's go list -m all lists %s", m)
		}
	}

	// The build serves: a call through the pipeline, and the conformance kit.
	wasm := filepath.Join(hello, "dist", "hello.wasm")
	data := t.TempDir()
	res, stderr, err := runBin(plugboard, work, env, "call", "hello_greet", `{"name":"Ada","shout":true}`, "--plugins", filepath.Dir(wasm), "--data", data)
	var got struct{ Greeting string }
	if err != nil || json.Unmarshal([]byte(res), &got) != nil || got.Greeting != "HELLO, ADA!" {
		t.Errorf("plugboard call hello_greet: %v\nstdout:\n%s\nstderr:\n%s", err, res, stderr)
	}
	if res, stderr, err := runBin(plugboard, work, env, "conformance", "--strict", wasm); err != nil {
		t.Errorf("plugboard conformance --strict %s: %v\n%s\n%s", wasm, err, res, stderr)
	}

	// Refusals: a folder holding something, a bad name, a --replace-from that
	// is no checkout.
	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"plugin", "new", "hello"}, 1, "hello is not empty"},
		{[]string{"plugin", "new", "bad name"}, 2, `plugin name "bad name"`},
		{[]string{"plugin", "new", "-x"}, 2, ""},
		{[]string{"plugin", "new", "x", "--module", "a//b"}, 2, `module path "a//b"`},
		{[]string{"plugin", "new", "x", "--replace-from", work}, 2, "not a plugboard checkout"},
	} {
		_, stderr, err := runBin(plugboard, work, env, tc.args...)
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != tc.code || !strings.Contains(stderr, tc.err) {
			t.Errorf("plugboard %q: %v, want exit status %d saying %q\n%s", tc.args, err, tc.code, tc.err, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(work, "x")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused plugin new left %s", filepath.Join(work, "x"))
	}

	// --module and --replace-from, into an existing empty folder.
	other := filepath.Join(work, "other")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if res, stderr, err := runBin(plugboard, work, env, "plugin", "new", "my-tools", other, "--module", "example.com/me/tools", "--replace-from", root); err != nil {
		t.Fatalf("plugin new --module --replace-from: %v\n%s\n%s", err, res, stderr)
	}
	gomod, err := os.ReadFile(filepath.Join(other, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"module example.com/me/tools\n", sdkGuestModule + " => " + filepath.Join(root, "sdk-guest") + "\n"} {
		if !strings.Contains(string(gomod), want) {
			t.Errorf("go.mod lacks %q:\n%s", want, gomod)
		}
	}
	if src, _ := os.ReadFile(filepath.Join(other, "main.go")); !strings.Contains(string(src), `Name:        "my_tools_greet",`) {
		t.Errorf("main.go of my-tools does not declare my_tools_greet:\n%s", src)
	}
}

// pluginNewReadmeBlock returns the sh block of the README's "Add your own
// tool" section that runs plugin new.
func pluginNewReadmeBlock(t *testing.T, root string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	section, ok := clitest.MarkdownSection(string(b), readmeSection)
	if !ok {
		t.Fatalf("README has no section %q", readmeSection)
	}
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)\n```").FindAllStringSubmatch(section, -1) {
		if strings.Contains(m[1], "bin/plugboard plugin new ") {
			return m[1] + "\n"
		}
	}
	t.Fatalf("README %q: no sh block running bin/plugboard plugin new", readmeSection)
	return ""
}

// newBash runs script with bash in dir and returns its stdout and stderr.
func newBash(t *testing.T, dir, script string, env []string) string {
	t.Helper()
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("in %s:\n%s\n%v\n%s", dir, script, err, out)
	}
	return string(out)
}

// runBin runs the plugboard binary bin with args in dir.
func runBin(bin, dir string, env []string, args ...string) (stdout, stderr string, err error) {
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = env
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// copyExecutable links src at dst, or copies it where it cannot.
func copyExecutable(t *testing.T, src, dst string) {
	t.Helper()
	if os.Link(src, dst) == nil {
		return
	}
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
