// Package jsonfile reads plugboard's JSON configuration — the config file
// and the agents, grants and executors files, whole or as sections of the
// config file — strictly, and places every problem at FILE:LINE:COL and a
// field path, so that an operator can go straight to it:
//
//	plugboard.json:12:5: agents.agents[1].type: unknown type "WORKR" (...)
//
// Parse reads a document once, keeping where each value starts. Decode
// checks the document against a Go type — unknown and duplicate fields,
// values of the wrong kind, anything a field's own UnmarshalJSON refuses —
// reporting every problem, not just the first, before encoding/json fills
// the value. Errorf places the checks a package makes afterwards (an
// unknown agent type, a supervisor nobody is) at the field they are about.
// Sub hands one section of a document to the package that owns it, with
// positions and paths still those of the whole file.
//
// It knows nothing of what the files mean.
package jsonfile

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Path is a field path: object keys (string) and array indices (int),
// written agents[1].type.
type Path []any

// String writes the path as key.key[index].
func (p Path) String() string {
	var b strings.Builder
	for _, s := range p {
		switch s := s.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", s)
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			fmt.Fprint(&b, s)
		}
	}
	return b.String()
}

// Join returns p followed by more, as a new path.
func (p Path) Join(more ...any) Path { return append(slices.Clip(p), more...) }

// Error is one problem in a file, at a place.
type Error struct {
	File string
	// Offset is the byte offset in the file of the value (or key) at
	// fault; -1 when unknown. Line and Col (1-based, Col in characters)
	// are the same place; 0 when unknown.
	Offset    int
	Line, Col int
	// Path is the field at fault ("" for the document itself).
	Path string
	Msg  string
	// shadowed marks a problem found in a field whose value Decode
	// refused already (it was left zero): Join drops it, so one mistake
	// is reported once.
	shadowed bool
}

// Error writes FILE:LINE:COL: PATH: MESSAGE.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Col)
	}
	if e.Path != "" {
		b.WriteString(": " + e.Path)
	}
	b.WriteString(": " + e.Msg)
	return b.String()
}

// Join joins errors as errors.Join does, with every error a file position
// is known for (an *Error, or one wrapping it) sorted by file and
// position, so a list of problems reads top to bottom; nil when there are
// none. Joined errors among errs are flattened first.
func Join(errs ...error) error {
	var flat []error
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		if e, ok := err.(*Error); ok && (e == nil || e.shadowed) {
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		flat = append(flat, err)
	}
	for _, err := range errs {
		walk(err)
	}
	slices.SortStableFunc(flat, func(a, b error) int {
		pa, pb := position(a), position(b)
		switch {
		case pa == nil && pb == nil:
			return 0
		case pa == nil:
			return 1
		case pb == nil:
			return -1
		case pa.File != pb.File:
			return strings.Compare(pa.File, pb.File)
		}
		return pa.Offset - pb.Offset
	})
	return errors.Join(flat...)
}

func position(err error) *Error {
	var e *Error
	if errors.As(err, &e) && e.Offset >= 0 {
		return e
	}
	return nil
}

// Kinds of JSON values.
const (
	kindNull = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

var kindNames = []string{"null", "true or false", "a number", "a string", "an array", "an object"}

// node is one value of a document and where it is.
type node struct {
	kind       int
	start, end int // byte offsets of the value in the file
	members    []member
	elems      []*node
}

type member struct {
	key    string
	keyOff int
	val    *node
}

// get returns the last member named key (encoding/json's choice).
func (n *node) get(key string) *node {
	for i := len(n.members) - 1; i >= 0; i-- {
		if n.members[i].key == key {
			return n.members[i].val
		}
	}
	return nil
}

// Doc is a parsed JSON document, or a section of one.
type Doc struct {
	name  string
	data  []byte // the whole file
	lines []int  // offsets at which lines start
	root  *node
	at    Path // where root sits in the file
	// refused holds the paths (from the top of the file) of the values
	// Decode refused, shared by the file's sections.
	refused map[string]bool
}

// Parse reads a JSON document; name (the file, as the operator gave it)
// starts every error. A syntax error is placed where it is and names the
// field being read.
func Parse(name string, data []byte) (*Doc, error) {
	d := &Doc{name: name, data: data, lines: lineStarts(data), refused: map[string]bool{}}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, d.errorAt(0, nil, "the file is empty; want a JSON object")
	}
	b := &builder{dec: json.NewDecoder(bytes.NewReader(data)), data: data}
	b.dec.UseNumber()
	root, walkErr := b.value()
	if walkErr == nil {
		start := b.skip(int(b.dec.InputOffset()))
		if start < len(data) {
			return nil, d.errorAt(start, nil, "unexpected data after the top-level "+strings.TrimPrefix(strings.TrimPrefix(kindNames[root.kind], "an "), "a "))
		}
		d.root = root
		return d, nil
	}
	// encoding/json's own check places a syntax error exactly; the walk
	// above knows which field it was reading.
	var raw json.RawMessage
	err := json.Unmarshal(data, &raw)
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return nil, d.errorAt(int(b.dec.InputOffset()), b.path, walkErr.Error())
	}
	off, msg := int(se.Offset)-1, se.Error()
	if errors.Is(walkErr, io.EOF) || strings.Contains(msg, "unexpected end") {
		off = len(bytes.TrimRightFunc(data, isSpace))
		msg = "unexpected end of the file: a value, a closing } or ] is missing"
	}
	return nil, d.errorAt(max(off, 0), b.path, msg)
}

