// Package wasmfile reads and edits the container format of a WebAssembly
// binary without compiling it: custom sections (where plugboard embeds a
// plugin's manifest), imports and exports. It owns nothing else: it never
// validates code or instantiates a module.
package wasmfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

var magic = []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}

// Section ids of the binary format.
const (
	sectionCustom   = 0
	sectionImport   = 2
	sectionFunction = 3
	sectionExport   = 7
)

// ErrNotWasm reports a file that is not a WebAssembly 1.0 binary.
var ErrNotWasm = errors.New("not a WebAssembly binary (bad magic or version)")

// Import is one entry of the import section.
type Import struct {
	Module string
	Name   string
	Kind   Kind
	// Type is the type index of a function import (Info.Types).
	Type uint32
}

// Export is one entry of the export section.
type Export struct {
	Name string
	Kind Kind
	// Index is the exported item's index in its kind's index space.
	Index uint32
}

// FuncType is a function signature, as value-type bytes (0x7f i32, 0x7e
// i64, 0x7d f32, 0x7c f64, 0x7b v128, 0x70 funcref, 0x6f externref).
type FuncType struct {
	Params, Results []byte
}

// Equal reports whether two signatures are the same.
func (t FuncType) Equal(o FuncType) bool {
	return bytes.Equal(t.Params, o.Params) && bytes.Equal(t.Results, o.Results)
}

// Kind is the external kind of an import or export.
type Kind byte

// External kinds.
const (
	KindFunc   Kind = 0
	KindTable  Kind = 1
	KindMemory Kind = 2
	KindGlobal Kind = 3
)

func (k Kind) String() string {
	switch k {
	case KindFunc:
		return "func"
	case KindTable:
		return "table"
	case KindMemory:
		return "memory"
	case KindGlobal:
		return "global"
	}
	return fmt.Sprintf("kind(%d)", byte(k))
}

// section is one raw section: its id, and the byte range of the whole
// section (header included) and of its payload within the binary.
type section struct {
	id                  byte
	start, payload, end int
}

// Info is what Parse learns from a binary.
type Info struct {
	Imports []Import
	Exports []Export
	// Custom maps each custom section name to its content (the last one wins
	// when a name repeats).
	Custom map[string][]byte
	// Types is the type section: the signatures functions refer to.
	Types []FuncType
	// Funcs holds the type index of each defined (not imported) function.
	Funcs []uint32
	// HasStart reports a start section.
	HasStart bool
}

// Export returns the export of that name.
func (info *Info) Export(name string) (Export, bool) {
	for _, e := range info.Exports {
		if e.Name == name {
			return e, true
		}
	}
	return Export{}, false
}

// FuncType returns the signature of the function with this index in the
// function index space (imported functions first, then defined ones).
func (info *Info) FuncType(index uint32) (FuncType, bool) {
	for _, imp := range info.Imports {
		if imp.Kind != KindFunc {
			continue
		}
		if index == 0 {
			return info.typeAt(imp.Type)
		}
		index--
	}
	if index >= uint32(len(info.Funcs)) {
		return FuncType{}, false
	}
	return info.typeAt(info.Funcs[index])
}

func (info *Info) typeAt(i uint32) (FuncType, bool) {
	if i >= uint32(len(info.Types)) {
		return FuncType{}, false
	}
	return info.Types[i], true
}

