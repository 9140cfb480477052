package gitops

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
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

// passEnv names the variables of the host's environment that git gets;
// every other variable is left out. An allowlist, not a list of what to
// drop: the host's environment holds secrets under names nobody can list
// in advance (PLUGBOARD_HTTP_TOKEN, a plugin's API key, a cloud
// provider's credentials), and git, everything it may start (a filter or
// hook of the user's own configuration, in the user's repository) and a
// command the host was tricked into letting it start would otherwise see
// them all.
//
// What is left is what a local git needs: where programs are (PATH), the
// user's identity and home, whose configuration applies in the user's
// repository (HOME, XDG_CONFIG_HOME, the GIT_CONFIG_ files the user chose;
// hostEnv overrides them over an attempt's files), the author and
// committer the user's git would record (identity), language, time zone
// and temporary directory. No variable the host's git needs starts with
// PLUGBOARD_, and none does here. Nothing for the network (SSH_AUTH_SOCK,
// proxies, GIT_SSH, GIT_ASKPASS): the host's git only reads and writes
// local repositories. None of git's variables that point it at another
// repository, index or object store (GIT_DIR, GIT_INDEX_FILE, ...), that
// name a command (GIT_EXTERNAL_DIFF, GIT_PAGER, GIT_EXEC_PATH) or that
// change how pathspecs are read: a host started from a git hook or alias
// may have them, and they would redirect every command here.
var passEnv = []string{
	"PATH", "HOME", "USER", "LOGNAME", "TZ", "TMPDIR", "XDG_CONFIG_HOME",
	"GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM", "GIT_ATTR_NOSYSTEM",
	"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE",
	"GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE",
	// The locale by name, not LC_*: ssh forwards LC_* by default, which
	// has made it a place to pass variables of any meaning.
	"LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_COLLATE", "LC_MESSAGES", "LC_MONETARY", "LC_NUMERIC",
	"LC_TIME", "LC_ADDRESS", "LC_IDENTIFICATION", "LC_MEASUREMENT", "LC_NAME", "LC_PAPER", "LC_TELEPHONE",
}

// gitEnv is the environment of a git the host runs: passEnv's variables
// of the host's environment, then fixed settings, then extra.
func gitEnv(extra []string) []string {
	env := make([]string, 0, len(passEnv)+len(extra)+2)
	for _, name := range passEnv {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	// Nobody can answer a credential prompt, and the board's reads must
	// never take index.lock away from an agent committing in the worktree.
	env = append(env, "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0")
	return append(env, extra...)
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
