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

// conformanceCommand checks plugin files with the conformance kit.
func conformanceCommand(fs *flag.FlagSet) runFunc {
	var o conformanceOptions
	fs.BoolVar(&o.asJSON, "json", false, "print the report as JSON instead of text")
	fs.StringVar(&o.junit, "junit", "", "also write the report as JUnit XML to this file")
	fs.BoolVar(&o.strict, "strict", false, "fail on warnings too")
	fs.Int64Var(&o.seed, "seed", 1, "seed of the fuzzed arguments")
	fs.IntVar(&o.fuzz, "fuzz", conformance.DefaultFuzz, "random argument objects per tool, after the edge values (0: none)")
	fs.DurationVar(&o.callTimeout, "call-timeout", conformance.DefaultCallTimeout, "deadline of each call (a tool's shorter timeout_ms wins)")
	fs.IntVar(&o.parallel, "parallel", 0, "plugins checked at once (default: GOMAXPROCS)")
	list := fs.Bool("list", false, "list the checks and exit")
	return func(ctx context.Context, in *invocation) error {
		if *list {
			return listChecks(in.stdout, o.asJSON)
		}
		if err := in.nargs(1, -1); err != nil {
			return err
		}
		return runConformance(ctx, in.args, o, in.stdout, in.stderr)
	}
}

// conformanceOptions are the flags of a conformance check.
type conformanceOptions struct {
	asJSON, strict bool
	junit          string
	seed           int64
	fuzz, parallel int
	callTimeout    time.Duration
}

// scenariosCommand runs a scenario pack against live servers (package
// conformance/scenario, which owns that mode and its flags).
func scenariosCommand(fs *flag.FlagSet) runFunc {
	var cli scenariopack.CLI
	cli.Register(fs)
	return func(ctx context.Context, in *invocation) error {
		if code := cli.Run(ctx, in.args, in.stdout, in.stderr); code != 0 {
			return &exitError{code: code, err: errSilent}
		}
		return nil
	}
}

func runConformance(ctx context.Context, paths []string, o conformanceOptions, stdout, stderr io.Writer) error {
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			return usageError("%s is a directory; pass its .wasm files (e.g. %s)", p, filepath.Join(p, "*.wasm"))
		}
	}
	fuzzN := o.fuzz
	if fuzzN == 0 {
		fuzzN = -1 // Options: 0 means the default, negative none
	}
	start := time.Now()
	rep, err := conformance.Run(ctx, paths, conformance.Options{
		Seed: o.seed, Fuzz: fuzzN, CallTimeout: o.callTimeout, Parallel: o.parallel, Strict: o.strict,
		Progress: func(p *conformance.PluginReport) { fmt.Fprintln(stderr, "conformance:", p.ProgressLine()) },
	})
	if err != nil && rep == nil {
		return err
	}
	if o.junit != "" {
		f, ferr := os.Create(o.junit)
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
	if o.asJSON {
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
