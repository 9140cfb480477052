package udiff

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The expected outputs below were produced by GNU diffutils 3.8:
// diff -U<context> --label a --label b a b.
var cases = []struct {
	name    string
	a, b    string
	context int
	want    string
}{
	{"identical", "x\ny\n", "x\ny\n", 3, ""},
	{"both empty", "", "", 3, ""},
	{"from empty", "", "one\ntwo\n", 3, "--- a\n+++ b\n@@ -0,0 +1,2 @@\n+one\n+two\n"},
	{"to empty", "one\n", "", 3, "--- a\n+++ b\n@@ -1 +0,0 @@\n-one\n"},
	{"no trailing newline, both", "a\nb", "a\nc", 3,
		"--- a\n+++ b\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"},
	{"newline added at end", "a\nb", "a\nb\n", 3,
		"--- a\n+++ b\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"},
	{"one change in the middle", "1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\n3\n4\nfive\n6\n7\n8\n9\n", 3,
		"--- a\n+++ b\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"},
	{"two hunks", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "one\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\ntwelve\n", 1,
		"--- a\n+++ b\n@@ -1,2 +1,2 @@\n-1\n+one\n 2\n@@ -11,2 +11,2 @@\n 11\n-12\n+twelve\n"},
	{"insert with zero context", "a\nb\n", "a\nx\nb\n", 0, "--- a\n+++ b\n@@ -1,0 +2 @@\n+x\n"},
}

func TestUnifiedGolden(t *testing.T) {
	for _, tc := range cases {
		d := Compute(tc.a, tc.b, tc.context, nil)
		if got := d.Unified("a", "b"); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
		if d.Identical() != (tc.want == "") {
			t.Errorf("%s: Identical = %v", tc.name, d.Identical())
		}
	}
}

// gnuDiff runs the real diff -u, or skips the test when it is missing.
func gnuDiff(t *testing.T, a, b string, context int) string {
	t.Helper()
	path, err := exec.LookPath("diff")
	if err != nil {
		t.Skip("diff not installed")
	}
	dir := t.TempDir()
	fa, fb := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if err := os.WriteFile(fa, []byte(a), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fb, []byte(b), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(path, "-U"+strconv.Itoa(context), "--label", "a", "--label", "b", fa, fb).Output()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) {
		t.Fatalf("diff: %v", err)
	}
	return string(out)
}

func TestUnifiedMatchesGNUDiff(t *testing.T) {
	for _, tc := range cases {
		if got, want := Compute(tc.a, tc.b, tc.context, nil).Unified("a", "b"), gnuDiff(t, tc.a, tc.b, tc.context); got != want {
			t.Errorf("%s:\n got %q\ndiff %q", tc.name, got, want)
		}
	}
	// Source-like texts: a function edited in several places.
	src := "package p\n\nimport \"fmt\"\n\nfunc f(x int) int {\n\tif x > 0 {\n\t\treturn x\n\t}\n\treturn -x\n}\n\nfunc g() {\n\tfmt.Println(f(1))\n}\n"
	edited := "package p\n\nimport (\n\t\"fmt\"\n\t\"os\"\n)\n\nfunc f(x int) int {\n\tif x >= 0 {\n\t\treturn x\n\t}\n\treturn -x\n}\n\nfunc g() {\n\tfmt.Println(f(1))\n\tos.Exit(0)\n}\n"
	for _, c := range []int{0, 1, 3, 10} {
		if got, want := Compute(src, edited, c, nil).Unified("a", "b"), gnuDiff(t, src, edited, c); got != want {
			t.Errorf("source, context %d:\n got %q\ndiff %q", c, got, want)
		}
	}
}

// randomText builds lines from a small alphabet, so lines repeat and the
// diff has ties to break the way GNU diff does.
func randomText(r *rand.Rand, n, alphabet int) []string {
	lines := make([]string, n)
	for i := range lines {
		lines[i] = fmt.Sprintf("l%d\n", r.IntN(alphabet))
	}
	return lines
}

// edit applies random deletions, insertions and replacements.
func edit(r *rand.Rand, lines []string, alphabet int) []string {
	out := append([]string(nil), lines...)
	for range r.IntN(6) {
		pos := r.IntN(len(out) + 1)
		switch r.IntN(3) {
		case 0:
			if pos < len(out) {
				out = append(out[:pos], out[min(pos+1+r.IntN(3), len(out)):]...)
			}
		case 1:
			out = append(out[:pos], append(randomText(r, 1+r.IntN(3), alphabet), out[pos:]...)...)
		default:
			if pos < len(out) {
				out[pos] = fmt.Sprintf("new%d\n", r.IntN(alphabet))
			}
		}
	}
	return out
}

