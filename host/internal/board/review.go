package board

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/abi/tasks"
	"github.com/plugboard/plugboard/host/internal/board/gitops"
	"github.com/plugboard/plugboard/host/internal/store"
)

// The review flow: review_queue lists what waits for a reviewer,
// approve_attempt merges an attempt into its target branches and closes the
// task, request_changes sends the reviewer's feedback back to the agent.

// Review queue limits.
const (
	DefaultReviewLimit = 20
	MaxReviewLimit     = 100
)

// ReviewQueueArgs are review_queue's arguments.
type ReviewQueueArgs = tasks.ReviewQueueIn

// ReviewQueueResult answers review_queue.
type ReviewQueueResult = tasks.ReviewQueueOut

// ReviewItem is one task waiting for review, with its latest attempt.
type ReviewItem = tasks.ReviewItem

// ReviewRepo is where one repo of the attempt would merge.
type ReviewRepo = tasks.ReviewRepo

// ReviewChanges sums up an attempt's changes against its base commits.
type ReviewChanges = tasks.ReviewChanges

// ReviewQueue lists the tasks in inreview, oldest first (by updated_at,
// which is when the task entered review unless it was edited since), each
// with its latest attempt: branch, target branches, state and a summary of
// its changes (uncommitted and untracked files included, as
// get_attempt_changes counts them).
func (b *Board) ReviewQueue(ctx context.Context, a ReviewQueueArgs) (ReviewQueueResult, error) {
	if a.ProjectID != "" {
		if err := requireID("project_id", a.ProjectID, "list_projects"); err != nil {
			return ReviewQueueResult{}, err
		}
		if _, err := b.store.GetProject(ctx, a.ProjectID); err != nil {
			return ReviewQueueResult{}, notFound(err, "project", "project_id", a.ProjectID, "list_projects")
		}
	}
	limit, err := clampLimit("limit", a.Limit, DefaultReviewLimit, MaxReviewLimit)
	if err != nil {
		return ReviewQueueResult{}, err
	}
	waiting, err := b.store.ReviewQueue(ctx, a.ProjectID, limit)
	if err != nil {
		return ReviewQueueResult{}, err
	}
	out := ReviewQueueResult{Tasks: []ReviewItem{}}
	for _, t := range waiting {
		item := ReviewItem{TaskID: t.ID, ProjectID: t.ProjectID, Title: t.Title, UpdatedAt: t.UpdatedAt, Repos: []ReviewRepo{}}
		if t.LatestAttemptID != nil {
			if err := b.describeForReview(ctx, *t.LatestAttemptID, &item); err != nil {
				return ReviewQueueResult{}, err
			}
		}
		out.Tasks = append(out.Tasks, item)
	}
	out.Count = len(out.Tasks)
	return out, nil
}

func (b *Board) describeForReview(ctx context.Context, attemptID string, item *ReviewItem) error {
	at, err := b.store.GetAttempt(ctx, attemptID)
	if err != nil {
		return err
	}
	item.AttemptID, item.WorkspaceBranch, item.Executor = &at.ID, &at.Branch, &at.Executor
	p, err := b.latestProcess(ctx, at.ID)
	if err != nil {
		return err
	}
	state, failure := deriveState(p)
	item.State, item.FailureSummary = &state, failure
	if host := b.remoteHost(ctx, at); host != "" {
		return b.describeRemoteForReview(ctx, host, at, item)
	}
	// Under the guard: a review queue must not make git read a 20 GB file.
	files, repos, err := b.attemptChanges(ctx, at, b.guard)
	for _, r := range repos {
		item.Repos = append(item.Repos, ReviewRepo{RepoName: r.RepoName, TargetBranch: r.TargetBranch})
	}
	if err != nil {
		if repos == nil {
			return err
		}
		msg := err.Error()
		item.ChangesError = &msg
		return nil
	}
	outside, err := b.outsideFiles(ctx, at.ID, repos)
	if err != nil {
		return err
	}
	s := summarize(files)
	item.Changes = &ReviewChanges{FileCount: s.FileCount, Added: s.Added, Deleted: s.Deleted, OutsideCount: outside.Count}
	return nil
}

