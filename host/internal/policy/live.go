package policy

import (
	"context"
	"reflect"
	"sync/atomic"

	"github.com/plugboard/plugboard/abi"
)

// Live is the agents configuration in force while a server runs: one
// Policy at a time, which Store replaces when the operator's agents file
// changes. Every method reads the Policy in force at that moment, so a new
// call, a token check, a scope or a directory lookup sees the new file,
// while a call already past the policy step finishes under the old one.
// Its methods are those of Policy the host's parts use; it is safe for
// concurrent use and implements dispatch.Policy.
type Live struct {
	cur atomic.Pointer[Policy]
}

// NewLive returns a Live holding p (nil: Default()).
func NewLive(p *Policy) *Live {
	l := &Live{}
	l.Store(p)
	return l
}

// Load returns the Policy in force.
func (l *Live) Load() *Policy { return l.cur.Load() }

// Store puts p in force (nil: Default()).
func (l *Live) Store(p *Policy) {
	if p == nil {
		p = Default()
	}
	l.cur.Store(p)
}

// Allow implements dispatch.Policy with the Policy in force.
func (l *Live) Allow(ctx context.Context, c *abi.Caller, t Tool) *abi.Envelope {
	return l.Load().Allow(ctx, c, t)
}

// Critical implements dispatch.Policy with the Policy in force.
func (l *Live) Critical(t Tool) bool { return l.Load().Critical(t) }

// Scope is Policy.Scope under the Policy in force.
func (l *Live) Scope(c *abi.Caller) Scope { return l.Load().Scope(c) }

// Caller is Policy.Caller under the Policy in force.
func (l *Live) Caller(id string) (*abi.Caller, bool) { return l.Load().Caller(id) }

// Agent is Policy.Agent under the Policy in force.
func (l *Live) Agent(id string) (Agent, bool) { return l.Load().Agent(id) }

// Equal reports whether p and q say the same: the same agents, rules and
// critical tools. A watcher uses it to leave a file saved unchanged (or a
// configuration file changed elsewhere) unannounced.
func (p *Policy) Equal(q *Policy) bool {
	return p == q || p != nil && q != nil && reflect.DeepEqual(*p, *q)
}