func TestRandomMatchesGNUDiff(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 400
	if testing.Short() {
		n = 50
	}
	for k := range n {
		alphabet := 2 + r.IntN(12)
		a := randomText(r, r.IntN(40), alphabet)
		b := edit(r, a, alphabet)
		if r.IntN(4) == 0 {
			b = randomText(r, r.IntN(40), alphabet) // unrelated texts
		}
		ta, tb := strings.Join(a, ""), strings.Join(b, "")
		if r.IntN(5) == 0 && len(tb) > 0 {
			tb = tb[:len(tb)-1] // no newline at end
		}
		context := r.IntN(4)
		d := Compute(ta, tb, context, nil)
		got := d.Unified("a", "b")
		if want := gnuDiff(t, ta, tb, context); got != want {
			t.Fatalf("case %d, context %d\na=%q\nb=%q\n got %q\ndiff %q", k, context, ta, tb, got, want)
		}
		if patched := apply(t, ta, got); patched != tb {
			t.Fatalf("case %d: patch gives %q, want %q", k, patched, tb)
		}
	}
}

func TestLargeInputsPatchCorrectly(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	// Large, mostly unrelated texts exercise the too-expensive cut-off.
	a := strings.Join(randomText(r, 20000, 5000), "")
	b := strings.Join(randomText(r, 20000, 5000), "")
	d := Compute(a, b, 3, nil)
	u := d.Unified("a", "b")
	if apply(t, a, u) != b {
		t.Fatal("patch of unrelated texts does not reproduce b")
	}
	// Large texts with few edits: the diff is small and exact.
	lines := randomText(r, 50000, 1<<30)
	edited := append([]string(nil), lines...)
	edited[100] = "changed\n"
	edited = append(edited[:30000], edited[30010:]...)
	ta, tb := strings.Join(lines, ""), strings.Join(edited, "")
	d = Compute(ta, tb, 3, nil)
	if d.Added != 1 || d.Removed != 11 || len(d.Hunks()) != 2 {
		t.Errorf("added %d removed %d hunks %d, want 1, 11, 2", d.Added, d.Removed, len(d.Hunks()))
	}
	if got, want := d.Unified("a", "b"), gnuDiff(t, ta, tb, 3); got != want {
		t.Errorf("large text:\n got %q\ndiff %q", got, want)
	}
}

// apply applies a unified diff produced by this package to a.
func apply(t *testing.T, a, diff string) string {
	t.Helper()
	if diff == "" {
		return a
	}
	src := SplitLines(a)
	lines := strings.SplitAfter(diff, "\n")
	var out []string
	next := 0 // next line of src to copy
	for k := 2; k < len(lines) && lines[k] != ""; {
		var a0, n0 int
		hdr := lines[k]
		if _, err := fmt.Sscanf(hdr, "@@ -%d", &a0); err != nil {
			t.Fatalf("bad hunk header %q", hdr)
		}
		if !strings.HasPrefix(strings.Fields(hdr)[1], "-"+strconv.Itoa(a0)+",") {
			n0 = 1
		} else {
			fmt.Sscanf(strings.Fields(hdr)[1], "-%d,%d", &a0, &n0)
		}
		start := a0 - 1
		if n0 == 0 {
			start = a0
		}
		out = append(out, src[next:start]...)
		next = start
		k++
		for ; k < len(lines) && lines[k] != "" && !strings.HasPrefix(lines[k], "@@"); k++ {
			l := lines[k]
			if k+1 < len(lines) && lines[k+1] == "\\ No newline at end of file\n" {
				l = strings.TrimSuffix(l, "\n")
				k++
			}
			switch l[0] {
			case ' ':
				out = append(out, l[1:])
				next++
			case '-':
				next++
			case '+':
				out = append(out, l[1:])
			}
		}
	}
	out = append(out, src[next:]...)
	return strings.Join(out, "")
}

func BenchmarkComputeUnrelated20kLines(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	ta := strings.Join(randomText(r, 20000, 50), "")
	tb := strings.Join(randomText(r, 20000, 50), "")
	b.SetBytes(int64(len(ta) + len(tb)))
	for b.Loop() {
		Compute(ta, tb, 3, nil)
	}
}

func BenchmarkComputeFewEdits50kLines(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	lines := randomText(r, 50000, 1<<30)
	edited := append([]string(nil), lines...)
	for i := 0; i < len(edited); i += 1000 {
		edited[i] = "changed\n"
	}
	ta, tb := strings.Join(lines, ""), strings.Join(edited, "")
	b.SetBytes(int64(len(ta) + len(tb)))
	for b.Loop() {
		Compute(ta, tb, 3, nil)
	}
}

func TestComputeProgress(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	a := strings.Join(randomText(r, 15000, 5000), "")
	b := strings.Join(randomText(r, 15000, 5000), "")
	var dones []int
	total := -1
	d := Compute(a, b, 3, func(done, tot int) {
		if total >= 0 && tot != total {
			t.Errorf("total changed from %d to %d", total, tot)
		}
		total = tot
		dones = append(dones, done)
	})
	if len(dones) < 10 || len(dones) > 25 {
		t.Fatalf("%d progress calls, want about 20", len(dones))
	}
	for i := 1; i < len(dones); i++ {
		if dones[i] <= dones[i-1] {
			t.Errorf("progress not increasing: %v", dones)
		}
	}
	if last := dones[len(dones)-1]; last != total {
		t.Errorf("last progress %d of %d, want complete", last, total)
	}
	if apply(t, a, d.Unified("a", "b")) != b {
		t.Error("diff with progress is wrong")
	}
	// Small comparisons report nothing.
	Compute("a\n", "b\n", 3, func(int, int) { t.Error("progress for a tiny diff") })
}
