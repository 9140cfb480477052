package host

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/board"
	"github.com/plugboard/plugboard/host/internal/dispatch"
	"github.com/plugboard/plugboard/host/internal/mcpserver"
	"github.com/plugboard/plugboard/host/internal/policy"
)

// Attempt access. An attempt's processes (its setup and cleanup scripts,
// its coding agent) run as the host's Unix user; handing them the board's
// data directory made any of them the local SUPERVISOR of the whole board.
// Instead each process gets what it needs to reach the board as itself:
// the URL of the host's agent endpoint and a token of its own, valid while
// it runs, whose identity is its attempt's WORKER
// (policy.AttemptCaller: the WORKER rules, a scope of exactly that
// attempt). The board asks for them before each process starts
// (board.Config.Access) and revokes them when it ends.
//
// The agent endpoint is one streamable-HTTP MCP listener per host on
// 127.0.0.1, started on the first attempt process and closed with the
// host. It admits the live attempt tokens and nothing else: no operator
// token, no unauthenticated request, no dashboard, no REST door.

// Access and AccessIssuer are aliases of the board's, as BoardConfig is:
// an embedder's issuer is a field of the board's configuration, handed to
// the board as it is.
type (
	// Access is what the board gives one attempt process to reach it
	// (BoardConfig.Access).
	Access = board.Access
	// AccessIssuer issues an Access for one process of an attempt;
	// BoardConfig.Access left nil is the host's own (the agent endpoint).
	AccessIssuer = board.AccessIssuer
)

// Variables an attempt process gets (board.Access.Env); a plugboard it
// starts without --data reaches the board through them (cmd/plugboard).
const (
	EnvAttemptURL   = "PLUGBOARD_URL"
	EnvAttemptToken = "PLUGBOARD_TOKEN"
)

// attemptAccess is the host's agent endpoint and its live tokens.
type attemptAccess struct {
	h      *Host
	tokens mcpserver.TokenSet

	mu sync.Mutex
	// ready is set once the host has opened (the endpoint serves through
	// its dispatcher); closed once it closes.
	ready, closed bool
	// url and port are the endpoint's once started; stop ends it and done
	// is closed when it has ended.
	url  string
	port uint16
	stop context.CancelFunc
	done chan struct{}
}

// arm lets the endpoint start, now that the host's dispatcher exists, and
// returns how it closes (a part of the host's lifecycle).
func (a *attemptAccess) arm() func(context.Context) error {
	a.mu.Lock()
	a.ready = true
	a.mu.Unlock()
	return a.close
}

// issue implements board.AccessIssuer: a fresh token of attemptID's
// identity, the endpoint's URL and port, and the token's revocation.
func (a *attemptAccess) issue(attemptID, taskID string) (board.Access, error) {
	if attemptID == "" {
		return board.Access{}, errors.New("attempt access: no attempt id")
	}
	url, port, err := a.endpoint()
	if err != nil {
		return board.Access{}, err
	}
	caller := policy.AttemptCaller(attemptID)
	token, revoke, err := a.tokens.Issue(caller.ID)
	if err != nil {
		return board.Access{}, fmt.Errorf("attempt access: token: %w", err)
	}
	a.h.log.Debug("attempt access issued", "attempt", attemptID, "task", taskID, "endpoint", url)
	return board.Access{
		Env:    []string{EnvAttemptURL + "=" + url, EnvAttemptToken + "=" + token},
		Ports:  []uint16{port},
		Revoke: revoke,
	}, nil
}

// endpoint returns the agent endpoint's URL and port, starting it on
// first use.
func (a *attemptAccess) endpoint() (string, uint16, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.closed:
		return "", 0, errors.New("attempt access: the host is closing")
	case !a.ready:
		return "", 0, errors.New("attempt access: the host is still opening")
	case a.url != "":
		return a.url, a.port, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", 0, fmt.Errorf("attempt access: agent endpoint: %w", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	mcpSrv := mcpserver.New(a.h.registry, a.h.dispatcher, a.serverOptions())
	a.h.metrics.track(mcpSrv)
	srv := mcpserver.NewHTTP(mcpSrv, mcpserver.HTTPOptions{
		Loopback: true, Port: strconv.Itoa(port), Authenticate: a.tokens.Authenticate,
		Logger: a.h.log, ShutdownGrace: ShutdownGrace,
	})
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ctx, ln); err != nil {
			a.h.log.Error("agent endpoint stopped", "err", err)
		}
	}()
	a.url, a.port, a.stop, a.done = fmt.Sprintf("http://127.0.0.1:%d%s", port, MCPPath), uint16(port), stop, done
	a.h.log.Info("agent endpoint for attempt processes", "url", a.url)
	return a.url, a.port, nil
}

// serverOptions are the endpoint's MCP server's: every session is
// authenticated, and a token's identity is its attempt's caller. No mail
// notifier is attached: the host's own server keeps that role.
func (a *attemptAccess) serverOptions() mcpserver.Options {
	return mcpserver.Options{Name: "plugboard", Version: "agent-endpoint", Logger: a.h.log, Auditor: a.h.decisions, StateKey: a.h.stateKey, Tracer: a.h.tracer,
		Callers: func(id string) *abi.Caller {
			if attempt, ok := strings.CutPrefix(id, policy.AttemptPrefix); ok && attempt != "" {
				return policy.AttemptCaller(attempt)
			}
			return nil
		}}
}

// close stops the endpoint (calls in flight get the HTTP transport's
// grace, within ctx) and refuses further issues.
func (a *attemptAccess) close(ctx context.Context) error {
	a.mu.Lock()
	a.closed = true
	stop, done := a.stop, a.done
	a.mu.Unlock()
	if stop == nil {
		return nil
	}
	stop()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("agent endpoint: %w", ctx.Err())
	}
}

// callPolicy is the dispatcher's caller policy. A host that does not run
// inside an attempt serves the tools meant for attempts (abi.WhenAttemptContext:
// get_context) to attempt identities only: every other caller is told no
// such tool is served, as before attempt identities existed, and
// tools/list (which lists what the policy permits) does not show it.
func (h *Host) callPolicy() dispatch.Policy {
	if h.access == nil || h.cfg.Board.ContextAttemptID != "" {
		return h.policy
	}
	return attemptOnlyTools{h.policy}
}

// attemptOnlyTools is the agents file's policy, and attempt-only tools
// hidden from the other callers.
type attemptOnlyTools struct{ *policy.Live }

// Allow implements dispatch.Policy.
func (p attemptOnlyTools) Allow(ctx context.Context, c *abi.Caller, t policy.Tool) *abi.Envelope {
	if tool := t.Def; tool.When == abi.WhenAttemptContext {
		if _, ok := policy.AttemptOf(c); !ok {
			// The dispatcher's own answer to a tool it does not serve.
			env := abi.NewEnvelope(abi.CodeToolNotFound, fmt.Sprintf("no tool named %q is served", tool.Name),
				"call tools/list and use one of the names it returns")
			env.Details = map[string]any{"tool": tool.Name}
			return env
		}
	}
	return p.Live.Allow(ctx, c, t)
}
