package scenario

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/plugboard/plugboard/abi/tasks"
	"github.com/plugboard/plugboard/host"
)

// Options configure a run.
type Options struct {
	// Binary is the plugboard binary to serve with; "" is the running
	// executable (os.Executable), right when plugboard itself runs a pack.
	Binary string
	// PluginDirs are the --plugins folders of every server; at least one.
	PluginDirs []string
	// Stderr receives one progress line per finished scenario; nil
	// discards them.
	Stderr io.Writer
	// Filter, a regular expression, selects the scenarios whose id or name
	// it matches; "" runs all.
	Filter string
	// Parallel is how many scenarios run at once (default 2).
	Parallel int
	// CacheDir is the compiled-code cache the run's servers share (each
	// server's DATA/compiled links to it); "" is a temporary directory
	// removed after the run. Reusing one across runs skips compilation.
	CacheDir string
	// Keep keeps the temporary directory (board, repository, server log)
	// of each scenario that does not pass, and names it in its message.
	Keep bool
	// Client connects the MCP client the scenarios run through; nil is
	// GoSDK.
	Client Connector
	// Transport is TransportStdio ("" too) or TransportHTTP.
	Transport string
}

// Report is the outcome of a run.
type Report struct {
	Pack     string        `json:"pack"`
	Version  string        `json:"version,omitempty"`
	Results  []Result      `json:"results"`
	Passed   int           `json:"passed"`
	Failed   int           `json:"failed"` // scenarios with status fail or error
	Duration time.Duration `json:"-"`
}

// Result is one scenario's outcome.
type Result struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Requirement string `json:"requirement"`
	// Status is StatusPass, StatusFail (the server did not behave as the
	// scenario says) or StatusError (the scenario could not be run: setup,
	// server start, interruption).
	Status string `json:"status"`
	// Message says, for a scenario that did not pass, which step failed,
	// what was expected and what came back (truncated).
	Message  string        `json:"message,omitempty"`
	Duration time.Duration `json:"-"`
}

// Result statuses.
const (
	StatusPass  = "pass"
	StatusFail  = "fail"
	StatusError = "error"
)

// MarshalJSON adds duration_ms.
func (r Result) MarshalJSON() ([]byte, error) {
	type plain Result
	return json.Marshal(struct {
		plain
		DurationMS int64 `json:"duration_ms"`
	}{plain(r), r.Duration.Milliseconds()})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (r *Result) UnmarshalJSON(b []byte) error {
	type plain Result
	var v struct {
		plain
		DurationMS int64 `json:"duration_ms"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*r = Result(v.plain)
	r.Duration = time.Duration(v.DurationMS) * time.Millisecond
	return nil
}

// MarshalJSON adds duration_ms.
func (r Report) MarshalJSON() ([]byte, error) {
	type plain Report
	return json.Marshal(struct {
		plain
		DurationMS int64 `json:"duration_ms"`
	}{plain(r), r.Duration.Milliseconds()})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (r *Report) UnmarshalJSON(b []byte) error {
	type plain Report
	var v struct {
		plain
		DurationMS int64 `json:"duration_ms"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*r = Report(v.plain)
	r.Duration = time.Duration(v.DurationMS) * time.Millisecond
	return nil
}

// Run runs the pack at packPath against live servers: each scenario gets a
// fresh board (a temporary data directory, a git repository, a project
// over it) and its own `plugboard serve` over stdio. It returns an error
// only when nothing could be run (the pack does not load, no plugin
// folder, a bad filter); scenario failures are in the report.
func Run(ctx context.Context, packPath string, opts Options) (Report, error) {
	start := time.Now()
	pack, err := Load(packPath)
	if err != nil {
		return Report{}, err
	}
	rep := Report{Pack: pack.Name, Version: pack.Version}
	scenarios := pack.Scenarios
	if opts.Filter != "" {
		re, err := regexp.Compile(opts.Filter)
		if err != nil {
			return rep, fmt.Errorf("filter: %w", err)
		}
		scenarios = nil
		for _, sc := range pack.Scenarios {
			if re.MatchString(sc.ID) || re.MatchString(sc.Name) {
				scenarios = append(scenarios, sc)
			}
		}
		if len(scenarios) == 0 {
			return rep, fmt.Errorf("no scenario of %s matches %q", pack.Name, opts.Filter)
		}
	}
	if opts.Binary == "" {
		if opts.Binary, err = os.Executable(); err != nil {
			return rep, fmt.Errorf("find the plugboard binary: %w", err)
		}
	}
	if opts.Binary, err = exec.LookPath(opts.Binary); err != nil {
		return rep, fmt.Errorf("plugboard binary: %w", err)
	}
	if len(opts.PluginDirs) == 0 {
		return rep, errors.New("no plugin folder: give the plugins to test (--plugins DIR)")
	}
	var dirs []string
	for _, d := range opts.PluginDirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return rep, err
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			return rep, fmt.Errorf("plugin folder %s: not a directory", d)
		}
		dirs = append(dirs, abs)
	}
	if _, err := exec.LookPath("git"); err != nil {
		return rep, errors.New("git is not on PATH: scenarios need a git repository")
	}
	root, err := os.MkdirTemp("", "plugboard-scenarios-")
	if err != nil {
		return rep, err
	}
	defer os.RemoveAll(root)
	cache := opts.CacheDir
	if cache == "" {
		cache = filepath.Join(root, "compiled")
	}
	if cache, err = filepath.Abs(cache); err != nil {
		return rep, err
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return rep, err
	}
	progress := opts.Stderr
	if progress == nil {
		progress = io.Discard
	}
	parallel := opts.Parallel
	if parallel <= 0 {
		parallel = 2
	}
	switch opts.Transport {
	case "", TransportStdio:
		opts.Transport = TransportStdio
	case TransportHTTP:
	default:
		return rep, fmt.Errorf("transport %q: want %s or %s", opts.Transport, TransportStdio, TransportHTTP)
	}
	if opts.Client == nil {
		opts.Client = GoSDK
	}
	env := &environment{binary: opts.Binary, plugins: dirs, cache: cache, root: root, keep: opts.Keep,
		client: opts.Client, transport: opts.Transport}
	rep.Results = make([]Result, len(scenarios))
	// Workers take the scenarios in pack order.
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		todo = make(chan int)
	)
	for range min(parallel, len(scenarios)) {
		wg.Go(func() {
			for i := range todo {
				res := env.runScenario(ctx, pack, scenarios[i], i+1)
				mu.Lock()
				rep.Results[i] = res
				fmt.Fprintln(progress, progressLine(res))
				mu.Unlock()
			}
		})
	}
	for i := range scenarios {
		todo <- i
	}
	close(todo)
	wg.Wait()
	for _, r := range rep.Results {
		if r.Status == StatusPass {
			rep.Passed++
		} else {
			rep.Failed++
		}
	}
	rep.Duration = time.Since(start)
	return rep, nil
}

