package boardapi

import (
	"context"

	"github.com/plugboard/plugboard/host/internal/board"
	"github.com/plugboard/plugboard/host/internal/caller"
)

// BoardTasks answers the dashboard's board for the caller in ctx: the
// project's tasks (board.BoardTasks), keeping only those the caller's
// scope reaches, by list_tasks' own rule (taskRecordVisible), so the page
// shows a person no more than list_tasks would show them as an agent.
func (a *API) BoardTasks(ctx context.Context, projectID string) (board.BoardView, error) {
	v, err := a.board.BoardTasks(ctx, projectID)
	if err != nil || a.scopes == nil {
		return v, err
	}
	c := caller.From(ctx)
	sc := a.scopes(c)
	if sc.All {
		return v, nil
	}
	vis := &visibility{api: a, caller: c, scope: sc, op: "list_tasks", attemptTask: map[string]string{},
		may: func(tool string) bool { return caller.May(ctx, tool) }}
	kept := []board.BoardTask{}
	for _, t := range v.Tasks {
		ok, err := vis.taskRecordVisible(ctx, t.TaskID)
		if err != nil {
			return board.BoardView{}, err
		}
		if ok {
			kept = append(kept, t)
		}
	}
	v.Tasks, v.Count = kept, len(kept)
	return v, nil
}
