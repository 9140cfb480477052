package udiff

// This file follows the structure of GNU diff (analyze.c) and gnulib's
// diffseq.h, which implement E. Myers, "An O(ND) Difference Algorithm and
// Its Variations", Algorithmica 1 (1986), with the linear-space refinement
// of section 4b.

// diffMiddle marks the changed lines of a and b, the part of the texts
// that is compared. progress, if not nil, hears how many of the lines in
// the search are resolved.
func diffMiddle(a, b []string, ca, cb []bool, progress func(done, total int)) {
	// Number the lines by equivalence class, from 1.
	classes := make(map[string]int, len(a)+len(b))
	ea, eb := make([]int, len(a)), make([]int, len(b))
	for i, l := range a {
		ea[i] = classOf(classes, l)
	}
	for i, l := range b {
		eb[i] = classOf(classes, l)
	}
	countA, countB := make([]int, len(classes)+1), make([]int, len(classes)+1)
	for _, e := range ea {
		countA[e]++
	}
	for _, e := range eb {
		countB[e]++
	}

	// Lines without a match in the other text are changed whatever the
	// search finds; leave them (and confusing runs of very common lines)
	// out of it.
	da, db := discards(ea, countB), discards(eb, countA)
	xa, ia := undiscarded(ea, da, ca)
	xb, ib := undiscarded(eb, db, cb)

	s := newSearch(xa, xb)
	if total := len(xa) + len(xb); progress != nil && total >= progressMinLines {
		s.progress, s.step, s.next = progress, total/progressSteps, total/progressSteps
	}
	s.compare(0, len(xa), 0, len(xb), false)
	for i, c := range s.cx {
		if c {
			ca[ia[i]] = true
		}
	}
	for i, c := range s.cy {
		if c {
			cb[ib[i]] = true
		}
	}

	shiftBoundaries(ea, ca, cb)
	shiftBoundaries(eb, cb, ca)
}

func classOf(classes map[string]int, line string) int {
	e, ok := classes[line]
	if !ok {
		e = len(classes) + 1
		classes[line] = e
	}
	return e
}

// discards marks lines to leave out of the search: 1 for a line with no
// match in the other text, 2 (provisional) for one with very many; then it
// keeps provisional lines except inside runs of discards, as GNU diff's
// discard_confusing_lines does.
func discards(equivs, otherCounts []int) []byte {
	n := len(equivs)
	d := make([]byte, n)
	many := 5
	for tem := n / 64; ; {
		if tem >>= 2; tem <= 0 {
			break
		}
		many *= 2
	}
	for i, e := range equivs {
		switch m := otherCounts[e]; {
		case m == 0:
			d[i] = 1
		case m > many:
			d[i] = 2
		}
	}

	for i := 0; i < n; i++ {
		if d[i] == 2 {
			// Provisional discards not inside a run of discards stay.
			d[i] = 0
			continue
		}
		if d[i] == 0 {
			continue
		}
		// A run of discardable lines starting with a real discard.
		j, provisional := i, 0
		for ; j < n && d[j] != 0; j++ {
			if d[j] == 2 {
				provisional++
			}
		}
		// Provisional lines at the end of the run stay.
		for j > i && d[j-1] == 2 {
			j--
			d[j] = 0
			provisional--
		}
		length := j - i
		if provisional*4 > length {
			// Too many provisionals: keep them all.
			for ; j > i; j-- {
				if d[j-1] == 2 {
					d[j-1] = 0
				}
			}
		} else {
			// MINIMUM is about the square root of length/4.
			minimum := 1
			for tem := length >> 2; ; {
				if tem >>= 2; tem <= 0 {
					break
				}
				minimum <<= 1
			}
			minimum++
			// Keep any subrun of MINIMUM or more provisionals.
			consec := 0
			for k := 0; k < length; k++ {
				if d[i+k] != 2 {
					consec = 0
					continue
				}
				consec++
				if consec == minimum {
					k -= consec // back up to cancel the whole subrun
				} else if minimum < consec {
					d[i+k] = 0
				}
			}
			// From the start until 3 real discards in a row (or the first
			// real one 8 lines in), keep provisionals.
			consec = 0
			for k := 0; k < length; k++ {
				if k >= 8 && d[i+k] == 1 {
					break
				}
				switch d[i+k] {
				case 2:
					consec = 0
					d[i+k] = 0
				case 0:
					consec = 0
				default:
					consec++
				}
				if consec == 3 {
					break
				}
			}
			// The same from the end.
			i += length - 1
			consec = 0
			for k := 0; k < length; k++ {
				if k >= 8 && d[i-k] == 1 {
					break
				}
				switch d[i-k] {
				case 2:
					consec = 0
					d[i-k] = 0
				case 0:
					consec = 0
				default:
					consec++
				}
				if consec == 3 {
					break
				}
			}
		}
	}
	return d
}

