package main

// The board commands let people set up a task board (projects, repos,
// tasks) and run and watch attempts from a terminal. They open the board
// in the data directory directly, as serve does; several plugboard
// processes may share one data directory.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/abi/tasks"
	plughost "github.com/plugboard/plugboard/host"
)

// exitInterrupted is the exit code of a board command stopped by Ctrl-C
// (SIGINT) or SIGTERM: 128 + SIGINT, as shells report it.
const exitInterrupted = 130

// followPoll is how often a follower polls the board for new log entries.
const followPoll = 200 * time.Millisecond

// settleQuiet is how long an attempt must look finished while its task is
// still inprogress before a follower believes it: between two steps of a
// chain (setup script → agent → cleanup script) no process runs for a
// moment, and another attempt of the same task may keep the task
// inprogress.
const settleQuiet = time.Second

// boardCmd is what every board command shares: --data, --log-level and
// the board flags (the "board flags" group).
type boardCmd struct {
	data     string
	logLevel string
	boardFlags
}

// newBoardCmd registers the shared flags on fs.
func newBoardCmd(fs *flag.FlagSet) *boardCmd {
	c := &boardCmd{}
	c.register(fs)
	return c
}

func (c *boardCmd) register(fs *flag.FlagSet) {
	fs.StringVar(&c.data, "data", "", "data directory holding the board (default: $PLUGBOARD_DATA, else the per-user data directory)")
	fs.StringVar(&c.logLevel, "log-level", "warn", "log level on stderr: debug, info, warn or error")
	c.boardFlags.register(fs)
}

// args applies the configuration file under the parsed flags (--config)
// and checks that between min and max positional arguments were given
// (max < 0: any number).
func (c *boardCmd) args(in *invocation, min, max int) error {
	if err := c.applyConfig(); err != nil {
		return err
	}
	return in.nargs(min, max)
}

// open opens the board in the data directory.
func (c *boardCmd) open(ctx context.Context, in *invocation) (*plughost.Board, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.logLevel)); err != nil {
		return nil, usageError("--log-level: %v", err)
	}
	log := slog.New(slog.NewTextHandler(in.stderr, &slog.HandlerOptions{Level: level}))
	if err := c.agentEnvConfig().Validate(); err != nil {
		return nil, usageError("%v", err)
	}
	data, err := dataDir(c.data)
	if err != nil {
		return nil, err
	}
	// OpenBoard prepares the data directory (the host's user's alone).
	return c.openBoard(ctx, data, log)
}

// fail reports a board error. An envelope prints as "code: message" and
// "hint: ..." on stderr (exit status 1); other errors go to main.
func (c *boardCmd) fail(in *invocation, err error) error {
	var env *abi.Envelope
	if !errors.As(err, &env) {
		return err
	}
	fmt.Fprintf(in.stderr, "%s: %s\n", env.Code, env.Message)
	if env.Hint != "" {
		fmt.Fprintf(in.stderr, "hint: %s\n", cliHint(env.Hint))
	}
	if len(env.Details) > 0 {
		if b, err := json.Marshal(env.Details); err == nil {
			fmt.Fprintf(in.stderr, "details: %s\n", b)
		}
	}
	return &exitError{code: 1, err: errSilent}
}

// withBoard opens the board from the flags, runs do with it and closes
// it: the preamble of every board command. Closing stops whatever the
// command started that still runs (an attempt's processes do not outlive
// the command).
func (c *boardCmd) withBoard(ctx context.Context, in *invocation, do func(b *plughost.Board) error) error {
	b, err := c.open(ctx, in)
	if err != nil {
		return err
	}
	defer b.Close()
	return do(b)
}

// boardQuery is a board command that asks the board one thing: it checks
// for between min and max positional arguments, runs check (flag checks
// that need no board; nil for none), opens the board, asks it with get —
// an error of get is reported by fail — and prints the answer as indented
// JSON when *asJSON is set, else with text (which may ask the board more,
// for its human view).
func boardQuery[T any](c *boardCmd, min, max int, asJSON *bool, check func() error,
	get func(ctx context.Context, in *invocation, b *plughost.Board) (T, error),
	text func(ctx context.Context, in *invocation, b *plughost.Board, res T) error) runFunc {
	return func(ctx context.Context, in *invocation) error {
		if err := c.args(in, min, max); err != nil {
			return err
		}
		if check != nil {
			if err := check(); err != nil {
				return err
			}
		}
		return c.withBoard(ctx, in, func(b *plughost.Board) error {
			res, err := get(ctx, in, b)
			if err != nil {
				return c.fail(in, err)
			}
			if *asJSON {
				return printJSON(in.stdout, res)
			}
			return text(ctx, in, b, res)
		})
	}
}