// Parse reads the sections of a binary. Code and data are skipped, so it is
// cheap even for large modules.
func Parse(bin []byte) (*Info, error) {
	secs, err := sections(bin)
	if err != nil {
		return nil, err
	}
	info := &Info{Custom: map[string][]byte{}}
	for _, s := range secs {
		r := &reader{b: bin[s.payload:s.end]}
		switch s.id {
		case sectionCustom:
			name, err := r.name()
			if err != nil {
				return nil, fmt.Errorf("custom section at %d: %w", s.start, err)
			}
			info.Custom[name] = r.b[r.off:]
		case sectionType:
			if info.Types, err = parseTypes(r); err != nil {
				return nil, fmt.Errorf("type section: %w", err)
			}
		case sectionImport:
			if info.Imports, err = parseImports(r); err != nil {
				return nil, fmt.Errorf("import section: %w", err)
			}
			for _, imp := range info.Imports {
				if imp.Kind == KindFunc && imp.Type >= uint32(len(info.Types)) {
					return nil, fmt.Errorf("import %s.%s: type index %d out of range", imp.Module, imp.Name, imp.Type)
				}
			}
		case sectionFunction:
			if info.Funcs, err = parseFuncs(r); err != nil {
				return nil, fmt.Errorf("function section: %w", err)
			}
		case sectionStart:
			info.HasStart = true
		case sectionExport:
			if info.Exports, err = parseExports(r); err != nil {
				return nil, fmt.Errorf("export section: %w", err)
			}
		}
	}
	return info, nil
}

// CustomSection returns the content of the named custom section, if present.
func CustomSection(bin []byte, name string) ([]byte, bool, error) {
	secs, err := sections(bin)
	if err != nil {
		return nil, false, err
	}
	var found []byte
	ok := false
	for _, s := range secs {
		if s.id != sectionCustom {
			continue
		}
		r := &reader{b: bin[s.payload:s.end]}
		n, err := r.name()
		if err != nil {
			return nil, false, fmt.Errorf("custom section at %d: %w", s.start, err)
		}
		if n == name {
			found, ok = r.b[r.off:], true
		}
	}
	return found, ok, nil
}

// SetCustomSection returns a copy of bin with every custom section of that
// name removed and one holding content appended at the end.
func SetCustomSection(bin []byte, name string, content []byte) ([]byte, error) {
	out, err := RemoveCustomSection(bin, name)
	if err != nil {
		return nil, err
	}
	var payload []byte
	payload = appendULEB(payload, uint64(len(name)))
	payload = append(payload, name...)
	payload = append(payload, content...)
	out = append(out, sectionCustom)
	out = appendULEB(out, uint64(len(payload)))
	return append(out, payload...), nil
}

// RemoveCustomSection returns a copy of bin without the custom sections of
// that name.
func RemoveCustomSection(bin []byte, name string) ([]byte, error) {
	secs, err := sections(bin)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(bin)+64)
	out = append(out, bin[:len(magic)]...)
	for _, s := range secs {
		if s.id == sectionCustom {
			r := &reader{b: bin[s.payload:s.end]}
			if n, err := r.name(); err == nil && n == name {
				continue
			}
		}
		out = append(out, bin[s.start:s.end]...)
	}
	return out, nil
}

func sections(bin []byte) ([]section, error) {
	if len(bin) < len(magic) || !bytes.Equal(bin[:len(magic)], magic) {
		return nil, ErrNotWasm
	}
	var secs []section
	r := &reader{b: bin, off: len(magic)}
	for r.off < len(bin) {
		start := r.off
		id, err := r.byte()
		if err != nil {
			return nil, err
		}
		if id > 13 {
			return nil, fmt.Errorf("unknown section id %d at %d", id, start)
		}
		size, err := r.u32()
		if err != nil {
			return nil, fmt.Errorf("section %d at %d: %w", id, start, err)
		}
		if uint64(r.off)+uint64(size) > uint64(len(bin)) {
			return nil, fmt.Errorf("section %d at %d: size %d runs past the end of the file", id, start, size)
		}
		secs = append(secs, section{id: id, start: start, payload: r.off, end: r.off + int(size)})
		r.off += int(size)
	}
	return secs, nil
}

func parseImports(r *reader) ([]Import, error) {
	n, err := r.u32()
	if err != nil {
		return nil, err
	}
	imports := make([]Import, 0, min(n, 1024))
	for range n {
		var imp Import
		if imp.Module, err = r.name(); err != nil {
			return nil, err
		}
		if imp.Name, err = r.name(); err != nil {
			return nil, err
		}
		k, err := r.byte()
		if err != nil {
			return nil, err
		}
		imp.Kind = Kind(k)
		switch imp.Kind {
		case KindFunc:
			imp.Type, err = r.u32()
		case KindTable:
			if _, err = r.byte(); err == nil {
				err = r.limits()
			}
		case KindMemory:
			err = r.limits()
		case KindGlobal:
			_, err = r.byte()
			if err == nil {
				_, err = r.byte()
			}
		default:
			err = fmt.Errorf("import %s.%s: unknown kind %d", imp.Module, imp.Name, k)
		}
		if err != nil {
			return nil, err
		}
		imports = append(imports, imp)
	}
	return imports, r.end()
}

