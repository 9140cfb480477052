// Package demo owns `plugboard demo`, the newcomer's first look: it sets
// up a throwaway git repository and task board as a person would, starts
// `plugboard serve` as a child, and drives the closed loop of the agent
// guide through real MCP tool calls over stdio — status → logs → changes →
// artifacts → follow-up and stop — printing each call and the key facts of
// its answer. It checks that the loop really happened and fails if it did
// not. The command table in cmd/plugboard owns its flags and exit codes.
package demo

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	plughost "github.com/plugboard/plugboard/host"
)

// demoTimeout bounds the whole demo; it normally takes 10 to 20 seconds.
const demoTimeout = 2 * time.Minute

// demoTools are the task tools the demo calls; without them it cannot run.
var demoTools = []string{
	"list_projects", "list_repos", "list_executors", "create_task", "start_task_attempt",
	"get_attempt_status", "tail_attempt_logs", "get_attempt_changes", "get_attempt_patch",
	"get_attempt_file", "follow_up", "stop_attempt",
}

// demoScript is the task description the SHELL executor runs as a bash
// script in the attempt's worktree: progress lines, two file changes, then
// a heartbeat long enough for stop_attempt to have something to stop.
const demoScript = `echo "step 1/3: reading README.md ($(wc -l < README.md) lines)"
sleep 0.4
echo "step 2/3: editing README.md and adding NOTES.md"
printf '\nEdited by the demo agent.\n' >> README.md
printf 'Notes from the demo agent\n- README.md gained a line\n' > NOTES.md
sleep 0.4
echo "step 3/3: edits done; heartbeat every second for 30 s"
for i in $(seq 1 30); do echo "heartbeat $i/30"; sleep 1; done
echo "finished"`

// demoEditsDone is the log line the script prints once its edits are made.
const demoEditsDone = "edits done"

// Options are what `plugboard demo` was given.
type Options struct {
	// PluginDirs hold the task tools' plugins (--plugins); none: dist/plugins
	// next to the binary's bin/ folder, else ./dist/plugins.
	PluginDirs []string
	// Keep keeps the sample repository and data directory (--keep).
	Keep bool
	// Sandbox is the server's --sandbox ("" its default, landlock): "off"
	// where the kernel has no Landlock, for the demo's attempt to run.
	Sandbox string
	// Version is the MCP client's version.
	Version string
	// Stdout receives the walk-through; Stderr the server's last log lines
	// when the demo fails.
	Stdout, Stderr io.Writer
}

// UsageError is an error in the Options: nothing ran.
type UsageError struct{ msg string }

func (e *UsageError) Error() string { return e.msg }

// ErrInterrupted is in the error of a demo whose context was cancelled;
// its server and attempt are stopped by then.
var ErrInterrupted = errors.New("demo interrupted")