// toolCommands are the board's MCP tools that have a CLI command, for
// hints written for agents.
var toolCommands = map[string]string{
	"list_projects":      "`plugboard project list`",
	"list_repos":         "`plugboard repo list PROJECT`",
	"list_tasks":         "`plugboard task list PROJECT`",
	"list_task_attempts": "`plugboard attempt list TASK_ID`",
	"list_executors":     "`plugboard attempt executors`",
	"get_attempt_status": "`plugboard attempt status ATTEMPT_ID`",
	"stop_attempt":       "`plugboard attempt stop ATTEMPT_ID`",
}

var toolName = regexp.MustCompile(`\b[a-z]+(?:_[a-z]+)+\b`)

// cliHint names the CLI command where a hint names an MCP tool.
func cliHint(hint string) string {
	return toolName.ReplaceAllStringFunc(hint, func(w string) string {
		if cmd, ok := toolCommands[w]; ok {
			return cmd
		}
		return w
	})
}

// printJSON writes v indented, for the list and status commands.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// ---- projects and repos ----

// resolveProject finds a project by id or exact name.
func resolveProject(ctx context.Context, b *plughost.Board, ref string) (plughost.Project, error) {
	p, err := b.FindProject(ctx, ref)
	if errors.Is(err, plughost.ErrNotFound) {
		return p, abi.NewEnvelope(abi.CodeNotFound, fmt.Sprintf("no project named %q", ref),
			"run `plugboard project list` for project names and ids").WithDetail("project", ref)
	}
	return p, err
}

// splitRepoArg splits PATH[@BRANCH]. A path that exists as it is wins, so
// a directory whose name holds "@" still works.
func splitRepoArg(s string) (path, branch string, err error) {
	if fi, err := os.Stat(s); err == nil && fi.IsDir() {
		return s, "", nil
	}
	i := strings.LastIndex(s, "@")
	if i < 0 {
		return s, "", nil
	}
	if i == 0 || i == len(s)-1 {
		return "", "", usageError("--repo %q: want PATH or PATH@BRANCH", s)
	}
	return s[:i], s[i+1:], nil
}

func projectCreateCommand(fs *flag.FlagSet) runFunc {
	c := newBoardCmd(fs)
	var repos stringList
	fs.Var(&repos, "repo", "git repository PATH[@BRANCH] (repeatable); its name is the directory's; BRANCH overrides the target branch (default: the repository's current branch)")
	setup := fs.String("setup-script", "", "bash script run in each repo's worktree before the agent")
	cleanup := fs.String("cleanup-script", "", "bash script run in each repo's worktree after the agent")
	asJSON := fs.Bool("json", false, "print the project as JSON")
	var specs []plughost.RepoSpec
	parseRepos := func() error {
		specs = nil
		for _, r := range repos {
			path, branch, err := splitRepoArg(r)
			if err != nil {
				return err
			}
			specs = append(specs, plughost.RepoSpec{Path: path, TargetBranch: branch, SetupScript: *setup, CleanupScript: *cleanup})
		}
		return nil
	}
	return boardQuery(c, 1, 1, asJSON, parseRepos,
		func(ctx context.Context, in *invocation, b *plughost.Board) (plughost.Project, error) {
			p, err := b.CreateProject(ctx, in.args[0], specs)
			// Only the project's own name: a repo name clash is an ErrExists too.
			if errors.Is(err, plughost.ErrProjectExists) {
				err = abi.NewEnvelope(abi.CodeConflict, fmt.Sprintf("a project named %q exists", strings.TrimSpace(in.args[0])),
					"pick another name, or add repos to it with `plugboard repo add`")
			}
			return p, err
		}, printProject)
}

// printProject shows a project and its repos.
func printProject(_ context.Context, in *invocation, _ *plughost.Board, p plughost.Project) error {
	fmt.Fprintf(in.stdout, "project %s  %s\n", p.ID, p.Name)
	printRepos(in.stdout, p.Repos)
	return nil
}

