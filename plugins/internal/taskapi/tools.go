package taskapi

import (
	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/abi/tasks"
	sdk "github.com/plugboard/plugboard/sdk-guest"
)

// Annotations. Every task tool acts on the local board only (openWorldHint
// false).
var (
	readOnly = &abi.Annotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)}
	// creates: create_task, start_task_attempt, follow_up, request_changes.
	creates = &abi.Annotations{DestructiveHint: new(false), OpenWorldHint: new(false)}
	// updates: update_task (setting the same values twice changes nothing).
	updates = &abi.Annotations{DestructiveHint: new(false), IdempotentHint: true, OpenWorldHint: new(false)}
	// destroys: delete_task, stop_attempt.
	destroys = &abi.Annotations{DestructiveHint: new(true), IdempotentHint: true, OpenWorldHint: new(false)}
	// merges: approve_attempt moves the target branches (a merge commit
	// cannot be taken back without rewriting them); a second call is
	// refused, not repeated.
	merges = &abi.Annotations{DestructiveHint: new(true), OpenWorldHint: new(false)}

	requestID = &abi.Idempotency{KeyField: "request_id"}
)

// Mode rules, checked by the host before the schema (which says the same)
// so that a violation gets its spec code and hint.
var (
	ruleOneTarget = abi.Rule{ExactlyOne: []string{"attempt_id", "session_id"}, Code: abi.CodeAmbiguousTarget,
		Hint: "pass exactly one target: attempt_id (resolves to its latest session) or session_id"}
	ruleLogPaging = abi.Rule{AtMostOne: []string{"cursor", "after_entry_index"}, Code: abi.CodeMixedPagination,
		Hint: "use only one pagination mode: cursor (page.next_cursor) to page older history, or after_entry_index (page.last_index) to fetch only newer entries"}
	ruleTurnPaging = abi.Rule{AtMostOne: []string{"cursor", "after_turn_index"}, Code: abi.CodeMixedPagination,
		Hint: "use only one pagination mode: cursor (page.next_cursor) to page older turns, or after_turn_index (page.last_index) to fetch only newer turns"}
	rulePrompt = abi.Rule{When: &abi.RuleWhen{Field: "action", Values: []string{string(ActionSend), string(ActionQueue)}},
		Require: []string{"prompt"}, Hint: "pass prompt, the message for the agent: send and queue require it"}
	ruleCancel = abi.Rule{When: &abi.RuleWhen{Field: "action", Values: []string{string(ActionCancel)}},
		Forbid: []string{"prompt", "variant", "request_id"},
		Hint:   "drop prompt, variant and request_id: cancel only clears the queued message; to stop a running process call stop_attempt"}
)