// Run runs the demo against the server this binary serves (os.Executable).
// It returns nil when the whole loop happened; a *UsageError for bad
// Options; an error wrapping ErrInterrupted when ctx was cancelled; else
// the failure ("demo failed: ..."), after printing the end of the server's
// log to Stderr.
func Run(ctx context.Context, o Options) error {
	dirs, err := pluginDirs(o.PluginDirs)
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("demo: find this binary: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, demoTimeout)
	defer cancel()
	d := &demo{w: o.Stdout, exe: exe, version: o.Version, pluginDirs: dirs, keep: o.Keep, sandbox: o.Sandbox, started: time.Now(), tools: map[string]int{}}
	if err := d.run(ctx); err != nil {
		switch {
		case errors.Is(ctx.Err(), context.Canceled):
			msg := "its server and attempt are stopped"
			if !o.Keep {
				msg += " and its temporary directory removed"
			}
			return fmt.Errorf("%w; %s", ErrInterrupted, msg)
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			err = fmt.Errorf("the demo did not finish within %s: %w", demoTimeout, err)
		}
		if tail := d.serverLog(); tail != "" {
			fmt.Fprintf(o.Stderr, "server log (last lines):\n%s\n", tail)
		}
		return fmt.Errorf("demo failed: %w", err)
	}
	return nil
}

// pluginDirs makes the --plugins directories absolute, or finds
// dist/plugins next to the binary's bin/ folder or in the working directory.
func pluginDirs(given []string) ([]string, error) {
	if len(given) > 0 {
		out := make([]string, len(given))
		for i, d := range given {
			abs, err := filepath.Abs(d)
			if err != nil {
				return nil, err
			}
			if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
				return nil, &UsageError{fmt.Sprintf("--plugins %s: not a directory", d)}
			}
			out[i] = abs
		}
		return out, nil
	}
	var candidates []string
	if exe, err := os.Executable(); err == nil {
		candidates = append(candidates, filepath.Join(filepath.Dir(exe), "..", "dist", "plugins"))
	}
	candidates = append(candidates, filepath.Join("dist", "plugins"))
	for _, c := range candidates {
		if fi, err := os.Stat(c); err == nil && fi.IsDir() {
			abs, err := filepath.Abs(c)
			if err != nil {
				return nil, err
			}
			return []string{abs}, nil
		}
	}
	return nil, &UsageError{"demo: no --plugins given and no dist/plugins found; run `make build`, or pass --plugins DIR"}
}

// demo is one run of the demo.
type demo struct {
	w          io.Writer
	exe        string
	version    string
	pluginDirs []string
	keep       bool
	sandbox    string
	started    time.Time

	root, repo, data string
	session          *mcp.ClientSession
	stderr           *syncWriter

	calls int           // tool calls made
	slow  time.Duration // how long the last call took, if notably long
	// slowNoted: the note on compilation was printed once.
	slowNoted bool
	tools     map[string]int // calls per tool
	// What the loop saw, for the summary and the checks.
	projectID, taskID, attemptID  string
	logEntries, tails, afterTails int
	changedFiles                  int
	attemptRan                    time.Duration
}

