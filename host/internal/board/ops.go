package board

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/abi/tasks"
	"github.com/plugboard/plugboard/host/internal/board/executor"
	"github.com/plugboard/plugboard/host/internal/board/gitops"
	"github.com/plugboard/plugboard/host/internal/store"
)

// ---- projects and repos (people set these up through the CLI) ----

// RepoSpec names a repository to add to a project.
type RepoSpec struct {
	Path          string
	Name          string // "" = the directory's base name
	TargetBranch  string // "" = the repository's current branch
	SetupScript   string
	CleanupScript string
}

// CreateProject creates a project with its repositories.
func (b *Board) CreateProject(ctx context.Context, name string, repos []RepoSpec) (store.Project, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return store.Project{}, errors.New("a project needs a name")
	}
	// Validate every repo before creating anything, then create the project
	// and attach its repos in one transaction: nothing half-made.
	resolved := make([]store.ProjectRepo, 0, len(repos))
	byName := map[string]string{}
	for _, rs := range repos {
		pr, err := b.resolveRepo(ctx, rs)
		if err != nil {
			return store.Project{}, err
		}
		if other, taken := byName[pr.Name]; taken && other != pr.Path {
			return store.Project{}, abi.NewEnvelope(abi.CodeConflict,
				fmt.Sprintf("two repos are named %q (%s and %s); the repos of a project need distinct names, which prefix their paths in attempts",
					pr.Name, other, pr.Path),
				fmt.Sprintf("create the project with one of them, then add the other under another name: plugboard repo add %s --repo %s --name NAME",
					name, pr.Path)).WithDetail("repo_name", pr.Name)
		}
		byName[pr.Name] = pr.Path
		resolved = append(resolved, pr)
	}
	return b.store.CreateProjectWithRepos(ctx, name, resolved)
}

// AddRepo adds (or updates) a repository of a project.
func (b *Board) AddRepo(ctx context.Context, projectID string, rs RepoSpec) (store.Project, error) {
	if _, err := b.store.GetProject(ctx, projectID); err != nil {
		return store.Project{}, err
	}
	pr, err := b.resolveRepo(ctx, rs)
	if err != nil {
		return store.Project{}, err
	}
	if err := b.store.AddProjectRepo(ctx, projectID, pr); err != nil {
		return store.Project{}, err
	}
	return b.store.GetProject(ctx, projectID)
}

func (b *Board) resolveRepo(ctx context.Context, rs RepoSpec) (store.ProjectRepo, error) {
	abs, err := filepath.Abs(rs.Path)
	if err != nil {
		return store.ProjectRepo{}, err
	}
	repo, err := gitops.Open(ctx, abs)
	if err != nil {
		return store.ProjectRepo{}, err
	}
	branch := rs.TargetBranch
	if branch == "" {
		if branch, err = gitops.DefaultBranch(ctx, repo.Path); err != nil {
			return store.ProjectRepo{}, err
		}
	} else if ok, err := gitops.BranchExists(ctx, repo.Path, branch); err != nil {
		return store.ProjectRepo{}, err
	} else if !ok {
		return store.ProjectRepo{}, fmt.Errorf("repo %s has no branch %q", repo.Path, branch)
	}
	name := rs.Name
	if name == "" {
		name = filepath.Base(repo.Path)
	}
	if name == "" || strings.ContainsAny(name, "/\\\x00") || name == "." || name == ".." || name == ".git" {
		return store.ProjectRepo{}, fmt.Errorf("repo name %q is not usable as a path prefix: pass a simple name", name)
	}
	r, err := b.store.EnsureRepo(ctx, name, repo.Path)
	if err != nil {
		return store.ProjectRepo{}, err
	}
	if rs.Name != "" {
		// A name asked for wins over the one the path was registered
		// under; AddProjectRepo renames the repo.
		r.Name = rs.Name
	}
	return store.ProjectRepo{Repo: r, TargetBranch: branch, SetupScript: rs.SetupScript, CleanupScript: rs.CleanupScript}, nil
}

// ProjectsResult answers list_projects.
type ProjectsResult = tasks.ProjectsOut

// ProjectInfo is a project as list_projects shows it.
type ProjectInfo = tasks.Project