// Tool descriptions: the Use when/Required/Optional/Next/Avoid template,
// one short line each.
const (
	descListProjects = `Use when: you need a project_id to list repos or tasks, or to create a task.
Required: none
Optional: none
Next: list_tasks(project_id) or list_repos(project_id)
Avoid: guessing ids; use the project_id values returned here.`

	descListRepos = `Use when: choosing the repos (repo_id, target_branch) an attempt works on.
Required: project_id
Optional: none
Next: list_executors, then start_task_attempt(task_id, executor, repos)
Avoid: passing repo_name as repo_id; repo_name is only the prefix of attempt file paths.`

	descListExecutors = `Use when: choosing the executor (and variant) for start_task_attempt.
Required: none
Optional: none
Next: start_task_attempt(task_id, executor, variant)
Avoid: hard-coding executor names; pass one with available=true exactly as listed.`

	descListTasks = `Use when: finding a project's tasks with their latest attempt and session ids.
Required: project_id
Optional: status, limit
Next: get_attempt_status(latest_attempt_id) or list_task_attempts(task_id)
Avoid: listing everything repeatedly; filter with status, limit defaults to 50.`

	descGetTask = `Use when: you need one task's title, description, status and latest attempt.
Required: task_id
Optional: none
Next: list_task_attempts(task_id) or get_attempt_status(latest_attempt_id)
Avoid: passing an attempt_id or session_id as task_id.`

	descListTaskAttempts = `Use when: you need every attempt of a task, newest first, with its latest session.
Required: task_id
Optional: none
Next: get_attempt_status(attempt_id)
Avoid: mixing up attempt_id and session_id; attempt tools take attempt_id.`

	descGetAttemptStatus = `Use when: checking an attempt's state (idle, running, completed, failed); step 1 of the closed loop.
Required: attempt_id
Optional: none
Next: tail_attempt_logs(attempt_id), then get_attempt_changes(attempt_id)
Avoid: polling in a tight loop; read failure_summary as a hint only, details are in the logs.`

	descTailAttemptLogs = `Use when: reading the log of an attempt's latest process: newest page, older pages, or only new entries.
Required: attempt_id
Optional: channel, limit, cursor, after_entry_index
Next: tail_attempt_logs(attempt_id, after_entry_index=page.last_index) to poll, or get_attempt_changes(attempt_id)
Avoid: cursor together with after_entry_index (mixed_pagination); cursor pages older, after_entry_index gets newer.`

	descTailSessionMessages = `Use when: restoring conversation context: each agent turn's prompt and final summary.
Required: attempt_id or session_id (exactly one)
Optional: limit, cursor, after_turn_index
Next: follow_up(action, attempt_id, prompt) or tail_attempt_logs(attempt_id)
Avoid: attempt_id with session_id (ambiguous_target); cursor with after_turn_index (mixed_pagination).`

	descGetContext = `Use when: you run inside an attempt and need its project, task, attempt_id and repos.
Required: none
Optional: none
Next: get_attempt_status(attempt_id) or get_attempt_changes(attempt_id)
Avoid: relying on it outside an attempt; use list_projects and list_tasks there.`

	descCreateTask = `Use when: adding a new task (status todo) to a project.
Required: project_id, title
Optional: description, request_id
Next: start_task_attempt(task_id, executor)
Avoid: retrying without request_id (duplicate tasks); reuse one request_id for retries of the same task.`

	descUpdateTask = `Use when: changing a task's title, description or status.
Required: task_id, plus at least one of title, description, status
Optional: title, description, status
Next: get_task(task_id)
Avoid: changing status to stop an agent; call stop_attempt.`

	descDeleteTask = `Use when: removing a task for good, with its attempts, worktrees and branches.
Required: task_id
Optional: none
Next: list_tasks(project_id)
Avoid: deleting to stop an agent (stop_attempt) or to close a task (update_task status=done).`

	descStartTaskAttempt = `Use when: starting an agent on a task: a new attempt (branch, worktrees), then setup script and agent.
Required: task_id, executor
Optional: repos, variant, request_id
Next: get_attempt_status(attempt_id), then tail_attempt_logs(attempt_id)
Avoid: executor names not from list_executors; retrying without request_id (a second attempt).`

	descFollowUp = `Use when: prompting an attempt's agent again (send now, queue for after the current run) or clearing the queue (cancel).
Required: action, attempt_id or session_id (exactly one), prompt for send and queue
Optional: variant, request_id (send and queue only)
Next: get_attempt_status(attempt_id), then tail_attempt_logs(attempt_id)
Avoid: both attempt_id and session_id (ambiguous_target); cancel to stop a run (use stop_attempt).`

	descStopAttempt = `Use when: stopping an attempt's running processes (not its dev server).
Required: attempt_id
Optional: force
Next: get_attempt_status(attempt_id), then get_attempt_changes(attempt_id)
Avoid: follow_up action=cancel to stop a run; it only clears the queued message.`

	descReviewQueue = `Use when: choosing what to review: tasks in inreview, oldest first, with latest attempt, target branches and change summary.
Required: none
Optional: project_id, limit
Next: get_attempt_changes(attempt_id), then approve_attempt(attempt_id) or request_changes(attempt_id, feedback)
Avoid: approving from the queue alone; read the changes (get_attempt_patch) first.`

	descApproveAttempt = `Use when: a reviewed attempt is good: merge its branch into each repo's target branch; the task becomes done.
Required: attempt_id
Optional: none
Next: check summary and warnings; on a conflict or files outside any repo, request_changes(attempt_id, feedback)
Avoid: approving unreviewed or running attempts; uncommitted changes are merged too, files outside any repo never are.`

	descRequestChanges = `Use when: a reviewed attempt needs more work: send your feedback to its agent (queued while a run goes on).
Required: attempt_id, feedback
Optional: request_id
Next: get_attempt_status(attempt_id), then review_queue once the task is back in review
Avoid: vague feedback (name files and the expected result); retrying without request_id (sent twice).`

	descGetAttemptChanges = `Use when: seeing what an attempt changed: summary, changed files (repo-prefixed), files outside any repo (not merged).
Required: attempt_id
Optional: force
Next: get_attempt_patch(attempt_id, paths) or get_attempt_file(attempt_id, path)
Avoid: force=true on the first call; read the summary, force only when blocked and you need the list.`

	descGetAttemptPatch = `Use when: reading the unified diff of selected changed files, bounded by max_bytes.
Required: attempt_id
Optional: paths, force, max_bytes
Next: get_attempt_file(attempt_id, path) or follow_up(action, attempt_id, prompt)
Avoid: omitting paths on a large change; pass a few repo_name/path values from get_attempt_changes.`

	descGetAttemptFile = `Use when: reading a file, or a byte range of it, from an attempt's worktrees.
Required: attempt_id, path
Optional: start, max_bytes
Next: get_attempt_file(attempt_id, path, start=next_start) while truncated
Avoid: paths without the repo prefix or leaving the repo; use repo_name/path from get_attempt_changes.`
)

