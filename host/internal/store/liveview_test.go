package store

import (
	"context"
	"testing"
	"time"
)

// TestLiveMarksMove: a project's and an attempt's marks move with each
// change the dashboard's pages show, and with nothing else.
func TestLiveMarksMove(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func() *Store) {
		ctx := context.Background()
		s := open()
		p, task := board(t, s)
		pm := func() ProjectMarks {
			t.Helper()
			m, err := s.ProjectMarks(ctx, p.ID)
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		am := func(id string) AttemptMarks {
			t.Helper()
			m, err := s.AttemptMarks(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		// Times have microsecond resolution: each change is a tick apart, so
		// none shares its time with the one before.
		tick := func() { time.Sleep(3 * time.Millisecond) }
		before := pm()
		if again := pm(); again != before {
			t.Fatalf("marks moved with no change: %+v then %+v", before, again)
		}
		tick()
		if _, err := s.CreateTask(ctx, p.ID, "Another", ""); err != nil {
			t.Fatal(err)
		}
		afterCreate := pm()
		if afterCreate.Cards == before.Cards {
			t.Error("a new task did not move the project's cards mark")
		}
		tick()
		done := "inreview"
		if _, err := s.UpdateTask(ctx, task.ID, TaskUpdate{Status: &done}); err != nil {
			t.Fatal(err)
		}
		afterMove := pm()
		if afterMove.Cards == afterCreate.Cards {
			t.Error("a status change did not move the cards mark")
		}
		tick()
		a := addAttempt(t, s, task.ID, Now())
		afterAttempt := pm()
		if afterAttempt.Cards == afterMove.Cards {
			t.Error("a new attempt did not move the cards mark")
		}
		a0 := am(a.ID)
		tick()
		se, err := s.CreateSession(ctx, a.ID, "SHELL", "DEFAULT")
		if err != nil {
			t.Fatal(err)
		}
		proc := &Process{AttemptID: a.ID, SessionID: &se.ID, RunReason: ReasonCodingAgent, Command: "x"}
		if err := s.CreateProcess(ctx, proc); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AddTurn(ctx, se.ID, proc.ID, "go"); err != nil {
			t.Fatal(err)
		}
		a1, p1 := am(a.ID), pm()
		if a1.State == a0.State || a1.Messages == a0.Messages || p1.Cards == afterAttempt.Cards {
			t.Errorf("a started process: attempt %+v then %+v; cards moved %v", a0, a1, p1.Cards != afterAttempt.Cards)
		}
		running, err := s.RunningAgents(ctx, p.ID)
		if err != nil || running[task.ID].AttemptID != a.ID || running[task.ID].Executor != "SHELL" {
			t.Errorf("running agents: %+v, %v", running, err)
		}
		tick()
		if err := s.AppendLogs(ctx, []LogRow{{ProcessID: proc.ID, Channel: ChannelNormalized, Index: 0, Entry: entry(0)}}); err != nil {
			t.Fatal(err)
		}
		a2, p2 := am(a.ID), pm()
		if a2.Logs == a1.Logs || a2.State != a1.State {
			t.Errorf("a log line: attempt %+v then %+v", a1, a2)
		}
		if p2.Activity == p1.Activity || p2.Cards != p1.Cards {
			t.Errorf("a log line: project %+v then %+v (activity moves, cards not)", p1, p2)
		}
		tick()
		if _, err := s.QueueMessage(ctx, se.ID, "more", "DEFAULT"); err != nil {
			t.Fatal(err)
		}
		if a3 := am(a.ID); a3.Messages == a2.Messages {
			t.Error("a queued follow-up did not move the messages mark")
		}
		tick()
		code := 0
		if err := s.FinishProcess(ctx, proc.ID, "completed", &code, ""); err != nil {
			t.Fatal(err)
		}
		if a4, p4 := am(a.ID), pm(); a4.State == a2.State || p4.Cards == p2.Cards {
			t.Errorf("a finished process: attempt state %q then %q, cards moved %v", a2.State, a4.State, p4.Cards != p2.Cards)
		}
		if running, _ := s.RunningAgents(ctx, p.ID); len(running) != 0 {
			t.Errorf("running agents after the process finished: %+v", running)
		}
	})
}
