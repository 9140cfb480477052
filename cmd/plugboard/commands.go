package main

// The command table: every command of plugboard with its synopsis, summary,
// flags and run function. Dispatch, the top-level usage, each command's
// help and usage errors come from it (cmdtable.go); commands_test.go holds
// each synopsis to the flags the command registers and the command reference
// of docs/operators.md to the table.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/plugboard/plugboard/cmd/plugboard/internal/demo"
	"github.com/plugboard/plugboard/host/config"
)

// commands is the table, in the order the usage and docs/operators.md list it. It
// is set in init: the help command reads it.
var commands []*command

func init() {
	commands = []*command{
		{name: "demo", usage: "[--plugins DIR]... [--keep] [--sandbox off]",
			summary: "watch an agent drive the task tools' closed loop over MCP on a throwaway repository",
			setup:   demoCommand},
		{name: "serve", usage: "[--http ADDR] [--http-token TOKEN | --http-token-file FILE] [--http-read-timeout D] [--http-session-idle D] " +
			"[--http-max-sessions N] [--http-stateless] [--http-state-key-file FILE] [--metrics ADDR --metrics-token-file FILE] [--otlp-endpoint URL] [--watch D] [--warm=false] [--cpu-profile FILE] [host flags]",
			summary: "serve every plugin's tools, resources and prompts over MCP on stdio, or streamable HTTP with --http",
			setup:   serveCommand},
		{name: "call", usage: "TOOL ['JSON'] [--progress=false] [host flags]",
			summary: "make one call through the whole pipeline and print its result (an envelope: exit status 1)",
			setup:   callCommand},
		{name: "plugin build", usage: "DIR [-o FILE.wasm]",
			summary: "compile a Go plugin and embed its manifest",
			setup:   pluginBuildCommand},
		{name: "plugin inspect", usage: "FILE.wasm [--json] [--config FILE]",
			summary: "show a plugin's shape (plugboard SDK, Extism MCP v1, hyper-mcp v2, command module), manifest, imports, exports, " +
				"capabilities, limits, size and sha256 (exit status 1 on problems)",
			setup: pluginInspectCommand},
		{name: "plugin new", usage: "NAME [DIR] [--module PATH] [--replace-from DIR]",
			summary: "scaffold a plugin in a module of its own (default DIR: ./NAME): go.mod, main.go with one typed tool, main_test.go, Makefile",
			setup:   pluginNewCommand},
		{name: "plugin add", usage: "NAME SOURCE [--config FILE] [--data DIR]",
			summary: "fetch a plugin from a file, an https:// URL or oci://REGISTRY/REPO:TAG, pin its sha256 in plugboard.lock next to the configuration file, and print the plugins.settings entry to add",
			setup:   pluginAddCommand},
		{name: "plugin lock", usage: "[NAME]... [--config FILE] [--data DIR]",
			summary: "fetch every plugin with a source in the configuration file (or those named) and write their sha256 to plugboard.lock",
			setup:   pluginLockCommand},
		{name: "plugin verify", usage: "[NAME]... [--config FILE]",
			summary: "fetch every plugin with a source again and compare it with plugboard.lock (exit status 1 naming each mismatch)",
			setup:   pluginVerifyCommand},
		{name: "conformance", usage: "PLUGIN.wasm... [--json] [--junit FILE] [--strict] [--profile auto|base|house] [--config FILE] [--http-stand-in HOST=URL]... [--seed N] [--fuzz N] " +
			"[--call-timeout D] [--parallel N] [--list]",
			summary: "check plugins by profile (base: what every MCP plugin must do; house: plugboard's agent-UX rules, advice for foreign plugins), " +
				"a verdict each; exit status 0 works, 1 broken, 2 misuse, 3 needs configuration (--list: the checks)",
			setup: conformanceCommand},
		{name: "conformance", usage: "--scenarios PACK [PLUGIN_DIR]... [--plugins DIR]... [--run REGEX] [--json] [--junit FILE] [--parallel N] " +
			"[--binary FILE] [--cache DIR] [--keep]",
			summary: "run a scenario pack against live servers, each scenario on a fresh board",
			when:    wantsScenarios,
			setup:   scenariosCommand},
		{name: "audit tail", usage: "[--agent ID] [--tool T] [--limit N] [--follow] [--json] [board flags]",
			summary: "print the decision log: one line per tool call or logged decision",
			setup:   auditTailCommand},
		{name: "config check", usage: "[FILE]",
			summary: "check a configuration file (default: $" + config.EnvConfig + ") without starting anything",
			setup:   configCheckCommand},
		{name: "version",
			summary: "print the version",
			setup:   versionCommand},
		{name: "help", usage: "[COMMAND]",
			summary: "print this overview, or a command's synopsis and flags",
			setup:   helpCommand},

		{name: "project create", usage: "NAME [--repo PATH[@BRANCH]]... [--setup-script S] [--cleanup-script S] [--json] [board flags]",
			summary: "create a project over git repositories; the scripts run in each repo's worktree before and after the agent",
			section: sectionBoard, setup: projectCreateCommand},
		{name: "project list", usage: "[--json] [board flags]",
			summary: "list the projects with their repo counts",
			section: sectionBoard, setup: projectListCommand},
		{name: "repo add", usage: "PROJECT --repo PATH[@BRANCH] [--name N] [--setup-script S] [--cleanup-script S] [--json] [board flags]",
			summary: "add (or update) a repo of a project",
			section: sectionBoard, setup: repoAddCommand},
		{name: "repo list", usage: "PROJECT [--json] [board flags]",
			summary: "list a project's repos, target branches and paths",
			section: sectionBoard, setup: repoListCommand},
		{name: "task create", usage: "PROJECT TITLE [--description TEXT | --description-file FILE] [--json] [board flags]",
			summary: "create a task in todo and print its id (the task with --json)",
			section: sectionBoard, setup: taskCreateCommand},
		{name: "task list", usage: "PROJECT [--status S] [--limit N] [--json] [board flags]",
			summary: "list a project's tasks with their status and latest attempt: none, running, failed or finished",
			section: sectionBoard, setup: taskListCommand},
		{name: "attempt start", usage: "TASK_ID --executor E [--variant V] [--repo REPO_ID[@BRANCH]]... [--channel normalized|raw] [--json] [board flags]",
			summary: "start an attempt and stream its log in the foreground: exit status 0 completed, 1 failed, 130 interrupted (Ctrl-C stops it)",
			section: sectionBoard, setup: attemptStartCommand},
		{name: "attempt list", usage: "TASK_ID [--json] [board flags]",
			summary: "list a task's attempts with their states, newest first",
			section: sectionBoard, setup: attemptListCommand},
		{name: "attempt status", usage: "ATTEMPT_ID [--json] [board flags]",
			summary: "show an attempt's state, failure summary, branch, latest process and last activity",
			section: sectionBoard, setup: attemptStatusCommand},
		{name: "attempt logs", usage: "ATTEMPT_ID [--channel normalized|raw] [--limit N] [--cursor N] [--process ID] [--follow] [--json] [board flags]",
			summary: "print the newest log entries of an attempt's latest process; --follow keeps printing until the attempt ends",
			section: sectionBoard, setup: attemptLogsCommand},
		{name: "attempt stop", usage: "ATTEMPT_ID [--force] [--json] [board flags]",
			summary: "stop an attempt's processes: interrupt, then kill after the grace period (--force: at once)",
			section: sectionBoard, setup: attemptStopCommand},
		{name: "attempt executors", usage: "[--json] [board flags]",
			summary: "list the executor profiles and whether they are available here",
			section: sectionBoard, setup: attemptExecutorsCommand},
		{name: "host list", usage: "[--json] [board flags]",
			summary: "the hosts sharing the board's store: alive or not, serving processes, last lease renewal, attempts running in their worktrees",
			section: sectionBoard, setup: hostListCommand},
	}
}

