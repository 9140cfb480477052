// Command agents is the plugboard plugin of the multi-agent tools: mail
// between agents and to the human inbox (mail_send, mail_list_inbox,
// mail_read, mail_reply), the calling agent's own identity and work
// (agent_get_status, agent_get_task) and deliberate decision-log entries
// (log_decision). Capabilities: mail (every tool but agent_get_task) and
// board.read (agent_get_task).
//
// Every tool acts for the caller the host authenticated (serve --agent,
// an agent's HTTP bearer token); the plugin never names it, so no agent can
// read another's mail or speak for it. Each tool also answers to the alias
// of the multi-agent tool specification (mcp__mail__send, ...).
package main

import (
	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/abi/tasks"
	sdk "github.com/plugboard/plugboard/sdk-guest"
)

// Annotations: every tool acts on the local board only.
var (
	readOnly = &abi.Annotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)}
	creates  = &abi.Annotations{DestructiveHint: new(false), OpenWorldHint: new(false)}
	// marks: mail_read sets read_at once; reading again changes nothing.
	marks = &abi.Annotations{DestructiveHint: new(false), IdempotentHint: true, OpenWorldHint: new(false)}
)

// ruleOneRecipient is mail_send's exactly-one rule, checked by the host
// before the schema (which says the same) for its precise code.
var ruleOneRecipient = abi.Rule{ExactlyOne: []string{"to_agent_id", "to_human"}, Code: abi.CodeAmbiguousTarget,
	Hint: "pass exactly one recipient: to_agent_id for an agent, or to_human=true for the human inbox (omit the other field)"}

// Tool descriptions: the Use when/Required/Optional/Next/Avoid template.
const (
	descMailSend = `Use when: telling another agent (e.g. your supervisor) or the human something: a question, a blocker, a result.
Required: subject, body, and exactly one recipient: to_agent_id or to_human
Optional: to_agent_id, to_human, in_reply_to
Next: mail_list_inbox later for the answer
Avoid: to_agent_id together with to_human (ambiguous_target); answering a mail you received (use mail_reply).`

	descMailListInbox = `Use when: checking your own inbox for new mail, newest first.
Required: none
Optional: include_read, limit
Next: mail_read(mail_id) to read one and mark it read
Avoid: polling in a tight loop; unread_count in agent_get_status tells you when there is mail.`

	descMailRead = `Use when: reading one mail of your inbox in full; it is marked read.
Required: mail_id
Optional: none
Next: mail_reply(mail_id, body) to answer its sender
Avoid: ids of mail you sent or that is someone else's (permission_denied); take mail_id from mail_list_inbox.`

	descMailReply = `Use when: answering a mail you received: it goes to its sender, in the same thread, subject "Re: ...".
Required: mail_id, body
Optional: none
Next: mail_list_inbox later for the answer
Avoid: replying to mail you sent (permission_denied); to start a new conversation use mail_send.`

	descAgentGetStatus = `Use when: finding out who you are here: agent id, type, supervisor, unread mail, current task and attempt.
Required: none
Optional: none
Next: agent_get_task for your task, mail_list_inbox when unread_mail_count > 0
Avoid: guessing your supervisor's id; use supervisor_id from here.`

	descAgentGetTask = `Use when: you need your own current task (title, description, status) and attempt state.
Required: none
Optional: none
Next: work on the task; mail_send to supervisor_id when blocked
Avoid: calling it without an assigned task (not_found); ask your supervisor for work instead.`

	descLogDecision = `Use when: recording a decision and why, for people reviewing the work later (the decision log).
Required: title, body
Optional: none
Next: carry on; plugboard audit tail shows the entry
Avoid: logging routine tool calls; every call is already logged automatically.`
)

func init() {
	sdk.Plugin("agents", "1.0.0", "Multi-agent tools: mail between agents and to the human, the agent's own status and task, deliberate decision-log entries.")
	sdk.Require(abi.CapMail, abi.CapBoardRead)
	sdk.Tool(sdk.ToolSpec{Name: "mail_send", Title: "Send mail", Description: descMailSend, Annotations: creates,
		Rules: []abi.Rule{ruleOneRecipient}, Aliases: []string{"mcp__mail__send"},
		InputSchema: []byte(schemaMailSend)},
		func(c *sdk.Call, in SendIn) (SentOut, error) {
			var out SentOut
			err := c.Board(abi.OpMailSend, in, &out)
			return out, err
		})
	sdk.Tool(sdk.ToolSpec{Name: "mail_list_inbox", Title: "List my inbox", Description: descMailListInbox, Annotations: readOnly,
		Aliases: []string{"mcp__mail__list_inbox"}, InputSchema: []byte(schemaListInbox)},
		func(c *sdk.Call, in InboxIn) (InboxOut, error) {
			var b tasks.BoardInbox
			if err := c.Board(abi.OpMailListInbox, in, &b); err != nil {
				return InboxOut{}, err
			}
			out := InboxOut{Count: b.Count, UnreadCount: b.UnreadCount, Mails: make([]Mail, len(b.Mails))}
			for i, m := range b.Mails {
				out.Mails[i] = mailOut(m)
			}
			return out, nil
		})
	sdk.Tool(sdk.ToolSpec{Name: "mail_read", Title: "Read a mail", Description: descMailRead, Annotations: marks,
		Aliases: []string{"mcp__mail__read"}, InputSchema: []byte(schemaMailRead)},
		func(c *sdk.Call, in MailIn) (Mail, error) {
			var b tasks.BoardMail
			if err := c.Board(abi.OpMailRead, in, &b); err != nil {
				return Mail{}, err
			}
			return mailOut(b), nil
		})
	sdk.Tool(sdk.ToolSpec{Name: "mail_reply", Title: "Reply to a mail", Description: descMailReply, Annotations: creates,
		Aliases: []string{"mcp__mail__reply"}, InputSchema: []byte(schemaMailReply)},
		func(c *sdk.Call, in ReplyIn) (SentOut, error) {
			var out SentOut
			err := c.Board(abi.OpMailReply, in, &out)
			return out, err
		})
	sdk.Tool(sdk.ToolSpec{Name: "agent_get_status", Title: "Get my status", Description: descAgentGetStatus, Annotations: readOnly,
		Aliases: []string{"mcp__agent__get_status"}, InputSchema: []byte(schemaNoInput)},
		func(c *sdk.Call, _ tasks.NoInput) (StatusOut, error) {
			var out StatusOut
			err := c.Board(abi.OpAgentGetStatus, nil, &out)
			return out, err
		})
	sdk.Tool(sdk.ToolSpec{Name: "agent_get_task", Title: "Get my task", Description: descAgentGetTask, Annotations: readOnly,
		Aliases: []string{"mcp__agent__get_task"}, InputSchema: []byte(schemaNoInput)},
		func(c *sdk.Call, _ tasks.NoInput) (TaskOut, error) {
			var out TaskOut
			err := c.Board(abi.OpAgentGetTask, nil, &out)
			return out, err
		})
	sdk.Tool(sdk.ToolSpec{Name: "log_decision", Title: "Log a decision", Description: descLogDecision, Annotations: creates,
		Aliases: []string{"mcp__system__log_decision"}, InputSchema: []byte(schemaLogDecision)},
		func(c *sdk.Call, in DecisionIn) (DecisionOut, error) {
			var out DecisionOut
			err := c.Board(abi.OpLogDecision, in, &out)
			return out, err
		})
}

func main() {}