// undiscarded returns the classes of the lines that take part in the
// search and their indexes, and marks the discarded ones changed.
func undiscarded(equivs []int, discards []byte, changed []bool) (x, index []int) {
	for i, e := range equivs {
		if discards[i] == 0 {
			x = append(x, e)
			index = append(index, i)
		} else {
			changed[i] = true
		}
	}
	return x, index
}

// search is the state of one Myers comparison of x and y.
type search struct {
	x, y   []int
	cx, cy []bool
	fd, bd []int // forward and backward furthest-reaching x per diagonal, offset by len(y)+1
	off    int
	// tooExpensive bounds the edit steps of one middle-snake search before
	// it settles for a good split.
	tooExpensive int
	// work counts diagonal extensions over the whole search; past
	// workBudget, tooExpensive drops to cheapTooExpensive.
	work int

	// progress hears done, the lines resolved so far, each time it passes
	// next, which advances by step.
	progress   func(done, total int)
	done       int
	step, next int
}

// A search over progressMinLines lines or more reports progress about
// progressSteps times.
const (
	progressMinLines = 20000
	progressSteps    = 20
)

// workBudget bounds the diagonal extensions of one diff at GNU diff's
// accuracy (about 0.1 s of native work); beyond it, every search settles
// after cheapTooExpensive steps, which keeps pathological inputs (large,
// unrelated, very repetitive texts) to a cost proportional to their size.
// The diff stays correct, only less minimal (measured: 1% more changed
// lines for 100k lines with 5000 moved blocks). Ordinary inputs, even large
// ones, stay under the budget, so their diffs match GNU diff's.
const (
	workBudget        = 100_000_000
	cheapTooExpensive = 256
)

func newSearch(x, y []int) *search {
	n := len(x) + len(y) + 3
	s := &search{
		x: x, y: y,
		cx: make([]bool, len(x)), cy: make([]bool, len(y)),
		fd: make([]int, n), bd: make([]int, n),
		off: len(y) + 1,
	}
	te := 1
	for diags := n; diags != 0; diags >>= 2 {
		te <<= 1
	}
	s.tooExpensive = max(4096, te)
	return s
}

// compare marks the changes between x[xoff:xlim] and y[yoff:ylim].
func (s *search) compare(xoff, xlim, yoff, ylim int, findMinimal bool) {
	x, y := s.x, s.y
	size := xlim - xoff + ylim - yoff
	for xoff < xlim && yoff < ylim && x[xoff] == y[yoff] {
		xoff++
		yoff++
	}
	for xoff < xlim && yoff < ylim && x[xlim-1] == y[ylim-1] {
		xlim--
		ylim--
	}
	switch {
	case xoff == xlim:
		for ; yoff < ylim; yoff++ {
			s.cy[yoff] = true
		}
		s.resolved(size)
	case yoff == ylim:
		for ; xoff < xlim; xoff++ {
			s.cx[xoff] = true
		}
		s.resolved(size)
	default:
		s.resolved(size - (xlim - xoff + ylim - yoff)) // the slid snakes
		xmid, ymid, loMin, hiMin := s.diag(xoff, xlim, yoff, ylim, findMinimal)
		s.compare(xoff, xmid, yoff, ymid, loMin)
		s.compare(xmid, xlim, ymid, ylim, hiMin)
	}
}

// resolved records that n more lines of the search are settled.
func (s *search) resolved(n int) {
	if s.progress == nil {
		return
	}
	s.done += n
	if s.done >= s.next {
		s.progress(s.done, len(s.x)+len(s.y))
		for s.next <= s.done {
			s.next += s.step
		}
	}
}

