// Package mail owns mail between agents and to the human inbox: sending
// (with its mail.sent event), inboxes, reading (only by the recipient),
// replies threaded to the original sender, the notice a connected recipient
// gets (Notifier), and escalation mail after a call failed for good
// (dispatch.Escalator).
//
// Every operation acts for the caller the transport authenticated
// (host/internal/caller); who the agents are — type, supervisor, task and attempt —
// comes from an agent directory (Agents) the host passes in. The mail rows
// live in the board's store (host/internal/store); this package keeps no state
// beyond its wiring.
package mail

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/abi/tasks"
	"github.com/plugboard/plugboard/host/internal/caller"
	"github.com/plugboard/plugboard/host/internal/store"
)

// Human is the recipient id of the human inbox.
const Human = "human"

// System is the sender id of mail the host writes (escalations).
const System = "plugboard"

// AgentInfo is what the agent directory knows of one agent.
type AgentInfo struct {
	ID string
	// Type is the agent type (SUPERVISOR, ORCHESTRATOR, WORKER).
	Type string
	// Supervisor is the id of the agent's supervisor, or "".
	Supervisor string
	// TaskID and AttemptID are the board task and attempt the agent works
	// on, or "".
	TaskID, AttemptID string
}

// Agents is the agent directory (the host's agents configuration).
type Agents interface {
	Agent(id string) (AgentInfo, bool)
}

// AgentsFunc adapts a function to Agents.
type AgentsFunc func(id string) (AgentInfo, bool)

// Agent implements Agents.
func (f AgentsFunc) Agent(id string) (AgentInfo, bool) { return f(id) }

// Notice is what a connected recipient is told when mail arrives.
type Notice struct {
	MailID   string `json:"mail_id"`
	From     string `json:"from"`
	Subject  string `json:"subject"`
	ThreadID string `json:"thread_id"`
}

// Notifier tells a connected recipient that mail arrived; the MCP
// transport implements it (host/internal/mcpserver.MailNotifier). It must not block
// for long: it runs after the mail is stored, on the sender's call.
type Notifier interface {
	MailArrived(ctx context.Context, toAgentID string, n Notice)
}

// Store is what a store must offer the mail system: the mail rows
// (store.Mail) and their mail.sent events. host/internal/store
// (SQLite) implements it.
type Store interface {
	// InsertMail stores m (ID, ThreadID and CreatedAt set) and records its
	// mail.sent event in the same transaction.
	InsertMail(ctx context.Context, m store.Mail) error
	// GetMail returns one mail, or store.ErrNotFound.
	GetMail(ctx context.Context, id string) (store.Mail, error)
	// ListInbox returns the mail addressed to to, newest first, at most
	// limit (default 50); read mail only when includeRead.
	ListInbox(ctx context.Context, to string, includeRead bool, limit int) ([]store.Mail, error)
	// CountMail returns how many mails to holds, and how many are unread.
	CountMail(ctx context.Context, to string) (total, unread int, err error)
	// MarkMailRead sets the read time of mail id unless it is already
	// read, and returns the mail as it now is.
	MarkMailRead(ctx context.Context, id, at string) (store.Mail, error)
	// MailSince returns the mail created at or after since, oldest first,
	// at most limit.
	MailSince(ctx context.Context, since string, limit int) ([]store.Mail, error)
	// Subscribe returns a channel that receives a signal of kind from
	// other hosts (store.SignalMail: a mail was stored), and cancel.
	Subscribe(kind string) (<-chan string, func())
	// Notifies reports whether Subscribe delivers signals at all.
	Notifies() bool
}

var _ Store = (*store.Store)(nil)

// StoreFunc returns the board's store once it is open.
type StoreFunc func(ctx context.Context) (Store, error)

// Static returns a StoreFunc for an open store.
func Static(st Store) StoreFunc {
	return func(context.Context) (Store, error) { return st, nil }
}

// Options configures New.
type Options struct {
	// Agents is the agent directory; nil means none is configured: a
	// caller is then what its identity says (id and role), without
	// supervisor, task or attempt, and any recipient id is accepted.
	Agents Agents
	// Notifier, when set, hears of every mail stored (SetNotifier sets it
	// later, once the transport exists).
	Notifier Notifier
	Logger   *slog.Logger
}

// Service is the mail system. It is safe for concurrent use.
type Service struct {
	store    StoreFunc
	agents   Agents
	notifier atomic.Pointer[Notifier]
	log      *slog.Logger
	// notified holds the ids of mail whose recipient was notified, by when
	// (this host's deliveries and what Watch found), so Watch notifies
	// each mail once.
	notifiedMu sync.Mutex
	notified   map[string]time.Time
}