// ListProjects lists every project.
func (b *Board) ListProjects(ctx context.Context) (ProjectsResult, error) {
	ps, err := b.store.ListProjects(ctx)
	if err != nil {
		return ProjectsResult{}, err
	}
	out := ProjectsResult{Projects: []ProjectInfo{}}
	for _, p := range ps {
		out.Projects = append(out.Projects, ProjectInfo{ProjectID: p.ID, Name: p.Name, RepoCount: len(p.Repos),
			CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt})
	}
	return out, nil
}

// ProjectArgs identifies a project.
type ProjectArgs = tasks.ProjectIn

// ReposResult answers list_repos.
type ReposResult = tasks.ReposOut

// RepoInfo is a project's repo as agents see it.
type RepoInfo = tasks.Repo

// ListRepos lists a project's repos.
func (b *Board) ListRepos(ctx context.Context, a ProjectArgs) (ReposResult, error) {
	if err := requireID("project_id", a.ProjectID, "list_projects"); err != nil {
		return ReposResult{}, err
	}
	p, err := b.store.GetProject(ctx, a.ProjectID)
	if err != nil {
		return ReposResult{}, notFound(err, "project", "project_id", a.ProjectID, "list_projects")
	}
	out := ReposResult{ProjectID: p.ID, Repos: []RepoInfo{}}
	for _, r := range p.Repos {
		out.Repos = append(out.Repos, RepoInfo{RepoID: r.ID, RepoName: r.Name, TargetBranch: r.TargetBranch,
			HasSetupScript: r.SetupScript != "", HasCleanupScript: r.CleanupScript != ""})
	}
	return out, nil
}

// ExecutorsResult answers list_executors.
type ExecutorsResult = tasks.ExecutorsOut

// ExecutorInfo is one executor as agents choose it.
type ExecutorInfo = tasks.Executor

// ListExecutors lists the executor profiles.
func (b *Board) ListExecutors(context.Context) (ExecutorsResult, error) {
	out := ExecutorsResult{Executors: []ExecutorInfo{}}
	for _, p := range b.executors.List() {
		info := ExecutorInfo{Executor: p.Executor, Variants: p.VariantNames(), SupportsMCP: p.SupportsMCP,
			Available: p.Available, OutputFormat: p.OutputFormat}
		if p.DefaultVariant != "" {
			dv := p.DefaultVariant
			info.DefaultVariant = &dv
		}
		out.Executors = append(out.Executors, info)
	}
	return out, nil
}

// ---- tasks ----

// ListTasksArgs are list_tasks' arguments.
type ListTasksArgs = tasks.ListTasksIn

// Task list limits.
const (
	DefaultTaskLimit = 50
	MaxTaskLimit     = 200
)

// TasksResult answers list_tasks.
type TasksResult = tasks.TasksOut

// ListTasks lists a project's tasks with their attempt summaries.
func (b *Board) ListTasks(ctx context.Context, a ListTasksArgs) (TasksResult, error) {
	if err := requireID("project_id", a.ProjectID, "list_projects"); err != nil {
		return TasksResult{}, err
	}
	if a.Status != "" && !slices.Contains(store.TaskStatuses, string(a.Status)) {
		return TasksResult{}, invalid("status", fmt.Sprintf("status %q is not one of %s", a.Status, strings.Join(store.TaskStatuses, ", ")),
			"pass one of "+strings.Join(store.TaskStatuses, " | ")+" or omit status")
	}
	limit, err := clampLimit("limit", a.Limit, DefaultTaskLimit, MaxTaskLimit)
	if err != nil {
		return TasksResult{}, err
	}
	if _, err := b.store.GetProject(ctx, a.ProjectID); err != nil {
		return TasksResult{}, notFound(err, "project", "project_id", a.ProjectID, "list_projects")
	}
	list, err := b.store.ListTasks(ctx, a.ProjectID, string(a.Status), limit)
	if err != nil {
		return TasksResult{}, err
	}
	return TasksResult{ProjectID: a.ProjectID, Tasks: convert(list, taskDetailOf), Count: len(list)}, nil
}

