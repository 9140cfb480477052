package boardapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/abi/tasks"
	"github.com/plugboard/plugboard/host/internal/board"
	"github.com/plugboard/plugboard/host/internal/caller"
	"github.com/plugboard/plugboard/host/internal/policy"
	"github.com/plugboard/plugboard/host/internal/store"
)

// Scoping. Every board operation a plugin makes runs for the caller in the
// call's context, and reaches only the work that caller's scope holds
// (policy.Scope: a WORKER its own task or attempt unless the agents file
// grants more). The check sits here, in the host, because a plugin is
// untrusted: it passes the agent's arguments through, and whatever it
// asks for is checked against who the call is for. Operations naming a
// task, an attempt or a session are refused beforehand (permission_denied,
// whose hint names the work the caller may reach); list operations answer
// only what the caller may see. An id the caller may not reach is refused
// whether or not it exists, so the refusal says nothing about other work.

// WithScopes limits each caller to the board work scopes returns for it
// (policy.Policy.Scope). Without it every caller reaches everything.
func WithScopes(scopes func(*abi.Caller) policy.Scope) Option {
	return func(a *API) { a.scopes = scopes }
}

// scoping is how one operation is scoped: check refuses a call before it
// runs (nil: the arguments name nothing scoped), filter trims its answer
// (nil: the answer is shown as it is).
type scoping struct {
	check  func(ctx context.Context, v *visibility, args json.RawMessage) error
	filter func(ctx context.Context, v *visibility, result any) (any, error)
}

// scope checks op for the caller in ctx and returns h, wrapped to filter
// its answer when op lists things; or the envelope refusing the call.
func (a *API) scope(ctx context.Context, op string, args json.RawMessage, row opRow) (handler, error) {
	h := row.run
	if a.scopes == nil || a.board == nil {
		return h, nil
	}
	c := caller.From(ctx)
	sc := a.scopes(c)
	if sc.All {
		return h, nil
	}
	s := row.scope
	v := &visibility{api: a, caller: c, scope: sc, op: op, attemptTask: map[string]string{},
		may: func(tool string) bool { return caller.May(ctx, tool) }}
	if s.check != nil {
		if err := s.check(ctx, v, args); err != nil {
			return nil, err
		}
	}
	if s.filter == nil {
		return h, nil
	}
	return func(ctx context.Context, api *API, raw json.RawMessage) (any, error) {
		out, err := h(ctx, api, raw)
		if err != nil {
			return nil, err
		}
		return s.filter(ctx, v, out)
	}, nil
}

// visibility answers what one caller may reach, looking ids up in the
// board's store once per call.
type visibility struct {
	api    *API
	caller *abi.Caller
	scope  policy.Scope
	op     string
	// attemptTask caches attempt id → task id ("" for an unknown attempt).
	attemptTask map[string]string
	// projects are the projects of the reachable work, once computed.
	projects map[string]bool
	// may tells whether the caller may call a tool (caller.May), so a
	// hint names only tools it can act on; nil: every tool.
	may func(tool string) bool
}

// mayCall reports whether the caller may call tool (see may).
func (v *visibility) mayCall(tool string) bool { return v.may == nil || v.may(tool) }

func (v *visibility) store() Store { return v.api.store() }

// taskOf returns the task of attempt id, or "" when there is none.
func (v *visibility) taskOf(ctx context.Context, id string) (string, error) {
	if t, ok := v.attemptTask[id]; ok {
		return t, nil
	}
	at, err := v.store().GetAttempt(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		err = nil
	} else if err != nil {
		return "", err
	}
	v.attemptTask[id] = at.TaskID
	return at.TaskID, nil
}

// attemptVisible reports whether the caller reaches attempt id: named in
// its scope, or an attempt of a task it holds whole.
func (v *visibility) attemptVisible(ctx context.Context, id string) (bool, error) {
	if v.scope.HasAttempt(id) {
		return true, nil
	}
	if len(v.scope.Tasks) == 0 {
		return false, nil
	}
	task, err := v.taskOf(ctx, id)
	return task != "" && v.scope.HasTask(task), err
}

