package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestDecisionLogMigrationFromEmptyAndFromVersion1(t *testing.T) {
	t.Run("empty", func(t *testing.T) {
		forEachStore(t, func(t *testing.T, open func() *Store) {
			s := open()
			for _, table := range []string{"decision_log", "mail", "events"} {
				if !hasTable(t, s, table) {
					t.Errorf("table %s missing", table)
				}
			}
			for _, index := range []string{"decision_log_time", "decision_log_agent", "decision_log_tool", "mail_inbox", "events_type"} {
				if !hasIndex(t, s, index) {
					t.Errorf("index %s missing", index)
				}
			}
		})
	})

	// A board at version 1 (before the multi-agent layer) upgrades in place.
	t.Run("version1", func(t *testing.T) {
		forEachTarget(t, func(t *testing.T, target string) {
			ctx := context.Background()
			driver, dsn, ddl := "sqlite", "file:"+target, func(s string) string { return s }
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				t.Fatal(err)
			}
			if isPostgresURL(target) {
				driver, dsn, ddl = "pgx", target, pgDDL
			}
			db, err := sql.Open(driver, dsn)
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range []string{ddl(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)`),
				ddl(migrations[0]), `INSERT INTO schema_migrations VALUES (1, '2026-01-01T00:00:00.000000Z')`,
				`INSERT INTO projects VALUES ('p1', 'kept', 'x', 'x')`} {
				if _, err := db.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
			db.Close()
			up, err := OpenURL(ctx, target)
			if err != nil {
				t.Fatal(err)
			}
			defer up.Close()
			if v, _ := up.Version(ctx); v != len(migrations) {
				t.Fatalf("version after upgrade = %d", v)
			}
			if p, err := up.GetProject(ctx, "p1"); err != nil || p.Name != "kept" {
				t.Fatalf("project after upgrade: %+v, %v", p, err)
			}
		})
	})
}

func TestDecisionLogRows(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func() *Store) {
		ctx := context.Background()
		s := open()
		call := Decision{ID: NewID(), Kind: DecisionKindCall, AgentID: "w1", AgentType: "WORKER", Tool: "echo",
			Input: json.RawMessage(`{"text":"hi"}`), Status: DecisionInvoked, CreatedAt: Now()}
		if err := s.InsertDecision(ctx, call); err != nil {
			t.Fatal(err)
		}
		fin := Now()
		if err := s.FinishDecision(ctx, call.ID, DecisionFinish{Status: DecisionOK, Result: json.RawMessage(`{"text":"hi"}`),
			DurationMS: 3, Attempts: 1, FinishedAt: fin}); err != nil {
			t.Fatal(err)
		}
		if err := s.FinishDecision(ctx, NewID(), DecisionFinish{Status: DecisionOK}); !errors.Is(err, ErrNotFound) {
			t.Fatalf("finish of an unknown row: %v", err)
		}
		other := Decision{ID: NewID(), Kind: DecisionKindDecision, AgentID: "s1", Title: "t", Body: "b", Status: DecisionOK,
			CreatedAt: Now(), FinishedAt: new(Now())}
		if err := s.InsertDecision(ctx, other); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetDecision(ctx, call.ID)
		if err != nil || got.Status != DecisionOK || string(got.Result) != `{"text":"hi"}` || *got.DurationMS != 3 ||
			got.Attempts != 1 || *got.FinishedAt != fin || got.Error != nil {
			t.Fatalf("row = %+v, %v", got, err)
		}
		all, _ := s.ListDecisions(ctx, DecisionFilter{})
		if len(all) != 2 || all[0].ID != other.ID {
			t.Fatalf("newest first: %+v", all)
		}
		byAgent, _ := s.ListDecisions(ctx, DecisionFilter{AgentID: "w1"})
		byTool, _ := s.ListDecisions(ctx, DecisionFilter{Tool: "nope"})
		if len(byAgent) != 1 || len(byTool) != 0 {
			t.Fatalf("filters: %d %d", len(byAgent), len(byTool))
		}
		after, _ := s.ListDecisions(ctx, DecisionFilter{FinishedAfter: fin})
		if len(after) != 2 || after[0].ID != call.ID {
			t.Fatalf("finished after, oldest first: %+v", after)
		}
	})
}

func TestMailStoreAndEvents(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func() *Store) {
		ctx := context.Background()
		s := open()
		m := Mail{ID: NewID(), FromAgentID: "w1", FromAgentType: "WORKER", ToAgentID: "s1", Subject: "hi", Body: "b", CreatedAt: Now()}
		m.ThreadID = m.ID
		if err := s.InsertMail(ctx, m); err != nil {
			t.Fatal(err)
		}
		if total, unread, err := s.CountMail(ctx, "s1"); err != nil || total != 1 || unread != 1 {
			t.Fatalf("count = %d %d %v", total, unread, err)
		}
		read, err := s.MarkMailRead(ctx, m.ID, Now())
		if err != nil || read.ReadAt == nil {
			t.Fatalf("read: %+v %v", read, err)
		}
		if inbox, _ := s.ListInbox(ctx, "s1", false, 0); len(inbox) != 0 {
			t.Fatalf("unread inbox: %+v", inbox)
		}
		if inbox, _ := s.ListInbox(ctx, "s1", true, 0); len(inbox) != 1 {
			t.Fatalf("whole inbox: %+v", inbox)
		}
		if _, err := s.GetMail(ctx, NewID()); !errors.Is(err, ErrNotFound) {
			t.Fatalf("unknown mail: %v", err)
		}
		if err := s.RecordEvent(ctx, EventTaskCreated, "t1", map[string]string{"title": "x"}); err != nil {
			t.Fatal(err)
		}
		if err := s.RecordEvent(ctx, EventAttemptFinished, "a1", nil); err != nil {
			t.Fatal(err)
		}
		evs, err := s.ListEvents(ctx, "", 0, 0)
		if err != nil || len(evs) != 3 || evs[0].Type != EventMailSent || evs[0].SubjectID != m.ID ||
			evs[1].Type != EventTaskCreated || string(evs[2].Data) != "{}" {
			t.Fatalf("events = %+v, %v", evs, err)
		}
		if later, _ := s.ListEvents(ctx, EventAttemptFinished, evs[0].Seq, 0); len(later) != 1 || later[0].SubjectID != "a1" {
			t.Fatalf("events by type after seq: %+v", later)
		}
	})
}