// clampLimit applies a default to 0 and caps the value; negative is an error.
func clampLimit(field string, v, def, max int) (int, error) {
	switch {
	case v < 0:
		return 0, invalid(field, fmt.Sprintf("%s must be positive, got %d", field, v), fmt.Sprintf("omit %s or pass 1-%d", field, max))
	case v == 0:
		return def, nil
	case v > max:
		return max, nil
	}
	return v, nil
}

// TaskArgs identifies a task.
type TaskArgs = tasks.TaskIn

// GetTask returns a task with its attempt summary.
func (b *Board) GetTask(ctx context.Context, a TaskArgs) (tasks.TaskDetail, error) {
	if err := requireID("task_id", a.TaskID, "list_tasks"); err != nil {
		return tasks.TaskDetail{}, err
	}
	t, err := b.store.GetTask(ctx, a.TaskID)
	if err != nil {
		return tasks.TaskDetail{}, notFound(err, "task", "task_id", a.TaskID, "list_tasks")
	}
	sum, err := b.store.TaskSummary(ctx, a.TaskID)
	return taskDetailOf(store.TaskWithSummary{Task: t, AttemptSummary: sum}), err
}

// CreateTaskArgs are create_task's arguments (without request_id, which
// stays with the host's idempotency).
type CreateTaskArgs = tasks.CreateTaskArgs

// MaxTitleLen caps a task title.
const MaxTitleLen = 500

// CreateTask creates a task in status todo.
func (b *Board) CreateTask(ctx context.Context, a CreateTaskArgs) (tasks.Task, error) {
	if err := requireID("project_id", a.ProjectID, "list_projects"); err != nil {
		return tasks.Task{}, err
	}
	title := strings.TrimSpace(a.Title)
	if title == "" {
		return tasks.Task{}, abi.NewEnvelope(abi.CodeMissingRequired, "title is required and must not be blank",
			"pass a short title; put details in description").WithDetail("field", "title")
	}
	if len(title) > MaxTitleLen {
		return tasks.Task{}, invalid("title", fmt.Sprintf("title is %d bytes, over %d", len(title), MaxTitleLen), "shorten title; put details in description")
	}
	t, err := b.store.CreateTask(ctx, a.ProjectID, title, a.Description)
	if err != nil {
		return taskOf(t), notFound(err, "project", "project_id", a.ProjectID, "list_projects")
	}
	if err := b.store.RecordEvent(ctx, store.EventTaskCreated, t.ID, map[string]any{"project_id": t.ProjectID, "title": t.Title}); err != nil {
		b.log.Warn("record task.created", "task_id", t.ID, "err", err)
	}
	return taskOf(t), nil
}

// UpdateTaskArgs are update_task's arguments; absent fields stay.
type UpdateTaskArgs = tasks.UpdateTaskIn

// UpdateTask changes a task's title, description or status.
func (b *Board) UpdateTask(ctx context.Context, a UpdateTaskArgs) (tasks.Task, error) {
	if err := requireID("task_id", a.TaskID, "list_tasks"); err != nil {
		return tasks.Task{}, err
	}
	if a.Title == nil && a.Description == nil && a.Status == nil {
		return tasks.Task{}, abi.NewEnvelope(abi.CodeMissingRequired, "nothing to update",
			"pass at least one of title, description, status").WithDetail("field", "title")
	}
	if a.Title != nil {
		t := strings.TrimSpace(*a.Title)
		if t == "" || len(t) > MaxTitleLen {
			return tasks.Task{}, invalid("title", "title must be 1-500 bytes and not blank", "pass a short title or omit it")
		}
		a.Title = &t
	}
	var status *string
	if a.Status != nil {
		status = ptr(string(*a.Status))
		if !slices.Contains(store.TaskStatuses, *status) {
			return tasks.Task{}, invalid("status", fmt.Sprintf("status %q is not one of %s", *status, strings.Join(store.TaskStatuses, ", ")),
				"pass one of "+strings.Join(store.TaskStatuses, " | "))
		}
	}
	t, err := b.store.UpdateTask(ctx, a.TaskID, store.TaskUpdate{Title: a.Title, Description: a.Description, Status: status})
	return taskOf(t), notFound(err, "task", "task_id", a.TaskID, "list_tasks")
}

