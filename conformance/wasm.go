package conformance

import (
	"errors"
	"fmt"
	"strings"
)

// module is what the kit reads from a binary beyond host/wasmfile's view:
// function types, so that exports and imports can be checked against the
// signatures the host calls them with.
type module struct {
	types   []funcType
	imports []wasmImport
	// funcs holds the type index of each defined (non-imported) function.
	funcs   []uint32
	exports []wasmExport
	// importedFuncs counts function imports: the first function indexes.
	importedFuncs uint32
	hasStart      bool
}

// funcType is a function signature: value type bytes (0x7f i32, 0x7e i64,
// 0x7d f32, 0x7c f64, 0x7b v128, 0x70 funcref, 0x6f externref).
type funcType struct {
	params, results []byte
}

func (t funcType) String() string {
	return "(" + valTypes(t.params) + ") -> (" + valTypes(t.results) + ")"
}

func (t funcType) equal(o funcType) bool {
	return string(t.params) == string(o.params) && string(t.results) == string(o.results)
}

func valTypes(b []byte) string {
	names := make([]string, len(b))
	for i, v := range b {
		switch v {
		case valI32:
			names[i] = "i32"
		case valI64:
			names[i] = "i64"
		case 0x7d:
			names[i] = "f32"
		case 0x7c:
			names[i] = "f64"
		case 0x7b:
			names[i] = "v128"
		case 0x70:
			names[i] = "funcref"
		case 0x6f:
			names[i] = "externref"
		default:
			names[i] = fmt.Sprintf("0x%02x", v)
		}
	}
	return strings.Join(names, ", ")
}

const (
	valI32 = 0x7f
	valI64 = 0x7e
)

// External kinds of imports and exports.
const (
	kindFunc   = 0
	kindTable  = 1
	kindMemory = 2
	kindGlobal = 3
)

func kindName(k byte) string {
	switch k {
	case kindFunc:
		return "function"
	case kindTable:
		return "table"
	case kindMemory:
		return "memory"
	case kindGlobal:
		return "global"
	}
	return fmt.Sprintf("kind %d", k)
}

type wasmImport struct {
	module, name string
	kind         byte
	// typ is the signature of a function import.
	typ funcType
}

type wasmExport struct {
	name  string
	kind  byte
	index uint32
}

// funcTypeOf returns the signature of the function with this index.
func (m *module) funcTypeOf(index uint32) (funcType, bool) {
	if index < m.importedFuncs {
		n := uint32(0)
		for _, imp := range m.imports {
			if imp.kind != kindFunc {
				continue
			}
			if n == index {
				return imp.typ, true
			}
			n++
		}
		return funcType{}, false
	}
	i := index - m.importedFuncs
	if i >= uint32(len(m.funcs)) || m.funcs[i] >= uint32(len(m.types)) {
		return funcType{}, false
	}
	return m.types[m.funcs[i]], true
}

// export returns the export of that name.
func (m *module) export(name string) (wasmExport, bool) {
	for _, e := range m.exports {
		if e.name == name {
			return e, true
		}
	}
	return wasmExport{}, false
}

var errShort = errors.New("truncated")

// parseModule reads the type, import, function and export sections.
func parseModule(bin []byte) (*module, error) {
	if len(bin) < 8 || string(bin[:8]) != "\x00asm\x01\x00\x00\x00" {
		return nil, errors.New("not a WebAssembly 1.0 binary (bad magic or version)")
	}
	m := &module{}
	r := &wreader{b: bin, off: 8}
	for r.off < len(r.b) {
		id, err := r.byte()
		if err != nil {
			return nil, err
		}
		size, err := r.u32()
		if err != nil {
			return nil, fmt.Errorf("section %d: %w", id, err)
		}
		if uint64(r.off)+uint64(size) > uint64(len(r.b)) {
			return nil, fmt.Errorf("section %d runs past the end of the file", id)
		}
		s := &wreader{b: r.b[r.off : r.off+int(size)]}
		r.off += int(size)
		switch id {
		case 1:
			err = m.parseTypes(s)
		case 2:
			err = m.parseImports(s)
		case 3:
			err = m.parseFuncs(s)
		case 7:
			err = m.parseExports(s)
		case 8:
			m.hasStart = true
		}
		if err != nil {
			return nil, fmt.Errorf("section %d: %w", id, err)
		}
	}
	return m, nil
}