// printRepos shows a project's repos as a table (nothing when there are
// none).
func printRepos(w io.Writer, repos []plughost.ProjectRepo) {
	if len(repos) == 0 {
		fmt.Fprintln(w, "no repos; add one with `plugboard repo add PROJECT --repo PATH`")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REPO_ID\tNAME\tTARGET_BRANCH\tSCRIPTS\tPATH")
	for _, r := range repos {
		var scripts []string
		if r.SetupScript != "" {
			scripts = append(scripts, "setup")
		}
		if r.CleanupScript != "" {
			scripts = append(scripts, "cleanup")
		}
		if len(scripts) == 0 {
			scripts = []string{"-"}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.ID, r.Name, r.TargetBranch, strings.Join(scripts, ","), r.Path)
	}
	tw.Flush()
}

func projectListCommand(fs *flag.FlagSet) runFunc {
	c := newBoardCmd(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	return boardQuery(c, 0, 0, asJSON, nil,
		func(ctx context.Context, _ *invocation, b *plughost.Board) (tasks.ProjectsOut, error) {
			return b.ListProjects(ctx)
		},
		func(_ context.Context, in *invocation, _ *plughost.Board, res tasks.ProjectsOut) error {
			if len(res.Projects) == 0 {
				fmt.Fprintln(in.stdout, "no projects; create one with `plugboard project create NAME --repo PATH`")
				return nil
			}
			tw := tabwriter.NewWriter(in.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "PROJECT_ID\tNAME\tREPOS\tCREATED")
			for _, p := range res.Projects {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", p.ProjectID, p.Name, p.RepoCount, shortTime(p.CreatedAt))
			}
			return tw.Flush()
		})
}

func repoAddCommand(fs *flag.FlagSet) runFunc {
	c := newBoardCmd(fs)
	repo := fs.String("repo", "", "git repository PATH[@BRANCH]; BRANCH overrides the target branch (default: the repository's current branch)")
	name := fs.String("name", "", "repo name, used as its directory in attempts (default: the directory's base name)")
	setup := fs.String("setup-script", "", "bash script run in the repo's worktree before the agent")
	cleanup := fs.String("cleanup-script", "", "bash script run in the repo's worktree after the agent")
	asJSON := fs.Bool("json", false, "print the project as JSON")
	var path, branch string
	parseRepo := func() (err error) {
		if *repo == "" {
			return usageError("repo add needs --repo PATH[@BRANCH]")
		}
		path, branch, err = splitRepoArg(*repo)
		return err
	}
	return boardQuery(c, 1, 1, asJSON, parseRepo,
		func(ctx context.Context, in *invocation, b *plughost.Board) (plughost.Project, error) {
			p, err := resolveProject(ctx, b, in.args[0])
			if err != nil {
				return p, err
			}
			return b.AddRepo(ctx, p.ID, plughost.RepoSpec{Path: path, Name: *name, TargetBranch: branch, SetupScript: *setup, CleanupScript: *cleanup})
		}, printProject)
}

func repoListCommand(fs *flag.FlagSet) runFunc {
	c := newBoardCmd(fs)
	asJSON := fs.Bool("json", false, "print JSON (as the list_repos tool does)")
	return func(ctx context.Context, in *invocation) error {
		if err := c.args(in, 1, 1); err != nil {
			return err
		}
		return c.withBoard(ctx, in, func(b *plughost.Board) error {
			p, err := resolveProject(ctx, b, in.args[0])
			if err != nil {
				return c.fail(in, err)
			}
			if !*asJSON {
				printRepos(in.stdout, p.Repos)
				return nil
			}
			res, err := b.ListRepos(ctx, tasks.ProjectIn{ProjectID: p.ID})
			if err != nil {
				return c.fail(in, err)
			}
			return printJSON(in.stdout, res)
		})
	}
}

// ---- tasks ----

func taskCreateCommand(fs *flag.FlagSet) runFunc {
	c := newBoardCmd(fs)
	desc := fs.String("description", "", "task description: the prompt's details (for the SHELL executor, the script)")
	descFile := fs.String("description-file", "", "read the description from FILE (- for stdin)")
	asJSON := fs.Bool("json", false, "print the task as JSON instead of its id")
	readDesc := func() error {
		if *desc != "" && *descFile != "" {
			return usageError("task create takes --description or --description-file, not both")
		}
		if *descFile == "" {
			return nil
		}
		var data []byte
		var err error
		if *descFile == "-" {
			data, err = io.ReadAll(os.Stdin)
		} else {
			data, err = os.ReadFile(*descFile)
		}
		if err != nil {
			return fmt.Errorf("--description-file: %w", err)
		}
		*desc = string(data)
		return nil
	}
	var p plughost.Project // the task's project, for the text view
	return boardQuery(c, 2, 2, asJSON, readDesc,
		func(ctx context.Context, in *invocation, b *plughost.Board) (t tasks.Task, err error) {
			if p, err = resolveProject(ctx, b, in.args[0]); err != nil {
				return t, err
			}
			return b.CreateTask(ctx, tasks.CreateTaskArgs{ProjectID: p.ID, Title: in.args[1], Description: *desc})
		},
		func(_ context.Context, in *invocation, _ *plughost.Board, t tasks.Task) error {
			// The id alone on stdout, so task=$(plugboard task create ...) works.
			fmt.Fprintln(in.stdout, t.TaskID)
			fmt.Fprintf(in.stderr, "created task %q (%s) in project %s\n", t.Title, t.Status, p.Name)
			return nil
		})
}

func taskListCommand(fs *flag.FlagSet) runFunc {
	c := newBoardCmd(fs)
	status := fs.String("status", "", "only tasks in this status: "+strings.Join(tasks.TaskStatuses(), ", "))
	limit := fs.Int("limit", 0, fmt.Sprintf("at most N tasks, newest first (default %d, at most %d)", plughost.DefaultTaskLimit, plughost.MaxTaskLimit))
	asJSON := fs.Bool("json", false, "print JSON (as the list_tasks tool does)")
	var p plughost.Project // the tasks' project, for the text view
	return boardQuery(c, 1, 1, asJSON, nil,
		func(ctx context.Context, in *invocation, b *plughost.Board) (res tasks.TasksOut, err error) {
			if p, err = resolveProject(ctx, b, in.args[0]); err != nil {
				return res, err
			}
			return b.ListTasks(ctx, tasks.ListTasksIn{ProjectID: p.ID, Status: tasks.TaskStatus(*status), Limit: *limit})
		},
		func(_ context.Context, in *invocation, _ *plughost.Board, res tasks.TasksOut) error {
			if len(res.Tasks) == 0 {
				fmt.Fprintf(in.stdout, "no tasks; create one with `plugboard task create %s TITLE`\n", shellQuote(p.Name))
				return nil
			}
			tw := tabwriter.NewWriter(in.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TASK_ID\tSTATUS\tATTEMPT\tLATEST_ATTEMPT_ID\tTITLE")
			for _, t := range res.Tasks {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.TaskID, t.Status, attemptSummary(t.AttemptSummary), deref(t.LatestAttemptID, "-"), oneLine(t.Title))
			}
			return tw.Flush()
		})
}

// attemptSummary is the ATTEMPT column of task list: none (no attempt),
// running (an attempt has a process running), failed (the latest
// attempt's newest process failed or was killed) or finished.
func attemptSummary(s tasks.AttemptSummary) string {
	switch {
	case s.HasInProgressAttempt:
		return "running"
	case s.LatestAttemptID == nil:
		return "none"
	case s.LastAttemptFailed:
		return "failed"
	}
	return "finished"
}

// ---- attempts ----

// splitRepoID splits REPO_ID[@BRANCH].
func splitRepoID(s string) tasks.StartRepo {
	id, branch, _ := strings.Cut(s, "@")
	return tasks.StartRepo{RepoID: id, TargetBranch: branch}
}

func attemptStartCommand(fs *flag.FlagSet) runFunc {
	c := newBoardCmd(fs)
	executor := fs.String("executor", "", "executor profile, e.g. SHELL or CLAUDE_CODE (see `plugboard attempt executors`)")
	variant := fs.String("variant", "", "executor variant (default: the profile's default)")
	var repos stringList
	fs.Var(&repos, "repo", "REPO_ID[@BRANCH] to work in (repeatable; default: every repo of the project at its target branch)")
	channel := fs.String("channel", tasks.ChannelNormalized, "log channel to stream: normalized or raw")
	asJSON := fs.Bool("json", false, "print JSON lines: the started attempt, then one per log entry, then the final status")
	return func(ctx context.Context, in *invocation) error {
		if err := c.args(in, 1, 1); err != nil {
			return err
		}
		stdout, stderr := in.stdout, in.stderr
		if *executor == "" {
			return usageError("attempt start needs --executor E (see `plugboard attempt executors`)")
		}
		if *channel != tasks.ChannelNormalized && *channel != tasks.ChannelRaw {
			return usageError("--channel must be normalized or raw, got %q", *channel)
		}
		sa := tasks.StartArgs{TaskID: in.args[0], Executor: *executor, Variant: *variant}
		for _, r := range repos {
			sa.Repos = append(sa.Repos, splitRepoID(r))
		}
		return c.withBoard(ctx, in, func(b *plughost.Board) error {
			res, err := b.StartTaskAttempt(ctx, sa)
			if err != nil {
				if ctx.Err() != nil {
					return &exitError{code: exitInterrupted, err: fmt.Errorf("interrupted while starting the attempt: %w", err)}
				}
				return c.fail(in, err)
			}
			p := &entryPrinter{w: stdout, json: *asJSON}
			if *asJSON {
				p.line(res)
			} else {
				fmt.Fprintf(stdout, "attempt %s started: executor %s, branch %s\n", res.AttemptID, res.Executor, res.WorkspaceBranch)
				for _, r := range res.Repos {
					fmt.Fprintf(stdout, "  repo %s from %s at %.12s\n", r.RepoName, r.TargetBranch, r.BaseCommit)
				}
			}
			fmt.Fprintf(stderr, "note: the attempt's processes belong to this plugboard process, so it stays in the foreground until the attempt ends.\n"+
				"      Ctrl-C stops the attempt (a second Ctrl-C kills it at once). Watch from elsewhere with `plugboard attempt logs %s --follow`.\n", res.AttemptID)
			f := &follower{b: b, p: p, attemptID: res.AttemptID, channel: *channel, proc: res.ExecutionProcessID, after: -1, headers: !*asJSON}
			if !*asJSON {
				f.header(res.ExecutionProcessID, string(res.RunReason))
			}
			st, err := f.run(ctx)
			if ctx.Err() != nil {
				return stopForeground(b, f, stderr)
			}
			if err != nil {
				return c.fail(in, err)
			}
			p.final(st)
			if st.State == tasks.StateCompleted {
				return nil
			}
			return &exitError{code: 1, err: errSilent}
		})
	}
}

// stopForeground stops an attempt whose foreground command was
// interrupted: gracefully, or at once on a second interrupt. It prints the
// rest of the log and the final state, and exits 130.
func stopForeground(b *plughost.Board, f *follower, stderr io.Writer) error {
	ctx := context.Background()
	fmt.Fprintf(stderr, "interrupted: stopping attempt %s (up to %s; Ctrl-C again to kill it at once)\n", f.attemptID, plughost.DefaultStopGrace)
	again := make(chan os.Signal, 1)
	signal.Notify(again, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(again)
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-again:
			fmt.Fprintln(stderr, "killing the attempt's processes")
			b.StopAttempt(ctx, tasks.StopIn{AttemptID: f.attemptID, Force: true})
		case <-done:
		}
	}()
	if _, err := b.StopAttempt(ctx, tasks.StopIn{AttemptID: f.attemptID}); err != nil {
		fmt.Fprintf(stderr, "stop attempt: %v\n", err)
	}
	// Print what the processes wrote while stopping, then the end state.
	drain, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if st, err := f.run(drain); err == nil {
		f.p.final(st)
	}
	return &exitError{code: exitInterrupted, err: errSilent}
}

// follower prints an attempt's log as it grows, moving from process to
// process as the attempt's chain runs (setup scripts, agent, cleanup
// scripts), until the attempt settles.
type follower struct {
	b         *plughost.Board
	p         *entryPrinter
	attemptID string
	channel   string
	proc      string // the process being read; "" until the attempt has one
	after     int64  // the last entry index printed of proc; -1 for none
	headers   bool   // print a line when moving to the next process
	// recover marks the processes of exited hosts killed while following,
	// so a follower in another process notices a host that died.
	recover bool
}

// run follows until the attempt settles — its state is no longer running
// and its task left inprogress (or it has looked finished for
// settleQuiet) — and returns its final status. It returns ctx's error when
// ctx ends first.
func (f *follower) run(ctx context.Context) (tasks.StatusOut, error) {
	var quietSince time.Time // when the attempt first looked finished
	lastRecover := time.Now()
	for {
		procStatus := ""
		if f.proc != "" {
			after := f.after
			page, err := f.b.TailAttemptLogs(ctx, plughost.LogsArgs{AttemptID: f.attemptID, Channel: f.channel, Limit: plughost.MaxLogLimit,
				AfterEntryIndex: &after, ExecutionProcessID: f.proc})
			if err != nil {
				return tasks.StatusOut{}, ctxErr(ctx, err)
			}
			for _, e := range page.Entries {
				f.p.entry(f.channel, page, e)
			}
			if page.Page.LastIndex != nil {
				f.after = *page.Page.LastIndex
			}
			if page.ProcessStatus != nil {
				procStatus = string(*page.ProcessStatus)
			}
			if page.Page.HasMore {
				continue
			}
		}
		// The log page is read before the status: a process that had ended
		// by then had all its entries stored (they are written before its
		// end is recorded), so nothing printed later can be missed.
		st, err := f.b.GetAttemptStatus(ctx, tasks.AttemptIn{AttemptID: f.attemptID})
		if err != nil {
			return st, ctxErr(ctx, err)
		}
		latest := deref(st.LatestExecutionProcessID, "")
		switch {
		case latest != "" && latest != f.proc && procStatus != tasks.ProcessRunning:
			// The process read so far ended and is drained: on to the next
			// one, which need not be the latest (a quick agent may have
			// ended before its cleanup script was seen).
			next, err := f.next(ctx)
			if err != nil {
				return st, ctxErr(ctx, err)
			}
			f.proc, f.after = next.ID, -1
			if f.headers {
				f.header(next.ID, next.RunReason)
			}
			quietSince = time.Time{}
			continue
		case st.State != tasks.StateRunning && procStatus != tasks.ProcessRunning && latest == f.proc:
			// Without a process yet the attempt may be starting (its task
			// not yet inprogress): only a quiet second settles it.
			if latest != "" && st.TaskStatus != tasks.StatusInProgress {
				return st, nil
			}
			if quietSince.IsZero() {
				quietSince = time.Now()
			} else if time.Since(quietSince) >= settleQuiet {
				return st, nil
			}
		default:
			quietSince = time.Time{}
		}
		if f.recover && time.Since(lastRecover) >= 2*time.Second {
			lastRecover = time.Now()
			if _, err := f.b.Recover(ctx); err != nil && ctx.Err() == nil {
				return st, err
			}
		}
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-time.After(followPoll):
		}
	}
}

