package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/plugboard/plugboard/conformance"
	scenariopack "github.com/plugboard/plugboard/conformance/scenario"
	plughost "github.com/plugboard/plugboard/host"
	"github.com/plugboard/plugboard/host/config"
	"github.com/plugboard/plugboard/host/plugin"
)

// conformanceCommand checks plugin files with the conformance kit. Its
// exit status is the worst plugin's verdict (conformance.Report.ExitCode),
// so a plugin's CI can gate on it: 0 works (with advice or warnings), 1
// broken (with --strict: a warning too), 2 misuse, 3 needs configuration.
func conformanceCommand(fs *flag.FlagSet) runFunc {
	var o conformanceOptions
	fs.BoolVar(&o.asJSON, "json", false, "print the report as JSON instead of text")
	fs.StringVar(&o.junit, "junit", "", "also write the report as JUnit XML to this file")
	fs.BoolVar(&o.strict, "strict", false, "fail on warnings too (advice never fails)")
	fs.StringVar(&o.profile, "profile", string(conformance.ProfileAuto),
		"rules each plugin is held to: base (what every MCP plugin must do; plugboard's house rules are advice), house (those rules "+
			"too: description template, output schemas, field descriptions), or auto: house for a plugin written for plugboard "+
			"(built with its SDK, importing its host functions, or declaring its ABI in describe), base for any other")
	fs.StringVar(&o.config, "config", "", "configuration file whose plugins.settings the plugins run with, as serve would run them "+
		"(default: $"+config.EnvConfig+"; none: no settings)")
	fs.Int64Var(&o.seed, "seed", 1, "seed of the fuzzed arguments")
	fs.IntVar(&o.fuzz, "fuzz", conformance.DefaultFuzz, "random argument objects per tool, after the edge values (0: none)")
	fs.DurationVar(&o.callTimeout, "call-timeout", conformance.DefaultCallTimeout, "deadline of each call (a tool's shorter timeout_ms wins)")
	fs.IntVar(&o.parallel, "parallel", 0, "plugins checked at once (default: GOMAXPROCS)")
	fs.Var(&o.standIns, "http-stand-in", "HOST=URL: send the plugins' allowed requests to HOST to the server at URL instead, a test server "+
		"standing in for an API (repeatable); the plugins' allowed_hosts still decide what they may reach")
	list := fs.Bool("list", false, "list the checks and exit")
	return func(ctx context.Context, in *invocation) error {
		if *list {
			return listChecks(in.stdout, o.asJSON)
		}
		if err := in.nargs(1, -1); err != nil {
			return err
		}
		given := config.Given(fs)
		if !given["config"] {
			o.config = os.Getenv(config.EnvConfig)
		}
		o.callTimeoutGiven = given["call-timeout"]
		return runConformance(ctx, in.args, o, in.stdout, in.stderr)
	}
}

// conformanceOptions are the flags of a conformance check.
type conformanceOptions struct {
	asJSON, strict  bool
	junit           string
	seed            int64
	fuzz, parallel  int
	callTimeout     time.Duration
	profile, config string
	// callTimeoutGiven: --call-timeout was given, and wins over the
	// configuration file's plugins.call_timeout.
	callTimeoutGiven bool
	// standIns are the --http-stand-in values, HOST=URL each.
	standIns stringList
}

// parseStandIns reads the --http-stand-in values.
func parseStandIns(values []string) (map[string]*url.URL, error) {
	if len(values) == 0 {
		return nil, nil
	}
	out := make(map[string]*url.URL, len(values))
	for _, v := range values {
		host, target, err := plugin.ParseHTTPStandIn(v)
		if err != nil {
			return nil, err
		}
		if _, dup := out[host]; dup {
			return nil, fmt.Errorf("%s has two stand-ins", host)
		}
		out[host] = target
	}
	return out, nil
}

// conformanceSettings reads the configuration file's plugins section
// into the kit's options, as serve runs plugins with it: each of
// plugins.settings as serve binds the plugin with it (host.LoadSettings,
// values from the environment and secret files resolved by config.Load),
// and the limits of every plugin (memory_limit_mib, max_instances, and
// call_timeout unless --call-timeout is given).
func conformanceSettings(path string, o *conformance.Options, callTimeoutGiven bool) error {
	if path == "" {
		return nil
	}
	conf, err := config.Load(path)
	if err != nil {
		return err
	}
	o.Settings = make(map[string]plugin.Settings, len(conf.Plugins.Settings))
	for name, s := range conf.Plugins.Settings {
		o.Settings[name] = plughost.LoadSettings(s)
	}
	if v := conf.Plugins.MemoryLimitMiB; v != nil {
		o.MemoryLimitMiB = *v
	}
	if v := conf.Plugins.MaxInstances; v != nil {
		o.MaxInstances = *v
	}
	if v := conf.Plugins.CallTimeout; v != nil && !callTimeoutGiven {
		o.CallTimeout = v.D()
	}
	return nil
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
	profile, err := conformance.ParseProfile(o.profile)
	if err != nil {
		return usageError("--profile: %v", err)
	}
	standIns, err := parseStandIns(o.standIns)
	if err != nil {
		return usageError("--http-stand-in: %v", err)
	}
	fuzzN := o.fuzz
	if fuzzN == 0 {
		fuzzN = -1 // Options: 0 means the default, negative none
	}
	opts := conformance.Options{
		Seed: o.seed, Fuzz: fuzzN, CallTimeout: o.callTimeout, Parallel: o.parallel, Strict: o.strict,
		Profile: profile, Config: o.config, HTTPStandIns: standIns,
		Progress: func(p *conformance.PluginReport) { fmt.Fprintln(stderr, "conformance:", p.ProgressLine()) },
	}
	if err := conformanceSettings(o.config, &opts, o.callTimeoutGiven); err != nil {
		// A configuration file that does not load is the run's misuse, as
		// for serve: no plugin was judged.
		return &exitError{code: conformance.ExitUsage, err: err}
	}
	start := time.Now()
	rep, err := conformance.Run(ctx, paths, opts)
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
	if rep.ExitCode != conformance.ExitWorks {
		return &exitError{code: rep.ExitCode, err: errSilent}
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
		fmt.Fprintf(w, "%-32s %-7s %-6s %-5s %s\n", c.ID, c.Severity, scope, c.Profile, wrap(c.Doc, 100, strings.Repeat(" ", 54)))
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