// diag finds the midpoint of the shortest edit script between
// x[xoff:xlim] and y[yoff:ylim] by searching from both corners at once. If
// the search grows too expensive (and findMinimal is false) it returns the
// furthest point reached instead, with loMin/hiMin saying which half must
// then be searched exactly.
func (s *search) diag(xoff, xlim, yoff, ylim int, findMinimal bool) (xmid, ymid int, loMin, hiMin bool) {
	x, y := s.x, s.y
	fd, bd, o := s.fd, s.bd, s.off
	dmin, dmax := xoff-ylim, xlim-yoff
	fmid, bmid := xoff-yoff, xlim-ylim
	fmin, fmax, bmin, bmax := fmid, fmid, bmid, bmid
	odd := (fmid-bmid)&1 != 0
	const maxInt = int(^uint(0) >> 1)

	fd[o+fmid] = xoff
	bd[o+bmid] = xlim
	for c := 1; ; c++ {
		// Extend the forward search by one edit step on each diagonal.
		if fmin > dmin {
			fmin--
			fd[o+fmin-1] = -1
		} else {
			fmin++
		}
		if fmax < dmax {
			fmax++
			fd[o+fmax+1] = -1
		} else {
			fmax--
		}
		for d := fmax; d >= fmin; d -= 2 {
			tlo, thi := fd[o+d-1], fd[o+d+1]
			x0 := tlo + 1
			if tlo < thi {
				x0 = thi
			}
			xx, yy := x0, x0-d
			for xx < xlim && yy < ylim && x[xx] == y[yy] {
				xx++
				yy++
			}
			fd[o+d] = xx
			if odd && bmin <= d && d <= bmax && bd[o+d] <= xx {
				return xx, yy, true, true
			}
		}

		// And the backward search.
		if bmin > dmin {
			bmin--
			bd[o+bmin-1] = maxInt
		} else {
			bmin++
		}
		if bmax < dmax {
			bmax++
			bd[o+bmax+1] = maxInt
		} else {
			bmax--
		}
		for d := bmax; d >= bmin; d -= 2 {
			tlo, thi := bd[o+d-1], bd[o+d+1]
			x0 := thi - 1
			if tlo < thi {
				x0 = tlo
			}
			xx, yy := x0, x0-d
			for xoff < xx && yoff < yy && x[xx-1] == y[yy-1] {
				xx--
				yy--
			}
			bd[o+d] = xx
			if !odd && fmin <= d && d <= fmax && xx <= fd[o+d] {
				return xx, yy, true, true
			}
		}

		s.work += fmax - fmin + bmax - bmin + 2
		if s.work > workBudget {
			s.tooExpensive = min(s.tooExpensive, cheapTooExpensive)
		}
		if findMinimal || c < s.tooExpensive {
			continue
		}

		// Too expensive: take the forward diagonal that got furthest
		// (max x+y) or the backward one that did (min x+y), whichever
		// covered more ground.
		fxybest, fxbest := -1, 0
		for d := fmax; d >= fmin; d -= 2 {
			xx := min(fd[o+d], xlim)
			yy := xx - d
			if ylim < yy {
				xx, yy = ylim+d, ylim
			}
			if fxybest < xx+yy {
				fxybest, fxbest = xx+yy, xx
			}
		}
		bxybest, bxbest := maxInt, 0
		for d := bmax; d >= bmin; d -= 2 {
			xx := max(xoff, bd[o+d])
			yy := xx - d
			if yy < yoff {
				xx, yy = yoff+d, yoff
			}
			if xx+yy < bxybest {
				bxybest, bxbest = xx+yy, xx
			}
		}
		if (xlim+ylim)-bxybest < fxybest-(xoff+yoff) {
			return fxbest, fxybest - fxbest, true, false
		}
		return bxbest, bxybest - bxbest, false, true
	}
}

// shiftBoundaries slides each run of changes in one text so that runs
// merge where they can and otherwise end as late as possible, preferring a
// position aligned with a run of changes in the other text, as GNU diff's
// shift_boundaries does. equivs and changed describe this text,
// other the changed marks of the other one.
func shiftBoundaries(equivs []int, changed, other []bool) {
	n := len(equivs)
	// Sentinel-guarded views: ch(-1) and ch(n) are false.
	ch := func(i int) bool { return i >= 0 && i < n && changed[i] }
	oc := func(j int) bool { return j >= 0 && j < len(other) && other[j] }

	i, j := 0, 0
	for {
		// Find the start of the next run, keeping j at the matching
		// point of the other text.
		for i < n && !changed[i] {
			for oc(j) {
				j++
			}
			j++
			i++
		}
		if i == n {
			return
		}
		start := i
		for i++; ch(i); i++ {
		}
		for oc(j) {
			j++
		}

		var corresponding int
		for {
			runlength := i - start
			// Slide the run back while the line before it equals its last
			// line, merging with earlier runs.
			for start > 0 && equivs[start-1] == equivs[i-1] {
				start--
				changed[start] = true
				i--
				changed[i] = false
				for ch(start - 1) {
					start--
				}
				for j--; oc(j); j-- {
				}
			}
			// corresponding is the end of the run at the last point where
			// it lines up with a run of changes in the other text.
			corresponding = n
			if oc(j - 1) {
				corresponding = i
			}
			// Slide it forward while its first line equals the line after
			// it, merging with later runs.
			for i != n && equivs[start] == equivs[i] {
				changed[start] = false
				start++
				changed[i] = true
				i++
				for ch(i) {
					i++
				}
				for j++; oc(j); j++ {
					corresponding = i
				}
			}
			if runlength == i-start {
				break
			}
		}
		// Move the merged run back to line up with the other text's
		// changes if it can.
		for corresponding < i {
			start--
			changed[start] = true
			i--
			changed[i] = false
			for j--; oc(j); j-- {
			}
		}
	}
}