// syncWriter collects the server's stderr.
type syncWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serverLog is the end of the server's stderr, for a failure report.
func (d *demo) serverLog() string {
	if d.stderr == nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(d.stderr.String()), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

func (d *demo) printf(format string, args ...any) { fmt.Fprintf(d.w, format, args...) }

func (d *demo) section(title string) { d.printf("\n== %s\n", title) }

// answer prints the first line of an answer, and a note if the call was
// slow; more prints the following lines.
func (d *demo) answer(format string, args ...any) {
	d.printf("← "+format+"\n", args...)
	if d.slow > 0 {
		if !d.slowNoted {
			d.more("(%s: a plugin's first call loads it, run by an interpreter while its machine code compiles in the background, then cached in $DEMO/data/compiled)",
				d.slow.Round(100*time.Millisecond))
		} else {
			d.more("(%s: this plugin's first call)", d.slow.Round(100*time.Millisecond))
		}
		d.slow, d.slowNoted = 0, true
	}
}

func (d *demo) more(format string, args ...any) { d.printf("    "+format+"\n", args...) }

func (d *demo) run(ctx context.Context) (err error) {
	d.root, err = os.MkdirTemp("", "plugboard-demo-")
	if err != nil {
		return err
	}
	defer func() {
		if d.keep {
			pb := d.command()
			d.printf("\nKept %s; look inside with:\n", d.root)
			d.printf("  %s task list demo --data %s\n", pb, d.data)
			if d.attemptID != "" {
				d.printf("  %s attempt logs %s --data %s --limit 100\n", pb, d.attemptID, d.data)
			}
			var plugins string
			for _, dir := range d.pluginDirs {
				plugins += " --plugins " + dir
			}
			d.printf("  %s serve --http 127.0.0.1:8080%s --data %s    # then open the dashboard, http://127.0.0.1:8080/\n", pb, plugins, d.data)
			d.printf("  rm -rf %s    # when done\n", d.root)
			return
		}
		if rmErr := os.RemoveAll(d.root); rmErr != nil {
			err = errors.Join(err, fmt.Errorf("remove %s: %w", d.root, rmErr))
			return
		}
		if err == nil {
			d.printf("Removed the sample repository and data directory (%s); run with --keep to look inside.\n", d.root)
		}
	}()
	d.repo, d.data = filepath.Join(d.root, "app"), filepath.Join(d.root, "data")
	d.printf("plugboard demo: an agent drives the task board through MCP tools — the closed loop of\n" +
		"status → logs → changes → artifacts → follow-up/stop — against a throwaway git repository.\n")
	d.section("0. Set up, as a person would (git and the board directly; the agent does the rest)")
	if err := d.setUp(ctx); err != nil {
		return fmt.Errorf("set up: %w", err)
	}
	if err := d.connect(ctx); err != nil {
		return err
	}
	loopErr := d.loop(ctx)
	// Closing the session closes the server's stdin: serve stops, closing
	// the board, which stops anything still running.
	closeErr := d.session.Close()
	if loopErr != nil {
		return loopErr
	}
	if closeErr != nil && !isExitAfterClose(closeErr) {
		return fmt.Errorf("stop the server: %w", closeErr)
	}
	d.summary()
	return nil
}

// isExitAfterClose reports whether err is only the server ended by a
// signal (Close sends SIGTERM if it lingers after its stdin closed).
func isExitAfterClose(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && !ee.Exited()
}

// setUp makes the sample repository and a board with one project over it.
func (d *demo) setUp(ctx context.Context) error {
	if err := os.MkdirAll(d.repo, 0o755); err != nil {
		return err
	}
	files := map[string]string{
		"README.md": "# app\n\nA sample repository for the plugboard demo.\n",
		"hello.sh":  "#!/bin/sh\necho hello\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(d.repo, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	// -c settings make it work on a machine with no git identity and keep a
	// signing setup out of the way.
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "-A"},
		{"-c", "user.name=plugboard demo", "-c", "user.email=demo@plugboard.invalid", "-c", "commit.gpgsign=false",
			"commit", "-q", "-m", "initial commit"},
	} {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = d.repo
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	b, err := plughost.OpenBoard(ctx, plughost.BoardConfig{DataDir: d.data})
	if err != nil {
		return err
	}
	p, err := b.CreateProject(ctx, "demo", []plughost.RepoSpec{{Path: d.repo}})
	if cerr := b.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("create the project: %w", err)
	}
	d.projectID = p.ID
	d.printf("  $DEMO    %s (a temporary directory; --keep keeps it)\n", d.root)
	d.printf("  repo     $DEMO/app: README.md and hello.sh, committed on main\n")
	d.printf("  board    $DEMO/data: project \"demo\" over the repo, as `plugboard project create` makes it\n")
	return nil
}

// connect starts `plugboard serve` as a child and connects an MCP client.
func (d *demo) connect(ctx context.Context) error {
	args := []string{"serve"}
	for _, dir := range d.pluginDirs {
		args = append(args, "--plugins", dir)
	}
	args = append(args, "--data", d.data, "--log-level", "warn")
	if d.sandbox != "" {
		args = append(args, "--sandbox", d.sandbox)
	}
	cmd := exec.Command(d.exe, args...)
	// The server serves this demo's board only: an attempt id inherited
	// from an agent running the demo would describe another board, and the
	// user's configuration file (an HTTP address, other plugins) another
	// server.
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "PLUGBOARD_ATTEMPT_ID=") || strings.HasPrefix(kv, "PLUGBOARD_CONFIG=")
	})
	d.stderr = &syncWriter{}
	cmd.Stderr = d.stderr
	d.printf("  server   plugboard %s\n", strings.ReplaceAll(strings.Join(args, " "), d.root, "$DEMO"))
	d.printf("           a child process speaking MCP over stdio; this demo is its MCP client (go-sdk)\n")
	client := mcp.NewClient(&mcp.Implementation{Name: "plugboard-demo", Version: d.version}, nil)
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return fmt.Errorf("start and connect to plugboard serve: %w", err)
	}
	d.session = session
	return nil
}

