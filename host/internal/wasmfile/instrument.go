package wasmfile

import (
	"errors"
	"fmt"
	"slices"
)

// Names of what Instrument adds to a module.
const (
	// YieldModule and YieldName name the host function the instrumented
	// code calls every YieldBudget loop iterations, of type () -> i32. The
	// host checks the call's deadline there (trapping to interrupt the
	// guest) and returns the next budget.
	YieldModule = "plugboard:host/v1"
	YieldName   = "yield"
)

// YieldBudget is how many loop iterations run between two yields.
const YieldBudget = 10000

// Section ids used by Instrument beyond those Parse needs.
const (
	sectionType    = 1
	sectionGlobal  = 6
	sectionStart   = 8
	sectionElement = 9
	sectionCode    = 10
)

// sectionOrder is the position each known section id must keep in a module
// (the tag section, 13, sits between memory and global).
var sectionOrder = map[byte]int{1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 13: 6, 6: 7, 7: 8, 8: 9, 9: 10, 12: 11, 10: 12, 11: 13}

// Instrument returns a copy of bin in which every loop header counts down a
// budget held in a new global and, when it runs out, calls the imported
// host function YieldModule.YieldName, which returns the next budget.
//
// The yield is where the host interrupts a guest whose deadline passed or
// whose client cancelled — even one spinning in a tight loop — and it is a
// point where the Go scheduler can stop the goroutine: compiled guest code
// cannot be preempted, so without it a spinning guest would stall the host's
// garbage collector, and with it the whole host. A loop-free guest always
// terminates (recursion hits the stack limit), so loop headers suffice.
//
// This replaces wazero's WithCloseOnContextDone, which leaves native code for
// Go at every loop iteration and made ordinary guest code 5-9x slower here.
//
// Adding an imported function shifts the index of every defined function by
// one, so calls, ref.func, exports, the start function, element segments and
// the function-name map are renumbered. DWARF sections are dropped because
// the rewritten code no longer matches them.
func Instrument(bin []byte) ([]byte, error) {
	// Parse first: what Instrument accepts, the host can read back.
	info, err := Parse(bin)
	if err != nil {
		return nil, err
	}
	secs, err := sections(bin)
	if err != nil {
		return nil, err
	}
	var importedFuncs, importedGlobals, definedGlobals uint32
	types := info.Types
	for _, imp := range info.Imports {
		switch imp.Kind {
		case KindFunc:
			importedFuncs++
			if imp.Module == YieldModule && imp.Name == YieldName {
				return nil, errors.New("module already imports the yield function (instrumented twice?)")
			}
		case KindGlobal:
			importedGlobals++
		}
	}
	for _, s := range secs {
		if s.id != sectionGlobal {
			continue
		}
		r := &reader{b: bin[s.payload:s.end]}
		n, err := r.u32()
		if err != nil {
			return nil, fmt.Errorf("global section: %w", err)
		}
		definedGlobals = n
	}
	yieldType := []byte{0x60, 0x00, 0x01, 0x7f} // () -> i32
	typeIdx := slices.IndexFunc(types, func(t FuncType) bool { return t.Equal(FuncType{Results: []byte{0x7f}}) })
	addType := typeIdx < 0
	if addType {
		typeIdx = len(types)
	}
	yieldFunc := importedFuncs // appended after the other function imports
	budget := importedGlobals + definedGlobals
	shift := func(idx uint32) uint32 {
		if idx >= yieldFunc {
			return idx + 1
		}
		return idx
	}
	var check []byte
	check = append(check, 0x23) // global.get budget
	check = appendULEB(check, uint64(budget))
	check = append(check, 0x45, 0x04, 0x40, 0x10) // i32.eqz; if; call yield
	check = appendULEB(check, uint64(yieldFunc))
	check = append(check, 0x24) // global.set budget
	check = appendULEB(check, uint64(budget))
	check = append(check, 0x0b, 0x23) // end; global.get budget
	check = appendULEB(check, uint64(budget))
	check = append(check, 0x41, 0x01, 0x6b, 0x24) // i32.const 1; i32.sub; global.set budget
	check = appendULEB(check, uint64(budget))

	out := make([]byte, 0, len(bin)+len(bin)/8)
	out = append(out, magic...)
	emitted := map[byte]bool{}
	// emitMissing writes the sections Instrument needs that the module
	// lacks, before the first section that must follow them.
	emitMissing := func(before byte) {
		for _, id := range []byte{sectionType, sectionImport, sectionGlobal} {
			if emitted[id] || (before != 0 && sectionOrder[id] >= sectionOrder[before]) {
				continue
			}
			emitted[id] = true
			switch id {
			case sectionType:
				out = appendSection(out, id, append(appendULEB(nil, 1), yieldType...))
			case sectionImport:
				out = appendSection(out, id, appendYieldImport(appendULEB(nil, 1), uint32(typeIdx)))
			case sectionGlobal:
				out = appendSection(out, id, appendBudgetGlobal(appendULEB(nil, 1)))
			}
		}
	}
	for _, s := range secs {
		payload := bin[s.payload:s.end]
		if s.id != sectionCustom {
			emitMissing(s.id)
		}
		r := &reader{b: payload}
		switch s.id {
		case sectionCustom:
			name, err := r.name()
			if err != nil {
				return nil, fmt.Errorf("custom section: %w", err)
			}
			switch {
			case len(name) > 7 && name[:7] == ".debug_":
				continue
			case name == "name":
				p, err := renumberNames(payload, r.off, shift)
				if err != nil {
					continue // names are a debugging aid: drop rather than fail
				}
				out = appendSection(out, sectionCustom, p)
				continue
			}
			out = append(out, bin[s.start:s.end]...)
		case sectionType:
			emitted[sectionType] = true
			if !addType {
				out = append(out, bin[s.start:s.end]...)
				continue
			}
			n, _ := r.u32()
			p := appendULEB(nil, uint64(n)+1)
			p = append(p, payload[r.off:]...)
			out = appendSection(out, sectionType, append(p, yieldType...))
		case sectionImport:
			emitted[sectionImport] = true
			n, _ := r.u32()
			p := appendULEB(nil, uint64(n)+1)
			p = append(p, payload[r.off:]...)
			out = appendSection(out, sectionImport, appendYieldImport(p, uint32(typeIdx)))
		case sectionGlobal:
			emitted[sectionGlobal] = true
			p, err := rewriteGlobals(payload, shift)
			if err != nil {
				return nil, fmt.Errorf("global section: %w", err)
			}
			out = appendSection(out, sectionGlobal, p)
		case sectionExport:
			p, err := rewriteExports(payload, shift)
			if err != nil {
				return nil, fmt.Errorf("export section: %w", err)
			}
			out = appendSection(out, sectionExport, p)
		case sectionStart:
			idx, err := r.u32()
			if err != nil {
				return nil, fmt.Errorf("start section: %w", err)
			}
			out = appendSection(out, sectionStart, appendULEB(nil, uint64(shift(idx))))
		case sectionElement:
			p, err := rewriteElements(payload, shift)
			if err != nil {
				return nil, fmt.Errorf("element section: %w", err)
			}
			out = appendSection(out, sectionElement, p)
		case sectionCode:
			p, err := instrumentCode(payload, check, shift)
			if err != nil {
				return nil, fmt.Errorf("code section: %w", err)
			}
			out = appendSection(out, sectionCode, p)
		default:
			out = append(out, bin[s.start:s.end]...)
		}
	}
	emitMissing(0)
	return out, nil
}

