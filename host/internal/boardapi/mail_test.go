package boardapi

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/abi/tasks"
	"github.com/plugboard/plugboard/host/internal/audit"
	"github.com/plugboard/plugboard/host/internal/board"
	"github.com/plugboard/plugboard/host/internal/caller"
	"github.com/plugboard/plugboard/host/internal/mail"
	"github.com/plugboard/plugboard/host/internal/store"
)

type notices struct {
	mu  sync.Mutex
	got []string // "to:subject"
}

func (n *notices) MailArrived(_ context.Context, to string, m mail.Notice) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.got = append(n.got, to+":"+m.Subject)
}

type agentWorld struct {
	api    *API
	st     *store.Store
	taskID string
	notes  *notices
}

func newAgentWorld(t *testing.T) agentWorld {
	t.Helper()
	a, projectID := newAPI(t)
	task, err := a.board.CreateTask(context.Background(), board.CreateTaskArgs{ProjectID: projectID, Title: "build it"})
	if err != nil {
		t.Fatal(err)
	}
	dir := map[string]mail.AgentInfo{
		"s1": {ID: "s1", Type: "SUPERVISOR"},
		"w1": {ID: "w1", Type: "WORKER", Supervisor: "s1", TaskID: task.TaskID},
		"w2": {ID: "w2", Type: "WORKER", Supervisor: "s1"},
	}
	st := a.board.Store()
	n := &notices{}
	m := mail.New(mail.Static(st), mail.Options{Notifier: n,
		Agents: mail.AgentsFunc(func(id string) (mail.AgentInfo, bool) { i, ok := dir[id]; return i, ok })})
	decisions := audit.New(audit.Static(st), nil)
	t.Cleanup(func() { decisions.Close() })
	a = New(a.board, nil, WithMail(m), WithDecisions(decisions))
	return agentWorld{api: a, st: st, taskID: task.TaskID, notes: n}
}

var agentGrants = grants(abi.CapMail, abi.CapBoardRead)

// as calls op as the agent id (role from the directory's convention).
func as(t *testing.T, a *API, id, op string, args any, out any) *abi.Envelope {
	t.Helper()
	ctx := context.Background()
	if id != "" {
		role := "WORKER"
		if id == "s1" {
			role = "SUPERVISOR"
		}
		ctx = caller.With(ctx, &abi.Caller{ID: id, Role: role})
	}
	req, _ := json.Marshal(abi.BoardRequest{Op: op, Args: args})
	res, env := a.Handle(ctx, agentGrants, req)
	if env == nil && out != nil {
		if err := json.Unmarshal(res, out); err != nil {
			t.Fatalf("%s answer %s: %v", op, res, err)
		}
	}
	return env
}

func wantCode(t *testing.T, what string, env *abi.Envelope, code string) {
	t.Helper()
	if env == nil || env.Code != code {
		t.Fatalf("%s: envelope %v, want %s", what, env, code)
	}
}

