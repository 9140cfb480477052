package main

import "github.com/plugboard/plugboard/plugins/internal/taskapi"

// ---- inputs (their schemas are in schemas.go) ----

// SendIn are mail_send's arguments.
type SendIn struct {
	ToAgentID string `json:"to_agent_id,omitempty"`
	ToHuman   bool   `json:"to_human,omitempty"`
	Subject   string `json:"subject"`
	Body      string `json:"body"`
	InReplyTo string `json:"in_reply_to,omitempty"`
}

// InboxIn are mail_list_inbox's arguments.
type InboxIn struct {
	IncludeRead bool `json:"include_read,omitempty"`
	Limit       int  `json:"limit,omitempty"`
}

// MailIn are mail_read's arguments.
type MailIn struct {
	MailID string `json:"mail_id"`
}

// ReplyIn are mail_reply's arguments.
type ReplyIn struct {
	MailID string `json:"mail_id"`
	Body   string `json:"body"`
}

// DecisionIn are log_decision's arguments.
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

// Mail is one mail as its recipient sees it.
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

// boardMail is a mail as the host returns it (host/board/store.Mail).
type boardMail struct {
	ID            string  `json:"id"`
	FromAgentID   string  `json:"from_agent_id"`
	FromAgentType string  `json:"from_agent_type"`
	ToAgentID     string  `json:"to_agent_id"`
	Subject       string  `json:"subject"`
	Body          string  `json:"body"`
	InReplyTo     *string `json:"in_reply_to"`
	ThreadID      string  `json:"thread_id"`
	ReadAt        *string `json:"read_at"`
	CreatedAt     string  `json:"created_at"`
}

func (m boardMail) out() Mail {
	return Mail{MailID: m.ID, FromAgentID: m.FromAgentID, FromAgentType: m.FromAgentType, ToAgentID: m.ToAgentID,
		Subject: m.Subject, Body: m.Body, InReplyTo: m.InReplyTo, ThreadID: m.ThreadID, IsRead: m.ReadAt != nil,
		ReadAt: m.ReadAt, CreatedAt: m.CreatedAt}
}

// InboxOut answers mail_list_inbox.
type InboxOut struct {
	Count       int    `json:"count" jsonschema:"number of mails listed"`
	UnreadCount int    `json:"unread_count" jsonschema:"number of unread mails in your inbox (listed or not)"`
	Mails       []Mail `json:"mails" jsonschema:"your mail, newest first; unread only unless include_read"`
}

// StatusOut answers agent_get_status.
type StatusOut struct {
	AgentID         string  `json:"agent_id" jsonschema:"your agent id: the one mail is addressed to"`
	AgentType       string  `json:"agent_type" jsonschema:"your type: SUPERVISOR, ORCHESTRATOR or WORKER (empty when not configured)"`
	SupervisorID    *string `json:"supervisor_id" jsonschema:"your supervisor's agent id, for mail_send; null when you have none"`
	UnreadMailCount int     `json:"unread_mail_count" jsonschema:"unread mails in your inbox"`
	TaskID          *string `json:"task_id" jsonschema:"your current task (UUID); null when none is assigned"`
	TaskStatus      *string `json:"task_status" jsonschema:"that task's status: todo | inprogress | inreview | done | cancelled; null without a task"`
	AttemptID       *string `json:"attempt_id" jsonschema:"your current attempt (UUID); null when none is assigned"`
	AttemptState    *string `json:"attempt_state" jsonschema:"that attempt's state: idle | running | completed | failed; null without an attempt"`
}

// TaskOut answers agent_get_task.
type TaskOut struct {
	AgentID string             `json:"agent_id" jsonschema:"your agent id"`
	Task    taskapi.TaskDetail `json:"task" jsonschema:"your current task with its latest attempt"`
	Attempt *taskapi.StatusOut `json:"attempt" jsonschema:"your current attempt's status; null when you have a task but no attempt"`
}

// DecisionOut answers log_decision.
type DecisionOut struct {
	LogID     string `json:"log_id" jsonschema:"the decision-log entry (UUID)"`
	Timestamp string `json:"timestamp" jsonschema:"when it was recorded (RFC3339)"`
}
