package runtime

// Instances reports the plugin's instances: idle ones wait in its pool,
// busy ones hold a slot (running a call, or starting for one). It is a
// snapshot for the metrics, read without stopping calls.
func (p *Plugin) Instances() (idle, busy int) {
	p.mu.Lock()
	idle = len(p.idle)
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return 0, 0
	}
	return idle, len(p.slots)
}