func appendYieldImport(p []byte, typeIdx uint32) []byte {
	p = appendULEB(p, uint64(len(YieldModule)))
	p = append(p, YieldModule...)
	p = appendULEB(p, uint64(len(YieldName)))
	p = append(p, YieldName...)
	p = append(p, byte(KindFunc))
	return appendULEB(p, uint64(typeIdx))
}

func appendBudgetGlobal(p []byte) []byte {
	p = append(p, 0x7f, 0x01, 0x41) // mutable i32, init i32.const
	p = appendSLEB(p, YieldBudget)
	return append(p, 0x0b)
}

func appendSection(out []byte, id byte, payload []byte) []byte {
	out = append(out, id)
	out = appendULEB(out, uint64(len(payload)))
	return append(out, payload...)
}

func appendSLEB(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// parseTypes reads the type section's function signatures.
func parseTypes(r *reader) ([]FuncType, error) {
	n, err := r.u32()
	if err != nil {
		return nil, err
	}
	types := make([]FuncType, 0, min(n, 4096))
	for range n {
		form, err := r.byte()
		if err != nil {
			return nil, err
		}
		if form != 0x60 {
			return nil, fmt.Errorf("type form 0x%02x is not supported (GC proposal types)", form)
		}
		var t FuncType
		if t.Params, err = r.valtypes(); err != nil {
			return nil, err
		}
		if t.Results, err = r.valtypes(); err != nil {
			return nil, err
		}
		types = append(types, t)
	}
	// Trailing bytes would be read as one more type once Instrument
	// appends the yield type behind them.
	return types, r.end()
}

// valtypes reads a vector of value types.
func (r *reader) valtypes() ([]byte, error) {
	cnt, err := r.u32()
	if err != nil {
		return nil, err
	}
	start := r.off
	for range cnt {
		if _, err := r.valtype(); err != nil {
			return nil, err
		}
	}
	return r.b[start:r.off], nil
}

func rewriteGlobals(payload []byte, shift func(uint32) uint32) ([]byte, error) {
	r := &reader{b: payload}
	n, err := r.u32()
	if err != nil {
		return nil, err
	}
	out := appendULEB(nil, uint64(n)+1)
	for range n {
		start := r.off
		if _, err := r.valtype(); err != nil {
			return nil, err
		}
		if _, err := r.byte(); err != nil { // mutability
			return nil, err
		}
		out = append(out, payload[start:r.off]...)
		if out, err = r.rewriteConstExpr(out, shift); err != nil {
			return nil, err
		}
	}
	return appendBudgetGlobal(out), nil
}

func rewriteExports(payload []byte, shift func(uint32) uint32) ([]byte, error) {
	r := &reader{b: payload}
	n, err := r.u32()
	if err != nil {
		return nil, err
	}
	out := appendULEB(nil, uint64(n))
	for range n {
		name, err := r.name()
		if err != nil {
			return nil, err
		}
		kind, err := r.byte()
		if err != nil {
			return nil, err
		}
		idx, err := r.u32()
		if err != nil {
			return nil, err
		}
		if Kind(kind) == KindFunc {
			idx = shift(idx)
		}
		out = appendULEB(out, uint64(len(name)))
		out = append(out, name...)
		out = append(out, kind)
		out = appendULEB(out, uint64(idx))
	}
	return out, nil
}

func rewriteElements(payload []byte, shift func(uint32) uint32) ([]byte, error) {
	r := &reader{b: payload}
	n, err := r.u32()
	if err != nil {
		return nil, err
	}
	out := appendULEB(nil, uint64(n))
	for range n {
		flags, err := r.u32()
		if err != nil {
			return nil, err
		}
		if flags > 7 {
			return nil, fmt.Errorf("element segment flags %d", flags)
		}
		out = appendULEB(out, uint64(flags))
		if flags == 2 || flags == 6 { // explicit table index
			idx, err := r.u32()
			if err != nil {
				return nil, err
			}
			out = appendULEB(out, uint64(idx))
		}
		if flags&1 == 0 { // active: offset expression
			if out, err = r.rewriteConstExpr(out, shift); err != nil {
				return nil, err
			}
		}
		if flags&3 != 0 { // elemkind (0x00) or reftype byte
			b, err := r.byte()
			if err != nil {
				return nil, err
			}
			out = append(out, b)
		}
		cnt, err := r.u32()
		if err != nil {
			return nil, err
		}
		out = appendULEB(out, uint64(cnt))
		for range cnt {
			if flags&4 == 0 { // function indices
				idx, err := r.u32()
				if err != nil {
					return nil, err
				}
				out = appendULEB(out, uint64(shift(idx)))
			} else if out, err = r.rewriteConstExpr(out, shift); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// renumberNames rewrites the function-name map of the "name" section and
// drops its other subsections except the module name.
func renumberNames(payload []byte, off int, shift func(uint32) uint32) ([]byte, error) {
	r := &reader{b: payload, off: off}
	out := append([]byte(nil), payload[:off]...)
	for r.off < len(payload) {
		id, err := r.byte()
		if err != nil {
			return nil, err
		}
		size, err := r.u32()
		if err != nil {
			return nil, err
		}
		if r.off+int(size) > len(payload) {
			return nil, errTruncated
		}
		sub := payload[r.off : r.off+int(size)]
		r.off += int(size)
		switch id {
		case 0:
			out = append(out, id)
			out = appendULEB(out, uint64(len(sub)))
			out = append(out, sub...)
		case 1:
			sr := &reader{b: sub}
			cnt, err := sr.u32()
			if err != nil {
				return nil, err
			}
			p := appendULEB(nil, uint64(cnt))
			for range cnt {
				idx, err := sr.u32()
				if err != nil {
					return nil, err
				}
				name, err := sr.name()
				if err != nil {
					return nil, err
				}
				p = appendULEB(p, uint64(shift(idx)))
				p = appendULEB(p, uint64(len(name)))
				p = append(p, name...)
			}
			out = append(out, id)
			out = appendULEB(out, uint64(len(p)))
			out = append(out, p...)
		}
	}
	return out, nil
}

func instrumentCode(payload, check []byte, shift func(uint32) uint32) ([]byte, error) {
	r := &reader{b: payload}
	n, err := r.u32()
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(payload)+len(payload)/4)
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
		body, err = instrumentBody(body[:0], fn, check, shift)
		if err != nil {
			return nil, fmt.Errorf("function %d: %w", i, err)
		}
		out = appendULEB(out, uint64(len(body)))
		out = append(out, body...)
	}
	return out, nil
}

// instrumentBody copies one function body, renumbering function indices and
// inserting check after every loop header. It decodes every instruction so
// that bytes inside immediates are never mistaken for opcodes.
func instrumentBody(out, fn, check []byte, shift func(uint32) uint32) ([]byte, error) {
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
	for r.off < len(fn) {
		var op byte
		if out, op, err = r.copyInstr(out, shift); err != nil {
			return nil, err
		}
		if op == 0x03 { // loop
			out = append(out, check...)
		}
	}
	return out, nil
}

// rewriteConstExpr copies a constant expression up to and including its end.
func (r *reader) rewriteConstExpr(out []byte, shift func(uint32) uint32) ([]byte, error) {
	for {
		var (
			op  byte
			err error
		)
		if out, op, err = r.copyInstr(out, shift); err != nil {
			return nil, err
		}
		if op == 0x0b {
			return out, nil
		}
	}
}

// copyInstr copies one instruction, renumbering the function index of call,
// return_call and ref.func.
func (r *reader) copyInstr(out []byte, shift func(uint32) uint32) ([]byte, byte, error) {
	at := r.off
	op, err := r.byte()
	if err != nil {
		return nil, 0, err
	}
	if op == 0x10 || op == 0x12 || op == 0xd2 {
		idx, err := r.u32()
		if err != nil {
			return nil, 0, fmt.Errorf("instruction 0x%02x at offset %d: %w", op, at, err)
		}
		out = append(out, op)
		return appendULEB(out, uint64(shift(idx))), op, nil
	}
	if err := r.skipImmediates(op); err != nil {
		return nil, 0, fmt.Errorf("instruction 0x%02x at offset %d: %w", op, at, err)
	}
	return append(out, r.b[at:r.off]...), op, nil
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
	for range 10 {
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