func progressLine(r Result) string {
	line := fmt.Sprintf("%-5s %s — %s (%.1fs)", strings.ToUpper(r.Status), r.ID, r.Name, r.Duration.Seconds())
	if r.Status != StatusPass {
		first, _, _ := strings.Cut(r.Message, "\n")
		line += "\n      " + clip(first, 400)
	}
	return line
}

// environment is what every scenario of a run shares.
type environment struct {
	binary    string
	plugins   []string
	cache     string
	root      string
	keep      bool
	client    Connector
	transport string
}

// setupError marks a failure to set a scenario up (status error).
type setupError struct{ err error }

func (e *setupError) Error() string { return e.err.Error() }
func (e *setupError) Unwrap() error { return e.err }

func (env *environment) runScenario(ctx context.Context, pack *Pack, sc Scenario, n int) (res Result) {
	start := time.Now()
	res = Result{ID: sc.ID, Name: sc.Name, Requirement: sc.Requirement}
	setup := merged(pack.Setup, sc.Setup)
	sctx, cancel := context.WithTimeout(ctx, ms(0, setup.ScenarioTimeoutMS))
	defer cancel()
	dir := filepath.Join(env.root, fmt.Sprintf("%03d-%s", n, sc.ID))
	err := env.scenario(sctx, setup, sc, dir)
	res.Duration = time.Since(start)
	var se *setupError
	switch {
	case err == nil:
		res.Status = StatusPass
	case ctx.Err() != nil:
		res.Status, res.Message = StatusError, fmt.Sprintf("interrupted (%v): %v", ctx.Err(), err)
	case errors.As(err, &se):
		res.Status, res.Message = StatusError, "setup: "+err.Error()
	default:
		res.Status, res.Message = StatusFail, err.Error()
		if sctx.Err() != nil {
			res.Message = fmt.Sprintf("the scenario did not finish within scenario_timeout_ms (%d): %s", setup.ScenarioTimeoutMS, res.Message)
		}
		if sc.Then != "" {
			res.Message += "\nspec: WHEN " + sc.When + " THEN " + sc.Then
		}
	}
	if res.Status != StatusPass && env.keep {
		kept := filepath.Join(os.TempDir(), fmt.Sprintf("plugboard-scenarios-kept-%s-%d", sc.ID, time.Now().UnixNano()))
		if err := os.Rename(dir, kept); err == nil {
			res.Message += "\nkept: " + kept + " (data/ is the board: plugboard attempt ... --data " + filepath.Join(kept, "data") + "; server.log)"
			return res
		}
	}
	os.RemoveAll(dir) // worktrees can be large: do not keep them until the run ends
	return res
}

