package scenario

import (
	"fmt"
	"strconv"
	"strings"
)

// A path (JSONPath-lite) selects values in a JSON document:
//
//	$                    the whole document ("" too)
//	a.b.c                object members ("$.a.b" and "$a" also work)
//	items[0], items[-1]  list elements, negative from the end
//	items[*].id          every element: the path then yields a list
//	items[key=value].x   the first element whose member key, as text, is value
type segKind int

const (
	segKey segKind = iota
	segIndex
	segAll
	segFilter
)

type segment struct {
	kind  segKind
	key   string // segKey; segFilter's member
	index int    // segIndex
	value string // segFilter
}

func parsePath(p string) ([]segment, error) {
	s := strings.TrimSpace(p)
	s = strings.TrimPrefix(s, "$")
	var segs []segment
	for i := 0; i < len(s); {
		switch s[i] {
		case '.':
			i++
			if i == len(s) || s[i] == '.' || s[i] == '[' {
				return nil, fmt.Errorf("path %q: empty member name", p)
			}
			continue
		case '[':
			end := strings.IndexByte(s[i:], ']')
			if end < 0 {
				return nil, fmt.Errorf("path %q: unclosed [", p)
			}
			inner := s[i+1 : i+end]
			i += end + 1
			switch {
			case inner == "*":
				segs = append(segs, segment{kind: segAll})
			case strings.Contains(inner, "="):
				k, v, _ := strings.Cut(inner, "=")
				if k == "" {
					return nil, fmt.Errorf("path %q: filter [%s] has no member name", p, inner)
				}
				segs = append(segs, segment{kind: segFilter, key: k, value: v})
			default:
				n, err := strconv.Atoi(inner)
				if err != nil {
					return nil, fmt.Errorf("path %q: [%s] is not an index, * or key=value", p, inner)
				}
				segs = append(segs, segment{kind: segIndex, index: n})
			}
			if i < len(s) && s[i] != '.' && s[i] != '[' {
				return nil, fmt.Errorf("path %q: want . or [ after ]", p)
			}
		default:
			end := strings.IndexAny(s[i:], ".[")
			if end < 0 {
				end = len(s) - i
			}
			segs = append(segs, segment{kind: segKey, key: s[i : i+end]})
			i += end
		}
	}
	return segs, nil
}

// hit is one value a path reached, with the concrete path to it.
type hit struct {
	at  string
	val any
}

// resolution is what a path selects in a document.
type resolution struct {
	hits    []hit
	missing []string // concrete paths that did not resolve
	multi   bool     // the path has [*]: it selects a list
}

// value is the selection as one value: the single hit, or a list of the
// hits for a multi path.
func (r resolution) value() any {
	if !r.multi {
		return r.hits[0].val
	}
	out := make([]any, len(r.hits))
	for i, h := range r.hits {
		out[i] = h.val
	}
	return out
}

func resolve(doc any, segs []segment) resolution {
	var r resolution
	walk(doc, segs, "$", &r)
	return r
}

func walk(v any, segs []segment, at string, r *resolution) {
	if len(segs) == 0 {
		r.hits = append(r.hits, hit{at: at, val: v})
		return
	}
	sg, rest := segs[0], segs[1:]
	switch sg.kind {
	case segKey:
		m, ok := v.(map[string]any)
		next := at + "." + sg.key
		if at == "$" {
			next = sg.key
		}
		val, found := m[sg.key]
		if !ok || !found {
			r.missing = append(r.missing, next)
			return
		}
		walk(val, rest, next, r)
	case segIndex:
		l, ok := v.([]any)
		i := sg.index
		if ok && i < 0 {
			i += len(l)
		}
		next := fmt.Sprintf("%s[%d]", at, sg.index)
		if !ok || i < 0 || i >= len(l) {
			if ok {
				next += fmt.Sprintf(" (list has %d)", len(l))
			}
			r.missing = append(r.missing, next)
			return
		}
		walk(l[i], rest, next, r)
	case segAll:
		r.multi = true
		l, ok := v.([]any)
		if !ok {
			r.missing = append(r.missing, at+"[*]")
			return
		}
		for i, e := range l {
			walk(e, rest, fmt.Sprintf("%s[%d]", at, i), r)
		}
	case segFilter:
		l, _ := v.([]any)
		for i, e := range l {
			if m, ok := e.(map[string]any); ok {
				if mv, ok := m[sg.key]; ok && asText(mv) == sg.value {
					walk(e, rest, fmt.Sprintf("%s[%d]", at, i), r)
					return
				}
			}
		}
		r.missing = append(r.missing, fmt.Sprintf("%s[%s=%s]", at, sg.key, sg.value))
	}
}

// lookupPath resolves path in doc to one value (a list for [*] paths).
func lookupPath(doc any, path string) (any, error) {
	segs, err := parsePath(path)
	if err != nil {
		return nil, err
	}
	r := resolve(doc, segs)
	if len(r.missing) > 0 {
		return nil, fmt.Errorf("%s not found", r.missing[0])
	}
	return r.value(), nil
}