// describeRemoteForReview fills the change summary of an attempt whose
// worktrees are on another host, which measures them (hosts.go); a host
// that does not answer leaves changes_error, as a failed measure does.
func (b *Board) describeRemoteForReview(ctx context.Context, host string, at store.Attempt, item *ReviewItem) error {
	repos, err := b.store.AttemptRepos(ctx, at.ID)
	if err != nil {
		return err
	}
	for _, r := range repos {
		item.Repos = append(item.Repos, ReviewRepo{RepoName: r.RepoName, TargetBranch: r.TargetBranch})
	}
	var ch ChangesResult
	if err := b.forward(ctx, host, opChanges, ChangesArgs{AttemptID: at.ID}, &ch); err != nil {
		msg := err.Error()
		item.ChangesError = &msg
		return nil
	}
	if ch.BlockedReason != nil && *ch.BlockedReason != tasks.ReasonThresholdExceeded {
		msg := ch.Reason
		item.ChangesError = &msg
		return nil
	}
	item.Changes = &ReviewChanges{FileCount: ch.Summary.FileCount, Added: ch.Summary.Added, Deleted: ch.Summary.Deleted,
		OutsideCount: ch.Outside.Count}
	return nil
}

// ApproveArgs are approve_attempt's arguments.
type ApproveArgs = tasks.ApproveIn

// ApproveResult answers approve_attempt.
type ApproveResult = tasks.ApproveOut

// MergedRepo is how one repo of the attempt was merged: MergeCommit is the
// target branch's tip after the approval (the merge commit, or the
// unchanged tip when merged_via is up_to_date); MergedVia is worktree (the
// target branch is checked out and was merged there), ref (checked out
// nowhere: its ref was moved) or up_to_date (the target already contained
// the attempt); ChangesCommit is the commit that recorded the worktree's
// uncommitted changes on the attempt branch before the merge, null when
// none.
type MergedRepo = tasks.MergedRepo

