package board

import (
	"context"

	"github.com/plugboard/plugboard/abi/tasks"
	"github.com/plugboard/plugboard/host/internal/store"
)

// MaxBoardTasks is how many of a project's tasks the dashboard's board
// shows: a person's screen, not an agent's context (list_tasks caps at
// MaxTaskLimit).
const MaxBoardTasks = 2000

// BoardTask is a task as a board card shows it: list_tasks' row and, while
// a coding agent of its latest attempts runs, that run.
type BoardTask struct {
	tasks.TaskDetail
	Running *RunningAgent `json:"running"`
}

// RunningAgent is the coding agent running for a task.
type RunningAgent struct {
	AttemptID string `json:"attempt_id"`
	Executor  string `json:"executor"`
	// StartedAt is when the run started, LastActivityAt when it last
	// logged or changed (RFC3339).
	StartedAt      string `json:"started_at"`
	LastActivityAt string `json:"last_activity_at"`
}

// BoardView answers the dashboard's board read.
type BoardView struct {
	ProjectID string      `json:"project_id"`
	Tasks     []BoardTask `json:"tasks"`
	Count     int         `json:"count"`
	// Truncated is true when the project has more than MaxBoardTasks
	// tasks (the newest are shown).
	Truncated bool `json:"truncated"`
}

// BoardTasks lists up to MaxBoardTasks of project id's tasks, newest first,
// each with its running coding agent.
func (b *Board) BoardTasks(ctx context.Context, projectID string) (BoardView, error) {
	if err := requireID("project_id", projectID, "list_projects"); err != nil {
		return BoardView{}, err
	}
	if _, err := b.store.GetProject(ctx, projectID); err != nil {
		return BoardView{}, notFound(err, "project", "project_id", projectID, "list_projects")
	}
	list, err := b.store.ListTasks(ctx, projectID, "", MaxBoardTasks+1)
	if err != nil {
		return BoardView{}, err
	}
	running, err := b.state.RunningAgents(ctx, projectID)
	if err != nil {
		return BoardView{}, err
	}
	v := BoardView{ProjectID: projectID, Tasks: []BoardTask{}}
	if len(list) > MaxBoardTasks {
		list, v.Truncated = list[:MaxBoardTasks], true
	}
	for _, t := range list {
		bt := BoardTask{TaskDetail: taskDetailOf(t)}
		if r, ok := running[t.ID]; ok {
			bt.Running = runningAgentOf(r)
		}
		v.Tasks = append(v.Tasks, bt)
	}
	v.Count = len(v.Tasks)
	return v, nil
}

func runningAgentOf(r store.RunningAgent) *RunningAgent {
	return &RunningAgent{AttemptID: r.AttemptID, Executor: r.Executor, StartedAt: r.StartedAt, LastActivityAt: r.ActiveAt}
}
