package boardapi

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/idempotency"
)

// TestKeyedCallEffectsRunOnce: inside a keyed call's scope, a create_task
// made again — by a second run of the call, after a retry or a crash —
// answers the task the first run created instead of creating another;
// the second identical operation of one run is a second task; reads and
// calls without a scope are not journaled.
func TestKeyedCallEffectsRunOnce(t *testing.T) {
	a, projectID := newAPI(t)
	write := grants(abi.CapBoardRead, abi.CapBoardWrite)
	req, _ := json.Marshal(abi.BoardRequest{Op: abi.OpCreateTask, Args: map[string]any{"project_id": projectID, "title": "once"}})
	handle := func(ctx context.Context) string {
		t.Helper()
		out, env := a.Handle(ctx, write, req)
		if env != nil {
			t.Fatal(env)
		}
		var task struct {
			TaskID string `json:"task_id"`
		}
		json.Unmarshal(out, &task)
		return task.TaskID
	}
	keyed := idempotency.WithScope(context.Background(), "create_task", "k1", "hash")
	run1 := idempotency.NewRun(keyed)
	first, second := handle(run1), handle(run1)
	run2 := idempotency.NewRun(keyed)
	if again, againSecond := handle(run2), handle(run2); first == second || again != first || againSecond != second {
		t.Fatalf("run 1 made %s and %s; run 2 answered %s and %s", first, second, again, againSecond)
	}
	plain := handle(context.Background())
	other := handle(idempotency.NewRun(idempotency.WithScope(context.Background(), "create_task", "k2", "hash")))
	if plain == first || other == first || plain == other {
		t.Fatalf("unkeyed %s, other key %s, first %s", plain, other, first)
	}
	out, env := call(t, a, write, abi.OpListTasks, map[string]any{"project_id": projectID})
	var list struct {
		Tasks []json.RawMessage `json:"tasks"`
	}
	if env != nil || json.Unmarshal(out, &list) != nil || len(list.Tasks) != 4 {
		t.Fatalf("list_tasks: %s %v", out, env)
	}
}
