package boardapi

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/board"
	"github.com/plugboard/plugboard/host/internal/caller"
	"github.com/plugboard/plugboard/host/internal/policy"
)

// scopeWorld is a board with two projects: in the first, task1 with two
// attempts (own, sibling) and task2 with one (other); in the second,
// task3, which nobody below is given.
type scopeWorld struct {
	api                    *API
	pol                    *policy.Policy
	project1, project2     string
	task1, task2, task3    string
	own, sibling, other    string
	ownSes, sibSes, othSes string
}

func gitRepo(t *testing.T, name string) string {
	t.Helper()
	repo := filepath.Join(t.TempDir(), name)
	os.MkdirAll(repo, 0o755)
	os.WriteFile(filepath.Join(repo, "a.txt"), []byte("a\n"), 0o644)
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "-m", "i"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	return repo
}

func newScopeWorld(t *testing.T) scopeWorld {
	t.Helper()
	a, p1 := newAPI(t)
	ctx := context.Background()
	b := a.board
	p2, err := b.CreateProject(ctx, "second", []board.RepoSpec{{Path: gitRepo(t, "lib")}})
	if err != nil {
		t.Fatal(err)
	}
	w := scopeWorld{project1: p1, project2: p2.ID}
	task := func(project, title string) string {
		tk, err := b.CreateTask(ctx, board.CreateTaskArgs{ProjectID: project, Title: title, Description: "true"})
		if err != nil {
			t.Fatal(err)
		}
		return tk.TaskID
	}
	attempt := func(task string) (string, string) {
		st, err := b.StartTaskAttempt(ctx, board.StartArgs{TaskID: task, Executor: "shell"})
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			s, err := b.GetAttemptStatus(ctx, board.AttemptArgs{AttemptID: st.AttemptID})
			if err != nil {
				t.Fatal(err)
			}
			if s.State != board.StateRunning && s.LatestSessionID != nil {
				return st.AttemptID, *s.LatestSessionID
			}
			if time.Now().After(deadline) {
				t.Fatalf("attempt still running: %+v", s)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	w.task1, w.task2, w.task3 = task(p1, "one"), task(p1, "two"), task(p2.ID, "three")
	w.own, w.ownSes = attempt(w.task1)
	w.sibling, w.sibSes = attempt(w.task1)
	w.other, w.othSes = attempt(w.task2)
	// An attempt's run ending is not its chain ending: the task moves to
	// inreview a step later. Wait for every chain, as the review queue below
	// counts tasks in review.
	idle, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := b.WaitIdle(idle); err != nil {
		t.Fatalf("board still busy: %v", err)
	}
	w.pol, err = policy.Parse("agents.json", []byte(`{"agents": [
	  {"id": "sup", "type": "SUPERVISOR"},
	  {"id": "orch", "type": "ORCHESTRATOR"},
	  {"id": "wA", "type": "WORKER", "task_id": "`+w.task1+`", "attempt_id": "`+w.own+`"},
	  {"id": "wT", "type": "WORKER", "task_id": "`+w.task1+`"},
	  {"id": "wN", "type": "WORKER"},
	  {"id": "wG", "type": "WORKER", "attempt_id": "`+w.own+`", "scope": ["`+w.task2+`"]}
	]}`))
	if err != nil {
		t.Fatal(err)
	}
	w.api = New(b, nil, WithScopes(w.pol.Scope))
	return w
}

// roles are the matrix's columns.
var roles = []string{"sup", "orch", "wA", "wT", "wN", "wG"}

func (w scopeWorld) ctx(t *testing.T, agent string) context.Context {
	t.Helper()
	c, ok := w.pol.Caller(agent)
	if !ok {
		t.Fatalf("no agent %s", agent)
	}
	return caller.With(context.Background(), c)
}

// admitted reports whether agent's scope lets op run with args (the
// operation itself is not run: some change the board).
func (w scopeWorld) admitted(t *testing.T, agent, op string, args map[string]any) bool {
	t.Helper()
	raw, _ := json.Marshal(args)
	row := ops[op]
	row.run = func(context.Context, *API, json.RawMessage) (any, error) { return nil, nil }
	_, err := w.api.scope(w.ctx(t, agent), op, raw, row)
	if err == nil {
		return true
	}
	var env *abi.Envelope
	if e, ok := err.(*abi.Envelope); ok {
		env = e
	}
	if env == nil || env.Code != abi.CodePermissionDenied || env.Details["agent_id"] != agent || env.Details["op"] != op || env.Hint == "" {
		t.Errorf("%s %s %v: refusal %v", agent, op, args, err)
	}
	return false
}

// TestScopeMatrix extends the permission matrix (host/internal/policy) from tools to
// data: for every board operation naming work, which agent reaches which
// target. Columns are roles (sup, orch: everything; wA: a WORKER with its
// attempt; wT: a WORKER with its task; wN: a WORKER with neither; wG: wA
// granted task2 too), each cell the targets in order, y reached, - refused.
func TestScopeMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("runs attempts")
	}
	w := newScopeWorld(t)
	attempts := []string{w.own, w.sibling, w.other}
	sessions := []string{w.ownSes, w.sibSes, w.othSes}
	tasks := []string{w.task1, w.task2, w.task3}
	projects := []string{w.project1, w.project2}
	for _, row := range []struct {
		op      string
		targets []map[string]any
		want    map[string]string // role → one of y/- per target
	}{
		// Attempts: own, sibling (same task), other (task2).
		{abi.OpGetAttemptStatus, argsOf("attempt_id", attempts), attemptRow},
		{abi.OpTailAttemptLogs, argsOf("attempt_id", attempts), attemptRow},
		{abi.OpGetAttemptChanges, argsOf("attempt_id", attempts), attemptRow},
		{abi.OpGetAttemptPatch, argsOf("attempt_id", attempts), attemptRow},
		{abi.OpGetAttemptFile, argsOf("attempt_id", attempts), attemptRow},
		{abi.OpStopAttempt, argsOf("attempt_id", attempts), attemptRow},
		{abi.OpApproveAttempt, argsOf("attempt_id", attempts), attemptRow},
		{abi.OpRequestChanges, argsOf("attempt_id", attempts), attemptRow},
		{abi.OpTailSessionMessage, argsOf("attempt_id", attempts), attemptRow},
		{abi.OpTailSessionMessage, argsOf("session_id", sessions), attemptRow},
		{abi.OpFollowUp, argsOf("attempt_id", attempts), attemptRow},
		{abi.OpFollowUp, argsOf("session_id", sessions), attemptRow},
		// Task records: task1 (own), task2 (other), task3 (other project).
		{abi.OpGetTask, argsOf("task_id", tasks), map[string]string{"sup": "yyy", "orch": "yyy", "wA": "y--", "wT": "y--", "wN": "---", "wG": "yy-"}},
		{abi.OpListTaskAttempts, argsOf("task_id", tasks), map[string]string{"sup": "yyy", "orch": "yyy", "wA": "y--", "wT": "y--", "wN": "---", "wG": "yy-"}},
		// Whole tasks: an attempt alone does not give its task.
		{abi.OpUpdateTask, argsOf("task_id", tasks), map[string]string{"sup": "yyy", "orch": "yyy", "wA": "---", "wT": "y--", "wN": "---", "wG": "-y-"}},
		{abi.OpDeleteTask, argsOf("task_id", tasks), map[string]string{"sup": "yyy", "orch": "yyy", "wA": "---", "wT": "y--", "wN": "---", "wG": "-y-"}},
		{abi.OpStartTaskAttempt, argsOf("task_id", tasks), map[string]string{"sup": "yyy", "orch": "yyy", "wA": "---", "wT": "y--", "wN": "---", "wG": "-y-"}},
		// Projects: the one holding the agent's work.
		{abi.OpListRepos, argsOf("project_id", projects), map[string]string{"sup": "yy", "orch": "yy", "wA": "y-", "wT": "y-", "wN": "--", "wG": "y-"}},
		{abi.OpCreateTask, argsOf("project_id", projects), map[string]string{"sup": "yy", "orch": "yy", "wA": "y-", "wT": "y-", "wN": "--", "wG": "y-"}},
		// Unknown ids are refused like others' (no existence oracle);
		// empty ones are left to the operation's own validation.
		{abi.OpGetAttemptStatus, argsOf("attempt_id", []string{"no-such-attempt", ""}), map[string]string{"sup": "yy", "orch": "yy", "wA": "-y", "wT": "-y", "wN": "-y", "wG": "-y"}},
		{abi.OpTailSessionMessage, argsOf("session_id", []string{"no-such-session"}), map[string]string{"sup": "y", "orch": "y", "wA": "-", "wT": "-", "wN": "-", "wG": "-"}},
		// Both targets at once: each is checked.
		{abi.OpFollowUp, []map[string]any{{"attempt_id": w.own, "session_id": w.othSes}, {"attempt_id": w.other, "session_id": w.ownSes}},
			map[string]string{"sup": "yy", "orch": "yy", "wA": "--", "wT": "--", "wN": "--", "wG": "yy"}},
		// Global and self operations.
		{abi.OpListExecutors, []map[string]any{{}}, everyone},
		{abi.OpMailListInbox, []map[string]any{{}}, everyone},
		{abi.OpAgentGetTask, []map[string]any{{}}, everyone},
		{abi.OpLogDecision, []map[string]any{{"title": "t", "body": "b"}}, everyone},
	} {
		for _, role := range roles {
			want := row.want[role]
			got := ""
			for _, args := range row.targets {
				if w.admitted(t, role, row.op, args) {
					got += "y"
				} else {
					got += "-"
				}
			}
			if got != want {
				t.Errorf("%s × %s over %v: %s, want %s", role, row.op, row.targets, got, want)
			}
		}
	}
}

