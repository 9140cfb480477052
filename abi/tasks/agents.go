package tasks

// Inputs and outputs of the agent tools (plugins/agents): mail between
// agents and to the human inbox, the calling agent's status and task, and
// log_decision. Their input schemas are written out by hand in the plugin
// (a root not and if/then/else, bounds matching host/internal/mail), so the inputs
// carry no descriptions. The board takes the inputs as its operations'
// arguments and answers the outputs, but for mail, which it answers as
// stored (BoardMail, BoardInbox).

// ---- inputs ----

// SendIn are mail_send's arguments (abi.OpMailSend).
type SendIn struct {
	ToAgentID string `json:"to_agent_id,omitempty"`
	ToHuman   bool   `json:"to_human,omitempty"`
	Subject   string `json:"subject"`
	Body      string `json:"body"`
	// InReplyTo threads the mail under one the caller sent or received.
	InReplyTo string `json:"in_reply_to,omitempty"`
}

// InboxIn are mail_list_inbox's arguments (abi.OpMailListInbox).
type InboxIn struct {
	IncludeRead bool `json:"include_read,omitempty"`
	Limit       int  `json:"limit,omitempty"`
}

// MailIn are mail_read's arguments (abi.OpMailRead).
type MailIn struct {
	MailID string `json:"mail_id"`
}

// ReplyIn are mail_reply's arguments (abi.OpMailReply).
type ReplyIn struct {
	MailID string `json:"mail_id"`
	Body   string `json:"body"`
}

// DecisionIn are log_decision's arguments (abi.OpLogDecision).
type DecisionIn struct {
	Title string `json:"title"`
	Body  string `json:"body"`
}

// ---- outputs ----

// SentOut answers mail_send and mail_reply.
type SentOut struct {
	MailID    string  `json:"mail_id" jsonschema:"the new mail's id (UUID)"`
	ToAgentID string  `json:"to_agent_id" jsonschema:"the recipient: an agent id, or human for the human inbox"`
	Subject   string  `json:"subject" jsonschema:"the subject as sent (mail_reply adds Re: once)"`
	ThreadID  string  `json:"thread_id" jsonschema:"the conversation: the id of its first mail"`
	InReplyTo *string `json:"in_reply_to" jsonschema:"the mail this one answers (UUID); null for a new conversation"`
	Timestamp string  `json:"timestamp" jsonschema:"when the mail was sent (RFC3339)"`
}

// Mail is one mail as its recipient sees it (mail_read, mail_list_inbox):
// a BoardMail with mail_id for id and is_read added.
type Mail struct {
	MailID        string  `json:"mail_id" jsonschema:"mail id (UUID); pass it to mail_read or mail_reply"`
	FromAgentID   string  `json:"from_agent_id" jsonschema:"the sender's agent id (plugboard for the host's escalations)"`
	FromAgentType string  `json:"from_agent_type" jsonschema:"the sender's type: SUPERVISOR, ORCHESTRATOR, WORKER or SYSTEM"`
	ToAgentID     string  `json:"to_agent_id" jsonschema:"the recipient: you"`
	Subject       string  `json:"subject" jsonschema:"the subject line"`
	Body          string  `json:"body" jsonschema:"the message"`
	InReplyTo     *string `json:"in_reply_to" jsonschema:"the mail this one answers (UUID); null for a new conversation"`
	ThreadID      string  `json:"thread_id" jsonschema:"the conversation: the id of its first mail"`
	IsRead        bool    `json:"is_read" jsonschema:"true once mail_read has returned it"`
	ReadAt        *string `json:"read_at" jsonschema:"when it was first read (RFC3339); null while unread"`
	CreatedAt     string  `json:"created_at" jsonschema:"when it was sent (RFC3339)"`
}

// InboxOut answers mail_list_inbox.
type InboxOut struct {
	Count       int    `json:"count" jsonschema:"number of mails listed"`
	UnreadCount int    `json:"unread_count" jsonschema:"number of unread mails in your inbox (listed or not)"`
	Mails       []Mail `json:"mails" jsonschema:"your mail, newest first; unread only unless include_read"`
}

// AgentStatusOut answers agent_get_status: the caller's identity, its
// unread mail and its current work.
type AgentStatusOut struct {
	AgentID         string        `json:"agent_id" jsonschema:"your agent id: the one mail is addressed to"`
	AgentType       string        `json:"agent_type" jsonschema:"your type: SUPERVISOR, ORCHESTRATOR or WORKER (empty when not configured)"`
	SupervisorID    *string       `json:"supervisor_id" jsonschema:"your supervisor's agent id, for mail_send; null when you have none"`
	UnreadMailCount int           `json:"unread_mail_count" jsonschema:"unread mails in your inbox"`
	TaskID          *string       `json:"task_id" jsonschema:"your current task (UUID); null when none is assigned"`
	TaskStatus      *TaskStatus   `json:"task_status" jsonschema:"that task's status: todo | inprogress | inreview | done | cancelled; null without a task"`
	AttemptID       *string       `json:"attempt_id" jsonschema:"your current attempt (UUID); null when none is assigned"`
	AttemptState    *AttemptState `json:"attempt_state" jsonschema:"that attempt's state: idle | running | completed | failed; null without an attempt"`
}

// AgentTaskOut answers agent_get_task: the caller's current task and
// attempt.
type AgentTaskOut struct {
	AgentID string     `json:"agent_id" jsonschema:"your agent id"`
	Task    TaskDetail `json:"task" jsonschema:"your current task with its latest attempt"`
	Attempt *StatusOut `json:"attempt" jsonschema:"your current attempt's status; null when you have a task but no attempt"`
}

// DecisionOut answers log_decision.
type DecisionOut struct {
	LogID     string `json:"log_id" jsonschema:"the decision-log entry (UUID)"`
	Timestamp string `json:"timestamp" jsonschema:"when it was recorded (RFC3339)"`
}