// loop is the agent's side: discovery, a task and its attempt, the closed
// loop, follow-up and stop.
func (d *demo) loop(ctx context.Context) error {
	d.section("1. Discover: what tools, projects, repos and executors are there?")
	if err := d.listTools(ctx); err != nil {
		return err
	}
	projects, err := d.call(ctx, "list_projects", map[string]any{})
	if err != nil {
		return err
	}
	var project map[string]any
	for _, p := range list(projects, "projects") {
		if str(p, "project_id") == d.projectID {
			project = asMap(p)
		}
	}
	if project == nil {
		return fmt.Errorf("list_projects does not list the demo project %s", d.projectID)
	}
	d.answer("%s: %q  project_id=%s  repo_count=%s", plural(len(list(projects, "projects")), "project", "projects"), str(project, "name"),
		short(d.projectID), str(project, "repo_count"))

	repos, err := d.call(ctx, "list_repos", map[string]any{"project_id": d.projectID})
	if err != nil {
		return err
	}
	if len(list(repos, "repos")) == 0 {
		return errors.New("list_repos returned no repos for the demo project")
	}
	for i, r := range list(repos, "repos") {
		line := fmt.Sprintf("repo %q  repo_id=%s  target_branch=%s", str(r, "repo_name"), short(str(r, "repo_id")),
			str(r, "target_branch"))
		if i == 0 {
			d.answer("%s", line)
		} else {
			d.more("%s", line)
		}
	}

	execs, err := d.call(ctx, "list_executors", map[string]any{})
	if err != nil {
		return err
	}
	var installed, missing []string
	for _, e := range list(execs, "executors") {
		if v, ok := field(e, "available").(bool); ok && !v {
			missing = append(missing, str(e, "executor"))
		} else {
			installed = append(installed, str(e, "executor"))
		}
	}
	if !slices.Contains(installed, "SHELL") {
		return fmt.Errorf("list_executors does not offer SHELL as available: %s", compact(execs, 300))
	}
	d.answer("%s; available here: %s", plural(len(installed)+len(missing), "executor", "executors"), strings.Join(installed, ", "))
	if len(missing) > 0 {
		d.more("coding agents not installed here: %s", strings.Join(missing, ", "))
	}

	d.section("2. Create a task and start an attempt (SHELL: a stand-in agent that needs nothing installed)")
	task, err := d.call(ctx, "create_task", map[string]any{"project_id": d.projectID, "title": "Edit the README and add notes",
		"description": demoScript, "request_id": requestID()})
	if err != nil {
		return err
	}
	if d.taskID = str(task, "task_id"); d.taskID == "" {
		return errors.New("create_task returned no task_id")
	}
	d.answer("task_id=%s  status=%s", short(d.taskID), orDash(str(task, "status")))
	d.more("(the description is a bash script: three progress lines, edit README.md, add NOTES.md, then a 30 s heartbeat)")

	started, err := d.call(ctx, "start_task_attempt", map[string]any{"task_id": d.taskID, "executor": "SHELL",
		"request_id": requestID()})
	if err != nil {
		return err
	}
	attemptStarted := time.Now()
	if d.attemptID = str(started, "attempt_id"); d.attemptID == "" {
		return errors.New("start_task_attempt returned no attempt_id")
	}
	d.answer("attempt_id=%s  workspace_branch=%s", short(d.attemptID), orDash(str(started, "workspace_branch")))
	for _, r := range list(started, "repos") {
		d.more("repo %q: a clone of the repository on that branch, from %s at %s", str(r, "repo_name"),
			orDash(str(r, "target_branch")), orDash(clip(str(r, "base_commit"), 8)))
	}

	d.section("3. The closed loop: get_attempt_status → tail_attempt_logs → get_attempt_changes")
	if err := d.waitRunning(ctx); err != nil {
		return err
	}
	if err := d.tailLogs(ctx); err != nil {
		return err
	}
	modified, added, err := d.changes(ctx)
	if err != nil {
		return err
	}

	d.section("4. Artifacts on demand: a patch for one path, a slice of one file")
	if err := d.patch(ctx, modified); err != nil {
		return err
	}
	if err := d.file(ctx, added); err != nil {
		return err
	}

	d.section("5. Control: queue a follow-up, stop the attempt, check it settled")
	queued, err := d.call(ctx, "follow_up", map[string]any{"action": "queue", "attempt_id": d.attemptID,
		"prompt": "echo 'follow-up: run the tests'"})
	if err != nil {
		return err
	}
	if !boolean(queued, "queue", "queued") {
		return fmt.Errorf("follow_up action=queue did not queue: %s", compact(queued, 200))
	}
	d.answer("queued=true  session_id=%s  (it would run when the current process completes)", short(str(queued, "session_id")))

	stopAt := time.Now()
	stopped, err := d.call(ctx, "stop_attempt", map[string]any{"attempt_id": d.attemptID})
	if err != nil {
		return err
	}
	d.attemptRan = time.Since(attemptStarted)
	ids := list(stopped, "stopped_execution_process_ids")
	d.answer("state=%s  failure_summary=%s  stopped %s in %s", str(stopped, "state"),
		orDash(str(stopped, "failure_summary")), plural(len(ids), "process", "processes"), time.Since(stopAt).Round(time.Millisecond))
	d.more("discarded_queued_follow_up=%s  task_status=%s", orDash(str(stopped, "discarded_queued_follow_up")),
		orDash(str(stopped, "task_status")))
	if len(ids) == 0 || boolean(stopped, "already_finished") {
		return errors.New("stop_attempt stopped nothing, but the attempt was running its heartbeat")
	}

	status, err := d.call(ctx, "get_attempt_status", map[string]any{"attempt_id": d.attemptID})
	if err != nil {
		return err
	}
	state, taskStatus := str(status, "state"), str(status, "task_status")
	d.answer("state=%s  failure_summary=%s  task_status=%s  queued_follow_up=%s", state,
		orDash(str(status, "failure_summary")), orDash(taskStatus), orDash(str(status, "queued_follow_up")))
	if state == "" || state == "running" {
		return fmt.Errorf("after stop_attempt the attempt's state is %q, want it no longer running", state)
	}
	if taskStatus != "" && taskStatus != "inreview" {
		return fmt.Errorf("after stop_attempt the task's status is %q, want inreview", taskStatus)
	}
	// The attempt worked in its own worktree: the repository is untouched.
	cmd := exec.CommandContext(ctx, "git", "status", "--porcelain")
	cmd.Dir = d.repo
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("git status in the sample repository: %w", err)
	}
	if len(bytes.TrimSpace(out)) > 0 {
		return fmt.Errorf("the attempt changed the sample repository itself, not only its worktree:\n%s", out)
	}
	return nil
}