// New returns the mail service over the store st returns.
func New(st StoreFunc, opts Options) *Service {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Service{store: st, agents: opts.Agents, log: opts.Logger, notified: map[string]time.Time{}}
	if opts.Notifier != nil {
		s.SetNotifier(opts.Notifier)
	}
	return s
}

// SetNotifier sets (or, with nil, clears) the notifier.
func (s *Service) SetNotifier(n Notifier) {
	if n == nil {
		s.notifier.Store(nil)
		return
	}
	s.notifier.Store(&n)
}

// Agent returns the directory entry of the caller c: its configured
// entry, or, without one, what its identity says.
func (s *Service) Agent(c *abi.Caller) AgentInfo {
	if s.agents != nil {
		if a, ok := s.agents.Agent(c.ID); ok {
			if a.ID == "" {
				a.ID = c.ID
			}
			if a.Type == "" {
				a.Type = c.Role
			}
			return a
		}
	}
	return AgentInfo{ID: c.ID, Type: c.Role}
}

// NoCaller is the envelope of a mail or agent operation without a caller
// identity.
func NoCaller(op string) *abi.Envelope {
	return abi.NewEnvelope(abi.CodePermissionDenied,
		op+" acts for the calling agent, and this call has no caller identity",
		"connect as an agent: plugboard serve --agent ID (stdio), or an agent's bearer token (HTTP)").WithDetail("op", op)
}

// Limits of a mail's fields, in characters.
const (
	MaxSubject = 500
	MaxBody    = 65536
)

// The arguments and answers of the mail operations are the shapes agents
// see, defined once in abi/tasks; these are their names here.
type (
	// SendArgs are the arguments of Send (the mail_send board operation).
	SendArgs = tasks.SendIn
	// Sent is the answer of Send and Reply.
	Sent = tasks.SentOut
	// InboxArgs are the arguments of ListInbox (mail_list_inbox).
	InboxArgs = tasks.InboxIn
	// Inbox is the answer of ListInbox: the mails as stored.
	Inbox = tasks.BoardInbox
	// MailArgs name one mail (mail_read).
	MailArgs = tasks.MailIn
	// ReplyArgs are the arguments of Reply (mail_reply).
	ReplyArgs = tasks.ReplyIn
)

// boardMail is a stored mail as the mail operations answer it.
func boardMail(m store.Mail) tasks.BoardMail {
	return tasks.BoardMail{ID: m.ID, FromAgentID: m.FromAgentID, FromAgentType: m.FromAgentType, ToAgentID: m.ToAgentID,
		Subject: m.Subject, Body: m.Body, InReplyTo: m.InReplyTo, ThreadID: m.ThreadID, ReadAt: m.ReadAt, CreatedAt: m.CreatedAt}
}

// Send stores a mail from c to one agent or to the human inbox.
func (s *Service) Send(ctx context.Context, c *abi.Caller, a SendArgs) (Sent, error) {
	if c == nil || c.ID == "" {
		return Sent{}, NoCaller(abi.OpMailSend)
	}
	to := a.ToAgentID
	switch {
	case a.ToAgentID != "" && a.ToHuman:
		return Sent{}, abi.NewEnvelope(abi.CodeAmbiguousTarget, "both to_agent_id and to_human were given",
			"pass exactly one recipient: to_agent_id for an agent, or to_human=true for the human inbox")
	case a.ToHuman:
		to = Human
	case a.ToAgentID == "":
		return Sent{}, abi.NewEnvelope(abi.CodeMissingRequired, "no recipient: pass to_agent_id or to_human=true",
			"pass exactly one recipient: to_agent_id for an agent, or to_human=true for the human inbox").WithDetail("field", "to_agent_id")
	case a.ToAgentID == Human:
		return Sent{}, abi.NewEnvelope(abi.CodeInvalidArgument, `"human" is not an agent id`,
			"pass to_human=true to write to the human inbox").WithDetail("field", "to_agent_id")
	case s.agents != nil:
		if _, ok := s.agents.Agent(a.ToAgentID); !ok {
			return Sent{}, abi.NewEnvelope(abi.CodeNotFound, fmt.Sprintf("no agent %q is configured", a.ToAgentID),
				"use an agent id you were given (agent_get_status shows your supervisor_id), or to_human=true").
				WithDetail("field", "to_agent_id")
		}
	}
	if err := checkText("subject", a.Subject, MaxSubject); err != nil {
		return Sent{}, err
	}
	if err := checkText("body", a.Body, MaxBody); err != nil {
		return Sent{}, err
	}
	st, err := s.store(ctx)
	if err != nil {
		return Sent{}, err
	}
	var parent *store.Mail
	if a.InReplyTo != "" {
		p, err := st.GetMail(ctx, a.InReplyTo)
		if errors.Is(err, store.ErrNotFound) || err == nil && p.ToAgentID != c.ID && p.FromAgentID != c.ID {
			return Sent{}, abi.NewEnvelope(abi.CodeNotFound, "no mail "+a.InReplyTo+" in your mail",
				"pass in_reply_to only with the id of a mail you sent or received (mail_list_inbox), or use mail_reply").
				WithDetail("field", "in_reply_to")
		} else if err != nil {
			return Sent{}, err
		}
		parent = &p
	}
	return s.deliver(ctx, st, s.Agent(c), to, a.Subject, a.Body, parent)
}