// DeleteResult answers delete_task.
type DeleteResult = tasks.DeleteTaskOut

// DeleteTask stops the task's processes, removes its worktrees and
// branches, then deletes it with everything below it.
func (b *Board) DeleteTask(ctx context.Context, a TaskArgs) (DeleteResult, error) {
	if err := requireID("task_id", a.TaskID, "list_tasks"); err != nil {
		return DeleteResult{}, err
	}
	if _, err := b.store.GetTask(ctx, a.TaskID); err != nil {
		return DeleteResult{}, notFound(err, "task", "task_id", a.TaskID, "list_tasks")
	}
	attempts, err := b.store.ListAttempts(ctx, a.TaskID)
	if err != nil {
		return DeleteResult{}, err
	}
	out := DeleteResult{TaskID: a.TaskID}
	for _, at := range attempts {
		stopped, err := b.stopAttempt(ctx, at.ID, true, true)
		if err != nil {
			return out, err
		}
		out.StoppedProcesses += len(stopped)
	}
	for _, at := range attempts {
		repos, err := b.store.AttemptRepos(ctx, at.ID)
		if err != nil {
			return out, err
		}
		for _, r := range repos {
			c, err := b.clone(ctx, at.ID, r)
			if err != nil {
				return out, err
			}
			if err := gitops.RemoveClone(ctx, c, at.Branch); err != nil {
				return out, fmt.Errorf("remove worktree of attempt %s: %w", at.ID, err)
			}
			out.RemovedWorktrees++
		}
		os.RemoveAll(b.attemptRoot(at.ID))
		os.RemoveAll(b.hostGitRoot(at.ID))
		os.RemoveAll(b.tempDir(at.ID))
	}
	if err := b.store.DeleteTask(ctx, a.TaskID); err != nil {
		return out, notFound(err, "task", "task_id", a.TaskID, "list_tasks")
	}
	out.Deleted = true
	return out, nil
}

// attemptRoot is the directory holding an attempt's worktrees: one clone
// per repo (see gitops.Clone), the agent's.
func (b *Board) attemptRoot(attemptID string) string {
	return filepath.Join(b.cfg.DataDir, "worktrees", attemptID)
}

// hostGitRoot holds the host's git dirs over an attempt's clones, beside
// the attempt directory rather than in it: the agent is not pointed at
// them, and nothing it finds by walking up from its worktree leads there.
func (b *Board) hostGitRoot(attemptID string) string {
	return filepath.Join(b.cfg.DataDir, "gitdirs", attemptID)
}

// clone is where repo r of an attempt lives, from the board's records.
// When the repository's record cannot be read, the error comes with a
// Clone whose Source is empty, which still serves reads of the attempt.
func (b *Board) clone(ctx context.Context, attemptID string, r store.AttemptRepo) (gitops.Clone, error) {
	src, err := b.repoPath(ctx, r.RepoID)
	return gitops.Clone{Source: src, Dir: r.WorktreeDir, HostDir: filepath.Join(b.hostGitRoot(attemptID), r.RepoName)}, err
}

func (b *Board) repoPath(ctx context.Context, repoID string) (string, error) {
	r, err := b.store.GetRepo(ctx, repoID)
	if err != nil {
		return "", err
	}
	return r.Path, nil
}

// ---- attempts ----

// AttemptsResult answers list_task_attempts.
type AttemptsResult = tasks.AttemptsOut

// AttemptInfo is one attempt in list_task_attempts.
type AttemptInfo = tasks.Attempt