// next returns the process that follows f.proc in the attempt's chain:
// the first state-deciding process created after it (dev servers have
// logs of their own), or the first one when f.proc is "".
func (f *follower) next(ctx context.Context) (plughost.Process, error) {
	procs, err := f.b.Processes(ctx, f.attemptID)
	if err != nil {
		return plughost.Process{}, err
	}
	seen := f.proc == ""
	var last plughost.Process
	for _, p := range procs {
		if p.RunReason == tasks.RunDevServer {
			continue
		}
		if seen {
			return p, nil
		}
		seen = p.ID == f.proc
		last = p
	}
	if last.ID == "" {
		return plughost.Process{}, fmt.Errorf("attempt %s: no process follows %s", f.attemptID, f.proc)
	}
	return last, nil // f.proc is gone (or last): the newest
}

// header marks the start of a process's entries in the human view.
func (f *follower) header(processID, runReason string) {
	if !f.p.json {
		fmt.Fprintf(f.p.w, "== %s process %s ==\n", runReason, processID)
	}
}

// ctxErr prefers ctx's error, so an interrupted query reads as an
// interruption.
func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// entryPrinter prints log entries and statuses compactly, or as JSON lines.
type entryPrinter struct {
	w    io.Writer
	json bool
}

// logLine is a log entry as --json prints it.
type logLine struct {
	ExecutionProcessID string          `json:"execution_process_id"`
	RunReason          string          `json:"run_reason"`
	Channel            string          `json:"channel"`
	Index              int64           `json:"entry_index"`
	Entry              json.RawMessage `json:"entry"`
}

