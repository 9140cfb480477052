package runtime

import (
	"context"
	"time"
)

// startIdleJanitor starts the goroutine that closes instances idle for
// longer than the engine's IdleTimeout, keeping the p.keepIdle most
// recently used: an idle Go guest keeps its heap (megabytes) resident, so
// a plugin that is not being called should not hold several. A stateful
// plugin (one instance, kept) and IdleTimeout < 0 need no janitor.
func (p *Plugin) startIdleJanitor() {
	timeout := p.engine.cfg.IdleTimeout
	if timeout < 0 || p.keepIdle >= cap(p.slots) {
		return
	}
	p.stopJanitor = make(chan struct{})
	p.janitorDone = make(chan struct{})
	tick := max(timeout/4, time.Millisecond)
	go func() {
		defer close(p.janitorDone)
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			select {
			case <-p.stopJanitor:
				return
			case now := <-t.C:
				p.closeIdle(now.Add(-timeout))
			}
		}
	}()
}

// stopIdleJanitor ends the janitor and waits for it.
func (p *Plugin) stopIdleJanitor() {
	if p.stopJanitor == nil {
		return
	}
	close(p.stopJanitor)
	<-p.janitorDone
}

// closeIdle closes the idle instances that went back to the pool before
// cutoff, except the p.keepIdle most recently used. It reports how many
// it closed.
func (p *Plugin) closeIdle(cutoff time.Time) int {
	p.mu.Lock()
	// p.idle is ordered by idleSince, oldest first: instances are appended
	// on release and taken from the end.
	n := 0
	for n < len(p.idle)-p.keepIdle && p.idle[n].idleSince.Before(cutoff) {
		n++
	}
	if n == 0 {
		p.mu.Unlock()
		return 0
	}
	stale := make([]*instance, n)
	copy(stale, p.idle[:n])
	rest := copy(p.idle, p.idle[n:])
	clear(p.idle[rest:])
	p.idle = p.idle[:rest]
	p.mu.Unlock()
	for _, inst := range stale {
		_ = inst.mod.Close(context.Background())
	}
	return n
}

// IdleInstances reports how many instances wait in the pool.
func (p *Plugin) IdleInstances() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}
