package runtime

import (
	"context"
	"time"
)

// startIdleJanitor starts the goroutine that gives back what a plugin not
// being called holds: instances idle for longer than the engine's
// IdleTimeout, above the p.keepIdle most recently used (an idle Go guest
// keeps its heap, megabytes, resident), and once the plugin has had no call
// for CodeIdleTimeout, the kept instances and the compiled module too
// (residency.go). A plugin with nothing to give back needs no janitor.
func (p *Plugin) startIdleJanitor() {
	cfg := p.engine.cfg
	trimsPool := cfg.IdleTimeout >= 0 && p.keepIdle < cap(p.slots)
	releases := p.releasable()
	if !trimsPool && !releases {
		return
	}
	tick := time.Duration(0)
	if trimsPool {
		tick = cfg.IdleTimeout / 4
	}
	if releases && (tick == 0 || cfg.CodeIdleTimeout/4 < tick) {
		tick = cfg.CodeIdleTimeout / 4
	}
	tick = max(tick, time.Millisecond)
	p.stopJanitor = make(chan struct{})
	p.janitorDone = make(chan struct{})
	go func() {
		defer close(p.janitorDone)
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			select {
			case <-p.stopJanitor:
				return
			case now := <-t.C:
				if trimsPool {
					p.closeIdle(now.Add(-cfg.IdleTimeout), p.keepIdle)
				}
				if releases {
					cutoff := now.Add(-cfg.CodeIdleTimeout)
					p.closeIdle(cutoff, 0)
					p.releaseCode(cutoff)
				}
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
// cutoff, except the keep most recently used. It reports how many it
// closed.
func (p *Plugin) closeIdle(cutoff time.Time, keep int) int {
	p.mu.Lock()
	// p.idle is ordered by idleSince, oldest first: instances are appended
	// on release and taken from the end.
	n := 0
	for n < len(p.idle)-keep && p.idle[n].idleSince.Before(cutoff) {
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
	p.dropIdle(n)
	return n
}

// IdleInstances reports how many instances wait in the pool.
func (p *Plugin) IdleInstances() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}