func (p *entryPrinter) line(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	p.w.Write(append(b, '\n'))
}

// entry prints one entry: "#index time entry_type: content" (normalized)
// or "#index time stream: content" (raw).
func (p *entryPrinter) entry(channel string, page plughost.LogsResult, e plughost.LogEntry) {
	if p.json {
		p.line(logLine{ExecutionProcessID: deref(page.ExecutionProcessID, ""), RunReason: deref(page.RunReason, ""),
			Channel: channel, Index: e.EntryIndex, Entry: e.Entry})
		return
	}
	var v struct {
		Timestamp string `json:"timestamp"`
		EntryType string `json:"entry_type"`
		Stream    string `json:"stream"`
		Content   string `json:"content"`
	}
	if err := json.Unmarshal(e.Entry, &v); err != nil {
		fmt.Fprintf(p.w, "#%d %s\n", e.EntryIndex, e.Entry)
		return
	}
	kind := v.EntryType
	if channel == tasks.ChannelRaw {
		kind = v.Stream
	}
	content := strings.TrimRight(v.Content, "\n")
	content = strings.ReplaceAll(content, "\n", "\n    ")
	fmt.Fprintf(p.w, "#%d %s %s: %s\n", e.EntryIndex, clock(v.Timestamp), kind, content)
}

