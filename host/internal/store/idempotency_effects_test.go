package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestClaimOfDeadOwner: a claim held by an owner dead reports gone is
// taken over at once; a live owner's, or one without an owner, is in
// progress until the TTL.
func TestClaimOfDeadOwner(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func() *Store) {
		ctx := context.Background()
		s := open()
		now := time.Now()
		dead := func(o string) bool { return o == "host 1 gone" }
		for _, c := range []struct {
			key, owner, want string
		}{{"k-dead", "host 1 gone", ClaimNew}, {"k-live", "host 2 alive", ClaimInProgress}, {"k-none", "", ClaimInProgress}} {
			if out, _, _, err := s.ClaimRequestAs(ctx, now, "t", c.key, "h", time.Hour, c.owner, nil); err != nil || out != ClaimNew {
				t.Fatalf("first claim of %s: %s, %v", c.key, out, err)
			}
			out, _, token, err := s.ClaimRequestAs(ctx, now, "t", c.key, "h", time.Hour, "host 3 me", dead)
			if err != nil || out != c.want {
				t.Errorf("%s held by %q: %s, %v; want %s", c.key, c.owner, out, err, c.want)
			}
			if out == ClaimNew {
				if held, err := s.CompleteClaim(ctx, "t", c.key, token, []byte(`"done"`)); !held || err != nil {
					t.Errorf("completing the taken-over claim: %v, %v", held, err)
				}
			}
		}
		// ReleaseDeadClaims deletes the dead owners' claims only.
		if _, _, _, err := s.ClaimRequestAs(ctx, now, "t", "k-dead2", "h", time.Hour, "host 1 gone", nil); err != nil {
			t.Fatal(err)
		}
		if n, err := s.ReleaseDeadClaims(ctx, dead); err != nil || n != 1 {
			t.Fatalf("ReleaseDeadClaims: %d, %v", n, err)
		}
		if out, _, _, _ := s.ClaimRequestAs(ctx, now, "t", "k-live", "h", time.Hour, "host 3 me", nil); out != ClaimInProgress {
			t.Fatalf("a live owner's claim was released: %s", out)
		}
	})
}

