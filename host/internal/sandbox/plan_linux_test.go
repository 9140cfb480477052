package sandbox

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// planFor handles every right each ABI knows, sizes the ruleset attribute
// to match, scopes from ABI 6, and refuses NetworkClosed below ABI 4. This
// covers the ABIs the machine running the tests does not have.
func TestPlanForABIs(t *testing.T) {
	p := Policy{ReadOnly: []string{"/ro"}, ReadWrite: []string{"/rw"}, Devices: []string{"/dev/null"}}
	closed := p
	closed.NetworkClosed, closed.AllowConnectTCP = true, []uint16{443}
	for _, c := range []struct {
		abi     int
		p       Policy
		fs, net uint64
		scoped  uint64
		size    uintptr
		err     string
	}{
		{abi: 0, p: p, err: "no Landlock"},
		{abi: 1, p: p, fs: 0x1fff, size: 8},
		{abi: 2, p: p, fs: 0x3fff, size: 8},
		{abi: 3, p: p, fs: 0x7fff, size: 8},
		{abi: 3, p: closed, err: "NetworkClosed needs Landlock ABI 4"},
		{abi: 4, p: p, fs: 0x7fff, size: 8},
		{abi: 4, p: closed, fs: 0x7fff, net: netTCP, size: 16},
		{abi: 5, p: p, fs: 0xffff, size: 8},
		{abi: 6, p: p, fs: 0xffff, scoped: scopes, size: 24},
		{abi: 7, p: closed, fs: 0xffff, net: netTCP, scoped: scopes, size: 24},
		{abi: 9, p: p, fs: 0x1ffff, scoped: scopes, size: 24},
		{abi: 12, p: p, fs: 0x1ffff, scoped: scopes, size: 24},
	} {
		pl, err := planFor(c.p, c.abi)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ABI %d: err %v, want %q", c.abi, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ABI %d: %v", c.abi, err)
			continue
		}
		if a := pl.attr; a.handledAccessFS != c.fs || a.handledAccessNet != c.net || a.scoped != c.scoped || pl.attrSize != c.size {
			t.Errorf("ABI %d: attr %+v size %d, want fs %#x net %#x scoped %#x size %d", c.abi, a, pl.attrSize, c.fs, c.net, c.scoped, c.size)
		}
		if len(pl.paths) != 3 {
			t.Fatalf("ABI %d: rules %+v", c.abi, pl.paths)
		}
		for _, r := range pl.paths {
			if r.access&^pl.attr.handledAccessFS != 0 {
				t.Errorf("ABI %d: %s grants %#x, beyond the handled %#x", c.abi, r.path, r.access, pl.attr.handledAccessFS)
			}
			if r.access&(unix.LANDLOCK_ACCESS_FS_MAKE_CHAR|unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK) != 0 {
				t.Errorf("ABI %d: %s may make device nodes", c.abi, r.path)
			}
		}
		if ro, dev := pl.paths[0].access, pl.paths[2].access; ro&^readRights != 0 || dev&^deviceRights != 0 {
			t.Errorf("ABI %d: ReadOnly %#x or Devices %#x grant too much", c.abi, ro, dev)
		}
		if rw := pl.paths[1].access; rw&unix.LANDLOCK_ACCESS_FS_WRITE_FILE == 0 || rw&unix.LANDLOCK_ACCESS_FS_IOCTL_DEV != 0 {
			t.Errorf("ABI %d: ReadWrite grants %#x", c.abi, rw)
		}
		if c.p.NetworkClosed && (len(pl.ports) != 1 || pl.ports[0] != 443) {
			t.Errorf("ABI %d: ports %v", c.abi, pl.ports)
		}
	}
}
