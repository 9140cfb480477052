package mcpserver

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessionLimiter caps the MCP sessions each identity holds over HTTP. A
// session costs the server memory until it is closed, and a client that
// initializes without ever sending DELETE leaves every one behind, so an
// identity that already holds its cap and initializes again gives up its
// least recently used session that has no call in flight; when all of them
// are busy, the new initialize is refused instead. In-flight work is never
// cut, the sessions of one identity cannot crowd out another's, and a
// client that lost its sessions (crashed, restarted) can always connect
// again. It is an mcp.Middleware: it sees every message a session receives
// (which is what "used" means) and each session as it initializes.
type sessionLimiter struct {
	max int
	now func() time.Time

	mu sync.Mutex
	// byIdentity holds each identity's initialized sessions; all holds
	// the same uses by session.
	byIdentity map[string]map[*mcp.ServerSession]*sessionUse
	all        map[*mcp.ServerSession]*sessionUse
	// pending counts each identity's initializes in progress: they hold a
	// place under the cap until they finish.
	pending map[string]int
}

// sessionUse is what the limiter knows of one session.
type sessionUse struct {
	identity string
	lastUsed time.Time
	// inFlight counts the messages being handled.
	inFlight int
}

func newSessionLimiter(max int) *sessionLimiter {
	return &sessionLimiter{max: max, now: time.Now, byIdentity: map[string]map[*mcp.ServerSession]*sessionUse{},
		all: map[*mcp.ServerSession]*sessionUse{}, pending: map[string]int{}}
}

// identityOf is the authenticated identity of a request ("" without
// authentication: every client of a token-less server is one identity).
func identityOf(req mcp.Request) string {
	if extra := req.GetExtra(); extra != nil && extra.TokenInfo != nil {
		return extra.TokenInfo.UserID
	}
	return ""
}

// middleware tracks use and applies the cap at initialize.
func (l *sessionLimiter) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ss, _ := req.GetSession().(*mcp.ServerSession)
		if ss == nil {
			return next(ctx, method, req)
		}
		if method == "initialize" && !l.tracked(ss) {
			return l.initialize(ctx, ss, identityOf(req), func() (mcp.Result, error) { return next(ctx, method, req) })
		}
		l.begin(ss)
		defer l.end(ss)
		return next(ctx, method, req)
	}
}

func (l *sessionLimiter) tracked(ss *mcp.ServerSession) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.all[ss] != nil
}

// initialize admits a new session of identity under the cap, making room
// if it must, and tracks it once initialized.
func (l *sessionLimiter) initialize(ctx context.Context, ss *mcp.ServerSession, identity string, run func() (mcp.Result, error)) (mcp.Result, error) {
	l.mu.Lock()
	sessions := l.byIdentity[identity]
	if len(sessions)+l.pending[identity] >= l.max {
		victim := l.leastRecentlyUsedIdle(sessions)
		if victim == nil {
			l.mu.Unlock()
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf(
				"too many sessions: this identity holds %d, each with a call in flight; end one (HTTP DELETE) or wait for a call to finish", l.max)}
		}
		delete(sessions, victim)
		delete(l.all, victim)
		// Closing waits for the victim's handlers; the new session need
		// not wait with it.
		go victim.Close()
	}
	l.pending[identity]++
	l.mu.Unlock()

	res, err := run()

	l.mu.Lock()
	if l.pending[identity]--; l.pending[identity] == 0 {
		delete(l.pending, identity)
	}
	if err == nil {
		if l.byIdentity[identity] == nil {
			l.byIdentity[identity] = map[*mcp.ServerSession]*sessionUse{}
		}
		u := &sessionUse{identity: identity, lastUsed: l.now()}
		l.byIdentity[identity][ss], l.all[ss] = u, u
	}
	l.mu.Unlock()
	if err == nil {
		// Forget the session once it ends: DELETE, the idle timeout, an
		// eviction or the server's shutdown.
		go func() {
			_ = ss.Wait()
			l.forget(ss, identity)
		}()
	}
	return res, err
}

// leastRecentlyUsedIdle returns the session among sessions used longest
// ago that has no message in flight, or nil.
func (l *sessionLimiter) leastRecentlyUsedIdle(sessions map[*mcp.ServerSession]*sessionUse) *mcp.ServerSession {
	var victim *mcp.ServerSession
	var oldest time.Time
	for ss, u := range sessions {
		if u.inFlight == 0 && (victim == nil || u.lastUsed.Before(oldest)) {
			victim, oldest = ss, u.lastUsed
		}
	}
	return victim
}

func (l *sessionLimiter) begin(ss *mcp.ServerSession) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if u := l.all[ss]; u != nil {
		u.inFlight++
		u.lastUsed = l.now()
	}
}

func (l *sessionLimiter) end(ss *mcp.ServerSession) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if u := l.all[ss]; u != nil {
		u.inFlight--
		u.lastUsed = l.now()
	}
}

func (l *sessionLimiter) forget(ss *mcp.ServerSession, identity string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.all, ss)
	if sessions := l.byIdentity[identity]; sessions != nil {
		delete(sessions, ss)
		if len(sessions) == 0 {
			delete(l.byIdentity, identity)
		}
	}
}

// count returns the sessions identity holds (for tests).
func (l *sessionLimiter) count(identity string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.byIdentity[identity])
}