// listTools lists the server's tools and checks the task tools are there.
func (d *demo) listTools(ctx context.Context) error {
	d.printf("→ tools/list\n")
	res, err := d.session.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	var names []string
	descs := map[string]string{}
	for _, t := range res.Tools {
		names = append(names, t.Name)
		descs[t.Name] = t.Description
	}
	d.answer("%s:", plural(len(names), "tool", "tools"))
	d.wrap(names)
	var missing []string
	for _, want := range demoTools {
		if _, ok := descs[want]; !ok {
			missing = append(missing, want)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the task tools are missing from %s: %s\n"+
			"  (they come from the plugins/tasks-* plugins; run `make build` and pass --plugins dist/plugins)",
			strings.Join(d.pluginDirs, ", "), strings.Join(missing, ", "))
	}
	if desc := descs["get_attempt_status"]; desc != "" {
		d.more("each description follows Use when / Required / Optional / Next / Avoid, e.g. get_attempt_status:")
		for _, l := range strings.Split(desc, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				d.more("  %s", clip(l, 96))
			}
		}
	}
	return nil
}

// waitRunning polls get_attempt_status until the attempt is running.
func (d *demo) waitRunning(ctx context.Context) error {
	args := map[string]any{"attempt_id": d.attemptID}
	d.printf("→ get_attempt_status %s\n", compact(args, 160))
	deadline := time.Now().Add(20 * time.Second)
	for polls := 1; ; polls++ {
		status, err := d.callQuiet(ctx, "get_attempt_status", args)
		if err != nil {
			return err
		}
		state := str(status, "state")
		switch {
		case state == "running":
			note := ""
			if polls > 1 {
				note = fmt.Sprintf("  (poll %d)", polls)
			}
			d.answer("state=running  task_status=%s  latest_session_id=%s  latest_execution_process_id=%s%s",
				orDash(str(status, "task_status")), short(str(status, "latest_session_id")),
				short(str(status, "latest_execution_process_id")), note)
			return nil
		case state == "completed" || state == "failed":
			return fmt.Errorf("the attempt ended before it was seen running: state=%s failure_summary=%s",
				state, str(status, "failure_summary"))
		case time.Now().After(deadline):
			return fmt.Errorf("the attempt did not reach running within 20 s (state=%q)", state)
		}
		if err := sleepCtx(ctx, 150*time.Millisecond); err != nil {
			return err
		}
	}
}

