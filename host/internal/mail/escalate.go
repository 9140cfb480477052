package mail

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/dispatch"
)

var _ dispatch.Escalator = (*Service)(nil)

// SystemType is the sender type of mail the host writes.
const SystemType = "SYSTEM"

// Failed escalates a call that failed for good: a mail to the caller's
// supervisor (subject "Escalation: TOOL failed for AGENT"), and, when the
// tool is critical, one to the human inbox (subject "CRITICAL: TOOL failed
// for AGENT"). A caller without a supervisor gets only the critical mail,
// if any. Failures to write are logged; the call's answer is unchanged.
func (s *Service) Failed(ctx context.Context, call dispatch.AuditCall, env *abi.Envelope) {
	if env == nil {
		return
	}
	ctx = context.WithoutCancel(ctx)
	agent := AgentInfo{ID: "(anonymous)"}
	if call.Caller != nil && call.Caller.ID != "" {
		agent = s.Agent(call.Caller)
	}
	var to []string
	if agent.Supervisor != "" {
		to = append(to, agent.Supervisor)
	}
	if call.Critical {
		to = append(to, Human)
	}
	if len(to) == 0 {
		return
	}
	st, err := s.store(ctx)
	if err != nil {
		s.log.Warn("escalation not mailed: no store", "tool", call.Tool, "err", err)
		return
	}
	body := escalationBody(agent, call, env)
	for _, recipient := range to {
		subject := fmt.Sprintf("Escalation: %s failed for %s", call.Tool, agent.ID)
		if recipient == Human {
			subject = fmt.Sprintf("CRITICAL: %s failed for %s", call.Tool, agent.ID)
		}
		from := AgentInfo{ID: System, Type: SystemType}
		if _, err := s.deliver(ctx, st, from, recipient, subject, body, nil); err != nil {
			s.log.Warn("escalation not mailed", "tool", call.Tool, "to", recipient, "err", err)
		}
	}
}

func escalationBody(agent AgentInfo, call dispatch.AuditCall, env *abi.Envelope) string {
	var b strings.Builder
	who := agent.ID
	if agent.Type != "" {
		who += " (" + agent.Type + ")"
	}
	fmt.Fprintf(&b, "%s called %s and it failed for good (after any retries).\n", who, call.Tool)
	if call.Critical {
		b.WriteString("The tool is critical.\n")
	}
	if call.RequestID != "" {
		fmt.Fprintf(&b, "request_id: %s\n", call.RequestID)
	}
	if agent.TaskID != "" {
		fmt.Fprintf(&b, "task_id: %s\n", agent.TaskID)
	}
	if agent.AttemptID != "" {
		fmt.Fprintf(&b, "attempt_id: %s\n", agent.AttemptID)
	}
	fmt.Fprintf(&b, "\ncode: %s\nmessage: %s\n", env.Code, env.Message)
	if env.Hint != "" {
		fmt.Fprintf(&b, "hint: %s\n", env.Hint)
	}
	if j, err := json.MarshalIndent(env, "", "  "); err == nil {
		b.WriteString("\nenvelope:\n")
		b.Write(j)
		b.WriteString("\n")
	}
	return b.String()
}
