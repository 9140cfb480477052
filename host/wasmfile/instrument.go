package wasmfile

import (
	"errors"
	"fmt"
	"strings"
)

// InterruptExport is the name under which Instrument exports the interrupt
// flag: a mutable i32 global the host sets to a non-zero value to make the
// running guest trap at its next loop iteration.
const InterruptExport = "plugboard.interrupt"

// Section ids used by Instrument beyond those Parse needs.
const (
	sectionGlobal = 6
	sectionCode   = 10
)

// sectionOrder is the position each known section id must keep in a module
// (the tag section, 13, sits between memory and global).
var sectionOrder = map[byte]int{1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 13: 6, 6: 7, 7: 8, 8: 9, 9: 10, 12: 11, 10: 12, 11: 13}

// Instrument returns a copy of bin in which every loop header first checks
// an exported interrupt flag (global InterruptExport) and traps when it is
// set. The host sets the flag from another goroutine when a call's deadline
// passes or its client cancels, which stops even a guest spinning in a tight
// loop. A loop-free guest always terminates (recursion hits the stack limit),
// so checking loop headers suffices.
//
// This replaces wazero's WithCloseOnContextDone, which leaves native code for
// Go at every loop iteration and made ordinary guest code 5-9x slower here.
// DWARF sections are dropped because the rewritten code no longer matches
// them.
func Instrument(bin []byte) ([]byte, error) {
	secs, err := sections(bin)
	if err != nil {
		return nil, err
	}
	importedGlobals, definedGlobals := 0, 0
	hasExport := false
	for _, s := range secs {
		r := &reader{b: bin[s.payload:s.end]}
		switch s.id {
		case sectionImport:
			imports, err := parseImports(r)
			if err != nil {
				return nil, fmt.Errorf("import section: %w", err)
			}
			for _, imp := range imports {
				if imp.Kind == KindGlobal {
					importedGlobals++
				}
			}
		case sectionGlobal:
			n, err := r.u32()
			if err != nil {
				return nil, fmt.Errorf("global section: %w", err)
			}
			definedGlobals = int(n)
		case sectionExport:
			hasExport = true
			exports, err := parseExports(r)
			if err != nil {
				return nil, fmt.Errorf("export section: %w", err)
			}
			for _, e := range exports {
				if e.Name == InterruptExport {
					return nil, fmt.Errorf("module already exports %q (instrumented twice?)", InterruptExport)
				}
			}
		}
	}
	if !hasExport {
		return nil, errors.New("module exports nothing, so it cannot be a plugin")
	}
	flag := uint32(importedGlobals + definedGlobals)
	check := []byte{0x23} // global.get flag; if; unreachable; end
	check = appendULEB(check, uint64(flag))
	check = append(check, 0x04, 0x40, 0x00, 0x0b)

	out := make([]byte, 0, len(bin)+len(bin)/16)
	out = append(out, magic...)
	wroteGlobal := false
	emitGlobalSection := func(existing []byte) {
		var payload []byte
		payload = appendULEB(payload, uint64(definedGlobals+1))
		payload = append(payload, existing...)
		// i32, mutable, init i32.const 0 end
		payload = append(payload, 0x7f, 0x01, 0x41, 0x00, 0x0b)
		out = appendSection(out, sectionGlobal, payload)
		wroteGlobal = true
	}
	for _, s := range secs {
		payload := bin[s.payload:s.end]
		if !wroteGlobal && s.id != sectionCustom && sectionOrder[s.id] > sectionOrder[sectionGlobal] {
			emitGlobalSection(nil)
		}
		switch s.id {
		case sectionCustom:
			r := &reader{b: payload}
			if name, err := r.name(); err == nil && strings.HasPrefix(name, ".debug_") {
				continue
			}
			out = append(out, bin[s.start:s.end]...)
		case sectionGlobal:
			r := &reader{b: payload}
			_, _ = r.u32()
			emitGlobalSection(payload[r.off:])
		case sectionExport:
			r := &reader{b: payload}
			n, _ := r.u32()
			var p []byte
			p = appendULEB(p, uint64(n)+1)
			p = append(p, payload[r.off:]...)
			p = appendULEB(p, uint64(len(InterruptExport)))
			p = append(p, InterruptExport...)
			p = append(p, byte(KindGlobal))
			p = appendULEB(p, uint64(flag))
			out = appendSection(out, sectionExport, p)
		case sectionCode:
			p, err := instrumentCode(payload, check)
			if err != nil {
				return nil, fmt.Errorf("code section: %w", err)
			}
			out = appendSection(out, sectionCode, p)
		default:
			out = append(out, bin[s.start:s.end]...)
		}
	}
	if !wroteGlobal {
		emitGlobalSection(nil)
	}
	return out, nil
}

func appendSection(out []byte, id byte, payload []byte) []byte {
	out = append(out, id)
	out = appendULEB(out, uint64(len(payload)))
	return append(out, payload...)
}

func instrumentCode(payload, check []byte) ([]byte, error) {
	r := &reader{b: payload}
	n, err := r.u32()
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(payload)+len(payload)/8)
	out = appendULEB(out, uint64(n))
	var body []byte
	for i := range n {
		size, err := r.u32()
		if err != nil {
			return nil, fmt.Errorf("function %d: %w", i, err)
		}
		if uint64(r.off)+uint64(size) > uint64(len(r.b)) {
			return nil, fmt.Errorf("function %d: body runs past the section", i)
		}
		fn := r.b[r.off : r.off+int(size)]
		r.off += int(size)
		body, err = instrumentBody(body[:0], fn, check)
		if err != nil {
			return nil, fmt.Errorf("function %d: %w", i, err)
		}
		out = appendULEB(out, uint64(len(body)))
		out = append(out, body...)
	}
	return out, nil
}