// deliver stores one mail from sender to to and notifies the recipient.
func (s *Service) deliver(ctx context.Context, st Store, from AgentInfo, to, subject, body string, parent *store.Mail) (Sent, error) {
	m := store.Mail{ID: store.NewID(), FromAgentID: from.ID, FromAgentType: from.Type, ToAgentID: to, Subject: subject,
		Body: body, CreatedAt: store.Now()}
	m.ThreadID = m.ID
	if parent != nil {
		m.InReplyTo, m.ThreadID = &parent.ID, parent.ThreadID
	}
	if err := st.InsertMail(ctx, m); err != nil {
		return Sent{}, err
	}
	s.markNotified(m.ID)
	if n := s.notifier.Load(); n != nil {
		(*n).MailArrived(ctx, to, Notice{MailID: m.ID, From: m.FromAgentID, Subject: m.Subject, ThreadID: m.ThreadID})
	}
	return Sent{MailID: m.ID, ToAgentID: to, Subject: subject, ThreadID: m.ThreadID, InReplyTo: m.InReplyTo, Timestamp: m.CreatedAt}, nil
}

func checkText(field, v string, max int) error {
	switch {
	case strings.TrimSpace(v) == "":
		return abi.NewEnvelope(abi.CodeMissingRequired, field+" is empty", "pass a non-empty "+field).WithDetail("field", field)
	case utf8.RuneCountInString(v) > max:
		return abi.NewEnvelope(abi.CodeInvalidArgument, fmt.Sprintf("%s is longer than %d characters", field, max),
			"shorten "+field).WithDetail("field", field)
	}
	return nil
}

// DefaultInboxLimit and MaxInboxLimit bound ListInbox.
const (
	DefaultInboxLimit = 50
	MaxInboxLimit     = 200
)

// ListInbox lists the caller's mail, newest first; unread only unless
// IncludeRead.
func (s *Service) ListInbox(ctx context.Context, c *abi.Caller, a InboxArgs) (Inbox, error) {
	if c == nil || c.ID == "" {
		return Inbox{}, NoCaller(abi.OpMailListInbox)
	}
	if a.Limit == 0 {
		a.Limit = DefaultInboxLimit
	}
	if a.Limit < 1 || a.Limit > MaxInboxLimit {
		return Inbox{}, abi.NewEnvelope(abi.CodeInvalidArgument, fmt.Sprintf("limit %d is outside 1..%d", a.Limit, MaxInboxLimit),
			"pass a limit from 1 to 200, or none for 50").WithDetail("field", "limit")
	}
	st, err := s.store(ctx)
	if err != nil {
		return Inbox{}, err
	}
	mails, err := st.ListInbox(ctx, c.ID, a.IncludeRead, a.Limit)
	if err != nil {
		return Inbox{}, err
	}
	_, unread, err := st.CountMail(ctx, c.ID)
	if err != nil {
		return Inbox{}, err
	}
	out := Inbox{Count: len(mails), UnreadCount: unread, Mails: make([]tasks.BoardMail, len(mails))}
	for i, m := range mails {
		out.Mails[i] = boardMail(m)
	}
	return out, nil
}

// UnreadCount is the number of unread mails in the caller's inbox.
func (s *Service) UnreadCount(ctx context.Context, c *abi.Caller) (int, error) {
	st, err := s.store(ctx)
	if err != nil {
		return 0, err
	}
	_, unread, err := st.CountMail(ctx, c.ID)
	return unread, err
}

// received returns mail id if c is its recipient: not_found when it does
// not exist, permission_denied when it is someone else's.
func (s *Service) received(ctx context.Context, st Store, c *abi.Caller, id, op string) (store.Mail, error) {
	if id == "" {
		return store.Mail{}, abi.NewEnvelope(abi.CodeMissingRequired, "mail_id is empty",
			"pass the mail_id of a mail in your inbox (mail_list_inbox)").WithDetail("field", "mail_id")
	}
	m, err := st.GetMail(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return m, abi.NewEnvelope(abi.CodeNotFound, "no mail "+id, "use a mail_id from mail_list_inbox").WithDetail("mail_id", id)
	}
	if err != nil {
		return m, err
	}
	if m.ToAgentID != c.ID {
		// The hint names mail_list_inbox only to a caller that may call it.
		hint := "only a mail's recipient may " + op + " it; use the mail_id of a mail sent to you"
		if caller.May(ctx, "mail_list_inbox") {
			hint = "only a mail's recipient may " + op + " it; use a mail_id from your own mail_list_inbox"
		}
		return store.Mail{}, abi.NewEnvelope(abi.CodePermissionDenied, "mail "+id+" is not addressed to you", hint).WithDetail("mail_id", id)
	}
	return m, nil
}

