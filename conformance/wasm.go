package conformance

import (
	"fmt"
	"strings"

	"github.com/plugboard/plugboard/host/plugin"
)

// module is the kit's view of a binary (read by host/plugin.Parse): function
// types, so that exports and imports can be checked against the signatures
// the host calls them with.
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

// parseModule reads the binary with host/plugin (the parser the host
// itself uses) and keeps the kit's view of it.
func parseModule(bin []byte) (*module, *plugin.Info, error) {
	info, err := plugin.Parse(bin)
	if err != nil {
		return nil, nil, err
	}
	m := &module{hasStart: info.HasStart, funcs: info.Funcs}
	for _, t := range info.Types {
		m.types = append(m.types, funcType{params: t.Params, results: t.Results})
	}
	for _, imp := range info.Imports {
		wi := wasmImport{module: imp.Module, name: imp.Name, kind: byte(imp.Kind)}
		if imp.Kind == plugin.KindFunc {
			wi.typ = m.types[imp.Type] // Parse checked the index
			m.importedFuncs++
		}
		m.imports = append(m.imports, wi)
	}
	for _, e := range info.Exports {
		m.exports = append(m.exports, wasmExport{name: e.Name, kind: byte(e.Kind), index: e.Index})
	}
	return m, info, nil
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