// instrumentBody copies one function body, inserting check after every loop
// header. It decodes every instruction so that bytes inside immediates are
// never mistaken for opcodes.
func instrumentBody(out, fn, check []byte) ([]byte, error) {
	r := &reader{b: fn}
	groups, err := r.u32()
	if err != nil {
		return nil, err
	}
	for range groups {
		if _, err := r.u32(); err != nil {
			return nil, err
		}
		if _, err := r.valtype(); err != nil {
			return nil, err
		}
	}
	out = append(out, fn[:r.off]...)
	copied := r.off
	for r.off < len(fn) {
		at := r.off
		op, _ := r.byte()
		if err := r.skipImmediates(op); err != nil {
			return nil, fmt.Errorf("instruction 0x%02x at body offset %d: %w", op, at, err)
		}
		if op == 0x03 { // loop
			out = append(out, fn[copied:r.off]...)
			out = append(out, check...)
			copied = r.off
		}
	}
	return append(out, fn[copied:]...), nil
}

func (r *reader) valtype() (byte, error) {
	t, err := r.byte()
	if err != nil {
		return 0, err
	}
	switch t {
	case 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f:
		return t, nil
	}
	return 0, fmt.Errorf("unsupported value type 0x%02x", t)
}

func (r *reader) skip(n int) error {
	if r.off+n > len(r.b) {
		return errTruncated
	}
	r.off += n
	return nil
}

// leb skips one LEB128 number of any width.
func (r *reader) leb() error {
	for i := 0; i < 10; i++ {
		c, err := r.byte()
		if err != nil {
			return err
		}
		if c&0x80 == 0 {
			return nil
		}
	}
	return errors.New("LEB128 too long")
}

func (r *reader) lebs(n int) error {
	for range n {
		if err := r.leb(); err != nil {
			return err
		}
	}
	return nil
}

func (r *reader) memarg() error {
	align, err := r.u32()
	if err != nil {
		return err
	}
	if align&0x40 != 0 { // multi-memory: a memory index follows
		if err := r.leb(); err != nil {
			return err
		}
	}
	return r.leb()
}

func (r *reader) blocktype() error {
	if r.off >= len(r.b) {
		return errTruncated
	}
	switch r.b[r.off] {
	case 0x40, 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f:
		r.off++
		return nil
	}
	return r.leb() // s33 type index
}

func (r *reader) skipImmediates(op byte) error {
	switch {
	case op == 0x02 || op == 0x03 || op == 0x04:
		return r.blocktype()
	case op == 0x0c || op == 0x0d || op == 0x10 || op == 0x12 || op == 0xd2:
		return r.leb()
	case op == 0x0e:
		n, err := r.u32()
		if err != nil {
			return err
		}
		return r.lebs(int(n) + 1)
	case op == 0x11 || op == 0x13:
		return r.lebs(2)
	case op == 0x1c:
		n, err := r.u32()
		if err != nil {
			return err
		}
		return r.skip(int(n))
	case op >= 0x20 && op <= 0x26:
		return r.leb()
	case op >= 0x28 && op <= 0x3e:
		return r.memarg()
	case op == 0x3f || op == 0x40:
		return r.leb()
	case op == 0x41 || op == 0x42:
		return r.leb()
	case op == 0x43:
		return r.skip(4)
	case op == 0x44:
		return r.skip(8)
	case op == 0xd0:
		return r.skip(1)
	case op == 0xfc:
		return r.skipFC()
	case op == 0xfd:
		return r.skipSIMD()
	case op == 0xfe:
		return r.skipAtomic()
	case op <= 0x01 || op == 0x05 || op == 0x0b || op == 0x0f || op == 0x1a || op == 0x1b ||
		(op >= 0x45 && op <= 0xc4) || op == 0xd1:
		return nil
	}
	return fmt.Errorf("unknown opcode 0x%02x", op)
}

func (r *reader) skipFC() error {
	sub, err := r.u32()
	if err != nil {
		return err
	}
	switch {
	case sub <= 7:
		return nil
	case sub == 8, sub == 10, sub == 12, sub == 14:
		return r.lebs(2)
	case sub == 9, sub == 11, sub == 13, sub == 15, sub == 16, sub == 17:
		return r.leb()
	}
	return fmt.Errorf("unknown 0xfc sub-opcode %d", sub)
}

func (r *reader) skipSIMD() error {
	sub, err := r.u32()
	if err != nil {
		return err
	}
	switch {
	case sub <= 11, sub == 92, sub == 93:
		return r.memarg()
	case sub == 12, sub == 13:
		return r.skip(16)
	case sub >= 21 && sub <= 34:
		return r.skip(1)
	case sub >= 84 && sub <= 91:
		if err := r.memarg(); err != nil {
			return err
		}
		return r.skip(1)
	case sub <= 275:
		return nil
	}
	return fmt.Errorf("unknown 0xfd sub-opcode %d", sub)
}

func (r *reader) skipAtomic() error {
	sub, err := r.u32()
	if err != nil {
		return err
	}
	if sub == 0x03 { // atomic.fence
		return r.skip(1)
	}
	if sub <= 0x4e {
		return r.memarg()
	}
	return fmt.Errorf("unknown 0xfe sub-opcode %d", sub)
}
