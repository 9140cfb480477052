package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/plugboard/plugboard/conformance"
	scenariopack "github.com/plugboard/plugboard/conformance/scenario"
)

// cmdConformance checks plugin files with the conformance kit; with
// --scenarios PACK it runs a scenario pack against live servers instead
// (package conformance/scenario, which owns that mode and its flags).
func cmdConformance(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if wantsScenarios(args) {
		if code := scenariopack.Main(ctx, args, stdout, stderr); code != 0 {
			return &exitError{code: code, err: errSilent}
		}
		return nil
	}
	fs := flag.NewFlagSet("conformance", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the report as JSON instead of text")
	junit := fs.String("junit", "", "also write the report as JUnit XML to this file")
	strict := fs.Bool("strict", false, "fail on warnings too")
	seed := fs.Int64("seed", 1, "seed of the fuzzed arguments")
	fuzz := fs.Int("fuzz", conformance.DefaultFuzz, "random argument objects per tool, after the edge values (0: none)")
	callTimeout := fs.Duration("call-timeout", conformance.DefaultCallTimeout, "deadline of each call (a tool's shorter timeout_ms wins)")
	parallel := fs.Int("parallel", 0, "plugins checked at once (default: GOMAXPROCS)")
	list := fs.Bool("list", false, "list the checks and exit")
	fs.String("scenarios", "", "run a scenario pack (JSON) against live servers instead; see 'plugboard conformance --scenarios PACK -h'")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: plugboard conformance [--json | --junit FILE] [--strict] [--seed N] [--fuzz N] PLUGIN.wasm...")
		fmt.Fprintln(stderr, "       plugboard conformance --scenarios PACK [PLUGIN_DIR]... (scenario packs against live servers; -h after it for its flags)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(reorderFlags(fs, args)); err != nil {
		return &exitError{code: 2, err: errSilent}
	}
	if *list {
		return listChecks(stdout, *asJSON)
	}
	if fs.NArg() == 0 {
		return usageError("conformance needs at least one .wasm plugin")
	}
	paths := fs.Args()
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			return usageError("%s is a directory; pass its .wasm files (e.g. %s)", p, filepath.Join(p, "*.wasm"))
		}
	}
	fuzzN := *fuzz
	if fuzzN == 0 {
		fuzzN = -1 // Options: 0 means the default, negative none
	}
	start := time.Now()
	rep, err := conformance.Run(ctx, paths, conformance.Options{
		Seed: *seed, Fuzz: fuzzN, CallTimeout: *callTimeout, Parallel: *parallel, Strict: *strict,
		Progress: func(p *conformance.PluginReport) { fmt.Fprintln(stderr, "conformance:", p.ProgressLine()) },
	})
	if err != nil && rep == nil {
		return err
	}
	if *junit != "" {
		f, ferr := os.Create(*junit)
		if ferr != nil {
			return ferr
		}
		werr := rep.WriteJUnit(f)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return werr
		}
	}
	if *asJSON {
		err = rep.WriteJSON(stdout)
	} else {
		err = rep.WriteText(stdout)
	}
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		return &exitError{code: 130, err: ctx.Err()}
	}
	fmt.Fprintf(stderr, "conformance: %d plugins in %.1fs\n", len(rep.Plugins), time.Since(start).Seconds())
	if !rep.OK {
		return &exitError{code: 1, err: errSilent}
	}
	return nil
}

// wantsScenarios reports a --scenarios flag among the arguments.
func wantsScenarios(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && name == "scenarios" {
			return true
		}
	}
	return false
}

func listChecks(w io.Writer, asJSON bool) error {
	if asJSON {
		rep := struct {
			Checks []conformance.Check `json:"checks"`
		}{conformance.Checks}
		return printJSON(w, rep)
	}
	for _, c := range conformance.Checks {
		scope := "plugin"
		if c.PerTool {
			scope = "tool"
		}
		fmt.Fprintf(w, "%-32s %-7s %-6s %s\n", c.ID, c.Severity, scope, wrap(c.Doc, 100, strings.Repeat(" ", 48)))
	}
	return nil
}

// wrap breaks text into lines of at most width, indenting continuations.
func wrap(text string, width int, indent string) string {
	var b strings.Builder
	n := 0
	for i, w := range strings.Fields(text) {
		if i > 0 && n+1+len(w) > width {
			b.WriteString("\n" + indent)
			n = 0
		} else if i > 0 {
			b.WriteByte(' ')
			n++
		}
		b.WriteString(w)
		n += len(w)
	}
	return b.String()
}