// RegisterRead registers the tools of the tasks-read plugin (capability
// board.read).
func RegisterRead() {
	registering = abi.CapBoardRead
	sdk.Require(registering)
	tool(sdk.ToolSpec{Name: "list_projects", Title: "List projects", Description: descListProjects, Annotations: readOnly},
		func(c *sdk.Call, _ NoInput) (ProjectsOut, error) {
			var out ProjectsOut
			err := c.Board(abi.OpListProjects, nil, &out)
			out.Projects = nonNil(out.Projects)
			return out, err
		})
	tool(sdk.ToolSpec{Name: "list_repos", Title: "List a project's repos", Description: descListRepos, Annotations: readOnly},
		func(c *sdk.Call, in ProjectIn) (ReposOut, error) {
			var out ReposOut
			err := c.Board(abi.OpListRepos, in, &out)
			out.Repos = nonNil(out.Repos)
			return out, err
		})
	tool(sdk.ToolSpec{Name: "list_executors", Title: "List executors", Description: descListExecutors, Annotations: readOnly},
		func(c *sdk.Call, _ NoInput) (ExecutorsOut, error) {
			var out ExecutorsOut
			err := c.Board(abi.OpListExecutors, nil, &out)
			out.Executors = nonNil(out.Executors)
			for i := range out.Executors {
				out.Executors[i].Variants = nonNil(out.Executors[i].Variants)
			}
			return out, err
		})
	tool(sdk.ToolSpec{Name: "list_tasks", Title: "List a project's tasks", Description: descListTasks, Annotations: readOnly},
		func(c *sdk.Call, in ListTasksIn) (TasksOut, error) {
			var out TasksOut
			err := c.Board(abi.OpListTasks, in, &out)
			out.Tasks = nonNil(out.Tasks)
			return out, err
		})
	tool(sdk.ToolSpec{Name: "get_task", Title: "Get a task", Description: descGetTask, Annotations: readOnly},
		func(c *sdk.Call, in TaskIn) (TaskDetail, error) {
			var out TaskDetail
			err := c.Board(abi.OpGetTask, in, &out)
			return out, err
		})
	tool(sdk.ToolSpec{Name: "list_task_attempts", Title: "List a task's attempts", Description: descListTaskAttempts, Annotations: readOnly},
		func(c *sdk.Call, in TaskIn) (AttemptsOut, error) {
			var out AttemptsOut
			err := c.Board(abi.OpListTaskAttempts, in, &out)
			out.Attempts = nonNil(out.Attempts)
			return out, err
		})
	tool(sdk.ToolSpec{Name: "get_attempt_status", Title: "Get an attempt's status", Description: descGetAttemptStatus, Annotations: readOnly},
		func(c *sdk.Call, in AttemptIn) (StatusOut, error) {
			var out StatusOut
			err := c.Board(abi.OpGetAttemptStatus, in, &out)
			return out, err
		})
	tool(sdk.ToolSpec{Name: "tail_attempt_logs", Title: "Tail an attempt's logs", Description: descTailAttemptLogs, Annotations: readOnly,
		Rules: []abi.Rule{ruleLogPaging}}, tailAttemptLogs)
	tool(sdk.ToolSpec{Name: "tail_session_messages", Title: "Tail a session's transcript", Description: descTailSessionMessages, Annotations: readOnly,
		Rules: []abi.Rule{ruleOneTarget, ruleTurnPaging}},
		func(c *sdk.Call, in MessagesIn) (MessagesOut, error) {
			var out MessagesOut
			err := c.Board(abi.OpTailSessionMessage, in, &out)
			out.Messages = nonNil(out.Messages)
			return out, err
		})
	tool(sdk.ToolSpec{Name: "review_queue", Title: "List tasks waiting for review", Description: descReviewQueue, Annotations: readOnly,
		TimeoutMS: 60000},
		func(c *sdk.Call, in ReviewQueueIn) (ReviewQueueOut, error) {
			var out ReviewQueueOut
			err := c.Board(abi.OpReviewQueue, in, &out)
			out.Tasks = nonNil(out.Tasks)
			for i := range out.Tasks {
				out.Tasks[i].Repos = nonNil(out.Tasks[i].Repos)
			}
			return out, err
		})
	tool(sdk.ToolSpec{Name: "get_context", Title: "Get this attempt's context", Description: descGetContext, Annotations: readOnly,
		When: abi.WhenAttemptContext},
		func(c *sdk.Call, _ NoInput) (ContextOut, error) {
			var out ContextOut
			err := c.Board(abi.OpGetContext, nil, &out)
			out.WorkspaceRepos = nonNil(out.WorkspaceRepos)
			return out, err
		})
}

