package main

import "github.com/plugboard/plugboard/abi/tasks"

// The agent tools' types are defined once, in abi/tasks, which the host
// answers with too; these are their names here. The input schemas are
// written out in schemas.go; the output schemas are inferred from the
// types.
type (
	SendIn     = tasks.SendIn
	InboxIn    = tasks.InboxIn
	MailIn     = tasks.MailIn
	ReplyIn    = tasks.ReplyIn
	DecisionIn = tasks.DecisionIn

	SentOut     = tasks.SentOut
	Mail        = tasks.Mail
	InboxOut    = tasks.InboxOut
	StatusOut   = tasks.AgentStatusOut
	TaskOut     = tasks.AgentTaskOut
	DecisionOut = tasks.DecisionOut
)

// mailOut is a mail as the host stores it, as its recipient sees it.
func mailOut(m tasks.BoardMail) Mail {
	return Mail{MailID: m.ID, FromAgentID: m.FromAgentID, FromAgentType: m.FromAgentType, ToAgentID: m.ToAgentID,
		Subject: m.Subject, Body: m.Body, InReplyTo: m.InReplyTo, ThreadID: m.ThreadID, IsRead: m.ReadAt != nil,
		ReadAt: m.ReadAt, CreatedAt: m.CreatedAt}
}
