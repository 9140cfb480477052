package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// The plugin authors' guide's "Build a plugin by hand" section (the
// README's "Add your own tool" runs plugin new; TestPluginNew follows it),
// followed as written: its Go code block becomes main.go, its shell blocks
// run with bash, the only change being the checkout path
// (/abs/path/plugboard) and what bin/plugboard and dist/plugins name. A
// guide that drifts from what works fails here.
const (
	readmeSection     = "## Add your own tool"
	ownModuleDoc      = "docs/plugin-authors.md"
	ownModuleSection  = "## Build a plugin by hand"
	readmeCheckout    = "/abs/path/plugboard"
	sdkGuestModule    = "github.com/plugboard/plugboard/sdk-guest"
	abiModule         = "github.com/plugboard/plugboard/abi"
	ownModuleFolder   = "wordcount"
	firstPartyBuildOf = "plugin build plugins/" + ownModuleFolder
)

// hostModules are modules of the host that a plugin's module must never
// list (prefixes of module paths).
var hostModules = []string{
	"github.com/tetratelabs/wazero",
	"modernc.org/sqlite",
	"github.com/modelcontextprotocol/go-sdk",
	"github.com/extism/go-sdk",
	"go.opentelemetry.io",
}

// sdkModules are every module the README says a plugin's module lists,
// besides the plugin's own: sdk-guest, abi, go-pdk, jsonschema-go and its
// test dependency go-cmp. A new dependency of the SDK fails here: say so in
// the README and add it.
var sdkModules = []string{
	sdkGuestModule,
	abiModule,
	"github.com/extism/go-pdk",
	"github.com/google/jsonschema-go",
	"github.com/google/go-cmp",
}

// TestREADMEOwnModule builds the README's wordcount plugin twice, as a
// first-party plugin in the root module and in a module of its own that
// requires sdk-guest through replace lines, calls word_count with the
// README's call command, and checks that the plugin's module lists nothing
// of the host.
func TestREADMEOwnModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and two plugins, and runs go mod tidy")
	}
	root := buildtest.Root(t)
	mainGo, firstParty, ownModule := ownReadmeBlocks(t, root)
	bin := buildtest.Binary(t)

	// checkout stands for /abs/path/plugboard: a plugboard checkout with
	// bin/plugboard built. Links keep it cheap; go resolves the replace
	// directories through them.
	work := t.TempDir()
	checkout := filepath.Join(work, "plugboard")
	for _, dir := range []string{"bin", "dist/plugins", "plugins/" + ownModuleFolder} {
		if err := os.MkdirAll(filepath.Join(checkout, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"abi": filepath.Join(root, "abi"), "sdk-guest": filepath.Join(root, "sdk-guest"),
		"go.mod": filepath.Join(root, "go.mod"), "go.sum": filepath.Join(root, "go.sum"),
		"bin/plugboard": bin,
	} {
		if err := os.Symlink(target, filepath.Join(checkout, link)); err != nil {
			t.Fatal(err)
		}
	}
	data := t.TempDir()

	// The call line of the first shell block, and the answer it must get.
	callLine := ""
	for _, line := range ownCommandLines(firstParty) {
		if strings.HasPrefix(line, "bin/plugboard call ") {
			callLine = line
		}
	}
	if callLine == "" {
		t.Fatalf("%s %q: no `bin/plugboard call` line in\n%s", ownModuleDoc, ownModuleSection, firstParty)
	}
	want := ownWordCount(t, callLine)
	call := func(t *testing.T) {
		t.Helper()
		out := ownBash(t, checkout, callLine, "PLUGBOARD_DATA="+data)
		var got struct{ Words, Lines int }
		if err := json.Unmarshal([]byte(out), &got); err != nil || got != want {
			t.Fatalf("%s\nanswered %q, want words %d, lines %d", callLine, out, want.Words, want.Lines)
		}
	}

	t.Run("first-party plugin in plugins/", func(t *testing.T) {
		ownWriteFile(t, filepath.Join(checkout, "plugins", ownModuleFolder, "main.go"), mainGo)
		for _, line := range ownCommandLines(firstParty) {
			if line == callLine {
				call(t)
			} else {
				ownBash(t, checkout, line)
			}
		}
	})

	t.Run("plugin in its own module", func(t *testing.T) {
		// The own module's folder lies outside the checkout, as a plugin
		// author's would.
		modDir := filepath.Join(work, ownModuleFolder)
		if err := os.Mkdir(modDir, 0o755); err != nil {
			t.Fatal(err)
		}
		ownWriteFile(t, filepath.Join(modDir, "main.go"), mainGo)
		ownBash(t, work, strings.ReplaceAll(ownModule, readmeCheckout, checkout))
		wasm, err := os.ReadFile(filepath.Join(modDir, ownModuleFolder+".wasm"))
		if err != nil {
			t.Fatalf("the README's build left no %s.wasm: %v", ownModuleFolder, err)
		}

		// go.mod requires sdk-guest, replaced (with abi) by the checkout's.
		var mod struct {
			Require []struct{ Path string }
			Replace []struct{ Old, New struct{ Path string } }
		}
		if err := json.Unmarshal([]byte(ownGo(t, modDir, "mod", "edit", "-json")), &mod); err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(mod.Require, func(r struct{ Path string }) bool { return r.Path == sdkGuestModule }) {
			t.Errorf("go.mod does not require %s: %+v", sdkGuestModule, mod.Require)
		}
		checkReplacesCheckout(t, mod.Replace, checkout)

		// Nothing of the host in the module graph; only what the README names.
		own := strings.TrimSpace(ownGo(t, modDir, "list", "-m", "-f", "{{.Path}}"))
		listed := strings.Fields(ownGo(t, modDir, "list", "-m", "-f", "{{.Path}}", "all"))
		for _, m := range listed {
			for _, host := range hostModules {
				if m == host || strings.HasPrefix(m, host+"/") {
					t.Errorf("go list -m all lists %s, a module of the host", m)
				}
			}
			if m != own && !slices.Contains(sdkModules, m) {
				t.Errorf("go list -m all lists %s, which the README does not name", m)
			}
		}
		for _, m := range []string{sdkGuestModule, abiModule, "github.com/extism/go-pdk"} {
			if !slices.Contains(listed, m) {
				t.Errorf("go list -m all does not list %s: %v", m, listed)
			}
		}

		// The README's call, served the own module's build.
		ownWriteFile(t, filepath.Join(checkout, "dist", "plugins", ownModuleFolder+".wasm"), string(wasm))
		call(t)
	})
}

// ownReadmeBlocks returns, from ownModuleDoc's ownModuleSection, the
// Go code block, the shell block building the plugin under plugins/, and
// the shell block building it in its own module.
func ownReadmeBlocks(t *testing.T, root string) (mainGo, firstParty, ownModule string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(ownModuleDoc)))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "\n"+ownModuleSection+"\n")
	if start < 0 {
		t.Fatalf("%s has no section %q", ownModuleDoc, ownModuleSection)
	}
	section := text[start+1:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	for _, m := range regexp.MustCompile("(?s)```([a-z]*)\n(.*?)\n```").FindAllStringSubmatch(section, -1) {
		switch lang, body := m[1], m[2]+"\n"; {
		case lang == "go" && mainGo == "":
			mainGo = body
		case lang == "sh" && strings.Contains(body, firstPartyBuildOf):
			firstParty = body
		case lang == "sh" && strings.Contains(body, "go mod init"):
			ownModule = body
		}
	}
	if mainGo == "" || firstParty == "" || ownModule == "" {
		t.Fatalf("%s %q: want a go block, a sh block with %q and one with `go mod init`; found go %t, first-party %t, own module %t",
			ownModuleDoc, ownModuleSection, firstPartyBuildOf, mainGo != "", firstParty != "", ownModule != "")
	}
	for _, want := range []string{sdkGuestModule + "=" + readmeCheckout, abiModule + "=" + readmeCheckout, "plugin build"} {
		if !strings.Contains(ownModule, want) {
			t.Fatalf("%s %q: the own-module block lacks %q:\n%s", ownModuleDoc, ownModuleSection, want, ownModule)
		}
	}
	return mainGo, firstParty, ownModule
}