func TestMailOpsOwnershipAndThreading(t *testing.T) {
	w := newAgentWorld(t)
	a := w.api
	var sent mail.Sent
	if env := as(t, a, "w1", abi.OpMailSend, map[string]any{"to_agent_id": "s1", "subject": "Blocked", "body": "help"}, &sent); env != nil {
		t.Fatal(env)
	}
	if sent.ToAgentID != "s1" || sent.ThreadID != sent.MailID || sent.InReplyTo != nil {
		t.Fatalf("sent = %+v", sent)
	}

	var inbox mail.Inbox
	if env := as(t, a, "s1", abi.OpMailListInbox, map[string]any{}, &inbox); env != nil {
		t.Fatal(env)
	}
	if inbox.Count != 1 || inbox.UnreadCount != 1 || inbox.Mails[0].FromAgentID != "w1" || inbox.Mails[0].FromAgentType != "WORKER" {
		t.Fatalf("inbox = %+v", inbox)
	}
	// A WORKER cannot read (or reply to) another's mail.
	wantCode(t, "w2 reads s1's mail", as(t, a, "w2", abi.OpMailRead, map[string]any{"mail_id": sent.MailID}, nil), abi.CodePermissionDenied)
	wantCode(t, "w1 reads the mail it sent", as(t, a, "w1", abi.OpMailRead, map[string]any{"mail_id": sent.MailID}, nil), abi.CodePermissionDenied)
	wantCode(t, "w2 replies to s1's mail", as(t, a, "w2", abi.OpMailReply, map[string]any{"mail_id": sent.MailID, "body": "x"}, nil), abi.CodePermissionDenied)
	wantCode(t, "unknown mail", as(t, a, "s1", abi.OpMailRead, map[string]any{"mail_id": store.NewID()}, nil), abi.CodeNotFound)

	var read tasks.BoardMail
	if env := as(t, a, "s1", abi.OpMailRead, map[string]any{"mail_id": sent.MailID}, &read); env != nil {
		t.Fatal(env)
	}
	if read.ReadAt == nil || read.Body != "help" {
		t.Fatalf("read = %+v", read)
	}
	if env := as(t, a, "s1", abi.OpMailListInbox, map[string]any{}, &inbox); env != nil || inbox.Count != 0 || inbox.UnreadCount != 0 {
		t.Fatalf("unread inbox after read = %+v, %v", inbox, env)
	}
	if env := as(t, a, "s1", abi.OpMailListInbox, map[string]any{"include_read": true}, &inbox); env != nil || inbox.Count != 1 {
		t.Fatalf("inbox with read = %+v, %v", inbox, env)
	}

	// Replies go to the original sender, in its thread, "Re: " once.
	var re1, re2 mail.Sent
	if env := as(t, a, "s1", abi.OpMailReply, map[string]any{"mail_id": sent.MailID, "body": "try X"}, &re1); env != nil {
		t.Fatal(env)
	}
	if re1.ToAgentID != "w1" || re1.Subject != "Re: Blocked" || re1.ThreadID != sent.MailID || *re1.InReplyTo != sent.MailID {
		t.Fatalf("reply = %+v", re1)
	}
	if env := as(t, a, "w1", abi.OpMailReply, map[string]any{"mail_id": re1.MailID, "body": "thanks"}, &re2); env != nil {
		t.Fatal(env)
	}
	if re2.ToAgentID != "s1" || re2.Subject != "Re: Blocked" || re2.ThreadID != sent.MailID || *re2.InReplyTo != re1.MailID {
		t.Fatalf("reply to the reply = %+v", re2)
	}
	// in_reply_to on mail_send threads too, but only under one's own mail.
	var threaded mail.Sent
	if env := as(t, a, "w1", abi.OpMailSend, map[string]any{"to_human": true, "subject": "FYI", "body": "b", "in_reply_to": sent.MailID}, &threaded); env != nil {
		t.Fatal(env)
	}
	if threaded.ToAgentID != mail.Human || threaded.ThreadID != sent.MailID {
		t.Fatalf("threaded send = %+v", threaded)
	}
	wantCode(t, "in_reply_to someone else's mail",
		as(t, a, "w2", abi.OpMailSend, map[string]any{"to_agent_id": "s1", "subject": "x", "body": "b", "in_reply_to": sent.MailID}, nil), abi.CodeNotFound)

	w.notes.mu.Lock()
	got := w.notes.got
	w.notes.mu.Unlock()
	if len(got) != 4 || got[0] != "s1:Blocked" || got[1] != "w1:Re: Blocked" || got[3] != "human:FYI" {
		t.Fatalf("notices = %q", got)
	}
	evs, err := w.st.ListEvents(context.Background(), store.EventMailSent, 0, 0)
	if err != nil || len(evs) != 4 || evs[0].SubjectID != sent.MailID {
		t.Fatalf("mail.sent events = %+v, %v", evs, err)
	}
}