// ApproveAttempt merges the attempt's branch into each repo's target
// branch and moves the task to done.
//
// Uncommitted changes in the attempt's worktrees (untracked files
// included, ignored ones not) are committed first onto the attempt branch
// as "plugboard: changes of attempt <id8>", so that what the reviewer saw
// in get_attempt_changes is what is merged. Every repo is checked before
// any is changed: a conflicting merge, or a target branch checked out in a
// worktree with uncommitted changes in the way, refuses the approval with
// a conflict envelope and changes nothing. See gitops.PrepareMerge for how
// the merge is made.
//
// The answer says, per repo, exactly what its target branch gained (the
// commits and files, or nothing to merge), and lists the files of the
// attempt folder outside every repo, which no approval merges, with a
// warning (reportApproval).
func (b *Board) ApproveAttempt(ctx context.Context, a ApproveArgs) (ApproveResult, error) {
	at, err := b.attempt(ctx, a.AttemptID)
	if err != nil {
		return ApproveResult{}, err
	}
	if host := b.remoteHost(ctx, at); host != "" {
		var out ApproveResult
		return out, b.forward(ctx, host, opApprove, a, &out)
	}
	task, err := b.store.GetTask(ctx, at.TaskID)
	if err != nil {
		return ApproveResult{}, err
	}
	if task.Status == store.StatusDone {
		return ApproveResult{}, abi.NewEnvelope(abi.CodeConflict, "task "+task.ID+" is already done",
			"nothing to approve; call review_queue for tasks waiting for review").
			WithDetail("task_id", task.ID).WithDetail("task_status", task.Status)
	}
	if !b.beginApproval(task.ID) {
		return ApproveResult{}, abi.NewEnvelope(abi.CodeConflict, "an approval of task "+task.ID+" is under way",
			"wait for it to finish, then call get_task(task_id)").WithDetail("task_id", task.ID)
	}
	defer b.endApproval(task.ID)
	if err := b.refuseWhileRunning(ctx, at.ID, "approve_attempt"); err != nil {
		return ApproveResult{}, err
	}
	repos, err := b.store.AttemptRepos(ctx, at.ID)
	if err != nil {
		return ApproveResult{}, err
	}
	id8 := at.ID[:8]
	// Check every repo before changing any.
	plans := make([]*gitops.MergePlan, len(repos))
	var conflicted []string
	var conflictPaths []string
	for i, r := range repos {
		c, err := b.clone(ctx, at.ID, r)
		if err != nil {
			return ApproveResult{}, err
		}
		plans[i], err = gitops.PrepareMerge(ctx, gitops.MergeSpec{Repo: c, TargetBranch: r.TargetBranch,
			Branch: at.Branch, Base: r.BaseCommit, ChangesMessage: "plugboard: changes of attempt " + id8})
		var linked *gitops.LinkedFilesError
		switch {
		case err == nil:
		case errors.Is(err, gitops.ErrNotWorkTree) || errors.Is(err, gitops.ErrBranchNotFound):
			return ApproveResult{}, abi.NewEnvelope(abi.CodeConflict, fmt.Sprintf("repo %s cannot be merged: %v", r.RepoName, err),
				"the attempt's worktree or a branch is gone; start a new attempt with start_task_attempt").WithDetail("repo", r.RepoName)
		case errors.As(err, &linked):
			return ApproveResult{}, abi.NewEnvelope(abi.CodeConflict, fmt.Sprintf("repo %s cannot be merged: %s", r.RepoName, linkedMessage(r.RepoName, linked)),
				"send request_changes(attempt_id, feedback) asking the agent to replace each with a copy, then retry approve_attempt").
				WithDetail("repo", r.RepoName).WithDetail("paths", linked.Paths)
		case errors.Is(err, gitops.ErrObjectsRefused):
			return ApproveResult{}, abi.NewEnvelope(abi.CodeConflict, fmt.Sprintf("repo %s cannot be merged: %v", r.RepoName, err),
				"the attempt's commits hold objects git refuses to take into the repository (fsck); "+
					"send request_changes(attempt_id, feedback) asking the agent to rewrite them, then retry approve_attempt").WithDetail("repo", r.RepoName)
		default:
			return ApproveResult{}, fmt.Errorf("repo %s: %w", r.RepoName, err)
		}
		if len(plans[i].Conflicts) > 0 {
			conflicted = append(conflicted, r.RepoName)
			for _, p := range plans[i].Conflicts {
				conflictPaths = append(conflictPaths, r.RepoName+"/"+p)
			}
		}
	}
	if len(conflicted) > 0 {
		return ApproveResult{}, abi.NewEnvelope(abi.CodeConflict,
			fmt.Sprintf("attempt %s does not merge cleanly into %s: %d conflicting path(s)", id8, targetsOf(repos, conflicted), len(conflictPaths)),
			"send the conflicts to the agent with request_changes(attempt_id, feedback) (its clone has the target branch as it is now as origin/<branch>) "+
				"or resolve them by hand, then retry approve_attempt").
			WithDetail("repo", conflicted[0]).WithDetail("repos", conflicted).WithDetail("conflicting_paths", conflictPaths)
	}
	for i, r := range repos {
		if p := plans[i]; len(p.Dirty) > 0 {
			dirty := make([]string, len(p.Dirty))
			for j, d := range p.Dirty {
				dirty[j] = r.RepoName + "/" + d
			}
			return ApproveResult{}, abi.NewEnvelope(abi.CodeConflict,
				fmt.Sprintf("branch %s of repo %s is checked out in %s, which has uncommitted changes in the way", r.TargetBranch, r.RepoName, p.Checkout),
				"commit or stash the changes in that checkout, then retry approve_attempt").
				WithDetail("repo", r.RepoName).WithDetail("checkout", p.Checkout).WithDetail("dirty_paths", dirty)
		}
	}
	// Looked for before anything changes, and reported with the merge:
	// what is outside the repos is never merged.
	outside, err := b.outsideFiles(ctx, at.ID, repos)
	if err != nil {
		return ApproveResult{}, err
	}
	out := ApproveResult{AttemptID: at.ID, TaskID: task.ID, WorkspaceBranch: at.Branch, Repos: []MergedRepo{}}
	message := "Merge attempt " + id8 + ": " + firstLine(task.Title)
	for i, r := range repos {
		res, err := plans[i].Apply(ctx, message)
		if err != nil {
			env := abi.NewEnvelope(abi.CodeConflict, fmt.Sprintf("repo %s: %v", r.RepoName, err),
				"a branch moved while approving; call approve_attempt again").WithDetail("repo", r.RepoName)
			if len(out.Repos) > 0 {
				env.Hint = "some repos were merged (details.merged); a branch moved in this one: call approve_attempt again to merge the rest"
				env.WithDetail("merged", out.Repos)
			}
			if !errors.Is(err, gitops.ErrTargetMoved) && len(out.Repos) == 0 {
				return ApproveResult{}, fmt.Errorf("repo %s: %w", r.RepoName, err)
			}
			return ApproveResult{}, env
		}
		out.Repos = append(out.Repos, mergedRepo(r, res))
	}
	if err := b.store.SetTaskStatus(ctx, task.ID, store.StatusDone); err != nil {
		return ApproveResult{}, err
	}
	b.store.TouchAttempt(ctx, at.ID)
	out.TaskStatus = store.StatusDone
	reportApproval(&out, outside)
	return out, nil
}

