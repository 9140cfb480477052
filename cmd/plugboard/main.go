// Command plugboard is the one binary of plugboard: it serves WebAssembly
// plugins as MCP tools (serve), builds, inspects and checks plugins
// (plugin build, plugin inspect, conformance), runs single calls through
// the whole pipeline (call), checks configuration files (config check),
// and sets up and watches the task board (project, repo, task, attempt,
// audit). It owns the command table
// (commands.go: every command's synopsis, flags and run function), flag
// parsing, wiring and process exit codes; everything else lives in host/,
// build/ and conformance/, and the demo in internal/demo.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

const version = "0.1.0"

// exitError carries a process exit code through to main.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

func (e *exitError) Unwrap() error { return e.err }

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