// Read returns one mail addressed to the caller and marks it read.
func (s *Service) Read(ctx context.Context, c *abi.Caller, a MailArgs) (tasks.BoardMail, error) {
	if c == nil || c.ID == "" {
		return tasks.BoardMail{}, NoCaller(abi.OpMailRead)
	}
	st, err := s.store(ctx)
	if err != nil {
		return tasks.BoardMail{}, err
	}
	if _, err := s.received(ctx, st, c, a.MailID, "read"); err != nil {
		return tasks.BoardMail{}, err
	}
	m, err := st.MarkMailRead(ctx, a.MailID, store.Now())
	return boardMail(m), err
}

// Reply answers a mail the caller received: to its sender, in its thread,
// with the subject prefixed "Re: " unless it already is.
func (s *Service) Reply(ctx context.Context, c *abi.Caller, a ReplyArgs) (Sent, error) {
	if c == nil || c.ID == "" {
		return Sent{}, NoCaller(abi.OpMailReply)
	}
	if err := checkText("body", a.Body, MaxBody); err != nil {
		return Sent{}, err
	}
	st, err := s.store(ctx)
	if err != nil {
		return Sent{}, err
	}
	orig, err := s.received(ctx, st, c, a.MailID, "reply to")
	if err != nil {
		return Sent{}, err
	}
	return s.deliver(ctx, st, s.Agent(c), orig.FromAgentID, ReplySubject(orig.Subject), a.Body, &orig)
}

// ReplySubject is subject prefixed "Re: ", once: a subject that already
// starts with "Re:" (any case) is kept.
func ReplySubject(subject string) string {
	if len(subject) >= 3 && strings.EqualFold(subject[:3], "re:") {
		return subject
	}
	return "Re: " + subject
}

// Mail stored through another host sharing the store reaches this host's
// sessions through Watch, which reads the store for mail created in the
// last watchWindow — a window, not a cursor, because hosts' transactions
// commit out of created_at order and their clocks differ a little — and
// notifies each mail it has not notified yet. It reads when the store
// signals a mail (PostgreSQL) and otherwise every watchEvery, or every
// watchFallback where signals come and the poll only catches a missed one.
const (
	watchEvery  = time.Second
	watchWindow = 30 * time.Second
)

// watchFallback is a variable so that a test can show signals alone
// deliver mail.
var watchFallback = 10 * time.Second

// markNotified records that id's recipient was notified; it reports
// whether it already had been.
func (s *Service) markNotified(id string) bool {
	s.notifiedMu.Lock()
	defer s.notifiedMu.Unlock()
	_, seen := s.notified[id]
	s.notified[id] = time.Now()
	return seen
}

// Watch notifies this host's sessions of mail other hosts store, until ctx
// ends. Mail that existed when it started is not notified.
func (s *Service) Watch(ctx context.Context) {
	var st Store
	for {
		var err error
		if st, err = s.store(ctx); err == nil && st != nil {
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(watchEvery):
		}
	}
	stored, unsubscribe := st.Subscribe(store.SignalMail)
	defer unsubscribe()
	every := watchEvery
	if st.Notifies() {
		every = watchFallback
	}
	t := time.NewTicker(every)
	defer t.Stop()
	s.poll(ctx, st, true)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-stored:
			// One read for a burst of mail: it reads them all.
			for drained := false; !drained; {
				select {
				case <-stored:
				default:
					drained = true
				}
			}
		}
		s.poll(ctx, st, false)
	}
}

// poll notifies the mail of the last watchWindow not notified yet (with
// quiet, only records it), and forgets ids older than twice the window.
func (s *Service) poll(ctx context.Context, st Store, quiet bool) {
	since := store.FormatTime(time.Now().Add(-watchWindow))
	mails, err := st.MailSince(ctx, since, 1000)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("mail of other hosts not read", "err", err)
		}
		return
	}
	n := s.notifier.Load()
	for _, m := range mails {
		if s.markNotified(m.ID) || quiet || n == nil {
			continue
		}
		(*n).MailArrived(ctx, m.ToAgentID, Notice{MailID: m.ID, From: m.FromAgentID, Subject: m.Subject, ThreadID: m.ThreadID})
	}
	s.notifiedMu.Lock()
	for id, at := range s.notified {
		if time.Since(at) > 2*watchWindow {
			delete(s.notified, id)
		}
	}
	s.notifiedMu.Unlock()
}