// flagGroups are the shared flag sets synopses name.
var flagGroups = []*flagGroup{
	{name: "host flags",
		usage: "[--plugins DIR]... [--call-timeout D] [--memory-limit MIB] [--max-instances N] [--unload-idle D] [--grants FILE] [--agents FILE] [--agent ID] " +
			"[--attempt ID] [--audit-payload-max SIZE] [--audit-max-bytes SIZE] [--audit-max-age D] " +
			"[--attempt-logs-process-max SIZE] [--attempt-logs-attempt-max SIZE] [--attempt-logs-max-bytes SIZE] [--attempt-logs-max-age D] [board flags]",
		register: func(fs *flag.FlagSet) { new(hostFlags).register(fs) }},
	{name: "board flags",
		usage: "[--data DIR] [--store URL] [--log-level L] [--config FILE] [--executors FILE] [--guard NAME] [--agent-env KEY[=VALUE]]... [--agent-env-drop PATTERN]... " +
			"[--agent-inactivity-timeout D] [--agent-run-timeout D] [--sandbox landlock|off] [--sandbox-network open|closed] [--sandbox-read PATH]... [--sandbox-write PATH]...",
		register: func(fs *flag.FlagSet) { new(boardCmd).register(fs) }},
}

func demoCommand(fs *flag.FlagSet) runFunc {
	var plugins stringList
	fs.Var(&plugins, "plugins", "directory of .wasm plugins holding the task tools (repeatable; default: dist/plugins next to bin/, else ./dist/plugins)")
	keep := fs.Bool("keep", false, "keep the sample repository and data directory for inspection")
	sandbox := fs.String("sandbox", "", "the server's --sandbox: off where the kernel has no Landlock (default: landlock)")
	return func(ctx context.Context, in *invocation) error {
		if err := in.nargs(0, 0); err != nil {
			return err
		}
		err := demo.Run(ctx, demo.Options{PluginDirs: plugins, Keep: *keep, Sandbox: *sandbox, Version: version, Stdout: in.stdout, Stderr: in.stderr})
		var bad *demo.UsageError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &bad):
			return usageError("%v", bad)
		case errors.Is(err, demo.ErrInterrupted):
			return &exitError{code: exitInterrupted, err: err}
		}
		return &exitError{code: 1, err: err}
	}
}