// ListTaskAttempts lists a task's attempts, newest first.
func (b *Board) ListTaskAttempts(ctx context.Context, a TaskArgs) (AttemptsResult, error) {
	if err := requireID("task_id", a.TaskID, "list_tasks"); err != nil {
		return AttemptsResult{}, err
	}
	if _, err := b.store.GetTask(ctx, a.TaskID); err != nil {
		return AttemptsResult{}, notFound(err, "task", "task_id", a.TaskID, "list_tasks")
	}
	list, err := b.store.ListAttempts(ctx, a.TaskID)
	if err != nil {
		return AttemptsResult{}, err
	}
	out := AttemptsResult{TaskID: a.TaskID, Attempts: []AttemptInfo{}}
	for i, at := range list {
		info := AttemptInfo{AttemptID: at.ID, WorkspaceBranch: at.Branch, Executor: at.Executor, CreatedAt: at.CreatedAt, UpdatedAt: at.UpdatedAt}
		if se, err := b.store.LatestSession(ctx, at.ID); err == nil {
			info.LatestSessionID, info.LatestSessionExecutor = &se.ID, &se.Executor
		} else if !errors.Is(err, store.ErrNotFound) {
			return AttemptsResult{}, err
		}
		if i == 0 {
			id := at.ID
			out.LatestAttemptID, out.LatestSessionID = &id, info.LatestSessionID
		}
		out.Attempts = append(out.Attempts, info)
	}
	return out, nil
}

// StartArgs are start_task_attempt's arguments (without request_id, which
// stays with the host's idempotency).
type StartArgs = tasks.StartArgs

// StartRepoArg selects a repo for an attempt; TargetBranch overrides the
// project's.
type StartRepoArg = tasks.StartRepo

// StartResult answers start_task_attempt.
type StartResult = tasks.StartOut

// StartTaskAttempt creates one worktree per selected repo (all of the
// project's when none are selected) on a fresh branch — a clone of the
// repo sharing its objects, with a git dir of its own that the agent may
// rewrite, and the host's git dir over it — moves the task to inprogress
// and starts the first process: a setup script, or the agent.
func (b *Board) StartTaskAttempt(ctx context.Context, a StartArgs) (StartResult, error) {
	if err := requireID("task_id", a.TaskID, "list_tasks"); err != nil {
		return StartResult{}, err
	}
	task, err := b.store.GetTask(ctx, a.TaskID)
	if err != nil {
		return StartResult{}, notFound(err, "task", "task_id", a.TaskID, "list_tasks")
	}
	profile, variant, err := b.resolveExecutor(a.Executor, a.Variant)
	if err != nil {
		return StartResult{}, err
	}
	// Before any worktree is made: nothing runs unconfined by accident.
	if err := b.sandboxRefusal(); err != nil {
		return StartResult{}, err
	}
	project, err := b.store.GetProject(ctx, task.ProjectID)
	if err != nil {
		return StartResult{}, err
	}
	selected, err := selectRepos(project, a.Repos)
	if err != nil {
		return StartResult{}, err
	}
	attemptID := store.NewID()
	dir := b.attemptRoot(attemptID)
	branch := gitops.BranchName(attemptID[:8], task.Title)
	now := store.Now()
	attempt := store.Attempt{ID: attemptID, TaskID: task.ID, HostID: b.hostID, Branch: branch, Executor: profile.Executor, Variant: variant,
		Dir: dir, CreatedAt: now, UpdatedAt: now}
	var repos []store.AttemptRepo
	undo := func() {
		for _, r := range repos {
			if c, err := b.clone(context.WithoutCancel(ctx), attemptID, r); err == nil {
				gitops.RemoveClone(context.WithoutCancel(ctx), c, branch)
			}
		}
		os.RemoveAll(dir)
		os.RemoveAll(b.hostGitRoot(attemptID))
	}
	for _, pr := range selected {
		wt := filepath.Join(dir, pr.Name)
		base, err := gitops.AddClone(ctx, gitops.Clone{Source: pr.Path, Dir: wt, HostDir: filepath.Join(b.hostGitRoot(attemptID), pr.Name)},
			branch, pr.TargetBranch)
		if err != nil {
			undo()
			return StartResult{}, fmt.Errorf("create worktree for repo %s: %w", pr.Name, err)
		}
		repos = append(repos, store.AttemptRepo{AttemptID: attemptID, RepoID: pr.ID, RepoName: pr.Name, WorktreeDir: wt,
			TargetBranch: pr.TargetBranch, BaseCommit: base, SetupScript: pr.SetupScript, CleanupScript: pr.CleanupScript})
	}
	// The agent works in the repo itself when there is one, else in the
	// attempt directory that holds every repo's worktree: its first prompt
	// says so (workspaceNote), and what it writes beside the worktrees is
	// reported as outside any repository (outside.go), never merged.
	if len(repos) == 1 {
		attempt.Dir = repos[0].WorktreeDir
	}
	if err := b.store.CreateAttempt(ctx, attempt, repos); err != nil {
		undo()
		return StartResult{}, err
	}
	if err := b.store.SetTaskStatus(ctx, task.ID, store.StatusInProgress); err != nil {
		return StartResult{}, err
	}
	c := &chain{b: b, attempt: attempt, repos: repos, profile: profile, variant: variant,
		prompt: initialPrompt(profile, task, repos), env: b.processEnv(nil, project.ID, task.ID, attemptID),
		agentEnv: b.processEnv(profile.Env, project.ID, task.ID, attemptID)}
	first, err := c.setup(context.WithoutCancel(ctx), 0)
	if err != nil {
		b.settleTask(ctx, task.ID)
		return StartResult{}, fmt.Errorf("start attempt %s: %w", attemptID, err)
	}
	return StartResult{AttemptID: attemptID, TaskID: task.ID, WorkspaceBranch: branch, Executor: profile.Executor,
		Variant: variant, Repos: convert(repos, attemptRepoOf), ExecutionProcessID: first.ID, RunReason: tasks.RunReason(first.RunReason),
		CreatedAt: now}, nil
}