// tailLogs reads the attempt's log incrementally: one tail page, then only
// the entries after the last one seen, until the script has made its edits.
func (d *demo) tailLogs(ctx context.Context) error {
	var last *int64
	editsDone := false
	incremental := 0 // after_entry_index calls that returned new entries
	deadline := time.Now().Add(20 * time.Second)
	for {
		if time.Now().After(deadline) {
			return fmt.Errorf("within 20 s the log did not show %q and new entries in two incremental tails "+
				"(%d entries in %d tails)", demoEditsDone, d.logEntries, d.tails)
		}
		args := map[string]any{"attempt_id": d.attemptID, "limit": 50}
		if last != nil {
			args["after_entry_index"] = *last
		}
		page, err := d.call(ctx, "tail_attempt_logs", args)
		if err != nil {
			return err
		}
		d.tails++
		if last != nil {
			d.afterTails++
		}
		entries := list(page, "entries")
		if last != nil && len(entries) > 0 {
			incremental++
		}
		shown := 0
		for _, e := range entries {
			idx, ok := integer(e, "entry_index")
			if !ok {
				return fmt.Errorf("tail_attempt_logs: an entry without entry_index: %s", compact(e, 200))
			}
			if last != nil && idx <= *last {
				return fmt.Errorf("tail_attempt_logs after_entry_index=%d returned the old entry #%d", *last, idx)
			}
			content := entryField(e, "content")
			if strings.Contains(content, demoEditsDone) {
				editsDone = true
			}
			if shown == 0 {
				what := plural(len(entries), "entry", "entries")
				if last != nil {
					what = plural(len(entries), "new entry", "new entries")
				}
				d.answer("%s%s:", what, pageNote(page))
			}
			if shown < 8 {
				d.more("#%d %-15s %s", idx, entryField(e, "entry_type"), clip(content, 72))
			}
			shown++
			d.logEntries++
			last = &idx
		}
		if shown > 8 {
			d.more("… %d more", shown-8)
		}
		if len(entries) == 0 {
			d.answer("no entries yet%s", pageNote(page))
		}
		if editsDone && incremental >= 2 {
			return nil
		}
		if err := sleepCtx(ctx, time.Second); err != nil {
			return err
		}
	}
}