// configCheckCommand runs cmdConfig (config_cmd.go), which checks its
// arguments itself.
func configCheckCommand(*flag.FlagSet) runFunc {
	return func(ctx context.Context, in *invocation) error {
		return cmdConfig(ctx, append([]string{"check", "--"}, in.args...), in.stdout, in.stderr)
	}
}

func versionCommand(*flag.FlagSet) runFunc {
	return func(_ context.Context, in *invocation) error {
		fmt.Fprintln(in.stdout, "plugboard", version)
		return nil
	}
}

func helpCommand(*flag.FlagSet) runFunc {
	return func(_ context.Context, in *invocation) error {
		if len(in.args) == 0 {
			writeUsage(in.stdout)
			return nil
		}
		name := strings.Join(in.args, " ")
		if subs := subcommands(name); len(subs) > 0 {
			for _, c := range commands {
				if strings.HasPrefix(c.name, name+" ") {
					fmt.Fprintf(in.stdout, "  plugboard %s\n      %s\n", c.synopsis(), c.summary)
				}
			}
			return nil
		}
		found := false
		for _, c := range commands {
			if c.name != name {
				continue
			}
			if found {
				fmt.Fprintln(in.stdout)
			}
			found = true
			if err := c.writeHelp(in.stdout, false); err != nil {
				return err
			}
		}
		if found {
			return nil
		}
		_, _, err := lookup(in.args)
		if err == nil {
			err = usageError("no command is named %q", name)
		}
		return err
	}
}