// final prints the line that ends a followed log.
func (p *entryPrinter) final(st tasks.StatusOut) {
	if p.json {
		p.line(st)
		return
	}
	fmt.Fprintf(p.w, "attempt %s %s (task %s)\n", st.AttemptID, stateText(st), st.TaskStatus)
}

// stateText is the state with its failure summary: "completed",
// "failed: killed (host exited)".
func stateText(st tasks.StatusOut) string {
	if st.FailureSummary != nil {
		return st.State + ": " + *st.FailureSummary
	}
	return st.State
}

func attemptListCommand(fs *flag.FlagSet) runFunc {
	c := newBoardCmd(fs)
	asJSON := fs.Bool("json", false, "print JSON (as the list_task_attempts tool does)")
	return boardQuery(c, 1, 1, asJSON, nil,
		func(ctx context.Context, in *invocation, b *plughost.Board) (tasks.AttemptsOut, error) {
			return b.ListTaskAttempts(ctx, tasks.TaskIn{TaskID: in.args[0]})
		},
		func(ctx context.Context, in *invocation, b *plughost.Board, res tasks.AttemptsOut) error {
			if len(res.Attempts) == 0 {
				fmt.Fprintf(in.stdout, "no attempts; start one with `plugboard attempt start %s --executor E`\n", res.TaskID)
				return nil
			}
			tw := tabwriter.NewWriter(in.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ATTEMPT_ID\tSTATE\tEXECUTOR\tBRANCH\tCREATED")
			for _, a := range res.Attempts {
				state := "?"
				if st, err := b.GetAttemptStatus(ctx, tasks.AttemptIn{AttemptID: a.AttemptID}); err == nil {
					state = st.State
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", a.AttemptID, state, a.Executor, a.WorkspaceBranch, shortTime(a.CreatedAt))
			}
			return tw.Flush()
		})
}

func attemptStatusCommand(fs *flag.FlagSet) runFunc {
	c := newBoardCmd(fs)
	asJSON := fs.Bool("json", false, "print JSON (as the get_attempt_status tool does)")
	return boardQuery(c, 1, 1, asJSON, nil,
		func(ctx context.Context, in *invocation, b *plughost.Board) (tasks.StatusOut, error) {
			return b.GetAttemptStatus(ctx, tasks.AttemptIn{AttemptID: in.args[0]})
		},
		func(_ context.Context, in *invocation, _ *plughost.Board, st tasks.StatusOut) error {
			tw := tabwriter.NewWriter(in.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "attempt\t%s\n", st.AttemptID)
			fmt.Fprintf(tw, "state\t%s\n", st.State)
			if st.FailureSummary != nil {
				fmt.Fprintf(tw, "failure\t%s\n", *st.FailureSummary)
			}
			fmt.Fprintf(tw, "task\t%s (%s)\n", st.TaskID, st.TaskStatus)
			fmt.Fprintf(tw, "branch\t%s\n", st.WorkspaceBranch)
			fmt.Fprintf(tw, "executor\t%s\n", st.Executor)
			if st.LatestExecutionProcessID != nil {
				fmt.Fprintf(tw, "latest process\t%s (%s)\n", *st.LatestExecutionProcessID, deref(st.LatestRunReason, "?"))
			} else {
				fmt.Fprintf(tw, "latest process\tnone\n")
			}
			fmt.Fprintf(tw, "last activity\t%s\n", shortTime(deref(st.LastActivityAt, "")))
			if st.QueuedFollowUp {
				fmt.Fprintf(tw, "queued follow-up\tyes\n")
			}
			return tw.Flush()
		})
}

func attemptLogsCommand(fs *flag.FlagSet) runFunc {
	c := newBoardCmd(fs)
	channel := fs.String("channel", tasks.ChannelNormalized, "normalized (entries by type) or raw (lines by stream)")
	limit := fs.Int("limit", 0, fmt.Sprintf("entries in the page (default %d, at most %d)", plughost.DefaultLogLimit, plughost.MaxLogLimit))
	cursor := fs.Int64("cursor", -1, "print the page of entries before this index (from a previous page's hint)")
	process := fs.String("process", "", "execution process id to read (default: the attempt's latest process)")
	follow := fs.Bool("follow", false, "keep printing new entries until the attempt ends, then its final status")
	asJSON := fs.Bool("json", false, "print one JSON object per line")
	return func(ctx context.Context, in *invocation) error {
		if err := c.args(in, 1, 1); err != nil {
			return err
		}
		stdout, stderr := in.stdout, in.stderr
		if *follow && *cursor >= 0 {
			return usageError("attempt logs takes --cursor or --follow, not both")
		}
		return c.withBoard(ctx, in, func(b *plughost.Board) error {
			la := plughost.LogsArgs{AttemptID: in.args[0], Channel: *channel, Limit: *limit, ExecutionProcessID: *process}
			if *cursor >= 0 {
				la.Cursor = cursor
			}
			page, err := b.TailAttemptLogs(ctx, la)
			if err != nil {
				return c.fail(in, err)
			}
			p := &entryPrinter{w: stdout, json: *asJSON}
			if !*asJSON && page.ExecutionProcessID != nil {
				fmt.Fprintf(stderr, "process %s (%s, %s)\n", *page.ExecutionProcessID, deref(page.RunReason, "?"), deref(page.ProcessStatus, "?"))
			}
			for _, e := range page.Entries {
				p.entry(string(page.Channel), page, e)
			}
			if !*follow {
				if !*asJSON && page.Page.NextCursor != nil {
					fmt.Fprintf(stderr, "(%d older entries: --cursor %d)\n", *page.Page.NextCursor, *page.Page.NextCursor)
				}
				return nil
			}
			f := &follower{b: b, p: p, attemptID: page.AttemptID, channel: string(page.Channel), proc: deref(page.ExecutionProcessID, ""),
				after: -1, headers: !*asJSON, recover: true}
			if page.Page.LastIndex != nil {
				f.after = *page.Page.LastIndex
			}
			st, err := f.run(ctx)
			if ctx.Err() != nil {
				return &exitError{code: exitInterrupted, err: errSilent}
			}
			if err != nil {
				return c.fail(in, err)
			}
			p.final(st)
			return nil
		})
	}
}

func attemptStopCommand(fs *flag.FlagSet) runFunc {
	c := newBoardCmd(fs)
	force := fs.Bool("force", false, "kill at once instead of interrupting and waiting the grace period")
	asJSON := fs.Bool("json", false, "print JSON (as the stop_attempt tool does)")
	return boardQuery(c, 1, 1, asJSON, nil,
		func(ctx context.Context, in *invocation, b *plughost.Board) (tasks.StopOut, error) {
			return b.StopAttempt(context.WithoutCancel(ctx), tasks.StopIn{AttemptID: in.args[0], Force: *force})
		},
		func(_ context.Context, in *invocation, _ *plughost.Board, res tasks.StopOut) error {
			st := tasks.StatusOut{AttemptID: res.AttemptID, State: string(res.State), FailureSummary: res.FailureSummary, TaskStatus: res.TaskStatus}
			if res.AlreadyFinished {
				fmt.Fprintf(in.stdout, "attempt %s had nothing running: %s (task %s)\n", res.AttemptID, stateText(st), res.TaskStatus)
				return nil
			}
			fmt.Fprintf(in.stdout, "stopped %d process(es) of attempt %s: %s (task %s)\n", len(res.Stopped), res.AttemptID, stateText(st), res.TaskStatus)
			return nil
		})
}

func attemptExecutorsCommand(fs *flag.FlagSet) runFunc {
	c := newBoardCmd(fs)
	asJSON := fs.Bool("json", false, "print JSON (as the list_executors tool does)")
	return boardQuery(c, 0, 0, asJSON, nil,
		func(ctx context.Context, _ *invocation, b *plughost.Board) (tasks.ExecutorsOut, error) {
			return b.ListExecutors(ctx)
		},
		func(_ context.Context, in *invocation, b *plughost.Board, res tasks.ExecutorsOut) error {
			tw := tabwriter.NewWriter(in.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "EXECUTOR\tAVAILABLE\tVARIANTS\tDEFAULT_VARIANT\tVERIFIED_WITH")
			for _, e := range res.Executors {
				avail := "no"
				if e.Available {
					avail = "yes"
				}
				verified := "-"
				if v := b.ExecutorVerifiedWith(e.Executor); v != "" {
					verified = v
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.Executor, avail, orNone(e.Variants), deref(e.DefaultVariant, "-"), verified)
			}
			return tw.Flush()
		})
}

// ---- small helpers ----

func deref[T ~string](s *T, def string) string {
	if s == nil {
		return def
	}
	return string(*s)
}

// shortTime shows a stored timestamp in local time to the second.
func shortTime(s string) string {
	t, err := time.Parse(plughost.TimeFormat, s)
	if err != nil {
		if s == "" {
			return "-"
		}
		return s
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

// clock shows an entry's RFC 3339 timestamp as local time of day.
func clock(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s
	}
	return t.Local().Format("15:04:05.000")
}

func oneLine(s string) string {
	first, _, cut := strings.Cut(s, "\n")
	if cut {
		return first + " …"
	}
	return first
}

// shellQuote quotes s for a command line shown to the user.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`|&;<>()*?[]#~!{}") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func hostListCommand(fs *flag.FlagSet) runFunc {
	c := newBoardCmd(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	// hostsOut is what --json prints: {"hosts": [...]}.
	type hostsOut struct {
		Hosts []plughost.HostInfo `json:"hosts"`
	}
	return boardQuery(c, 0, 0, asJSON, nil,
		func(ctx context.Context, _ *invocation, b *plughost.Board) (hostsOut, error) {
			hosts, err := b.Hosts(ctx)
			return hostsOut{hosts}, err
		},
		func(_ context.Context, in *invocation, _ *plughost.Board, res hostsOut) error {
			tw := tabwriter.NewWriter(in.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "HOST_ID\tSTATE\tPROCESSES\tLAST_SEEN\tRUNNING_ATTEMPTS")
			for _, h := range res.Hosts {
				state := "down"
				if h.Alive {
					state = "alive"
				}
				if h.This {
					state += " (this data directory)"
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\n", h.HostID, state, h.Processes, shortTime(h.LastSeen), h.RunningAttempts)
			}
			return tw.Flush()
		})
}