func pageNote(page any) string {
	var parts []string
	if li := str(page, "page", "last_index"); li != "" {
		parts = append(parts, "last_index="+li)
	}
	if hm, ok := field(page, "page", "has_more").(bool); ok {
		parts = append(parts, "has_more="+strconv.FormatBool(hm))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// changes reads the attempt's change summary and returns the modified and
// the added file.
func (d *demo) changes(ctx context.Context) (modified, added string, err error) {
	ch, err := d.call(ctx, "get_attempt_changes", map[string]any{"attempt_id": d.attemptID})
	if err != nil {
		return "", "", err
	}
	files := list(ch, "files")
	d.changedFiles = len(files)
	d.answer("summary: file_count=%s added=%s deleted=%s total_bytes=%s  blocked=%s",
		str(ch, "summary", "file_count"), str(ch, "summary", "added"), str(ch, "summary", "deleted"),
		str(ch, "summary", "total_bytes"), orDash(str(ch, "blocked")))
	for _, f := range files {
		path := str(f, "path")
		d.more("%-9s %-16s +%s -%s", str(f, "status"), path, str(f, "added"), str(f, "deleted"))
		switch {
		case strings.HasSuffix(path, "README.md"):
			modified = path
		case strings.HasSuffix(path, "NOTES.md"):
			added = path
		}
	}
	if boolean(ch, "blocked") {
		return "", "", fmt.Errorf("get_attempt_changes is blocked by the diff guard for two small files: %s", compact(ch, 300))
	}
	if modified == "" || added == "" {
		return "", "", fmt.Errorf("get_attempt_changes does not list README.md modified and NOTES.md added: %s", compact(ch, 300))
	}
	return modified, added, nil
}

func (d *demo) patch(ctx context.Context, path string) error {
	p, err := d.call(ctx, "get_attempt_patch", map[string]any{"attempt_id": d.attemptID, "paths": []string{path}})
	if err != nil {
		return err
	}
	patch := str(p, "patch")
	d.answer("%d bytes  truncated=%s  blocked=%s", len(patch), orDash(str(p, "truncated")), orDash(str(p, "blocked")))
	for _, l := range strings.Split(patch, "\n") {
		if strings.HasPrefix(l, "@@") || (strings.HasPrefix(l, "+") || strings.HasPrefix(l, "-")) &&
			!strings.HasPrefix(l, "+++") && !strings.HasPrefix(l, "---") {
			d.more("%s", clip(l, 90))
		}
	}
	if !strings.Contains(patch, "+Edited by the demo agent.") {
		return fmt.Errorf("get_attempt_patch for %s lacks the script's edit: %s", path, compact(p, 300))
	}
	return nil
}

func (d *demo) file(ctx context.Context, path string) error {
	f, err := d.call(ctx, "get_attempt_file", map[string]any{"attempt_id": d.attemptID, "path": path, "max_bytes": 4096})
	if err != nil {
		return err
	}
	content := str(f, "content")
	d.answer("size=%s  truncated=%s", orDash(str(f, "size")), orDash(str(f, "truncated")))
	for _, l := range strings.Split(strings.TrimRight(content, "\n"), "\n") {
		d.more("| %s", clip(l, 90))
	}
	if !strings.Contains(content, "Notes from the demo agent") {
		return fmt.Errorf("get_attempt_file %s does not hold what the script wrote: %s", path, compact(f, 300))
	}
	return nil
}

func (d *demo) summary() {
	d.section("Summary")
	names := make([]string, 0, len(d.tools))
	for n := range d.tools {
		names = append(names, n)
	}
	slices.Sort(names)
	d.printf("  tools/list and %d calls to %d tools over MCP (stdio) in %s.\n", d.calls, len(names),
		time.Since(d.started).Round(10*time.Millisecond))
	d.printf("  The SHELL attempt ran for %s in its own clone of the repository: %d log entries read in %d tails\n",
		d.attemptRan.Round(100*time.Millisecond), d.logEntries, d.tails)
	d.printf("  (%d with after_entry_index), %d files changed, the repository's own checkout untouched;\n",
		d.afterTails, d.changedFiles)
	d.printf("  stop_attempt ended it and the task moved to inreview. A real agent only changes the executor.\n")
	d.printf("  Next: connect your MCP client (README, \"Use it from an MCP client\"), or add a tool of your own.\n")
}

// call makes one tool call, printing it; an error result becomes an error.
func (d *demo) call(ctx context.Context, tool string, args map[string]any) (any, error) {
	d.printf("→ %s %s\n", tool, compact(args, 160))
	return d.callQuiet(ctx, tool, args)
}

// callQuiet makes one tool call without printing it.
func (d *demo) callQuiet(ctx context.Context, tool string, args map[string]any) (any, error) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	d.calls++
	d.tools[tool]++
	began := time.Now()
	res, err := d.session.CallTool(cctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if took := time.Since(began); took >= time.Second {
		d.slow = took
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tool, err)
	}
	var out any
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", tool, err)
		}
		if err := json.Unmarshal(b, &out); err != nil {
			return nil, fmt.Errorf("%s: structured result: %w", tool, err)
		}
	} else {
		var text strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text.WriteString(tc.Text)
			}
		}
		if err := json.Unmarshal([]byte(text.String()), &out); err != nil {
			out = map[string]any{"text": text.String()}
		}
	}
	if res.IsError {
		d.answer("error %s: %s", str(out, "code"), clip(str(out, "message"), 100))
		if h := str(out, "hint"); h != "" {
			d.more("hint: %s", clip(h, 100))
		}
		return nil, fmt.Errorf("%s answered %s: %s", tool, str(out, "code"), str(out, "message"))
	}
	return out, nil
}

