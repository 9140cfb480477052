package bench

import (
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// The seven rows (issue 31, "Footprint, second pass"), in its
// order: BenchmarkFootprint's summary prints them as one table, each with
// its goal and whether this run met it.
const (
	goalEchoStdio = iota
	goalHTTP
	goalRSSWarmed
	goalWasm
	goalFirstWarm
	goalFirstEmpty
	goalListTools
	goalRows
)

// goalRow is one row of the table: what this run measured, the
// baseline it is compared with, and the goal.
type goalRow struct {
	measure string // the wording
	bench   string // the sub-benchmark measuring it, for "not measured"
	goal    string

	measured            bool
	plugboard, baseline string
	ratio               string // "" when the row has no baseline
	met                 bool
	why                 string // set when the sub-benchmark skipped the row
}

func newGoalRows() []goalRow {
	rows := make([]goalRow, goalRows)
	rows[goalEchoStdio] = goalRow{measure: "echo 1 KiB, sequential p50 over stdio ÷ native go-sdk",
		bench: "calls/plugboard-vs-native", goal: "≤ 1.1×"}
	rows[goalHTTP] = goalRow{measure: "streamable HTTP, 8 concurrent sessions, calls/s ÷ native",
		bench: "http/8-sessions", goal: "≥ 1.0×"}
	rows[goalRSSWarmed] = goalRow{measure: "RSS 20 s after start, all plugins warmed",
		bench: "rss/warmed", goal: "≤ 60 MB"}
	rows[goalWasm] = goalRow{measure: "echo.wasm", bench: "wasm-size", goal: "≤ 2.5 MB"}
	rows[goalFirstWarm] = goalRow{measure: "first echo call, warm compile cache, new process",
		bench: "first-call", goal: "≤ 20 ms"}
	rows[goalFirstEmpty] = goalRow{measure: "first echo call, empty cache",
		bench: "first-call", goal: "≤ 250 ms"}
	rows[goalListTools] = goalRow{measure: "TypeScript client listTools(), 30 tools, cold",
		bench: "ts-client/list-tools-cold", goal: "≤ 60 ms"}
	return rows
}

// goal records row i's figures; ratio is plugboard ÷ baseline ("" when the
// row has no baseline).
func (t *footprintTable) goal(i int, plugboard, baseline, ratio string, met bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := &t.goals[i]
	r.measured, r.plugboard, r.baseline, r.ratio, r.met = true, plugboard, baseline, ratio, met
}

// notMeasured records why row i was not measured (a skipped sub-benchmark).
func (t *footprintTable) notMeasured(i int, why string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.goals[i].why = why
}

// writeGoals writes the table: one line per row, columns aligned.
func (t *footprintTable) writeGoals(w io.Writer) {
	t.mu.Lock()
	defer t.mu.Unlock()
	cells := [][]string{{"measure", "plugboard", "baseline", "ratio", "goal", "met"}}
	for _, r := range t.goals {
		switch {
		case r.measured:
			met := "not met"
			if r.met {
				met = "met"
			}
			cells = append(cells, []string{r.measure, r.plugboard, r.baseline, r.ratio, r.goal, met})
		case r.why != "":
			cells = append(cells, []string{r.measure, "not measured: " + r.why, "", "", r.goal, ""})
		default:
			cells = append(cells, []string{r.measure,
				"not measured: " + r.bench + " did not run or failed", "", "", r.goal, ""})
		}
	}
	writeCells(w, "footprint, the issue's table (goals of issue 31):", cells)
}

// writeCells writes a title and rows of cells as a table whose columns are
// aligned (widths counted in runes: the cells hold ×, ≤ and µ).
func writeCells(w io.Writer, title string, cells [][]string) {
	var width []int
	for _, row := range cells {
		for i, c := range row {
			if i >= len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	var sb strings.Builder
	sb.WriteString(title + "\n")
	for _, row := range cells {
		for i, c := range row {
			if i > 0 {
				sb.WriteString(" | ")
			}
			sb.WriteString(c)
			if i < len(row)-1 {
				sb.WriteString(strings.Repeat(" ", width[i]-len([]rune(c))))
			}
		}
		sb.WriteString("\n")
	}
	fmt.Fprint(w, sb.String())
}

// mb formats bytes in MB (10^6 bytes, as the goals are given).
func mb(bytes float64) string { return fmt.Sprintf("%.2f MB", bytes/1e6) }

// xRatio formats a ratio as the issue does (1.34×).
func xRatio(r float64) string { return fmt.Sprintf("%.2f×", r) }

// plugboardBinary is the plugboard binary the footprint rows measure: the
// working tree's, or $PLUGBOARD_BENCH_BINARY — a binary built from another
// commit, so that the same benchmark measures before and after on the same
// machine in one sitting (docs/BENCHMARKS.md section 11 has the commands).
func plugboardBinary(b *testing.B) string {
	if bin := os.Getenv("PLUGBOARD_BENCH_BINARY"); bin != "" {
		b.Logf("measuring %s ($PLUGBOARD_BENCH_BINARY)", bin)
		return bin
	}
	return buildtest.Binary(b)
}
