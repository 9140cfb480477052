package boardapi

import (
	"context"
	"encoding/json"
	"unicode/utf8"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/abi/tasks"
	"github.com/plugboard/plugboard/host/internal/board"
	"github.com/plugboard/plugboard/host/internal/caller"
	"github.com/plugboard/plugboard/host/internal/mail"
)

// asCaller adapts an operation acting for the caller in ctx: without one
// it is refused (permission_denied), whatever the plugin's grants.
func asCaller[A, R any](op string, method func(*API, context.Context, *abi.Caller, A) (R, error)) handler {
	return func(ctx context.Context, api *API, raw json.RawMessage) (any, error) {
		var a A
		if err := decodeArgs(raw, &a); err != nil {
			return nil, err
		}
		c := caller.From(ctx)
		if c == nil || c.ID == "" {
			return nil, mail.NoCaller(op)
		}
		return method(api, ctx, c, a)
	}
}

func unavailable(what string) *abi.Envelope {
	return abi.NewEnvelope(abi.CodeUnavailable, "this host serves no "+what, "ask the operator to start plugboard serve with a data directory")
}

func (a *API) mailService() (*mail.Service, error) {
	if a.mail == nil {
		return nil, unavailable("mail")
	}
	return a.mail, nil
}

func (a *API) mailSend(ctx context.Context, c *abi.Caller, args mail.SendArgs) (mail.Sent, error) {
	m, err := a.mailService()
	if err != nil {
		return mail.Sent{}, err
	}
	return m.Send(ctx, c, args)
}

func (a *API) mailListInbox(ctx context.Context, c *abi.Caller, args mail.InboxArgs) (mail.Inbox, error) {
	m, err := a.mailService()
	if err != nil {
		return mail.Inbox{}, err
	}
	return m.ListInbox(ctx, c, args)
}

func (a *API) mailRead(ctx context.Context, c *abi.Caller, args mail.MailArgs) (tasks.BoardMail, error) {
	m, err := a.mailService()
	if err != nil {
		return tasks.BoardMail{}, err
	}
	return m.Read(ctx, c, args)
}

func (a *API) mailReply(ctx context.Context, c *abi.Caller, args mail.ReplyArgs) (mail.Sent, error) {
	m, err := a.mailService()
	if err != nil {
		return mail.Sent{}, err
	}
	return m.Reply(ctx, c, args)
}

// AgentStatus is the answer of agent_get_status: the caller's identity,
// its unread mail and its current work.
type AgentStatus = tasks.AgentStatusOut

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (a *API) agentGetStatus(ctx context.Context, c *abi.Caller, _ struct{}) (AgentStatus, error) {
	m, err := a.mailService()
	if err != nil {
		return AgentStatus{}, err
	}
	info := m.Agent(c)
	unread, err := m.UnreadCount(ctx, c)
	if err != nil {
		return AgentStatus{}, err
	}
	out := AgentStatus{AgentID: info.ID, AgentType: info.Type, SupervisorID: optional(info.Supervisor), UnreadMailCount: unread,
		TaskID: optional(info.TaskID), AttemptID: optional(info.AttemptID)}
	// The work's state is a courtesy: a task or attempt deleted since the
	// agents file was written leaves it null rather than failing the call.
	if a.board != nil {
		if info.AttemptID != "" {
			if st, err := a.board.GetAttemptStatus(ctx, board.AttemptArgs{AttemptID: info.AttemptID}); err == nil {
				state := tasks.AttemptState(st.State)
				out.AttemptState, out.TaskStatus = &state, &st.TaskStatus
				if out.TaskID == nil {
					out.TaskID = &st.TaskID
				}
			}
		}
		if info.TaskID != "" && out.TaskStatus == nil {
			if t, err := a.board.GetTask(ctx, board.TaskArgs{TaskID: info.TaskID}); err == nil {
				out.TaskStatus = &t.Status
			}
		}
	}
	return out, nil
}

// AgentTask is the answer of agent_get_task: the caller's current task and
// attempt (null when the agent has a task but no attempt).
type AgentTask = tasks.AgentTaskOut

func (a *API) agentGetTask(ctx context.Context, c *abi.Caller, _ struct{}) (AgentTask, error) {
	m, err := a.mailService()
	if err != nil {
		return AgentTask{}, err
	}
	if a.board == nil {
		return AgentTask{}, unavailable("task board")
	}
	info := m.Agent(c)
	out := AgentTask{AgentID: info.ID}
	taskID := info.TaskID
	if info.AttemptID != "" {
		st, err := a.board.GetAttemptStatus(ctx, board.AttemptArgs{AttemptID: info.AttemptID})
		if err != nil {
			return AgentTask{}, err
		}
		out.Attempt = &st
		if taskID == "" {
			taskID = st.TaskID
		}
	}
	if taskID == "" {
		return AgentTask{}, abi.NewEnvelope(abi.CodeNotFound, "agent "+info.ID+" has no current task",
			"ask your supervisor for work (mail_send to supervisor_id from agent_get_status); the operator assigns task_id in the agents file").
			WithDetail("agent_id", info.ID)
	}
	t, err := a.board.GetTask(ctx, board.TaskArgs{TaskID: taskID})
	if err != nil {
		return AgentTask{}, err
	}
	out.Task = t
	return out, nil
}

// DecisionArgs are the arguments of log_decision.
type DecisionArgs = tasks.DecisionIn

// Limits of a deliberate decision's fields, in characters.
const (
	maxDecisionTitle = 500
	maxDecisionBody  = 65536
)

func (a *API) logDecision(ctx context.Context, c *abi.Caller, args DecisionArgs) (any, error) {
	if a.decisions == nil {
		return nil, unavailable("decision log")
	}
	for _, f := range []struct {
		name, v string
		max     int
	}{{"title", args.Title, maxDecisionTitle}, {"body", args.Body, maxDecisionBody}} {
		if f.v == "" {
			return nil, abi.NewEnvelope(abi.CodeMissingRequired, f.name+" is empty", "pass a non-empty "+f.name).WithDetail("field", f.name)
		}
		if utf8.RuneCountInString(f.v) > f.max {
			return nil, abi.NewEnvelope(abi.CodeInvalidArgument, f.name+" is too long", "shorten "+f.name).WithDetail("field", f.name)
		}
	}
	return a.decisions.Deliberate(ctx, c, args.Title, args.Body)
}