// mergedRepo is the answer's account of how repo r was merged: exactly
// the commits and files its target branch gained, none when it was up to
// date.
func mergedRepo(r store.AttemptRepo, res gitops.MergeResult) MergedRepo {
	m := MergedRepo{RepoName: r.RepoName, TargetBranch: r.TargetBranch, MergeCommit: res.Commit, MergedVia: tasks.MergedVia(res.Via),
		Merged: res.Via != gitops.MergedViaUpToDate, Commits: []string{}, Files: []string{}}
	if res.ChangesCommit != "" {
		c := res.ChangesCommit
		m.ChangesCommit = &c
	}
	if m.Merged {
		m.CommitCount, m.Commits = res.Merged.CommitCount, append(m.Commits, res.Merged.Commits...)
		m.FileCount = res.Merged.FileCount
		for _, f := range res.Merged.Files {
			m.Files = append(m.Files, r.RepoName+"/"+f)
		}
	}
	return m
}

// reportApproval fills what an approval says beyond the repos: whether
// anything was merged at all, a summary a person can read, the files
// left outside the repos and the warnings. It never says merged of a
// repo whose branch did not move.
func reportApproval(out *ApproveResult, outside OutsideFiles) {
	out.Outside, out.Warnings = outside, []string{}
	parts := make([]string, 0, len(out.Repos)+1)
	for _, m := range out.Repos {
		out.Merged = out.Merged || m.Merged
		parts = append(parts, repoSummary(m))
	}
	if w := outsideWarning(outside); w != "" {
		out.Warnings = append(out.Warnings, w)
		parts = append(parts, "not merged: "+outsideCount(outside)+" outside any repository")
	}
	if !out.Merged {
		out.Warnings = append(out.Warnings, "nothing was merged: no repo had work its target branch lacks; the task is done all the same")
	}
	out.Summary = strings.Join(parts, "; ")
}

// repoSummary is one repo's part of the summary: "app@main: merged 2
// commits, 3 files (merge commit 1a2b3c4d5e6f)" or "lib@main: nothing to
// merge".
func repoSummary(m MergedRepo) string {
	where := m.RepoName + "@" + m.TargetBranch
	if !m.Merged {
		return where + ": nothing to merge"
	}
	return fmt.Sprintf("%s: merged %s, %s (merge commit %.12s)", where, plural(int64(m.CommitCount), "commit"), plural(int64(m.FileCount), "file"), m.MergeCommit)
}

func targetsOf(repos []store.AttemptRepo, names []string) string {
	var parts []string
	for _, r := range repos {
		for _, n := range names {
			if r.RepoName == n {
				parts = append(parts, r.RepoName+"@"+r.TargetBranch)
			}
		}
	}
	return strings.Join(parts, ", ")
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(s)
}