// ownCommandLines returns a shell block's commands, one a line.
func ownCommandLines(block string) []string {
	var out []string
	for _, line := range strings.Split(block, "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	return out
}

// ownWordCount is what word_count must answer to the call line's arguments
// (the JSON in single quotes).
func ownWordCount(t *testing.T, callLine string) (want struct{ Words, Lines int }) {
	t.Helper()
	m := regexp.MustCompile(`'(\{.*\})'`).FindStringSubmatch(callLine)
	var in struct{ Text string }
	if m == nil || json.Unmarshal([]byte(m[1]), &in) != nil {
		t.Fatalf("no JSON arguments in single quotes in %q", callLine)
	}
	want.Words, want.Lines = len(strings.Fields(in.Text)), strings.Count(in.Text, "\n")
	return want
}

// ownBash runs script in dir and returns its stdout.
func ownBash(t *testing.T, dir, script string, env ...string) string {
	t.Helper()
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("in %s:\n%s\n%v\nstdout:\n%s\nstderr:\n%s", dir, script, err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// checkReplacesCheckout checks that a go.mod's replace directives (as `go
// mod edit -json` lists them) point the SDK and ABI modules at checkout's
// folders.
func checkReplacesCheckout(t *testing.T, replace []struct{ Old, New struct{ Path string } }, checkout string) {
	t.Helper()
	replaced := map[string]string{}
	for _, r := range replace {
		replaced[r.Old.Path] = r.New.Path
	}
	for m, dir := range map[string]string{sdkGuestModule: "sdk-guest", abiModule: "abi"} {
		if replaced[m] != filepath.Join(checkout, dir) {
			t.Errorf("go.mod replaces %s with %q, want the checkout's %s", m, replaced[m], dir)
		}
	}
}

func ownGo(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if exit, ok := err.(*exec.ExitError); ok {
			stderr = exit.Stderr
		}
		t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, stderr)
	}
	return string(out)
}

func ownWriteFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
