package runtime

import (
	"fmt"
	"path"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental/sysfs"
)

// applyOptions turns p.opts into the plugin's limits and resources:
// instance slots (Stateful: one instance, calls serialised; else
// MaxInstances or the engine's), the memory cap, the caps of limits.go, the
// secrets' redactor, the HTTP client and the mounted directories.
// releaseOptions undoes it.
//
// Stateful needs nothing else: a healthy instance always goes back to the
// pool, and a pool of one keeps the same instance, with its globals and
// Extism vars, until a failure discards it (the next call then starts a
// fresh one). In a pool of several, vars and globals also live as long as
// their instance, as in Extism, but which instance a call gets is not
// defined, so a pooled plugin cannot count on them.
//
// MemoryLimitPages: wazero sets one memory ceiling per runtime (the engine's
// Config.MemoryLimitPages), but the memory allocator is chosen per
// instantiation, so a plugin's lower cap is its own allocator's
// reservation: growth past it fails in the guest like growth past the
// engine's cap. A cap above the engine's cannot be honoured and is refused.
func (p *Plugin) applyOptions() error {
	e, o := p.engine, &p.opts
	p.redactor = NewRedactor(o.Secrets)
	n := e.cfg.MaxInstances
	if o.MaxInstances > 0 {
		n = o.MaxInstances
	}
	if o.Stateful {
		n = 1
	}
	p.slots = make(chan struct{}, n)
	p.keepIdle = e.cfg.KeepIdle
	if o.Stateful {
		p.keepIdle = 1
	}
	p.memPages, p.memory = e.cfg.MemoryLimitPages, e.memory
	if m := o.MemoryLimitPages; m > 0 && m != e.cfg.MemoryLimitPages {
		if m > e.cfg.MemoryLimitPages {
			return fmt.Errorf("memory limit of %d MiB is above the engine's cap of %d MiB (plugins.memory_limit_mib), which bounds every plugin",
				m/16, e.cfg.MemoryLimitPages/16)
		}
		p.memPages = m
		p.memory = newMemoryAllocator(uint64(m) << 16)
	}
	p.limits = o.Limits.Or(e.cfg.Limits)
	var err error
	if p.egress, err = newEgress(p.name, o.HTTP, e.cfg.MaxHostCallBytes, p.limits, e.httpConns); err != nil {
		return err
	}
	p.egress.useStandIns(e.standIns)
	if len(o.Mounts) == 0 {
		return nil
	}
	fc := wazero.NewFSConfig()
	seen := map[string]bool{}
	for _, m := range o.Mounts {
		guest := path.Clean(m.GuestPath)
		if !path.IsAbs(m.GuestPath) {
			return fmt.Errorf("mount %s: the guest path %q is not absolute", m.HostPath, m.GuestPath)
		}
		if seen[guest] {
			return fmt.Errorf("mount %s: guest path %s is mounted twice", m.HostPath, guest)
		}
		seen[guest] = true
		mfs, err := newMountFS(m.HostPath, m.Writable)
		if err != nil {
			return fmt.Errorf("mount %s at %s: %w", m.HostPath, guest, err)
		}
		p.mounts = append(p.mounts, mfs)
		fc = fc.(sysfs.FSConfig).WithSysFSMount(mfs, guest)
	}
	p.fsConfig = fc
	return nil
}

// releaseOptions frees what applyOptions set up.
func (p *Plugin) releaseOptions() {
	p.egress.close()
	for _, m := range p.mounts {
		m.close()
	}
	p.mounts = nil
}
