package gitops

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// GitError reports a git command that failed or could not be started.
type GitError struct {
	Dir      string   // working directory of the command
	Args     []string // arguments after "git"
	ExitCode int      // -1 when git did not run to completion
	Stderr   string   // git's error output, "hint:" lines removed
	err      error
	ctxErr   error
}

func (e *GitError) Error() string {
	args := strings.Join(e.Args, " ")
	if len(args) > maxArgsShown { // a patch of thousands of paths
		args = args[:maxArgsShown] + "..."
	}
	cause := e.err.Error()
	if e.ctxErr != nil {
		cause = e.ctxErr.Error() + " (" + cause + ")"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "git %s (in %s): %s", args, e.Dir, cause)
	if e.Stderr != "" {
		b.WriteString(": ")
		b.WriteString(e.Stderr)
	}
	return b.String()
}

// Unwrap exposes the context's error too, so callers can tell a cancelled
// request (errors.Is(err, context.Canceled)) from a git failure.
func (e *GitError) Unwrap() []error {
	if e.ctxErr != nil {
		return []error{e.ctxErr, e.err}
	}
	return []error{e.err}
}

const maxArgsShown = 300

// exitCode is the git exit status carried by err, or -1.
func exitCode(err error) int {
	var ge *GitError
	if errors.As(err, &ge) {
		return ge.ExitCode
	}
	return -1
}

// localEnv are variables a host started from a git hook or alias may
// inherit and that must not reach our git commands: those that point git at
// a particular repository, index or object store (git rev-parse
// --local-env-vars), which would redirect every command here, and those that
// change how pathspecs or patches are read and written.
var localEnv = []string{
	"GIT_ALTERNATE_OBJECT_DIRECTORIES",
	"GIT_COMMON_DIR",
	"GIT_CONFIG",
	"GIT_CONFIG_COUNT",
	"GIT_CONFIG_PARAMETERS",
	"GIT_DIR",
	"GIT_GRAFT_FILE",
	"GIT_IMPLICIT_WORK_TREE",
	"GIT_INDEX_FILE",
	"GIT_INTERNAL_SUPER_PREFIX",
	"GIT_NO_REPLACE_OBJECTS",
	"GIT_OBJECT_DIRECTORY",
	"GIT_PREFIX",
	"GIT_REPLACE_REF_BASE",
	"GIT_SHALLOW_FILE",
	"GIT_WORK_TREE",

	"GIT_DIFF_OPTS",
	"GIT_EXTERNAL_DIFF",
	"GIT_GLOB_PATHSPECS",
	"GIT_ICASE_PATHSPECS",
	"GIT_LITERAL_PATHSPECS",
	"GIT_NOGLOB_PATHSPECS",
}

func gitEnv(extra []string) []string {
	env := make([]string, 0, len(os.Environ())+len(extra)+2)
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !isLocalEnv(name) {
			env = append(env, kv)
		}
	}
	// Nobody can answer a credential prompt, and the board's reads must
	// never take index.lock away from an agent committing in the worktree.
	env = append(env, "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0")
	return append(env, extra...)
}

func isLocalEnv(name string) bool {
	// GIT_CONFIG_KEY_n/VALUE_n go with GIT_CONFIG_COUNT.
	if strings.HasPrefix(name, "GIT_CONFIG_KEY_") || strings.HasPrefix(name, "GIT_CONFIG_VALUE_") {
		return true
	}
	return slices.Contains(localEnv, name)
}

type runOpts struct {
	env    []string  // extra KEY=VALUE pairs
	stdin  io.Reader // nil: no input
	stdout io.Writer // nil: returned by run
}

// maxStderr bounds what is kept of git's error output: enough for any real
// message, while a command that warns once per file cannot grow memory.
const maxStderr = 16 << 10

// waitDelay bounds how long Run waits for output pipes after git exits or is
// killed; a hook that left a child holding them open must not hang us.
const waitDelay = 5 * time.Second

// run runs git in dir and returns its standard output.
func run(ctx context.Context, dir string, o runOpts, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = gitEnv(o.env)
	cmd.Stdin = o.stdin
	var stdout bytes.Buffer
	stderr := capWriter{max: maxStderr}
	cmd.Stdout = &stdout
	if o.stdout != nil {
		cmd.Stdout = o.stdout
	}
	cmd.Stderr = &stderr
	cmd.WaitDelay = waitDelay
	err := cmd.Run()
	if err == nil {
		return stdout.Bytes(), nil
	}
	ge := &GitError{Dir: dir, Args: args, ExitCode: -1, Stderr: cleanStderr(stderr.buf.String()), err: err, ctxErr: ctx.Err()}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ge.ctxErr == nil {
		ge.ExitCode = ee.ExitCode()
	}
	return stdout.Bytes(), ge
}

// cleanStderr drops git's advice lines, which repeat the same how-to on
// every failure and bury the actual "fatal:" line.
func cleanStderr(s string) string {
	var keep []string
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimRight(line, "\r ")
		if line == "" || strings.HasPrefix(line, "hint:") {
			continue
		}
		keep = append(keep, line)
	}
	return strings.Join(keep, "; ")
}

type capWriter struct {
	buf bytes.Buffer
	max int
}

func (w *capWriter) Write(p []byte) (int, error) {
	if room := w.max - w.buf.Len(); room > 0 {
		w.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// checkArg refuses values that git would parse as an option. Callers pass
// branch names and revisions that may come from a task title or a request.
func checkArg(what, v string) error {
	if v == "" {
		return fmt.Errorf("%s is empty", what)
	}
	if strings.HasPrefix(v, "-") {
		return fmt.Errorf("%s %q starts with '-'", what, v)
	}
	return nil
}