// initialPrompt is what the agent is first asked: the task. SHELL runs its
// prompt as a script, so it gets the description alone (the title is not
// a command), or the title when there is no description. An agent of
// several repos is also told where it stands (workspaceNote).
func initialPrompt(p executor.Profile, t store.Task, repos []store.AttemptRepo) string {
	if p.Executor == "SHELL" {
		if strings.TrimSpace(t.Description) != "" {
			return t.Description
		}
		return t.Title
	}
	prompt := t.Title
	if strings.TrimSpace(t.Description) != "" {
		prompt += "\n\n" + t.Description
	}
	if len(repos) > 1 {
		prompt += "\n\n" + workspaceNote(repos)
	}
	return prompt
}

// workspaceNote tells a multi-repo agent where it starts: in the folder
// holding one clone per repo, where a file of its own belongs to no repo
// and is never merged. Coding-agent CLIs resolve paths and confine their
// writes to where they start, so the agent starts above the clones, able
// to reach them all, and is told to write inside them.
func workspaceNote(repos []store.AttemptRepo) string {
	folders := make([]string, len(repos))
	for i, r := range repos {
		folders[i] = r.RepoName + "/ (merged into " + r.TargetBranch + ")"
	}
	return "Workspace: the current folder holds one git clone per repository of this task: " + strings.Join(folders, ", ") +
		". Make every change inside those folders (e.g. " + repos[0].RepoName + "/path/to/file). " +
		"A file written in the current folder itself, beside them, is in no repository: it is not merged when your work is approved."
}

// processEnv is the whole environment of an attempt's processes: the
// host's as AgentEnv filters it (never plugboard's own secrets), then which
// attempt it works for. Never the data directory: a plugboard the attempt
// starts reaches the board through the credential each process is issued
// (Config.Access, added at spawn), as the attempt's own WORKER.
// Scripts get it with profileEnv nil; the coding agent with its profile's
// Env.
func (b *Board) processEnv(profileEnv map[string]string, projectID, taskID, attemptID string) []string {
	// Clipped: callers append (PLUGBOARD_SESSION_ID), and chains that share
	// this slice must not write into each other's spare capacity.
	return slices.Clip(append(agentEnviron(b.hostEnv, b.cfg.AgentEnv, profileEnv),
		"PLUGBOARD_PROJECT_ID="+projectID,
		"PLUGBOARD_TASK_ID="+taskID,
		"PLUGBOARD_ATTEMPT_ID="+attemptID,
	))
}