var (
	attemptRow = map[string]string{"sup": "yyy", "orch": "yyy", "wA": "y--", "wT": "yy-", "wN": "---", "wG": "y-y"}
	everyone   = map[string]string{"sup": "y", "orch": "y", "wA": "y", "wT": "y", "wN": "y", "wG": "y"}
)

func argsOf(field string, ids []string) []map[string]any {
	var out []map[string]any
	for _, id := range ids {
		out = append(out, map[string]any{field: id})
	}
	return out
}

// handle runs op for agent through Handle, every capability granted.
func (w scopeWorld) handle(t *testing.T, agent, op string, args any, out any) *abi.Envelope {
	t.Helper()
	req, _ := json.Marshal(abi.BoardRequest{Op: op, Args: args})
	res, env := w.api.Handle(w.ctx(t, agent), func(string) bool { return true }, req)
	if env == nil && out != nil {
		if err := json.Unmarshal(res, out); err != nil {
			t.Fatalf("%s: %s: %v", op, res, err)
		}
	}
	return env
}

// TestScopeFiltersLists: list operations answer only what the caller may
// see, and a refusal through Handle says what the caller may do.
func TestScopeFiltersLists(t *testing.T) {
	if testing.Short() {
		t.Skip("runs attempts")
	}
	w := newScopeWorld(t)
	for _, c := range []struct {
		agent            string
		projects, tasks  []string
		attemptsOfTask1  []string
		latestOfTask1    string
		reviewable       int
		taskOfProjectTwo bool
	}{
		{"sup", []string{w.project1, w.project2}, []string{w.task1, w.task2}, []string{w.sibling, w.own}, w.sibling, 2, true},
		{"wA", []string{w.project1}, []string{w.task1}, []string{w.own}, w.own, 0, false},
		{"wT", []string{w.project1}, []string{w.task1}, []string{w.sibling, w.own}, w.sibling, 1, false},
		{"wG", []string{w.project1}, []string{w.task1, w.task2}, []string{w.own}, w.own, 1, false},
	} {
		var projects board.ProjectsResult
		if env := w.handle(t, c.agent, abi.OpListProjects, nil, &projects); env != nil {
			t.Fatal(env)
		}
		var gotProjects []string
		for _, p := range projects.Projects {
			gotProjects = append(gotProjects, p.ProjectID)
		}
		if !sameSet(gotProjects, c.projects) {
			t.Errorf("%s list_projects = %v, want %v", c.agent, gotProjects, c.projects)
		}
		var tasks board.TasksResult
		if env := w.handle(t, c.agent, abi.OpListTasks, map[string]any{"project_id": w.project1}, &tasks); env != nil {
			t.Fatal(env)
		}
		var gotTasks []string
		for _, tk := range tasks.Tasks {
			gotTasks = append(gotTasks, tk.TaskID)
		}
		if !sameSet(gotTasks, c.tasks) || tasks.Count != len(c.tasks) {
			t.Errorf("%s list_tasks = %v (count %d), want %v", c.agent, gotTasks, tasks.Count, c.tasks)
		}
		var attempts board.AttemptsResult
		if env := w.handle(t, c.agent, abi.OpListTaskAttempts, map[string]any{"task_id": w.task1}, &attempts); env != nil {
			t.Fatal(env)
		}
		var gotAttempts []string
		for _, at := range attempts.Attempts {
			gotAttempts = append(gotAttempts, at.AttemptID)
		}
		if !sameSet(gotAttempts, c.attemptsOfTask1) || attempts.LatestAttemptID == nil || *attempts.LatestAttemptID != c.latestOfTask1 {
			t.Errorf("%s list_task_attempts = %v latest %v, want %v latest %s", c.agent, gotAttempts, attempts.LatestAttemptID, c.attemptsOfTask1, c.latestOfTask1)
		}
		var review board.ReviewQueueResult
		if env := w.handle(t, c.agent, abi.OpReviewQueue, map[string]any{}, &review); env != nil {
			t.Fatal(env)
		}
		if review.Count != c.reviewable || len(review.Tasks) != c.reviewable {
			t.Errorf("%s review_queue = %d tasks, want %d", c.agent, review.Count, c.reviewable)
		}
	}
	// A refusal through Handle: permission_denied naming the target, with
	// a hint naming the caller's own work.
	env := w.handle(t, "wA", abi.OpGetAttemptStatus, map[string]any{"attempt_id": w.other}, nil)
	if env == nil || env.Code != abi.CodePermissionDenied || env.Details["attempt_id"] != w.other || env.Details["agent_type"] != policy.Worker ||
		!strings.Contains(env.Hint, w.own) || !strings.Contains(env.Hint, "mail_send") || env.Retryable {
		t.Errorf("wA reading another attempt: %+v", env)
	}
	if env := w.handle(t, "wN", abi.OpGetAttemptStatus, map[string]any{"attempt_id": w.own}, nil); env == nil || !strings.Contains(env.Hint, "no task or attempt") {
		t.Errorf("wN reading an attempt: %+v", env)
	}
	var st board.StatusResult
	if env := w.handle(t, "wA", abi.OpGetAttemptStatus, map[string]any{"attempt_id": w.own}, &st); env != nil || st.AttemptID != w.own {
		t.Errorf("wA reading its own attempt: %v %+v", env, st)
	}
	// Arguments the operation refuses are refused, scope or not.
	if env := w.handle(t, "wA", abi.OpGetAttemptStatus, map[string]any{"attempt_id": 5}, nil); env == nil || env.Code != abi.CodeInvalidArgument {
		t.Errorf("a malformed attempt_id: %+v", env)
	}
	// Duplicate keys, differently cased: the check reads what the
	// operation reads (the last one).
	dup := json.RawMessage(`{"attempt_id": "` + w.own + `", "Attempt_ID": "` + w.other + `"}`)
	if env := w.handle(t, "wA", abi.OpGetAttemptStatus, dup, nil); env == nil || env.Code != abi.CodePermissionDenied {
		t.Errorf("a second, differently cased attempt_id naming another attempt: %+v", env)
	}
	dup = json.RawMessage(`{"attempt_id": "` + w.other + `", "Attempt_ID": "` + w.own + `"}`)
	if env := w.handle(t, "wA", abi.OpGetAttemptStatus, dup, &st); env != nil || st.AttemptID != w.own {
		t.Errorf("a second, differently cased attempt_id naming its own attempt: %v %+v", env, st)
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func TestScopeGetContext(t *testing.T) {
	pol, err := policy.Parse("agents.json", []byte(`{"agents": [{"id": "w", "type": "WORKER", "attempt_id": "a1"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	c, _ := pol.Caller("w")
	v := &visibility{caller: c, scope: pol.Scope(c), op: abi.OpGetContext, attemptTask: map[string]string{}}
	if _, err := filterContext(context.Background(), v, board.ContextResult{AttemptID: "a1", TaskID: "t1"}); err != nil {
		t.Errorf("own context: %v", err)
	}
	if _, err := filterContext(context.Background(), v, board.ContextResult{AttemptID: "a2", TaskID: "t2"}); err == nil {
		t.Error("another attempt's context was shown")
	}
}
