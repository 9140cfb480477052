package mail

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/dispatch"
	"github.com/plugboard/plugboard/host/internal/store"
)

func newService(t *testing.T) (*Service, *store.Store) {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "board.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	dir := map[string]AgentInfo{
		"s1": {ID: "s1", Type: "SUPERVISOR"},
		"w1": {ID: "w1", Type: "WORKER", Supervisor: "s1", TaskID: "t-1"},
	}
	return New(Static(st), Options{Agents: AgentsFunc(func(id string) (AgentInfo, bool) { a, ok := dir[id]; return a, ok })}), st
}

func inbox(t *testing.T, st *store.Store, to string) []store.Mail {
	t.Helper()
	m, err := st.ListInbox(context.Background(), to, true, 0)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestEscalationMails(t *testing.T) {
	s, st := newService(t)
	ctx := context.Background()
	env := abi.NewEnvelope(abi.CodePluginTimeout, "tool x did not answer in 30s", "retry later")
	w1 := &abi.Caller{ID: "w1", Role: "WORKER"}

	// Not critical: the supervisor only.
	s.Failed(ctx, dispatch.AuditCall{Caller: w1, Tool: "update_task", RequestID: "r-9"}, env)
	sup := inbox(t, st, "s1")
	if len(sup) != 1 || sup[0].Subject != "Escalation: update_task failed for w1" || sup[0].FromAgentID != System ||
		sup[0].FromAgentType != SystemType {
		t.Fatalf("supervisor inbox = %+v", sup)
	}
	for _, want := range []string{"w1 (WORKER)", "plugin_timeout", "did not answer", "request_id: r-9", "task_id: t-1", `"code": "plugin_timeout"`} {
		if !strings.Contains(sup[0].Body, want) {
			t.Errorf("body lacks %q:\n%s", want, sup[0].Body)
		}
	}
	if len(inbox(t, st, Human)) != 0 {
		t.Fatal("a non-critical failure reached the human inbox")
	}

	// Critical: the supervisor and the human inbox.
	s.Failed(ctx, dispatch.AuditCall{Caller: w1, Tool: "mail_send", Critical: true}, env)
	human := inbox(t, st, Human)
	if len(inbox(t, st, "s1")) != 2 || len(human) != 1 || !strings.HasPrefix(human[0].Subject, "CRITICAL") ||
		human[0].Subject != "CRITICAL: mail_send failed for w1" {
		t.Fatalf("human inbox = %+v", human)
	}

	// No supervisor: only the critical mail, if any.
	s1 := &abi.Caller{ID: "s1", Role: "SUPERVISOR"}
	s.Failed(ctx, dispatch.AuditCall{Caller: s1, Tool: "echo"}, env)
	s.Failed(ctx, dispatch.AuditCall{Caller: s1, Tool: "mail_send", Critical: true}, env)
	s.Failed(ctx, dispatch.AuditCall{Tool: "mail_send", Critical: true}, env) // anonymous
	human = inbox(t, st, Human)
	if len(human) != 3 || human[0].Subject != "CRITICAL: mail_send failed for (anonymous)" || len(inbox(t, st, "s1")) != 2 {
		t.Fatalf("human inbox = %+v", human)
	}
	evs, _ := st.ListEvents(ctx, store.EventMailSent, 0, 0)
	if len(evs) != 5 {
		t.Fatalf("mail.sent events = %d", len(evs))
	}
}

func TestMailReplySubject(t *testing.T) {
	for in, want := range map[string]string{"Hello": "Re: Hello", "Re: Hello": "Re: Hello", "RE: x": "RE: x", "re:x": "re:x", "": "Re: ", "Reply": "Re: Reply"} {
		if got := ReplySubject(in); got != want {
			t.Errorf("ReplySubject(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMailWithoutDirectory(t *testing.T) {
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "board.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := New(Static(st), Options{})
	ctx := context.Background()
	// Without a directory any recipient is accepted and the sender is what
	// its identity says.
	sent, err := s.Send(ctx, &abi.Caller{ID: "a", Role: "WORKER"}, SendArgs{ToAgentID: "b", Subject: "s", Body: "b"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Read(ctx, &abi.Caller{ID: "b"}, MailArgs{MailID: sent.MailID})
	if err != nil || got.FromAgentType != "WORKER" || got.ReadAt == nil {
		t.Fatalf("read = %+v, %v", got, err)
	}
	if _, err := s.Send(ctx, nil, SendArgs{ToHuman: true, Subject: "s", Body: "b"}); err == nil {
		t.Fatal("sent without a caller")
	}
	// Escalation without a directory: no supervisor, so only critical mail.
	s.Failed(ctx, dispatch.AuditCall{Caller: &abi.Caller{ID: "a"}, Tool: "t"}, abi.NewEnvelope(abi.CodeInternal, "x", ""))
	if n, _, _ := st.CountMail(ctx, Human); n != 0 {
		t.Fatal("escalated without a supervisor or criticality")
	}
}