func isSpace(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' }

// builder reads a document's values with their offsets.
type builder struct {
	dec  *json.Decoder
	data []byte
	path Path // of the value being read
}

// skip returns the offset of the next token at or after off: past
// whitespace and the separators Token consumes silently.
func (b *builder) skip(off int) int {
	for off < len(b.data) && strings.IndexByte(" \t\r\n,:", b.data[off]) >= 0 {
		off++
	}
	return off
}

func (b *builder) value() (*node, error) {
	n := &node{start: b.skip(int(b.dec.InputOffset()))}
	tok, err := b.dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n.kind = kindObject
			for b.dec.More() {
				keyOff := b.skip(int(b.dec.InputOffset()))
				kt, err := b.dec.Token()
				if err != nil {
					return nil, err
				}
				key, _ := kt.(string)
				b.path = append(b.path, key)
				v, err := b.value()
				if err != nil {
					return nil, err
				}
				b.path = b.path[:len(b.path)-1]
				n.members = append(n.members, member{key: key, keyOff: keyOff, val: v})
			}
		case '[':
			n.kind = kindArray
			for i := 0; b.dec.More(); i++ {
				b.path = append(b.path, i)
				v, err := b.value()
				if err != nil {
					return nil, err
				}
				b.path = b.path[:len(b.path)-1]
				n.elems = append(n.elems, v)
			}
		default:
			return nil, fmt.Errorf("unexpected %q", t)
		}
		if _, err := b.dec.Token(); err != nil { // the closing delimiter
			return nil, err
		}
	case string:
		n.kind = kindString
	case json.Number:
		n.kind = kindNumber
	case bool:
		n.kind = kindBool
	case nil:
		n.kind = kindNull
	}
	n.end = int(b.dec.InputOffset())
	return n, nil
}