// scenario sets up the board, starts the server and runs the steps.
func (env *environment) scenario(ctx context.Context, setup Setup, sc Scenario, dir string) error {
	r := &runner{setup: setup, vars: newVars(), gateDir: filepath.Join(dir, "gates")}
	r.vars.dynamic = r.gateVar
	data := filepath.Join(dir, "data")
	for _, d := range []string{data, r.gateDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return &setupError{err}
		}
	}
	if err := os.Symlink(env.cache, filepath.Join(data, "compiled")); err != nil {
		return &setupError{err}
	}
	// The key that signs the shared cache is shared with it: a host with a
	// key of its own would discard what the others compiled.
	if err := os.MkdirAll(env.cache+"-keys", 0o700); err != nil {
		return &setupError{err}
	}
	if err := os.Symlink(env.cache+"-keys", filepath.Join(data, "keys")); err != nil {
		return &setupError{err}
	}
	repo := filepath.Join(dir, "repos", setup.Repo)
	if err := makeRepo(ctx, repo, setup.Files); err != nil {
		return &setupError{err}
	}
	attemptID, err := makeBoard(ctx, data, repo, setup, r.vars)
	if err != nil {
		return &setupError{err}
	}
	args := []string{"serve", "--data", data}
	for _, d := range env.plugins {
		args = append(args, "--plugins", d)
	}
	for _, a := range setup.ServeArgs {
		s, err := r.vars.str(a)
		if err != nil {
			return &setupError{fmt.Errorf("serve_args: %w", err)}
		}
		args = append(args, s)
	}
	if attemptID != "" && setup.Attempt.Context {
		args = append(args, "--attempt", attemptID)
	}
	conn, err := env.connect(ctx, args, dir)
	if err != nil {
		return &setupError{err}
	}
	defer func() {
		r.openGates()
		conn.close()
	}()
	r.c, r.logTail = conn, conn.log.tail
	if err := r.loadTools(ctx); err != nil {
		return err
	}
	return r.run(ctx, sc.Steps)
}

// cleanEnv is the environment of git and the server: the runner's, without
// what would point them at another board, attempt, configuration file or
// repository.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "PLUGBOARD_DATA", "PLUGBOARD_ATTEMPT_ID", "PLUGBOARD_CONFIG", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
			"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CEILING_DIRECTORIES":
			continue
		}
		out = append(out, kv)
	}
	return out
}

// makeRepo commits files to a new repository's main branch.
func makeRepo(ctx context.Context, repo string, files map[string]string) error {
	for path, content := range files {
		p := filepath.Join(repo, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return err
		}
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"},
		{"-c", "user.name=plugboard conformance", "-c", "user.email=conformance@plugboard.invalid", "-c", "commit.gpgsign=false",
			"commit", "-q", "-m", "initial"}} {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = repo
		cmd.Env = cleanEnv()
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// makeBoard creates the project (as `plugboard project create` does) and
// the setup's idle attempt, and defines the setup variables. It returns
// the attempt's id, if any.
func makeBoard(ctx context.Context, data, repo string, setup Setup, vs *vars) (string, error) {
	b, err := host.OpenBoard(ctx, host.BoardConfig{DataDir: data})
	if err != nil {
		return "", err
	}
	defer b.Close()
	spec := host.RepoSpec{Path: repo}
	if spec.SetupScript, err = vs.str(setup.SetupScript); err != nil {
		return "", fmt.Errorf("setup_script: %w", err)
	}
	if spec.CleanupScript, err = vs.str(setup.CleanupScript); err != nil {
		return "", fmt.Errorf("cleanup_script: %w", err)
	}
	p, err := b.CreateProject(ctx, setup.Project, []host.RepoSpec{spec})
	if err != nil {
		return "", fmt.Errorf("create project: %w", err)
	}
	vs.set("project_id", p.ID)
	vs.set("project_name", p.Name)
	vs.set("repo_id", p.Repos[0].ID)
	vs.set("repo_name", p.Repos[0].Name)
	vs.set("repo_path", repo)
	if setup.Attempt == nil {
		return "", nil
	}
	title := setup.Attempt.TaskTitle
	if title == "" {
		title = "Idle"
	}
	task, err := b.CreateTask(ctx, tasks.CreateTaskArgs{ProjectID: p.ID, Title: title})
	if err != nil {
		return "", fmt.Errorf("create task: %w", err)
	}
	// An attempt as it is between its creation and its first process: no
	// worktree, session or process.
	id, err := b.RecordIdleAttempt(ctx, task.TaskID, "pb/conformance-idle", filepath.Join(filepath.Dir(data), "idle-attempt"))
	if err != nil {
		return "", fmt.Errorf("record the idle attempt: %w", err)
	}
	vs.set("task_id", task.TaskID)
	vs.set("attempt_id", id)
	return id, nil
}

// tailWriter writes through to w and keeps the last max bytes.
type tailWriter struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
	max int
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.w.Write(p)
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

// tail returns the last 20 lines written.
func (t *tailWriter) tail() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimRight(string(t.buf), "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}
