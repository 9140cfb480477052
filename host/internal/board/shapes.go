package board

import (
	"github.com/plugboard/plugboard/abi/tasks"
	"github.com/plugboard/plugboard/host/internal/board/gitops"
	"github.com/plugboard/plugboard/host/internal/store"
)

// The board takes and answers the shapes agents see, defined once in
// abi/tasks for the host and the plugins alike; the board's names for them
// are aliases (StatusResult is tasks.StatusOut). Store rows and git
// results become those shapes here, at the board's edge.

func ptr[T any](v T) *T { return &v }

// convert maps f over in, keeping a nil slice nil (it encodes as null, an
// empty one as []).
func convert[S, T any](in []S, f func(S) T) []T {
	if in == nil {
		return nil
	}
	out := make([]T, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}

func taskOf(t store.Task) tasks.Task {
	return tasks.Task{TaskID: t.ID, ProjectID: t.ProjectID, Title: t.Title, Description: t.Description,
		Status: tasks.TaskStatus(t.Status), CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
}

func attemptSummaryOf(s store.AttemptSummary) tasks.AttemptSummary {
	return tasks.AttemptSummary{LatestAttemptID: s.LatestAttemptID, LatestWorkspaceBranch: s.LatestWorkspaceBranch,
		LatestSessionID: s.LatestSessionID, LatestSessionExecutor: s.LatestSessionExecutor,
		HasInProgressAttempt: s.HasInProgressAttempt, LastAttemptFailed: s.LastAttemptFailed}
}

func taskDetailOf(t store.TaskWithSummary) tasks.TaskDetail {
	return tasks.TaskDetail{Task: taskOf(t.Task), AttemptSummary: attemptSummaryOf(t.AttemptSummary)}
}

func attemptRepoOf(r store.AttemptRepo) tasks.AttemptRepo {
	return tasks.AttemptRepo{RepoID: r.RepoID, RepoName: r.RepoName, TargetBranch: r.TargetBranch, BaseCommit: r.BaseCommit}
}

func messageOf(t store.Turn) tasks.Message {
	return tasks.Message{TurnID: t.ID, SessionID: t.SessionID, ExecutionProcessID: t.ProcessID, TurnIndex: t.Index,
		Prompt: t.Prompt, Summary: t.Summary, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
}

func summaryOf(s gitops.Summary) tasks.Summary {
	return tasks.Summary{FileCount: s.FileCount, Added: s.Added, Deleted: s.Deleted, TotalBytes: s.TotalBytes}
}

func guardOf(g gitops.Guard) tasks.Guard {
	return tasks.Guard{Name: g.Name, MaxFiles: g.MaxFiles, MaxLines: g.MaxLines, MaxBytes: g.MaxBytes}
}
