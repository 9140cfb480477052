// Package udiff computes line diffs of two texts and formats them as unified
// diffs, the way GNU `diff -u` does.
//
// The core is Myers' O(ND) algorithm in its linear-space, divide-and-conquer
// form (find the middle snake from both ends, recurse on the halves), with
// the refinements GNU diff applies before and after it, so the output
// matches `diff -u` line for line on ordinary inputs:
//
//   - the common prefix and suffix are set aside first, except for as many
//     lines as the diff has context;
//   - lines that occur nowhere in the other text are marked changed without
//     entering the search (they can never match), and lines that match very
//     many others are set aside when they sit inside runs of such lines;
//   - a search that exceeds about √(N+M) edit steps (at least 4096) settles
//     for a good, not minimal, split, which bounds the worst case;
//   - runs of changes are then slid to merge with their neighbours and end as
//     late as possible.
//
// It owns only text: no I/O, no plugin concerns.
package udiff

import "strconv"

// Diff is the line diff of two texts.
type Diff struct {
	a, b    []string // lines, each with its '\n' except perhaps the last
	ca, cb  []bool   // changed marks: ca[i] when a[i] is deleted, cb[j] when b[j] is inserted
	Removed int      // lines deleted from a
	Added   int      // lines inserted into b
	cs      []change
	context int
}

// change is one run of deleted lines a[a0:a1] replaced by inserted lines
// b[b0:b1].
type change struct{ a0, a1, b0, b1 int }

// Hunk is one block of a unified diff: lines a[A0:A1] and b[B0:B1],
// changes and their context.
type Hunk struct {
	A0, A1, B0, B1 int
	changes        []change
}

// SplitLines splits s after each '\n'; a last line without one is kept.
func SplitLines(s string) []string {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			n++
		}
	}
	lines := make([]string, 0, n+1)
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			lines = append(lines, s[start:i+1])
			start = i + 1
		}
	}
	if start < len(s) {
		lines = append(lines, s[start:])
	}
	return lines
}

// Compute diffs the lines of a and b for a unified diff with the given
// number of context lines. The context matters, as it does to GNU diff: that
// many lines of the common prefix and suffix stay in the comparison, which
// gives the first and last runs of changes room to slide.
//
// progress, if not nil, is called about 20 times while a large comparison
// (20000 lines or more) runs, with the number of lines resolved out of the
// lines searched.
func Compute(a, b string, context int, progress func(done, total int)) *Diff {
	context = max(context, 0)
	d := &Diff{a: SplitLines(a), b: SplitLines(b), context: context}
	d.ca = make([]bool, len(d.a))
	d.cb = make([]bool, len(d.b))

	// Set the common prefix and suffix aside, all but context lines of each.
	pre := 0
	for pre < len(d.a) && pre < len(d.b) && d.a[pre] == d.b[pre] {
		pre++
	}
	start := max(pre-context, 0)
	suf := 0
	for suf < len(d.a)-start && suf < len(d.b)-start && d.a[len(d.a)-1-suf] == d.b[len(d.b)-1-suf] {
		suf++
	}
	keep := max(suf-context, 0)
	endA, endB := len(d.a)-keep, len(d.b)-keep
	if pre < len(d.a) || pre < len(d.b) {
		diffMiddle(d.a[start:endA], d.b[start:endB], d.ca[start:endA], d.cb[start:endB], progress)
	}
	for _, c := range d.ca {
		if c {
			d.Removed++
		}
	}
	for _, c := range d.cb {
		if c {
			d.Added++
		}
	}
	d.cs = d.changes()
	return d
}

// Identical reports whether the texts are equal.
func (d *Diff) Identical() bool { return d.Added == 0 && d.Removed == 0 }

// changes lists the runs of changes in order.
func (d *Diff) changes() []change {
	var cs []change
	i, j := 0, 0
	for i < len(d.a) || j < len(d.b) {
		if (i < len(d.a) && d.ca[i]) || (j < len(d.b) && d.cb[j]) {
			c := change{a0: i, b0: j}
			for i < len(d.a) && d.ca[i] {
				i++
			}
			for j < len(d.b) && d.cb[j] {
				j++
			}
			c.a1, c.b1 = i, j
			cs = append(cs, c)
			continue
		}
		i++
		j++
	}
	return cs
}

// Hunks groups the changes into hunks with the context lines given to
// Compute: changes separated by at most 2*context unchanged lines share a
// hunk, as in diff -u.
func (d *Diff) Hunks() []Hunk {
	context := d.context
	var hunks []Hunk
	cs := d.cs
	for k := 0; k < len(cs); {
		first := k
		for k+1 < len(cs) && cs[k+1].a0-cs[k].a1 <= 2*context {
			k++
		}
		last := cs[k]
		k++
		hunks = append(hunks, Hunk{
			A0:      max(cs[first].a0-context, 0),
			A1:      min(last.a1+context, len(d.a)),
			B0:      max(cs[first].b0-context, 0),
			B1:      min(last.b1+context, len(d.b)),
			changes: cs[first:k],
		})
	}
	return hunks
}

// AppendHeader appends the ---/+++ header lines.
func AppendHeader(dst []byte, labelA, labelB string) []byte {
	dst = append(dst, "--- "...)
	dst = append(dst, labelA...)
	dst = append(dst, "\n+++ "...)
	dst = append(dst, labelB...)
	return append(dst, '\n')
}

// AppendHunk appends one hunk in unified format.
func (d *Diff) AppendHunk(dst []byte, h Hunk) []byte {
	dst = append(dst, "@@ -"...)
	dst = appendRange(dst, h.A0, h.A1)
	dst = append(dst, " +"...)
	dst = appendRange(dst, h.B0, h.B1)
	dst = append(dst, " @@\n"...)
	i, j := h.A0, h.B0
	for _, c := range h.changes {
		for ; i < c.a0; i, j = i+1, j+1 {
			dst = appendLine(dst, ' ', d.a[i])
		}
		for ; i < c.a1; i++ {
			dst = appendLine(dst, '-', d.a[i])
		}
		for ; j < c.b1; j++ {
			dst = appendLine(dst, '+', d.b[j])
		}
	}
	for ; i < h.A1; i++ {
		dst = appendLine(dst, ' ', d.a[i])
	}
	return dst
}

// Unified formats the whole diff; it is empty when the texts are identical.
func (d *Diff) Unified(labelA, labelB string) string {
	if d.Identical() {
		return ""
	}
	dst := AppendHeader(nil, labelA, labelB)
	for _, h := range d.Hunks() {
		dst = d.AppendHunk(dst, h)
	}
	return string(dst)
}

// appendRange appends a hunk range of lines [start, end) the way GNU diff
// does: "l" for one line, "l,n" for more, and "l,0" with l the line before
// for none.
func appendRange(dst []byte, start, end int) []byte {
	switch n := end - start; n {
	case 0:
		dst = strconv.AppendInt(dst, int64(start), 10)
		return append(dst, ",0"...)
	case 1:
		return strconv.AppendInt(dst, int64(start+1), 10)
	default:
		dst = strconv.AppendInt(dst, int64(start+1), 10)
		dst = append(dst, ',')
		return strconv.AppendInt(dst, int64(n), 10)
	}
}

func appendLine(dst []byte, prefix byte, line string) []byte {
	dst = append(dst, prefix)
	dst = append(dst, line...)
	if len(line) == 0 || line[len(line)-1] != '\n' {
		dst = append(dst, "\n\\ No newline at end of file\n"...)
	}
	return dst
}