// wrap prints names as indented lines of at most about 100 columns.
func (d *demo) wrap(names []string) {
	line := ""
	for i, n := range names {
		if i < len(names)-1 {
			n += ","
		}
		if line != "" && len(line)+1+len(n) > 96 {
			d.more("%s", line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += n
	}
	if line != "" {
		d.more("%s", line)
	}
}

// command is how to run this binary from the working directory.
func (d *demo) command() string {
	if wd, err := os.Getwd(); err == nil {
		if r, err := filepath.Rel(wd, d.exe); err == nil && !strings.HasPrefix(r, "..") {
			return r
		}
	}
	return d.exe
}

func requestID() string {
	b := make([]byte, 6)
	rand.Read(b)
	return "demo-" + hex.EncodeToString(b)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// ---- lenient access to decoded JSON ----

// field walks maps by key; nil when a step is missing.
func field(v any, path ...string) any {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// str formats a scalar field ("" when missing or null).
func str(v any, path ...string) string {
	switch x := field(v, path...).(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return ""
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

func integer(v any, path ...string) (int64, bool) {
	f, ok := field(v, path...).(float64)
	return int64(f), ok
}

func boolean(v any, path ...string) bool {
	b, _ := field(v, path...).(bool)
	return b
}

func list(v any, path ...string) []any {
	l, _ := field(v, path...).([]any)
	return l
}

// entryField reads a log entry's field, flat or under "entry".
func entryField(e any, key string) string {
	if s := str(e, key); s != "" {
		return s
	}
	return str(e, "entry", key)
}

// compact is v as one line of JSON with long strings cut, at most max bytes.
func compact(v any, max int) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(cutStrings(v)); err != nil {
		return fmt.Sprint(v)
	}
	return clip(strings.TrimSuffix(b.String(), "\n"), max)
}

func cutStrings(v any) any {
	switch x := v.(type) {
	case string:
		return cutString(x)
	case []string:
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = cutString(s)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cutStrings(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = cutStrings(e)
		}
		return out
	}
	return v
}

// cutString abbreviates a UUID and cuts other long strings.
func cutString(s string) string {
	if isUUID(s) {
		return short(s)
	}
	return clip(s, 40)
}

func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
				return false
			}
		}
	}
	return true
}

// clip cuts s to at most n runes, marking a cut with "…".
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// plural is "1 entry", "2 entries".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// short abbreviates an id for display.
func short(id string) string {
	if id == "" {
		return "-"
	}
	return clip(id, 9)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