// taskRecordVisible reports whether the caller may read task id's record:
// a task it holds whole, or the task of an attempt it reaches.
func (v *visibility) taskRecordVisible(ctx context.Context, id string) (bool, error) {
	if v.scope.HasTask(id) {
		return true, nil
	}
	for _, at := range v.scope.Attempts {
		task, err := v.taskOf(ctx, at)
		if err != nil {
			return false, err
		}
		if task == id {
			return true, nil
		}
	}
	return false, nil
}

// projectVisible reports whether project id holds work the caller reaches.
func (v *visibility) projectVisible(ctx context.Context, id string) (bool, error) {
	if v.projects == nil {
		v.projects = map[string]bool{}
		tasks := slices.Clone(v.scope.Tasks)
		for _, at := range v.scope.Attempts {
			task, err := v.taskOf(ctx, at)
			if err != nil {
				return false, err
			}
			tasks = append(tasks, task)
		}
		for _, id := range tasks {
			if id == "" {
				continue
			}
			t, err := v.store().GetTask(ctx, id)
			if errors.Is(err, store.ErrNotFound) {
				continue
			} else if err != nil {
				return false, err
			}
			v.projects[t.ProjectID] = true
		}
	}
	return v.projects[id], nil
}

// denied is the envelope refusing work outside the caller's scope. Its
// hint names the work the caller does reach.
func (v *visibility) denied(kind, id string) error {
	who, role := "", ""
	if v.caller != nil {
		who, role = v.caller.ID, v.caller.Role
	}
	var own []string
	for _, at := range v.scope.Attempts {
		own = append(own, "attempt "+at)
	}
	for _, t := range v.scope.Tasks {
		own = append(own, "task "+t)
	}
	hint := "you have no task or attempt on the board: the operator assigns task_id and attempt_id, or a wider scope, in the agents file"
	if v.mayCall("mail_send") {
		hint = "you have no task or attempt on the board: ask your supervisor for work with mail_send " +
			"(the operator assigns task_id and attempt_id, or a wider scope, in the agents file)"
	}
	if len(own) > 0 {
		hint = "you may reach only your own work: " + strings.Join(own, ", ")
		if v.mayCall("agent_get_task") {
			hint += " (agent_get_task shows it)"
		}
		if v.mayCall("mail_send") {
			hint += "; for other work, ask your supervisor with mail_send"
		} else {
			hint += "; other work is the operator's to grant (scope in the agents file)"
		}
	}
	env := abi.NewEnvelope(abi.CodePermissionDenied, fmt.Sprintf("%s %s is outside the work agent %q may reach", kind, id, who), hint)
	env.Details = map[string]any{"agent_id": who, "agent_type": role, "op": v.op, kind + "_id": id,
		"scope": map[string]any{"tasks": nonNil(v.scope.Tasks), "attempts": nonNil(v.scope.Attempts)}}
	return env
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// ids are the arguments that name scoped work. They are read leniently
// (other fields ignored) with the decoder the operation's own strict
// decoding uses, so both see the same values (case-insensitive names, the
// last of duplicate keys). Arguments that do not decode pass unchecked:
// the operation's decoding then refuses them before it does anything.
type ids struct {
	ProjectID string `json:"project_id"`
	TaskID    string `json:"task_id"`
	AttemptID string `json:"attempt_id"`
	SessionID string `json:"session_id"`
}

func readIDs(args json.RawMessage) (ids, error) {
	var out ids
	if err := json.Unmarshal(args, &out); err != nil {
		return ids{}, nil
	}
	return out, nil
}

// An empty id passes every check: the operation then reports the missing
// argument itself, which says nothing about anyone's work.

func checkProject(ctx context.Context, v *visibility, args json.RawMessage) error {
	a, err := readIDs(args)
	if err != nil || a.ProjectID == "" {
		return err
	}
	if ok, err := v.projectVisible(ctx, a.ProjectID); err != nil || !ok {
		return errOr(err, v.denied("project", a.ProjectID))
	}
	return nil
}

func checkTaskRecord(ctx context.Context, v *visibility, args json.RawMessage) error {
	a, err := readIDs(args)
	if err != nil || a.TaskID == "" {
		return err
	}
	if ok, err := v.taskRecordVisible(ctx, a.TaskID); err != nil || !ok {
		return errOr(err, v.denied("task", a.TaskID))
	}
	return nil
}

// checkTask admits operations acting on a whole task (edit, delete, start
// an attempt) only for a task the scope holds whole.
func checkTask(_ context.Context, v *visibility, args json.RawMessage) error {
	a, err := readIDs(args)
	if err != nil || a.TaskID == "" {
		return err
	}
	if !v.scope.HasTask(a.TaskID) {
		return v.denied("task", a.TaskID)
	}
	return nil
}

func checkAttempt(ctx context.Context, v *visibility, args json.RawMessage) error {
	a, err := readIDs(args)
	if err != nil || a.AttemptID == "" {
		return err
	}
	if ok, err := v.attemptVisible(ctx, a.AttemptID); err != nil || !ok {
		return errOr(err, v.denied("attempt", a.AttemptID))
	}
	return nil
}

// checkSessionOrAttempt checks both targets of an operation taking either
// (the operation refuses both at once itself).
func checkSessionOrAttempt(ctx context.Context, v *visibility, args json.RawMessage) error {
	if err := checkAttempt(ctx, v, args); err != nil {
		return err
	}
	a, _ := readIDs(args)
	if a.SessionID == "" {
		return nil
	}
	se, err := v.store().GetSession(ctx, a.SessionID)
	if errors.Is(err, store.ErrNotFound) {
		return v.denied("session", a.SessionID)
	} else if err != nil {
		return err
	}
	if ok, err := v.attemptVisible(ctx, se.AttemptID); err != nil || !ok {
		return errOr(err, v.denied("session", a.SessionID))
	}
	return nil
}

func errOr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

func filterProjects(ctx context.Context, v *visibility, result any) (any, error) {
	r := result.(board.ProjectsResult)
	kept := []board.ProjectInfo{}
	for _, p := range r.Projects {
		ok, err := v.projectVisible(ctx, p.ProjectID)
		if err != nil {
			return nil, err
		}
		if ok {
			kept = append(kept, p)
		}
	}
	r.Projects = kept
	return r, nil
}

func filterTasks(ctx context.Context, v *visibility, result any) (any, error) {
	r := result.(board.TasksResult)
	kept := []tasks.TaskDetail{}
	for _, t := range r.Tasks {
		ok, err := v.taskRecordVisible(ctx, t.TaskID)
		if err != nil {
			return nil, err
		}
		if ok {
			kept = append(kept, t)
		}
	}
	r.Tasks, r.Count = kept, len(kept)
	return r, nil
}

// filterReview keeps the tasks in review whose latest attempt the caller
// reaches (or, without an attempt, whose record it may read).
func filterReview(ctx context.Context, v *visibility, result any) (any, error) {
	r := result.(board.ReviewQueueResult)
	kept := []board.ReviewItem{}
	for _, it := range r.Tasks {
		var ok bool
		var err error
		if it.AttemptID != nil {
			ok, err = v.attemptVisible(ctx, *it.AttemptID)
		} else {
			ok, err = v.taskRecordVisible(ctx, it.TaskID)
		}
		if err != nil {
			return nil, err
		}
		if ok {
			kept = append(kept, it)
		}
	}
	r.Tasks, r.Count = kept, len(kept)
	return r, nil
}

// filterAttempts keeps the attempts the caller reaches; "latest" then
// means the newest of those.
func filterAttempts(ctx context.Context, v *visibility, result any) (any, error) {
	r := result.(board.AttemptsResult)
	kept := []board.AttemptInfo{}
	for _, at := range r.Attempts {
		// The task is known: no lookup needed.
		v.attemptTask[at.AttemptID] = r.TaskID
		ok, err := v.attemptVisible(ctx, at.AttemptID)
		if err != nil {
			return nil, err
		}
		if ok {
			kept = append(kept, at)
		}
	}
	r.Attempts, r.LatestAttemptID, r.LatestSessionID = kept, nil, nil
	if len(kept) > 0 {
		id := kept[0].AttemptID
		r.LatestAttemptID, r.LatestSessionID = &id, kept[0].LatestSessionID
	}
	return r, nil
}

// filterContext refuses get_context when the attempt it describes (the
// one this server runs in, or an attempt identity's own) is not the
// caller's to reach.
func filterContext(ctx context.Context, v *visibility, result any) (any, error) {
	r := result.(board.ContextResult)
	v.attemptTask[r.AttemptID] = r.TaskID
	if ok, err := v.attemptVisible(ctx, r.AttemptID); err != nil || !ok {
		return nil, errOr(err, v.denied("attempt", r.AttemptID))
	}
	return r, nil
}
