package mcpserver

//lint:file-ignore SA1019 logging is deprecated only from MCP 2026-07-28 on; this server speaks up to 2025-11-25 (see ProtocolVersions).

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/host/internal/mail"
)

// MailNotifier tells connected agents that mail arrived (mail.Notifier):
// each session of the recipient gets a notifications/message at level
// info, logger "mail", data {mail_id, from, subject, thread_id}. A session
// is its caller's from its first request on (CallerOf: the bearer token's
// agent over HTTP, --agent or the local identity over stdio). As for every
// log notification, the go-sdk sends it only once the client has set a
// logging level (logging/setLevel).
type MailNotifier struct {
	srv  *mcp.Server
	opts Options
	log  *slog.Logger

	mu       sync.Mutex
	sessions map[*mcp.ServerSession]string // session → agent id
}

var _ mail.Notifier = (*MailNotifier)(nil)

// NewMailNotifier returns the notifier of srv's sessions; opts are the
// server's (New), whose Caller and Callers name each session's agent. It
// adds a receiving middleware to srv that records the agent of each
// session.
func NewMailNotifier(srv *mcp.Server, opts Options) *MailNotifier {
	n := &MailNotifier{srv: srv, opts: opts, log: opts.Logger, sessions: map[*mcp.ServerSession]string{}}
	if n.log == nil {
		n.log = slog.New(slog.DiscardHandler)
	}
	srv.AddReceivingMiddleware(n.track)
	return n
}

// track binds the session of every request to its caller.
func (n *MailNotifier) track(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
			if c := CallerOf(req.GetExtra(), n.opts); c != nil && c.ID != "" {
				n.Bind(ss, c.ID)
			}
		}
		return next(ctx, method, req)
	}
}

// Bind records that session acts for agentID, until the session ends.
func (n *MailNotifier) Bind(session *mcp.ServerSession, agentID string) {
	n.mu.Lock()
	_, known := n.sessions[session]
	n.sessions[session] = agentID
	n.mu.Unlock()
	if !known {
		// Forget the session as soon as it ends: holding it until the next
		// mail kept every closed session's memory (thousands of
		// initializes grew the server by hundreds of megabytes).
		go func() {
			_ = session.Wait()
			n.mu.Lock()
			delete(n.sessions, session)
			n.mu.Unlock()
		}()
	}
}

// MailArrived sends the notice to every connected session of toAgentID,
// forgetting sessions that have closed (Bind forgets them too, as they
// end).
func (n *MailNotifier) MailArrived(ctx context.Context, toAgentID string, m mail.Notice) {
	live := map[*mcp.ServerSession]bool{}
	for ss := range n.srv.Sessions() {
		live[ss] = true
	}
	var targets []*mcp.ServerSession
	n.mu.Lock()
	for ss, id := range n.sessions {
		switch {
		case !live[ss]:
			delete(n.sessions, ss)
		case id == toAgentID:
			targets = append(targets, ss)
		}
	}
	n.mu.Unlock()
	data := map[string]string{"mail_id": m.MailID, "from": m.From, "subject": m.Subject, "thread_id": m.ThreadID}
	for _, ss := range targets {
		// A detached context, not one derived from the sender's call: the
		// streamable transport routes a message made under a request's
		// context to that request's stream, which in the recipient's
		// session does not exist; detached, it goes to the recipient's
		// standalone stream. Nor should the sender's call end the notice
		// half-sent.
		nctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := ss.Log(nctx, &mcp.LoggingMessageParams{Level: "info", Logger: "mail", Data: data}); err != nil {
			n.log.Debug("mail notice not sent", "to", toAgentID, "err", err)
		}
		cancel()
	}
}
