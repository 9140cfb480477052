package scaffold

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"demo", "my-plugin", "my.plugin_2", "A", strings.Repeat("a", 58)} {
		if err := CheckName(ok); err != nil {
			t.Errorf("CheckName(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "has space", "-dash", ".hidden", "..", "1st", "a/b", "é", strings.Repeat("a", 59), strings.Repeat("a", 129)} {
		if err := CheckName(bad); err == nil {
			t.Errorf("CheckName(%q) = nil", bad)
		}
	}
	if got := (Plugin{Name: "my-plugin.v2"}).Tool(); got != "my_plugin_v2_greet" {
		t.Errorf("Tool = %q", got)
	}
}

func TestCheckModule(t *testing.T) {
	for _, ok := range []string{"demo", "example.com/me/demo", "github.com/a/b-c_d~e"} {
		if err := CheckModule(ok); err != nil {
			t.Errorf("CheckModule(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "/abs", "a//b", "a/", "a b", "a/../b", "-x"} {
		if err := CheckModule(bad); err == nil {
			t.Errorf("CheckModule(%q) = nil", bad)
		}
	}
}

func TestWrite(t *testing.T) {
	p := Plugin{Name: "demo", SDKVersion: "v0.0.0-00010101000000-000000000000", Checkout: "/src/plug board", Plugboard: "/opt/bin/plugboard"}
	dir := filepath.Join(t.TempDir(), "demo")
	names, err := Write(dir, p)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"go.mod", "main.go", "main_test.go", "Makefile", ".gitignore"}; !slices.Equal(names, want) {
		t.Errorf("files = %v, want %v", names, want)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	gomod := read("go.mod")
	for _, want := range []string{
		"module demo\n",
		"\tgithub.com/plugboard/plugboard/sdk-guest v0.0.0-00010101000000-000000000000\n",
		"\tgithub.com/plugboard/plugboard/abi => \"/src/plug board/abi\"\n",
		"\tgithub.com/plugboard/plugboard/sdk-guest => \"/src/plug board/sdk-guest\"\n",
	} {
		if !strings.Contains(gomod, want) {
			t.Errorf("go.mod lacks %q:\n%s", want, gomod)
		}
	}
	main := read("main.go")
	for _, want := range []string{`sdk.Plugin("demo", `, `Name:        "demo_greet",`, "Use when: ", "\nRequired: name\n", "\nOptional: shout\n", "\nNext: ", "\nAvoid: ",
		// The one setting the tool reads, declared (optional), and how to
		// declare a required secret and a host.
		"\tsdk.NeedsConfig(\"greeting\", \"", `sdk.Config("greeting")`, "//\tsdk.NeedsConfig(\"API_KEY\", ", "sdk.Required, sdk.Secret)", "//\tsdk.NeedsHTTP("} {
		if !strings.Contains(main, want) {
			t.Errorf("main.go lacks %q", want)
		}
	}
	if test := read("main_test.go"); !strings.Contains(test, `sdktest.Call(t, sdktest.Env{}, "demo_greet"`) || !strings.Contains(test, "sdktest.Build(t, \".\")") {
		t.Errorf("main_test.go does not call demo_greet natively and built:\n%s", test)
	}
	if mk := read("Makefile"); !strings.Contains(mk, "PLUGBOARD ?= /opt/bin/plugboard\n") || !strings.Contains(mk, "plugin build . -o dist/demo.wasm") ||
		!strings.Contains(mk, `{"plugins": {"settings": {"demo": {"config": {"greeting": "Welcome"}}}}}`) {
		t.Errorf("Makefile:\n%s", mk)
	}

	// Again: the folder is not empty now.
	if _, err := Write(dir, p); !errors.Is(err, ErrNotEmpty) {
		t.Errorf("Write into a folder holding a plugin = %v, want ErrNotEmpty", err)
	}
	// An empty folder is fine; no checkout, no replace lines.
	empty := t.TempDir()
	p.Checkout, p.Module = "", "example.com/me/demo"
	if _, err := Write(empty, p); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(empty, "go.mod"))
	if strings.Contains(string(b), "replace") || !strings.HasPrefix(string(b), "module example.com/me/demo\n") {
		t.Errorf("go.mod without a checkout:\n%s", b)
	}
	// A bad name writes nothing.
	none := filepath.Join(t.TempDir(), "x")
	if _, err := Write(none, Plugin{Name: "bad name", SDKVersion: "v1.0.0", Plugboard: "plugboard"}); err == nil {
		t.Error("Write with a bad name succeeded")
	}
	if _, err := os.Stat(none); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Write with a bad name left %s", none)
	}
}

// TestMakefileConfig runs make -n on the scaffold's Makefile: serve and
// inspect take plugboard.json as --config when the folder has one, the file
// CONFIG names instead, and no --config without either.
func TestMakefileConfig(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not on PATH")
	}
	dir := filepath.Join(t.TempDir(), "demo")
	if _, err := Write(dir, Plugin{Name: "demo", SDKVersion: "v1.0.0", Plugboard: "/opt/bin/plugboard"}); err != nil {
		t.Fatal(err)
	}
	dryRun := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("make", append([]string{"-n"}, args...)...)
		cmd.Dir = dir
		// CONFIG from the environment would stand in for plugboard.json.
		cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
			return strings.HasPrefix(kv, "CONFIG=") || strings.HasPrefix(kv, "MAKEFLAGS=")
		})
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make -n %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	serve := `"/opt/bin/plugboard" serve --plugins dist --http 127.0.0.1:8080`
	inspect := `"/opt/bin/plugboard" plugin inspect dist/demo.wasm`
	if out := dryRun("serve", "inspect"); !strings.Contains(out, serve+"\n") || !strings.Contains(out, inspect+"\n") || strings.Contains(out, "--config") {
		t.Errorf("without plugboard.json, make serve inspect runs:\n%s", out)
	}
	if err := os.WriteFile(filepath.Join(dir, "plugboard.json"), []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := dryRun("serve", "inspect"); !strings.Contains(out, serve+` --config "plugboard.json"`+"\n") ||
		!strings.Contains(out, inspect+` --config "plugboard.json"`+"\n") {
		t.Errorf("with plugboard.json, make serve inspect runs:\n%s", out)
	}
	if out := dryRun("serve", "CONFIG=/etc/pb.json"); !strings.Contains(out, serve+` --config "/etc/pb.json"`+"\n") {
		t.Errorf("make serve CONFIG=/etc/pb.json runs:\n%s", out)
	}
}