func TestMailOpsRefusals(t *testing.T) {
	w := newAgentWorld(t)
	a := w.api
	wantCode(t, "both recipients", as(t, a, "w1", abi.OpMailSend, map[string]any{"to_agent_id": "s1", "to_human": true, "subject": "s", "body": "b"}, nil),
		abi.CodeAmbiguousTarget)
	wantCode(t, "no recipient", as(t, a, "w1", abi.OpMailSend, map[string]any{"subject": "s", "body": "b"}, nil), abi.CodeMissingRequired)
	wantCode(t, "unknown recipient", as(t, a, "w1", abi.OpMailSend, map[string]any{"to_agent_id": "ghost", "subject": "s", "body": "b"}, nil),
		abi.CodeNotFound)
	wantCode(t, "empty subject", as(t, a, "w1", abi.OpMailSend, map[string]any{"to_agent_id": "s1", "subject": " ", "body": "b"}, nil),
		abi.CodeMissingRequired)
	wantCode(t, "unknown argument", as(t, a, "w1", abi.OpMailSend, map[string]any{"to": "s1"}, nil), abi.CodeInvalidArgument)
	for _, op := range []string{abi.OpMailSend, abi.OpMailListInbox, abi.OpMailRead, abi.OpMailReply, abi.OpAgentGetStatus, abi.OpAgentGetTask, abi.OpLogDecision} {
		wantCode(t, op+" without a caller", as(t, a, "", op, nil, nil), abi.CodePermissionDenied)
	}
	// The capability is checked first, as for every board operation.
	req, _ := json.Marshal(abi.BoardRequest{Op: abi.OpMailListInbox})
	_, env := a.Handle(caller.With(context.Background(), &abi.Caller{ID: "w1"}), grants(abi.CapBoardRead), req)
	wantCode(t, "no mail grant", env, abi.CodePermissionDenied)
	if env.Details["capability"] != abi.CapMail {
		t.Fatalf("details = %v", env.Details)
	}
	// Without mail wired, the operations are unavailable.
	bare := New(a.board, nil)
	wantCode(t, "no mail service", as(t, bare, "w1", abi.OpMailListInbox, nil, nil), abi.CodeUnavailable)
	wantCode(t, "no decision log", as(t, bare, "w1", abi.OpLogDecision, map[string]any{"title": "t", "body": "b"}, nil), abi.CodeUnavailable)
}

func TestMailAgentStatusAndTask(t *testing.T) {
	w := newAgentWorld(t)
	a := w.api
	if env := as(t, a, "s1", abi.OpMailSend, map[string]any{"to_agent_id": "w1", "subject": "go", "body": "b"}, nil); env != nil {
		t.Fatal(env)
	}
	var st AgentStatus
	if env := as(t, a, "w1", abi.OpAgentGetStatus, nil, &st); env != nil {
		t.Fatal(env)
	}
	if st.AgentID != "w1" || st.AgentType != "WORKER" || *st.SupervisorID != "s1" || st.UnreadMailCount != 1 ||
		*st.TaskID != w.taskID || *st.TaskStatus != "todo" || st.AttemptID != nil || st.AttemptState != nil {
		t.Fatalf("status = %+v", st)
	}
	var task AgentTask
	if env := as(t, a, "w1", abi.OpAgentGetTask, nil, &task); env != nil {
		t.Fatal(env)
	}
	if task.Task.TaskID != w.taskID || task.Task.Title != "build it" || task.Attempt != nil {
		t.Fatalf("task = %+v", task)
	}
	wantCode(t, "worker without a task", as(t, a, "w2", abi.OpAgentGetTask, nil, nil), abi.CodeNotFound)
	// A caller outside the directory is what its identity says.
	var local AgentStatus
	if env := as(t, a, "local", abi.OpAgentGetStatus, nil, &local); env != nil || local.AgentID != "local" || local.SupervisorID != nil {
		t.Fatalf("status of an unconfigured caller = %+v, %v", local, env)
	}
}

func TestDecisionLogOperation(t *testing.T) {
	w := newAgentWorld(t)
	var e audit.Entry
	if env := as(t, w.api, "w1", abi.OpLogDecision, map[string]any{"title": "Chose Redis", "body": "scales better"}, &e); env != nil {
		t.Fatal(env)
	}
	d, err := w.st.GetDecision(context.Background(), e.LogID)
	if err != nil || d.Kind != store.DecisionKindDecision || d.AgentID != "w1" || d.AgentType != "WORKER" || d.Title != "Chose Redis" ||
		d.Body != "scales better" || d.Status != store.DecisionOK || d.CreatedAt != e.Timestamp {
		t.Fatalf("decision = %+v, %v", d, err)
	}
	wantCode(t, "empty title", as(t, w.api, "w1", abi.OpLogDecision, map[string]any{"title": "", "body": "b"}, nil), abi.CodeMissingRequired)
}