func lineStarts(data []byte) []int {
	starts := []int{0}
	for i, c := range data {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// Name is the file's name as given to Parse.
func (d *Doc) Name() string { return d.name }

// Path is where the document sits in its file: nil for a whole file, the
// section's path for a Sub.
func (d *Doc) Path() Path { return slices.Clip(d.at) }

// Bytes returns the document's JSON text.
func (d *Doc) Bytes() []byte { return d.data[d.root.start:d.root.end] }

// Sub returns the member key of the document's top-level object as a
// document of its own (errors keep the file's positions and the full
// path), and whether it is there and not null.
func (d *Doc) Sub(key string) (*Doc, bool) {
	if d.root.kind != kindObject {
		return nil, false
	}
	n := d.root.get(key)
	if n == nil || n.kind == kindNull {
		return nil, false
	}
	return &Doc{name: d.name, data: d.data, lines: d.lines, root: n, at: d.at.Join(key), refused: d.refused}, true
}

// Has reports whether the document has a value at p.
func (d *Doc) Has(p ...any) bool {
	_, full := d.find(p)
	return full
}

// find returns the value at p, or its deepest ancestor present, and
// whether it found p itself.
func (d *Doc) find(p Path) (*node, bool) {
	n := d.root
	for _, s := range p {
		var next *node
		switch s := s.(type) {
		case int:
			if n.kind == kindArray && s >= 0 && s < len(n.elems) {
				next = n.elems[s]
			}
		case string:
			if n.kind == kindObject {
				next = n.get(s)
			}
		}
		if next == nil {
			return n, false
		}
		n = next
	}
	return n, true
}

// Errorf returns an error about the field at p (relative to the document),
// placed at its value, or at the closest enclosing value when the field is
// absent (a required field left out is reported at its object).
//
// A problem with a value Decode refused (and so left zero) was reported
// already: Join drops the error.
func (d *Doc) Errorf(p Path, format string, args ...any) *Error {
	n, _ := d.find(p)
	full := d.at.Join(p...)
	e := d.errorAt(n.start, full, fmt.Sprintf(format, args...))
	for i := len(full); i > 0 && !e.shadowed; i-- {
		e.shadowed = d.refused[full[:i].String()]
	}
	return e
}

func (d *Doc) errorAt(off int, p Path, msg string) *Error {
	line := max(0, sortSearch(d.lines, off))
	col := utf8.RuneCount(d.data[d.lines[line]:min(off, len(d.data))]) + 1
	return &Error{File: d.name, Offset: off, Line: line + 1, Col: col, Path: p.String(), Msg: msg}
}

// sortSearch returns the index of the last line starting at or before off.
func sortSearch(starts []int, off int) int {
	i, found := slices.BinarySearch(starts, off)
	if found {
		return i
	}
	return i - 1
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// Decode checks the document against v's type and decodes it into v (a
// non-nil pointer) with encoding/json. It reports every problem at once: a
// key that names no field (with the field meant when one is close), a key
// given twice, a value of the wrong kind or out of range, and the error of
// any field type's own UnmarshalJSON, each placed at its key or value.
// Field names match exactly, not case-insensitively.
//
// v is filled from every value that fits, even when others do not (those
// fields are left as they were, and Errorf's errors about them are
// dropped), so that a caller can go on checking what the values mean and
// report all the file's problems in one go. filled is false only when
// nothing could be decoded.
func (d *Doc) Decode(v any) (filled bool, err error) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return false, fmt.Errorf("jsonfile: Decode needs a non-nil pointer, got %T", v)
	}
	c := &checker{doc: d}
	c.check(d.root, rv.Type().Elem(), d.at)
	if len(c.bad) > 0 && c.bad[0] == d.root {
		return false, Join(c.errs...)
	}
	// The refused values become null, which encoding/json skips.
	text := d.Bytes()
	if len(c.bad) > 0 {
		var b bytes.Buffer
		last := d.root.start
		for _, n := range c.bad {
			b.Write(d.data[last:n.start])
			b.WriteString("null")
			last = n.end
		}
		b.Write(d.data[last:d.root.end])
		text = b.Bytes()
	}
	if err := json.Unmarshal(text, v); err != nil {
		// The check above should have caught it; place it at the
		// document.
		return false, Join(append(c.errs, d.errorAt(d.root.start, d.at, strings.TrimPrefix(err.Error(), "json: ")))...)
	}
	return true, Join(c.errs...)
}

// checker collects what Decode finds.
type checker struct {
	doc  *Doc
	errs []error
	// bad are the values that do not fit their fields, in document order
	// (none inside another).
	bad []*node
}

func (c *checker) check(n *node, t reflect.Type, p Path) {
	d := c.doc
	fail := func(off int, format string, args ...any) {
		c.bad = append(c.bad, n)
		d.refused[p.String()] = true
		c.errs = append(c.errs, d.errorAt(off, p, fmt.Sprintf(format, args...)))
	}
	keyFail := func(off int, p Path, format string, args ...any) {
		c.errs = append(c.errs, d.errorAt(off, p, fmt.Sprintf(format, args...)))
	}
	if n.kind == kindNull {
		return // encoding/json leaves the value as it is
	}
	if t.Kind() == reflect.Pointer {
		c.check(n, t.Elem(), p)
		return
	}
	raw := d.data[n.start:n.end]
	if t.Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(jsonUnmarshaler) {
		if err := json.Unmarshal(raw, reflect.New(t).Interface()); err != nil {
			fail(n.start, "%s", strings.TrimPrefix(err.Error(), "json: "))
		}
		return
	}
	if reflect.PointerTo(t).Implements(textUnmarshaler) {
		if n.kind != kindString {
			fail(n.start, "want a string, got %s", kindNames[n.kind])
			return
		}
		var s string
		_ = json.Unmarshal(raw, &s)
		if err := reflect.New(t).Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
			fail(n.start, "%v", err)
		}
		return
	}
	want := func(kind int) bool {
		if n.kind != kind {
			fail(n.start, "want %s, got %s", kindNames[kind], kindNames[n.kind])
			return false
		}
		return true
	}
	switch t.Kind() {
	case reflect.Interface:
		// any value
	case reflect.String:
		want(kindString)
	case reflect.Bool:
		want(kindBool)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if want(kindNumber) {
			if _, err := strconv.ParseInt(string(raw), 10, t.Bits()); err != nil {
				fail(n.start, "want a whole number that fits %s, got %s", t.Kind(), raw)
			}
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if want(kindNumber) {
			if _, err := strconv.ParseUint(string(raw), 10, t.Bits()); err != nil {
				fail(n.start, "want a whole number, 0 or more, that fits %s, got %s", t.Kind(), raw)
			}
		}
	case reflect.Float32, reflect.Float64:
		if want(kindNumber) {
			if _, err := strconv.ParseFloat(string(raw), t.Bits()); err != nil {
				fail(n.start, "number %s is out of range", raw)
			}
		}
	case reflect.Slice, reflect.Array:
		if want(kindArray) {
			if t.Kind() == reflect.Array && len(n.elems) > t.Len() {
				fail(n.start, "want at most %d elements, got %d", t.Len(), len(n.elems))
				return
			}
			for i, e := range n.elems {
				c.check(e, t.Elem(), p.Join(i))
			}
		}
	case reflect.Map:
		if want(kindObject) {
			seen := map[string]int{}
			for _, m := range n.members {
				if first, dup := seen[m.key]; dup {
					keyFail(m.keyOff, p.Join(m.key), "%q is given twice (first at line %d)", m.key, d.lineOf(first))
					continue
				}
				seen[m.key] = m.keyOff
				c.check(m.val, t.Elem(), p.Join(m.key))
			}
		}
	case reflect.Struct:
		if !want(kindObject) {
			return
		}
		fields, hidden := structFieldsHidden(t)
		seen := map[string]int{}
		for _, m := range n.members {
			f, ok := fields[m.key]
			if !ok {
				keyFail(m.keyOff, p.Join(m.key), "unknown field %q%s", m.key, suggest(m.key, fields, hidden))
				continue
			}
			if first, dup := seen[m.key]; dup {
				keyFail(m.keyOff, p.Join(m.key), "field %q is given twice (first at line %d)", m.key, d.lineOf(first))
				continue
			}
			seen[m.key] = m.keyOff
			c.check(m.val, f, p.Join(m.key))
		}
	default:
		fail(n.start, "cannot be decoded into %s", t)
	}
}

func (d *Doc) lineOf(off int) int { return sortSearch(d.lines, off) + 1 }

// structFieldsHidden maps the JSON names of t's fields (those of embedded
// structs included, as encoding/json sees them) to their types, and says
// which are tagged `jsonfile:"hidden"`: decoded, but never suggested for a
// misspelt key (a field that is only there to be refused by name, say).
func structFieldsHidden(t reflect.Type) (map[string]reflect.Type, map[string]bool) {
	out, hidden := map[string]reflect.Type{}, map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				fields, hid := structFieldsHidden(ft)
				for k, v := range fields {
					if _, taken := out[k]; !taken {
						out[k], hidden[k] = v, hid[k]
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
		hidden[name] = f.Tag.Get("jsonfile") == "hidden"
	}
	return out, hidden
}

// suggest names the field a misspelt key probably meant, or lists the
// fields there are.
func suggest(key string, fields map[string]reflect.Type, hidden map[string]bool) string {
	names := make([]string, 0, len(fields))
	for n := range fields {
		if !hidden[n] {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	best, bestDist := "", 3
	for _, n := range names {
		if strings.EqualFold(n, key) {
			return fmt.Sprintf(" (did you mean %q?)", n)
		}
		if d := distance(strings.ToLower(key), strings.ToLower(n)); d < bestDist && d < len(n)/2+1 {
			best, bestDist = n, d
		}
	}
	if best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	if len(names) == 0 {
		return ""
	}
	return " (known fields: " + strings.Join(names, ", ") + ")"
}

// distance is the Levenshtein distance of a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