// TestRunEffect: an operation runs once per key; atomic runs it in the
// journal's transaction, so a failure leaves neither the effect nor its
// row, and store writes through conn join it; completing the claim drops
// the call's journal.
func TestRunEffect(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func() *Store) {
		ctx := context.Background()
		s := open()
		p, err := s.CreateProject(ctx, "p")
		if err != nil {
			t.Fatal(err)
		}
		k := EffectKey{Tool: "create_task", RequestID: "r1", PayloadHash: "h", Op: "create_task", ArgsHash: "a"}
		runs := 0
		create := func(ctx context.Context) ([]byte, error) {
			runs++
			tk, err := s.CreateTask(ctx, p.ID, "task", "")
			if err != nil {
				return nil, err
			}
			if err := s.RecordEvent(ctx, EventTaskCreated, tk.ID, nil); err != nil {
				return nil, err
			}
			return []byte(`"` + tk.ID + `"`), nil
		}
		first, replayed, err := s.RunEffect(ctx, k, true, create)
		if err != nil || replayed {
			t.Fatalf("first run: %s %v %v", first, replayed, err)
		}
		again, replayed, err := s.RunEffect(ctx, k, true, create)
		if err != nil || !replayed || string(again) != string(first) || runs != 1 {
			t.Fatalf("second run: %s %v %v after %d runs", again, replayed, err, runs)
		}
		// Another occurrence of the same operation is another effect.
		k2 := k
		k2.Seq = 1
		if second, replayed, err := s.RunEffect(ctx, k2, true, create); err != nil || replayed || string(second) == string(first) {
			t.Fatalf("seq 1: %s %v %v", second, replayed, err)
		}
		// A failure after the writes rolls them back with the journal row.
		k3 := k
		k3.RequestID = "r-fail"
		boom := errors.New("boom")
		if _, _, err := s.RunEffect(ctx, k3, true, func(ctx context.Context) ([]byte, error) {
			if _, err := create(ctx); err != nil {
				return nil, err
			}
			return nil, boom
		}); !errors.Is(err, boom) {
			t.Fatalf("failing run: %v", err)
		}
		tasks, err := s.ListTasks(ctx, p.ID, "", 0)
		if err != nil || len(tasks) != 2 {
			t.Fatalf("tasks after a failed atomic run: %d, %v; want 2", len(tasks), err)
		}
		var events int
		s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM events WHERE type = ?`, EventTaskCreated).Scan(&events)
		if events != 2 {
			t.Fatalf("%d task.created events, want 2", events)
		}
		// Not atomic: the answer is journaled after the effect, and replayed.
		k4 := k
		k4.Op, k4.RequestID = "update_task", "r4"
		n := 0
		for range 2 {
			if _, _, err := s.RunEffect(ctx, k4, false, func(context.Context) ([]byte, error) { n++; return []byte(`{}`), nil }); err != nil {
				t.Fatal(err)
			}
		}
		if n != 1 {
			t.Fatalf("a journaled non-atomic operation ran %d times", n)
		}
		// Completing the claim drops the call's journal: the stored answer
		// replays it from now on.
		_, _, token, err := s.ClaimRequestAs(ctx, time.Now(), "create_task", "r1", "h", time.Hour, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		if held, err := s.CompleteClaim(ctx, "create_task", "r1", token, []byte(`{}`)); !held || err != nil {
			t.Fatalf("complete: %v %v", held, err)
		}
		var left int
		s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM idempotency_effects WHERE request_id = 'r1'`).Scan(&left)
		if left != 0 {
			t.Fatalf("%d journal rows left after completion", left)
		}
		// Old journal rows are pruned with the completed TTL.
		if _, err := s.PruneRequests(ctx, time.Now().Add(48*time.Hour), 24*time.Hour, 0); err != nil {
			t.Fatal(err)
		}
		s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM idempotency_effects`).Scan(&left)
		if left != 0 {
			t.Fatalf("%d journal rows survive the TTL", left)
		}
	})
}

// TestProjectCreateAllOrNothing: a project whose repos cannot all be
// attached is not created; a repo attached under another name is renamed,
// unless that name clashes in a project holding it.
func TestProjectCreateAllOrNothing(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func() *Store) {
		ctx := context.Background()
		s := open()
		a, err := s.EnsureRepo(ctx, "app", "/a/app")
		if err != nil {
			t.Fatal(err)
		}
		b, err := s.EnsureRepo(ctx, "app", "/b/app")
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.CreateProjectWithRepos(ctx, "X", []ProjectRepo{{Repo: a, TargetBranch: "main"}, {Repo: b, TargetBranch: "main"}})
		if !errors.Is(err, ErrExists) || errors.Is(err, ErrProjectExists) {
			t.Fatalf("two repos named app: %v", err)
		}
		if _, err := s.FindProjectByName(ctx, "X"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("the refused project exists: %v", err)
		}
		x, err := s.CreateProjectWithRepos(ctx, "X", []ProjectRepo{{Repo: a, TargetBranch: "main"}})
		if err != nil || len(x.Repos) != 1 {
			t.Fatalf("create X: %+v %v", x, err)
		}
		if _, err := s.CreateProject(ctx, "X"); !errors.Is(err, ErrProjectExists) {
			t.Fatalf("X again: %v", err)
		}
		// b renamed web joins X; renaming it app again clashes with a.
		b.Name = "web"
		if err := s.AddProjectRepo(ctx, x.ID, ProjectRepo{Repo: b, TargetBranch: "main"}); err != nil {
			t.Fatal(err)
		}
		if r, _ := s.GetRepo(ctx, b.ID); r.Name != "web" {
			t.Fatalf("repo b is named %q, want web", r.Name)
		}
		y, _ := s.CreateProject(ctx, "Y")
		b.Name = "app"
		if err := s.AddProjectRepo(ctx, y.ID, ProjectRepo{Repo: b, TargetBranch: "main"}); err == nil || !strings.Contains(err.Error(), `project "X"`) {
			t.Fatalf("renaming b to app, which X holds: %v", err)
		}
		if r, _ := s.GetRepo(ctx, b.ID); r.Name != "web" {
			t.Fatalf("a refused rename changed the name to %q", r.Name)
		}
	})
}