func parseExports(r *reader) ([]Export, error) {
	n, err := r.u32()
	if err != nil {
		return nil, err
	}
	exports := make([]Export, 0, min(n, 1024))
	for range n {
		var exp Export
		if exp.Name, err = r.name(); err != nil {
			return nil, err
		}
		k, err := r.byte()
		if err != nil {
			return nil, err
		}
		exp.Kind = Kind(k)
		if exp.Index, err = r.u32(); err != nil {
			return nil, err
		}
		exports = append(exports, exp)
	}
	return exports, r.end()
}

func parseFuncs(r *reader) ([]uint32, error) {
	n, err := r.u32()
	if err != nil {
		return nil, err
	}
	funcs := make([]uint32, 0, min(n, 1<<16))
	for range n {
		idx, err := r.u32()
		if err != nil {
			return nil, err
		}
		funcs = append(funcs, idx)
	}
	return funcs, r.end()
}

var errTruncated = errors.New("truncated")

type reader struct {
	b   []byte
	off int
}

// end reports bytes left over after a section's last entry.
func (r *reader) end() error {
	if r.off != len(r.b) {
		return fmt.Errorf("%d unexpected bytes after the last entry", len(r.b)-r.off)
	}
	return nil
}

func (r *reader) byte() (byte, error) {
	if r.off >= len(r.b) {
		return 0, errTruncated
	}
	c := r.b[r.off]
	r.off++
	return c, nil
}

func (r *reader) u32() (uint32, error) {
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

func (r *reader) name() (string, error) {
	n, err := r.u32()
	if err != nil {
		return "", err
	}
	if uint64(r.off)+uint64(n) > uint64(len(r.b)) {
		return "", errTruncated
	}
	s := string(r.b[r.off : r.off+int(n)])
	r.off += int(n)
	return s, nil
}

func (r *reader) limits() error {
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

func appendULEB(b []byte, v uint64) []byte {
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

// ReadCustomSection finds the named custom section by reading only section
// headers from r (size bytes long), then that section's content: a host
// listing plugins need not read whole modules.
func ReadCustomSection(r io.ReaderAt, size int64, name string) ([]byte, bool, error) {
	head := make([]byte, len(magic))
	if _, err := r.ReadAt(head, 0); err != nil || !bytes.Equal(head, magic) {
		return nil, false, ErrNotWasm
	}
	var (
		found []byte
		ok    bool
		buf   [5 + 5 + 256]byte // id, size, and a name of up to 256 bytes with its length
	)
	for off := int64(len(magic)); off < size; {
		n, err := r.ReadAt(buf[:min(int64(len(buf)), size-off)], off)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, false, err
		}
		hr := &reader{b: buf[:n]}
		id, err := hr.byte()
		if err != nil {
			return nil, false, err
		}
		if id > 13 {
			return nil, false, fmt.Errorf("unknown section id %d at %d", id, off)
		}
		secSize, err := hr.u32()
		if err != nil {
			return nil, false, fmt.Errorf("section %d at %d: %w", id, off, err)
		}
		payload := off + int64(hr.off)
		end := payload + int64(secSize)
		if end > size {
			return nil, false, fmt.Errorf("section %d at %d: size %d runs past the end of the file", id, off, secSize)
		}
		if id == sectionCustom {
			nameStart := hr.off
			if n, err := hr.name(); err == nil && n == name {
				content := make([]byte, end-(payload+int64(hr.off-nameStart)))
				if _, err := r.ReadAt(content, end-int64(len(content))); err != nil {
					return nil, false, err
				}
				found, ok = content, true
			}
		}
		off = end
	}
	return found, ok, nil
}
