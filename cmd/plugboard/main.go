// Command plugboard is the one binary of plugboard: it serves WebAssembly
// plugins as MCP tools (serve), builds and inspects plugins (plugin build,
// plugin inspect) and runs single calls through the whole pipeline (call).
// It owns flag parsing, wiring and process exit codes; everything else lives
// in host/ and build/.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const version = "0.1.0"

const usage = `plugboard — an MCP tool host whose tools are sandboxed WebAssembly plugins

Usage:
  plugboard demo [--plugins DIR]... [--keep]                  watch an agent's closed loop over MCP on a throwaway repo
  plugboard serve [--plugins DIR]... [--data DIR] [flags]    serve MCP over stdio (or --http ADDR)
  plugboard call TOOL 'JSON' [--plugins DIR]... [--data DIR]  one call through the pipeline; prints the result
  plugboard plugin build DIR -o FILE.wasm                     compile a Go plugin, embed its manifest
  plugboard plugin inspect [--json] FILE.wasm                 manifest, imports, capabilities, size, sha256
  plugboard conformance [--json | --junit FILE] [--strict] PLUGIN.wasm...   check plugins against the ABI and agent-UX rules
  plugboard conformance --scenarios PACK [--plugins DIR]...   run a scenario pack against live servers
  plugboard version

Task board (every board command takes --data DIR, --json where it prints data):
  plugboard project create NAME --repo PATH[@BRANCH]... [--setup-script S] [--cleanup-script S]
  plugboard project list
  plugboard repo add PROJECT --repo PATH[@BRANCH] [--name N] [--setup-script S] [--cleanup-script S]
  plugboard repo list PROJECT
  plugboard task create PROJECT TITLE [--description TEXT | --description-file FILE]   prints the task id
  plugboard task list PROJECT [--status S]
  plugboard attempt start TASK_ID --executor E [--variant V] [--repo REPO_ID[@BRANCH]]...
                                   runs the attempt in the foreground, streaming its log;
                                   exit 0 completed, 1 failed, 130 interrupted (Ctrl-C stops it)
  plugboard attempt list TASK_ID
  plugboard attempt status ATTEMPT_ID
  plugboard attempt logs ATTEMPT_ID [--channel normalized|raw] [--limit N] [--follow]
  plugboard attempt stop ATTEMPT_ID [--force]
  plugboard attempt executors
  plugboard audit tail [--agent ID] [--tool T] [--limit N] [--follow] [--json]
                                   the decision log: one line per tool call or logged decision
PROJECT is a project id or exact name.

Run 'plugboard COMMAND -h' for a command's flags.
`

// exitError carries a process exit code through to main.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err == nil {
		return
	}
	code := 1
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	if ee == nil || ee.err != errSilent {
		fmt.Fprintln(os.Stderr, "plugboard:", err)
	}
	os.Exit(code)
}

// errSilent marks a failure already reported to the user.
var errSilent = errors.New("silent")

func usageError(format string, args ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format+"\n\n"+usage, args...)}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return &exitError{code: 2, err: errSilent}
	}
	switch args[0] {
	case "demo":
		return cmdDemo(ctx, args[1:], stdout, stderr)
	case "serve":
		return cmdServe(ctx, args[1:], stderr)
	case "call":
		return cmdCall(ctx, args[1:], stdout, stderr)
	case "plugin":
		if len(args) < 2 {
			return usageError("plugin needs a subcommand: build or inspect")
		}
		switch args[1] {
		case "build":
			return cmdPluginBuild(ctx, args[2:], stdout, stderr)
		case "inspect":
			return cmdPluginInspect(ctx, args[2:], stdout, stderr)
		}
		return usageError("unknown plugin subcommand %q", args[1])
	case "conformance":
		return cmdConformance(ctx, args[1:], stdout, stderr)
	case "project", "repo", "task", "attempt":
		return cmdBoard(ctx, args, stdout, stderr)
	case "audit":
		return cmdAudit(ctx, args[1:], stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, "plugboard", version)
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	return usageError("unknown command %q", args[0])
}
