package main

// plugin new: scaffold a plugin in a module of its own (the templates are
// in internal/scaffold). What this file decides is what the templates cannot
// know: the version of sdk-guest and abi to require, the checkout the
// replace lines point at while those modules are unpublished, and the
// plugboard command the Makefile runs.

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/plugboard/plugboard/cmd/plugboard/internal/scaffold"
)

func pluginNewCommand(fs *flag.FlagSet) runFunc {
	module := fs.String("module", "", "the new module's path (default: NAME)")
	replaceFrom := fs.String("replace-from", "", "a plugboard checkout whose sdk-guest and abi go.mod's replace lines point at\n"+
		"(default, while those modules are unpublished: the checkout holding this binary, else the one it was built from)")
	return func(ctx context.Context, in *invocation) error {
		if err := in.nargs(1, 2); err != nil {
			return err
		}
		name := in.args[0]
		if err := scaffold.CheckName(name); err != nil {
			return usageError("%v", err)
		}
		if *module != "" {
			if err := scaffold.CheckModule(*module); err != nil {
				return usageError("--module: %v", err)
			}
		}
		dir := name
		if len(in.args) == 2 {
			dir = in.args[1]
		}
		return pluginNew(ctx, in, name, dir, *module, *replaceFrom)
	}
}

// unpublished is the version go.mod requires a module at when a replace
// line supplies it (what go mod tidy writes).
const unpublished = "v0.0.0-00010101000000-000000000000"

func pluginNew(ctx context.Context, in *invocation, name, dir, module, replaceFrom string) error {
	version, published := sdkVersion()
	checkout, err := replaceCheckout(replaceFrom, published)
	if err != nil {
		return err
	}
	p := scaffold.Plugin{Name: name, Module: module, SDKVersion: version, Checkout: checkout, Plugboard: plugboardCommand()}
	files, err := scaffold.Write(dir, p)
	if errors.Is(err, scaffold.ErrNotEmpty) {
		return &exitError{code: 1, err: fmt.Errorf("%w; name another DIR: plugboard plugin new %s DIR", err, name)}
	}
	if err != nil {
		return err
	}
	if p.Module == "" {
		p.Module = name
	}
	fmt.Fprintf(in.stdout, "created %s: plugin %s (module %s), tool %s\n", dir, name, p.Module, p.Tool())
	for _, f := range files {
		fmt.Fprintf(in.stdout, "  %s\n", filepath.Join(dir, f))
	}
	if checkout != "" {
		fmt.Fprintf(in.stdout, "go.mod replaces sdk-guest and abi with %s's\n", checkout)
	}
	if err := goModTidy(ctx, dir); err != nil {
		return &exitError{code: 1, err: fmt.Errorf("%w\nthe files are written: fix that, then run `go mod tidy` in %s", err, dir)}
	}
	fmt.Fprintf(in.stdout, "next: cd %s && make test   # then make build, make serve\n", dir)
	fmt.Fprintf(in.stdout, "settings: the tool reads plugins.settings.%s.config.greeting (declared in main.go with sdk.NeedsConfig); "+
		"make serve and make inspect take a plugboard.json in %s as --config\n", name, dir)
	return nil
}

// sdkVersion is the version of sdk-guest and abi this plugboard was built
// with, and whether it is published. The binary links abi, not sdk-guest;
// the two are released together. A module replaced by a directory (as in a
// checkout) is unpublished.
func sdkVersion() (version string, published bool) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return unpublished, false
	}
	for _, d := range bi.Deps {
		if d.Path != scaffold.ABIModule {
			continue
		}
		if r := d.Replace; r != nil {
			if r.Version == "" || r.Version == "(devel)" { // a directory
				return unpublished, false
			}
			d = r
		}
		if d.Version == "" || d.Version == "(devel)" || d.Version == unpublished {
			return unpublished, false
		}
		return d.Version, true
	}
	return unpublished, false
}

// replaceCheckout is the checkout go.mod's replace lines point at: the one
// --replace-from names; else none when the modules are published; else the
// checkout holding this binary (bin/plugboard), else the one it was built
// from, if it is still there.
func replaceCheckout(flagValue string, published bool) (string, error) {
	if flagValue != "" {
		abs, err := filepath.Abs(flagValue)
		if err != nil {
			return "", err
		}
		if err := isCheckout(abs); err != nil {
			return "", usageError("--replace-from %s: %v", flagValue, err)
		}
		return abs, nil
	}
	if published {
		return "", nil
	}
	for _, c := range checkoutCandidates() {
		if isCheckout(c) == nil {
			return c, nil
		}
	}
	return "", &exitError{code: 1, err: errors.New("sdk-guest and abi are not published, and this plugboard knows no checkout of its source " +
		"for go.mod's replace lines; name one: plugboard plugin new NAME --replace-from /path/to/plugboard")}
}

// checkoutCandidates are the folders that may be this binary's checkout:
// those above the binary, then the source tree it was compiled from (known
// when it was built without -trimpath, as make build and go build do).
func checkoutCandidates() []string {
	var out []string
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		for d := filepath.Dir(exe); ; d = filepath.Dir(d) {
			out = append(out, d)
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		// file is DIR/cmd/plugboard/plugin_new.go.
		out = append(out, filepath.Dir(filepath.Dir(filepath.Dir(file))))
	}
	return out
}

// isCheckout checks that dir holds plugboard's sdk-guest and abi modules.
func isCheckout(dir string) error {
	for mod, sub := range map[string]string{scaffold.SDKModule: "sdk-guest", scaffold.ABIModule: "abi"} {
		f, err := os.Open(filepath.Join(dir, sub, "go.mod"))
		if err != nil {
			return fmt.Errorf("not a plugboard checkout: %w", err)
		}
		sc := bufio.NewScanner(f)
		found := false
		for sc.Scan() {
			if line := strings.TrimSpace(sc.Text()); strings.HasPrefix(line, "module ") {
				found = strings.Trim(strings.TrimSpace(strings.TrimPrefix(line, "module ")), `"`) == mod
				break
			}
		}
		f.Close()
		if !found {
			return fmt.Errorf("not a plugboard checkout: %s is not module %s", filepath.Join(dir, sub, "go.mod"), mod)
		}
	}
	return nil
}

// plugboardCommand is how the Makefile runs plugboard: by name when the
// plugboard on PATH is this binary, else by this binary's absolute path.
func plugboardCommand() string {
	exe, err := os.Executable()
	if err != nil {
		return "plugboard"
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	if onPath, err := exec.LookPath("plugboard"); err == nil {
		a, errA := os.Stat(onPath)
		b, errB := os.Stat(exe)
		if errA == nil && errB == nil && os.SameFile(a, b) {
			return "plugboard"
		}
	}
	return exe
}

// goModTidy completes go.mod and writes go.sum, as `go mod tidy` in the
// folder does.
func goModTidy(ctx context.Context, dir string) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("the go command is needed to finish the module (go mod tidy): %w", err)
	}
	cmd := exec.CommandContext(ctx, goBin, "mod", "tidy")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go mod tidy in %s: %w\n%s", dir, err, out)
	}
	return nil
}
