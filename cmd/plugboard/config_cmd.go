package main

// plugboard config check validates a configuration file (host/config)
// without starting anything: exit status 0 with one line saying what the
// file configures, 1 with every problem, one per line, each at
// FILE:LINE:COL and the field's path. For a valid file it then reports,
// per plugin in the plugin folders (and file sources), what the settings
// give it against what it declares it needs and what its imports use
// (config_check_plugins.go): exit status 3, needs configuration, when a
// value a plugin declares required is missing.

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/plugboard/plugboard/conformance"
	plughost "github.com/plugboard/plugboard/host"
	"github.com/plugboard/plugboard/host/config"
)

// sandboxOf is the attempt sandbox the file's sandbox section configures
// (its defaults where it says nothing).
func sandboxOf(s config.Sandbox) plughost.Sandbox {
	return plughost.Sandbox{Off: s.Mode != nil && *s.Mode == "off", NetworkClosed: s.Network != nil && *s.Network == "closed",
		ReadOnly: s.ReadOnly, ReadWrite: s.ReadWrite}
}

// cmdConfig runs the config subcommands: check.
func cmdConfig(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError("config needs a subcommand: check")
	}
	if args[0] != "check" {
		return usageError("unknown config subcommand %q (want check)", args[0])
	}
	fs := flag.NewFlagSet("config check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: plugboard config check [FILE]\n\n"+
			"Checks a configuration file (default: $%s): exit status 0 with a summary of what it configures\n"+
			"and, per plugin in its plugin folders, what the settings give it against what it needs;\n"+
			"1 with every problem at FILE:LINE:COL and the field's path; 3 when a plugin's required\n"+
			"configuration value is missing. A \"${VAR}\" value whose variable is not set here is reported, not a problem.\n", config.EnvConfig)
	}
	if err := fs.Parse(args[1:]); err != nil {
		return &exitError{code: 2, err: errSilent}
	}
	var file string
	switch fs.NArg() {
	case 0:
		if file = os.Getenv(config.EnvConfig); file == "" {
			return usageError("config check needs FILE (or $%s)", config.EnvConfig)
		}
	case 1:
		file = fs.Arg(0)
	default:
		return usageError("config check takes one FILE, got %q", fs.Args())
	}
	// Lenient: listing what a file gives each plugin must not need the
	// environment holding the plugins' secrets; serve's load is strict.
	conf, err := config.LoadLenient(file)
	if err != nil {
		problems := []error{err}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			problems = j.Unwrap()
		}
		for _, p := range problems {
			fmt.Fprintln(stderr, p)
		}
		if len(problems) > 1 {
			fmt.Fprintf(stderr, "%s: %d problems\n", file, len(problems))
		}
		return &exitError{code: 1, err: errSilent}
	}
	fmt.Fprintln(stdout, conf.Summary())
	fmt.Fprintln(stdout, "sandbox: "+plughost.SandboxMode(sandboxOf(conf.Sandbox)))
	if conf.Agents != nil && len(conf.Agents.Tokens()) > 0 {
		if st, err := os.Stat(file); err == nil && st.Mode().Perm()&0o077 != 0 {
			fmt.Fprintf(stderr, "warning: %s holds agents' bearer tokens and others may read it (mode %04o): chmod 600 %s\n",
				file, st.Mode().Perm(), file)
		}
	}
	for _, v := range unsetEnvValues(conf) {
		fmt.Fprintf(stderr, "warning: %s is set from %s, which is not set in this environment: serve started here would refuse the file\n", v.setting, v.from)
	}
	if missing := checkPlugins(ctx, stdout, conf); len(missing) > 0 {
		fmt.Fprintf(stderr, "%s: needs configuration: %s\n", file, strings.Join(missing, ", "))
		return &exitError{code: conformance.ExitNeedsConfig, err: errSilent}
	}
	return nil
}
