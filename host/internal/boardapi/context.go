package boardapi

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/abi/tasks"
	"github.com/plugboard/plugboard/host/internal/board"
	"github.com/plugboard/plugboard/host/internal/caller"
	"github.com/plugboard/plugboard/host/internal/policy"
	"github.com/plugboard/plugboard/host/internal/store"
)

// getContext answers get_context: the attempt the caller works in. An
// attempt identity (an attempt's processes calling through the host's
// agent endpoint, policy.AttemptCaller) gets its own attempt, whichever
// attempt this server runs in or none; any other caller the attempt this
// server runs inside (board.Config.ContextAttemptID). The caller's scope
// is applied to the answer either way (filterContext).
func getContext(ctx context.Context, api *API, raw json.RawMessage) (any, error) {
	var none struct{}
	if err := decodeArgs(raw, &none); err != nil {
		return nil, err
	}
	if id, ok := policy.AttemptOf(caller.From(ctx)); ok {
		return contextOf(ctx, api.board.Store(), id)
	}
	return api.board.GetContext(ctx)
}

// contextOf describes attempt id as board.Board.GetContext describes the
// attempt a server runs in: its project, task, branch and repos.
func contextOf(ctx context.Context, st *store.Store, id string) (board.ContextResult, error) {
	at, err := st.GetAttempt(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		// The attempt's token outlived its record (the task was deleted).
		return board.ContextResult{}, abi.NewEnvelope(abi.CodeNotFound, "no attempt with id "+id,
			"your attempt is gone from the board; ask your supervisor with mail_send").WithDetail("attempt_id", id)
	}
	if err != nil {
		return board.ContextResult{}, err
	}
	task, err := st.GetTask(ctx, at.TaskID)
	if err != nil {
		return board.ContextResult{}, err
	}
	project, err := st.GetProject(ctx, task.ProjectID)
	if err != nil {
		return board.ContextResult{}, err
	}
	repos, err := st.AttemptRepos(ctx, at.ID)
	if err != nil {
		return board.ContextResult{}, err
	}
	out := board.ContextResult{ProjectID: project.ID, ProjectName: project.Name, TaskID: task.ID, TaskTitle: task.Title,
		TaskStatus: tasks.TaskStatus(task.Status), AttemptID: at.ID, WorkspaceBranch: at.Branch,
		WorkspaceRepos: make([]tasks.AttemptRepo, 0, len(repos))}
	for _, r := range repos {
		out.WorkspaceRepos = append(out.WorkspaceRepos,
			tasks.AttemptRepo{RepoID: r.RepoID, RepoName: r.RepoName, TargetBranch: r.TargetBranch, BaseCommit: r.BaseCommit})
	}
	return out, nil
}