// RegisterWrite registers the tools of the tasks-write plugin (capability
// board.write).
func RegisterWrite() {
	registering = abi.CapBoardWrite
	sdk.Require(registering)
	tool(sdk.ToolSpec{Name: "create_task", Title: "Create a task", Description: descCreateTask, Annotations: creates,
		Idempotency: requestID},
		func(c *sdk.Call, in CreateTaskIn) (Task, error) {
			var out Task
			err := c.Board(abi.OpCreateTask, tasks.CreateTaskArgs{ProjectID: in.ProjectID, Title: in.Title, Description: in.Description}, &out)
			return out, err
		})
	tool(sdk.ToolSpec{Name: "update_task", Title: "Update a task", Description: descUpdateTask, Annotations: updates},
		func(c *sdk.Call, in UpdateTaskIn) (Task, error) {
			var out Task
			err := c.Board(abi.OpUpdateTask, in, &out)
			return out, err
		})
	tool(sdk.ToolSpec{Name: "delete_task", Title: "Delete a task", Description: descDeleteTask, Annotations: destroys,
		TimeoutMS: 120000},
		func(c *sdk.Call, in TaskIn) (DeleteTaskOut, error) {
			var out DeleteTaskOut
			err := c.Board(abi.OpDeleteTask, in, &out)
			return out, err
		})
}

// RegisterControl registers the tools of the tasks-control plugin
// (capability board.control).
func RegisterControl() {
	registering = abi.CapBoardControl
	sdk.Require(registering)
	tool(sdk.ToolSpec{Name: "start_task_attempt", Title: "Start an attempt", Description: descStartTaskAttempt, Annotations: creates,
		Idempotency: requestID, TimeoutMS: 120000},
		func(c *sdk.Call, in StartIn) (StartOut, error) {
			var out StartOut
			err := c.Board(abi.OpStartTaskAttempt, tasks.StartArgs{TaskID: in.TaskID, Executor: in.Executor, Variant: in.Variant, Repos: in.Repos}, &out)
			out.Repos = nonNil(out.Repos)
			return out, err
		})
	tool(sdk.ToolSpec{Name: "follow_up", Title: "Send, queue or cancel a follow-up", Description: descFollowUp, Annotations: creates,
		Idempotency: requestID, Rules: []abi.Rule{ruleOneTarget, rulePrompt, ruleCancel}},
		func(c *sdk.Call, in FollowUpIn) (FollowUpOut, error) {
			var out FollowUpOut
			err := c.Board(abi.OpFollowUp, tasks.FollowUpArgs{Action: in.Action, AttemptID: in.AttemptID, SessionID: in.SessionID,
				Prompt: in.Prompt, Variant: in.Variant}, &out)
			return out, err
		})
	tool(sdk.ToolSpec{Name: "stop_attempt", Title: "Stop an attempt", Description: descStopAttempt, Annotations: destroys,
		TimeoutMS: 60000},
		func(c *sdk.Call, in StopIn) (StopOut, error) {
			var out StopOut
			err := c.Board(abi.OpStopAttempt, in, &out)
			out.Stopped = nonNil(out.Stopped)
			return out, err
		})
	tool(sdk.ToolSpec{Name: "approve_attempt", Title: "Approve an attempt: merge it", Description: descApproveAttempt, Annotations: merges,
		TimeoutMS: 120000},
		func(c *sdk.Call, in ApproveIn) (ApproveOut, error) {
			var out ApproveOut
			err := c.Board(abi.OpApproveAttempt, in, &out)
			out.Repos = nonNil(out.Repos)
			for i := range out.Repos {
				out.Repos[i].Commits, out.Repos[i].Files = nonNil(out.Repos[i].Commits), nonNil(out.Repos[i].Files)
			}
			out.Warnings, out.Outside.Files = nonNil(out.Warnings), nonNil(out.Outside.Files)
			return out, err
		})
	tool(sdk.ToolSpec{Name: "request_changes", Title: "Request changes to an attempt", Description: descRequestChanges, Annotations: creates,
		Idempotency: requestID},
		func(c *sdk.Call, in RequestChangesIn) (RequestChangesOut, error) {
			var out RequestChangesOut
			err := c.Board(abi.OpRequestChanges, tasks.RequestChangesArgs{AttemptID: in.AttemptID, Feedback: in.Feedback}, &out)
			return out, err
		})
}