// refuseWhileRunning answers process_running while a process other than a
// dev server runs in the attempt.
func (b *Board) refuseWhileRunning(ctx context.Context, attemptID, tool string) error {
	running, err := b.store.RunningProcesses(ctx, attemptID)
	if err != nil {
		return err
	}
	for _, p := range running {
		if p.RunReason != store.ReasonDevServer {
			return abi.NewEnvelope(abi.CodeProcessRunning,
				fmt.Sprintf("a %s process is still running in attempt %s", p.RunReason, attemptID),
				"wait until get_attempt_status(attempt_id) is no longer running, or stop_attempt, then retry "+tool).
				WithDetail("execution_process_id", p.ID)
		}
	}
	return nil
}

// beginApproval marks an approval of the task under way; false when one
// already is.
func (b *Board) beginApproval(taskID string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.approving[taskID] {
		return false
	}
	if b.approving == nil {
		b.approving = map[string]bool{}
	}
	b.approving[taskID] = true
	return true
}

func (b *Board) endApproval(taskID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.approving, taskID)
}

// RequestChangesArgs are request_changes' arguments (without request_id,
// which stays with the host's idempotency).
type RequestChangesArgs = tasks.RequestChangesArgs

// RequestChangesResult answers request_changes. Action is send (a new
// agent run started with the feedback) or queue (a run is going on; the
// feedback runs when it completes).
type RequestChangesResult = tasks.RequestChangesOut

// RequestChanges sends the reviewer's feedback to the attempt's agent as a
// follow-up in its latest session: at once when nothing runs, else queued
// for when the current run completes. The task moves to inprogress.
func (b *Board) RequestChanges(ctx context.Context, a RequestChangesArgs) (RequestChangesResult, error) {
	if strings.TrimSpace(a.Feedback) == "" {
		return RequestChangesResult{}, abi.NewEnvelope(abi.CodeMissingRequired, "feedback is required and must not be blank",
			"pass feedback: what the agent should change, naming files and the expected result").WithDetail("field", "feedback")
	}
	se, err := b.resolveSession(ctx, "", a.AttemptID, "request_changes")
	if err != nil {
		return RequestChangesResult{}, err
	}
	if host := b.remoteAttempt(ctx, se.AttemptID); host != "" {
		var out RequestChangesResult
		return out, b.forward(ctx, host, opRequestChanges, a, &out)
	}
	at, err := b.store.GetAttempt(ctx, se.AttemptID)
	if err != nil {
		return RequestChangesResult{}, err
	}
	out := RequestChangesResult{AttemptID: at.ID, SessionID: se.ID}
	running, err := b.store.RunningProcesses(ctx, at.ID)
	if err != nil {
		return RequestChangesResult{}, err
	}
	sent := false
	if len(running) == 0 {
		p, err := b.send(ctx, se, a.Feedback, "")
		var env *abi.Envelope
		switch {
		case err == nil:
			out.Action, out.ExecutionProcessID, sent = ActionSend, &p.ID, true
		case errors.As(err, &env) && env.Code == abi.CodeProcessRunning:
			// A run started meanwhile: queue behind it.
		default:
			return RequestChangesResult{}, err
		}
	}
	if !sent {
		if _, err := b.store.QueueMessage(ctx, se.ID, a.Feedback, ""); err != nil {
			return RequestChangesResult{}, err
		}
		out.Action = ActionQueue
		// The run may have ended between the check and the queueing, and
		// then nobody takes the message: send it now instead.
		if still, err := b.store.RunningProcesses(ctx, at.ID); err == nil && len(still) == 0 {
			if q, err := b.store.TakeQueuedMessage(ctx, se.ID); err == nil && q != nil {
				p, err := b.send(ctx, se, q.Prompt, q.Variant)
				if err != nil {
					return RequestChangesResult{}, err
				}
				out.Action, out.ExecutionProcessID = ActionSend, &p.ID
			}
		}
		if err := b.store.SetTaskStatus(ctx, at.TaskID, store.StatusInProgress); err != nil {
			return RequestChangesResult{}, err
		}
	}
	if out.Queue, err = b.queueStatus(ctx, se.ID); err != nil {
		return RequestChangesResult{}, err
	}
	// send moved the task to inprogress too; a quick run may already have
	// moved it on to inreview, which get_attempt_status shows.
	out.TaskStatus = store.StatusInProgress
	return out, nil
}