func (b *Board) resolveExecutor(name, variant string) (executor.Profile, string, error) {
	if strings.TrimSpace(name) == "" {
		return executor.Profile{}, "", abi.NewEnvelope(abi.CodeMissingRequired, "executor is required",
			"call list_executors and pass one executor value").WithDetail("field", "executor")
	}
	profile, ok := b.executors.Get(name)
	if !ok {
		var names []string
		for _, p := range b.executors.List() {
			names = append(names, p.Executor)
		}
		return executor.Profile{}, "", invalid("executor", fmt.Sprintf("unknown executor %q", name),
			"call list_executors and pass one executor value as it is").WithDetail("allowed", names)
	}
	if !profile.Available {
		return executor.Profile{}, "", invalid("executor",
			fmt.Sprintf("executor %s is not available on this machine (%s not found on PATH)", profile.Executor, profile.Binary),
			"call list_executors and pick one with available=true").WithDetail("executor", profile.Executor)
	}
	v, spec, err := profile.Variant(variant)
	if err != nil {
		return executor.Profile{}, "", invalid("variant", err.Error(),
			"omit variant for the default, or pass one of list_executors' variants").WithDetail("allowed", profile.VariantNames())
	}
	if err := b.rootRefusal(profile, v, spec); err != nil {
		return executor.Profile{}, "", err
	}
	return profile, v, nil
}

// rootRefusal refuses at once a variant its CLI would refuse to run as
// root (see executor.Variant.RootRequiresEnv), naming the setting that
// changes it, rather than starting a run that can only fail with the CLI's
// bare refusal. Declaring the sandbox is the operator's call, never the
// board's: attempts run in a Landlock sandbox, which confines paths but is
// not a container or VM, and a root agent keeps root's rights over all it
// may write (docs/DECISIONS.md).
func (b *Board) rootRefusal(p executor.Profile, name string, v executor.Variant) error {
	if v.RootRequiresEnv == "" || !b.runningAsRoot() {
		return nil
	}
	if value, _ := lookupEnv(agentEnviron(b.hostEnv, b.cfg.AgentEnv, p.Env), v.RootRequiresEnv); value != "" {
		return nil
	}
	others := slices.DeleteFunc(p.VariantNames(), func(n string) bool { return n == name })
	setting := "--agent-env " + v.RootRequiresEnv + "=1"
	return abi.NewEnvelope(abi.CodeInvalidArgument,
		fmt.Sprintf("executor %s variant %s cannot run as root here: %s refuses its unattended mode for root unless %s is set, and plugboard runs as root",
			p.Executor, name, p.Binary, v.RootRequiresEnv),
		fmt.Sprintf("pass another variant (%s); or the operator runs plugboard as a non-root user, or, only if attempts run in a container or VM, starts it with %s",
			strings.Join(others, ", "), setting)).
		WithDetail("field", "variant").WithDetail("setting", setting).WithDetail("allowed", others)
}

func (b *Board) runningAsRoot() bool {
	if b.cfg.RunningAsRoot != nil {
		return *b.cfg.RunningAsRoot
	}
	return os.Geteuid() == 0
}

func selectRepos(project store.Project, args []StartRepoArg) ([]store.ProjectRepo, error) {
	if len(project.Repos) == 0 {
		return nil, abi.NewEnvelope(abi.CodeConflict, fmt.Sprintf("project %s has no repos", project.Name),
			"add a repo with `plugboard repo add`, then retry")
	}
	if len(args) == 0 {
		return project.Repos, nil
	}
	var out []store.ProjectRepo
	seen := map[string]bool{}
	for i, ra := range args {
		field := fmt.Sprintf("repos[%d].repo_id", i)
		if err := requireID(field, ra.RepoID, "list_repos"); err != nil {
			return nil, err
		}
		if seen[ra.RepoID] {
			return nil, invalid(field, "repo "+ra.RepoID+" is selected twice", "list each repo once")
		}
		seen[ra.RepoID] = true
		i := slices.IndexFunc(project.Repos, func(r store.ProjectRepo) bool { return r.ID == ra.RepoID })
		if i < 0 {
			return nil, abi.NewEnvelope(abi.CodeNotFound, "repo "+ra.RepoID+" is not part of project "+project.Name,
				"call list_repos with this task's project_id").WithDetail("field", field)
		}
		pr := project.Repos[i]
		if ra.TargetBranch != "" {
			pr.TargetBranch = ra.TargetBranch
		}
		out = append(out, pr)
	}
	return out, nil
}