// RegisterWorkspace registers the tools of the tasks-workspace plugin
// (capability workspace.read).
func RegisterWorkspace() {
	registering = abi.CapWorkspaceRead
	sdk.Require(registering)
	tool(sdk.ToolSpec{Name: "get_attempt_changes", Title: "Get an attempt's changes", Description: descGetAttemptChanges, Annotations: readOnly,
		TimeoutMS: 60000},
		func(c *sdk.Call, in ChangesIn) (ChangesOut, error) {
			var out ChangesOut
			if err := c.Board(abi.OpGetAttemptChanges, in, &out); err != nil {
				return ChangesOut{}, err
			}
			out.Files, out.Outside.Files = nonNil(out.Files), nonNil(out.Outside.Files)
			if out.BlockedReason != nil {
				out.Code = blockedCode(string(*out.BlockedReason))
			}
			return out, nil
		})
	tool(sdk.ToolSpec{Name: "get_attempt_patch", Title: "Get an attempt's patch", Description: descGetAttemptPatch, Annotations: readOnly,
		TimeoutMS: 60000},
		func(c *sdk.Call, in PatchIn) (PatchOut, error) {
			var out PatchOut
			if err := c.Board(abi.OpGetAttemptPatch, in, &out); err != nil {
				return PatchOut{}, err
			}
			out.Paths = nonNil(out.Paths)
			if out.BlockedReason != nil {
				out.Code = blockedCode(string(*out.BlockedReason))
			}
			return out, nil
		})
	tool(sdk.ToolSpec{Name: "get_attempt_file", Title: "Read a file of an attempt", Description: descGetAttemptFile, Annotations: readOnly},
		getAttemptFile)
}

// ---- answers that the tool reshapes ----

// tailAttemptLogs flattens each {entry_index, entry:{...}} into one entry.
func tailAttemptLogs(c *sdk.Call, in LogsIn) (LogsOut, error) {
	var b boardLogs
	if err := c.Board(abi.OpTailAttemptLogs, in, &b); err != nil {
		return LogsOut{}, err
	}
	out := LogsOut{AttemptID: b.AttemptID, ExecutionProcessID: b.ExecutionProcessID, RunReason: b.RunReason,
		ProcessStatus: b.ProcessStatus, Channel: b.Channel, Entries: make([]LogEntry, len(b.Entries)), Page: b.Page}
	for i, e := range b.Entries {
		out.Entries[i] = e.Entry
		out.Entries[i].EntryIndex = e.EntryIndex
		if string(e.Entry.Metadata) == "null" {
			out.Entries[i].Metadata = nil
		}
	}
	return out, nil
}

// getAttemptFile reads a file slice; empty board fields become null.
func getAttemptFile(c *sdk.Call, in FileIn) (FileOut, error) {
	var b boardFile
	if err := c.Board(abi.OpGetAttemptFile, in, &b); err != nil {
		return FileOut{}, err
	}
	out := FileOut{AttemptID: b.AttemptID, Path: b.Path, Start: b.Start, Size: b.Size, Content: b.Content,
		Truncated: b.Truncated, NextStart: b.NextStart, Blocked: b.Blocked, Hint: b.Hint}
	if b.Encoding != "" {
		out.Encoding = &b.Encoding
	}
	if b.BlockedReason != "" {
		r := b.BlockedReason
		out.BlockedReason, out.Code = &r, blockedCode(string(r))
	}
	return out, nil
}

// blockedCode is the code of a blocked artifact answer: blocked_guardrails
// when a guardrail blocked it; none for a bad path or a failed measurement,
// which blocked_reason and hint already explain.
func blockedCode(reason string) BlockedCode {
	switch reason {
	case ReasonThresholdExceeded, ReasonTooManyPaths, ReasonSizeExceeded:
		return CodeBlockedGuardrails
	}
	return ""
}

// nonNil turns a nil slice into an empty one, so arrays are never null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
