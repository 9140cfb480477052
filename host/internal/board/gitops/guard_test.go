package gitops

import (
	"errors"
	"strings"
	"testing"
)

func TestGuardByName(t *testing.T) {
	for name, want := range map[string]Guard{"": Balanced, "safe": Safe, "BALANCED": Balanced, " Relaxed ": Relaxed, "off": Off} {
		if g, err := GuardByName(name); err != nil || g != want {
			t.Errorf("GuardByName(%q) = %+v, %v; want %+v", name, g, err, want)
		}
	}
	_, err := GuardByName("paranoid")
	if !errors.Is(err, ErrUnknownGuard) || !strings.Contains(err.Error(), "paranoid") || !strings.Contains(err.Error(), "safe, balanced, relaxed, off") {
		t.Errorf("GuardByName(unknown) error = %v", err)
	}
	if Safe.MaxBytes != 20*1024*1024 || Balanced.MaxBytes != 50*1024*1024 || Relaxed.MaxBytes != 150*1024*1024 {
		t.Error("preset byte limits are not MiB")
	}
}

func TestGuardCheck(t *testing.T) {
	atLimit := Summary{FileCount: 500, Added: 20000, Deleted: 5000, TotalBytes: 50 << 20}
	cases := []struct {
		g      Guard
		s      Summary
		reason string // "" = not exceeded
	}{
		{Balanced, Summary{}, ""},
		{Balanced, atLimit, ""},
		{Balanced, Summary{FileCount: 501}, "501 files > max 500 (balanced)"},
		{Balanced, Summary{FileCount: 612}, "612 files > max 500 (balanced)"},
		{Balanced, Summary{Added: 20000, Deleted: 5001}, "25001 lines > max 25000 (balanced)"},
		{Balanced, Summary{TotalBytes: 50<<20 + 1}, "52428801 bytes > max 52428800 bytes (balanced)"},
		{Safe, Summary{TotalBytes: 25 << 20}, "25 MiB > max 20 MiB (safe)"},
		{Safe, Summary{TotalBytes: 20<<20 + 300<<10}, "20.3 MiB > max 20 MiB (safe)"},
		{Relaxed, Summary{FileCount: 1001, Added: 60001, TotalBytes: 1 << 40}, "1001 files > max 1000 (relaxed); 60001 lines > max 60000 (relaxed); 1 TiB > max 150 MiB (relaxed)"},
		{Off, Summary{FileCount: 1 << 30, Added: 1 << 30, TotalBytes: 1 << 50}, ""},
		{Guard{MaxFiles: 1}, Summary{FileCount: 2}, "2 files > max 1 (custom)"},
		{Guard{Name: "lines", MaxLines: 10}, Summary{FileCount: 1000, Added: 10}, ""},
	}
	for _, c := range cases {
		exceeded, reason := c.g.Check(c.s)
		if exceeded != (c.reason != "") || reason != c.reason {
			t.Errorf("%s.Check(%+v) = %v, %q; want %q", c.g.Name, c.s, exceeded, reason, c.reason)
		}
	}
}
