package bench

import (
	"bufio"
	"bytes"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// inProcessRows measures the two rows of the footprint table that are
// benchmarks inside host/internal (which bench/ cannot import): the audited
// echo call against the unaudited one (host/internal/audit
// BenchmarkAuditEcho and BenchmarkAuditHooks) and the change summary of
// 5,500 files against `git status` (host/internal/board/gitops). Each runs
// as `go test -bench` in its package, as docs/BENCHMARKS.md sections 8 and
// 6 give the commands, and the medians of its repetitions become rows.
func inProcessRows(b *testing.B, t *footprintTable) {
	b.Run("audit", func(b *testing.B) {
		var plain, audited, hooks float64
		for b.Loop() {
			m := goBench(b, "./host/internal/audit/", "^BenchmarkAudit", "1s", 3)
			plain = medianOf(m["BenchmarkAuditEcho/plain"]["call-ns/op"])
			audited = medianOf(m["BenchmarkAuditEcho/audited"]["call-ns/op"])
			hooks = medianOf(m["BenchmarkAuditHooks"]["hooks-ns/op"])
		}
		b.ReportMetric(plain, "plain-ns")
		b.ReportMetric(audited, "audited-ns")
		b.ReportMetric(hooks, "hooks-ns")
		row := "audited echo in process: back to back / hooks on the call's path | unaudited"
		t.add(row, fmtNs(audited)+" ("+ratio(audited, plain)+")", fmtNs(plain))
		t.add(row, fmtNs(plain+hooks)+" ("+ratio(plain+hooks, plain)+")", "")
	})
	b.Run("change-summary", func(b *testing.B) {
		var changes, status float64
		for b.Loop() {
			m := goBench(b, "./host/internal/board/gitops/", "5000", "5x", 5)
			changes = medianOf(m["BenchmarkChanges5000"]["ns/op"])
			status = medianOf(m["BenchmarkGitStatus5000"]["ns/op"])
		}
		b.ReportMetric(changes, "changes-ns")
		b.ReportMetric(status, "git-status-ns")
		t.add("change summary of 5,500 files | git status --porcelain", fmtNs(changes)+" ("+ratio(changes, status)+")", fmtNs(status))
	})
}

// goBench runs `go test -run ^$ -bench pattern` in pkg (relative to the
// repository root) and returns, per benchmark name (without its -N
// suffix), each metric's values over the repetitions.
func goBench(b *testing.B, pkg, pattern, benchtime string, count int) map[string]map[string][]float64 {
	b.Helper()
	// The go command on PATH: the Makefile puts its own first.
	cmd := exec.Command("go", "test", "-run", "^$", "-bench", pattern, "-benchtime", benchtime,
		"-count", strconv.Itoa(count), pkg)
	cmd.Dir = ".."
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("go test -bench %s %s: %v\n%s", pattern, pkg, err, out)
	}
	res := map[string]map[string][]float64{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := f[0]
		if i := strings.LastIndex(name, "-"); i > 0 {
			name = name[:i]
		}
		if res[name] == nil {
			res[name] = map[string][]float64{}
		}
		for i := 2; i+1 < len(f); i += 2 {
			if v, err := strconv.ParseFloat(f[i], 64); err == nil {
				res[name][f[i+1]] = append(res[name][f[i+1]], v)
			}
		}
	}
	if len(res) == 0 {
		b.Fatalf("go test -bench %s %s printed no benchmark:\n%s", pattern, pkg, out)
	}
	return res
}

func medianOf(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func ratio(a, b float64) string {
	if b == 0 {
		return "x?"
	}
	return "x" + strconv.FormatFloat(a/b, 'f', 2, 64)
}

// fmtNs formats nanoseconds as µs below 10 ms, else ms.
func fmtNs(ns float64) string {
	if ns < 1e7 {
		return strconv.FormatFloat(ns/1e3, 'f', 1, 64) + " µs"
	}
	return strconv.FormatFloat(ns/1e6, 'f', 1, 64) + " ms"
}