func (m *module) parseTypes(r *wreader) error {
	n, err := r.u32()
	if err != nil {
		return err
	}
	for range n {
		form, err := r.byte()
		if err != nil {
			return err
		}
		if form != 0x60 {
			return fmt.Errorf("type form 0x%02x is not a function type", form)
		}
		var t funcType
		if t.params, err = r.vecBytes(); err != nil {
			return err
		}
		if t.results, err = r.vecBytes(); err != nil {
			return err
		}
		m.types = append(m.types, t)
	}
	return nil
}

func (m *module) parseImports(r *wreader) error {
	n, err := r.u32()
	if err != nil {
		return err
	}
	for range n {
		var imp wasmImport
		if imp.module, err = r.name(); err != nil {
			return err
		}
		if imp.name, err = r.name(); err != nil {
			return err
		}
		if imp.kind, err = r.byte(); err != nil {
			return err
		}
		switch imp.kind {
		case kindFunc:
			idx, err := r.u32()
			if err != nil {
				return err
			}
			if idx >= uint32(len(m.types)) {
				return fmt.Errorf("import %s.%s: type index %d out of range", imp.module, imp.name, idx)
			}
			imp.typ = m.types[idx]
			m.importedFuncs++
		case kindTable:
			if _, err = r.byte(); err == nil {
				err = r.limits()
			}
		case kindMemory:
			err = r.limits()
		case kindGlobal:
			if _, err = r.byte(); err == nil {
				_, err = r.byte()
			}
		default:
			return fmt.Errorf("import %s.%s: unknown kind %d", imp.module, imp.name, imp.kind)
		}
		if err != nil {
			return err
		}
		m.imports = append(m.imports, imp)
	}
	return nil
}

func (m *module) parseFuncs(r *wreader) error {
	n, err := r.u32()
	if err != nil {
		return err
	}
	for range n {
		idx, err := r.u32()
		if err != nil {
			return err
		}
		m.funcs = append(m.funcs, idx)
	}
	return nil
}

func (m *module) parseExports(r *wreader) error {
	n, err := r.u32()
	if err != nil {
		return err
	}
	for range n {
		var e wasmExport
		if e.name, err = r.name(); err != nil {
			return err
		}
		if e.kind, err = r.byte(); err != nil {
			return err
		}
		if e.index, err = r.u32(); err != nil {
			return err
		}
		m.exports = append(m.exports, e)
	}
	return nil
}

type wreader struct {
	b   []byte
	off int
}

func (r *wreader) byte() (byte, error) {
	if r.off >= len(r.b) {
		return 0, errShort
	}
	c := r.b[r.off]
	r.off++
	return c, nil
}

func (r *wreader) u32() (uint32, error) {
	var v uint64
	for shift := uint(0); shift < 35; shift += 7 {
		c, err := r.byte()
		if err != nil {
			return 0, err
		}
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			if v > 0xffffffff {
				return 0, errors.New("u32 overflow")
			}
			return uint32(v), nil
		}
	}
	return 0, errors.New("u32 LEB128 too long")
}

func (r *wreader) name() (string, error) {
	b, err := r.vecBytes()
	return string(b), err
}

func (r *wreader) vecBytes() ([]byte, error) {
	n, err := r.u32()
	if err != nil {
		return nil, err
	}
	if uint64(r.off)+uint64(n) > uint64(len(r.b)) {
		return nil, errShort
	}
	b := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return b, nil
}

func (r *wreader) limits() error {
	flag, err := r.byte()
	if err != nil {
		return err
	}
	if _, err := r.u32(); err != nil {
		return err
	}
	if flag&1 != 0 {
		_, err = r.u32()
	}
	return err
}

// ---- writing small modules (the import probes and the sandbox probe) ----

func uleb(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}

func sleb(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func wname(b []byte, s string) []byte { return append(uleb(b, uint64(len(s))), s...) }

func section(out []byte, id byte, payload []byte) []byte {
	out = append(out, id)
	out = uleb(out, uint64(len(payload)))
	return append(out, payload...)
}

func encodeType(b []byte, t funcType) []byte {
	b = append(b, 0x60)
	b = append(uleb(b, uint64(len(t.params))), t.params...)
	return append(uleb(b, uint64(len(t.results))), t.results...)
}

// importProbe is a module that only imports one function: instantiating it
// in the host's engine tells whether the host provides that function with
// that signature.
func importProbe(mod, name string, t funcType) []byte {
	out := []byte("\x00asm\x01\x00\x00\x00")
	out = section(out, 1, encodeType(uleb(nil, 1), t))
	imp := uleb(nil, 1)
	imp = wname(imp, mod)
	imp = wname(imp, name)
	imp = append(imp, kindFunc, 0)
	return section(out, 2, imp)
}
