package gitops

import (
	"errors"
	"fmt"
	"strings"
)

// Guard limits how large an attempt's changes may be before the board stops
// and asks a human. A zero limit means unlimited.
type Guard struct {
	Name     string `json:"name"`
	MaxFiles int    `json:"max_files"`
	MaxLines int    `json:"max_lines"` // added + deleted
	MaxBytes int64  `json:"max_bytes"`
}

// The presets. The sizes are quoted in MB; they are binary megabytes
// (MiB, 1<<20 bytes), the unit file sizes are usually shown in.
var (
	Safe     = Guard{Name: "safe", MaxFiles: 200, MaxLines: 10000, MaxBytes: 20 << 20}
	Balanced = Guard{Name: "balanced", MaxFiles: 500, MaxLines: 25000, MaxBytes: 50 << 20}
	Relaxed  = Guard{Name: "relaxed", MaxFiles: 1000, MaxLines: 60000, MaxBytes: 150 << 20}
	Off      = Guard{Name: "off"}
)

// DefaultGuard is the guard used when none is named.
var DefaultGuard = Balanced

// ErrUnknownGuard is wrapped by GuardByName for a name that is no preset.
var ErrUnknownGuard = errors.New("unknown guard")

// Presets lists the preset guards, strictest first.
func Presets() []Guard { return []Guard{Safe, Balanced, Relaxed, Off} }

// GuardByName returns the preset called name, ignoring case and surrounding
// space; "" is DefaultGuard.
func GuardByName(name string) (Guard, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return DefaultGuard, nil
	}
	var names []string
	for _, g := range Presets() {
		if strings.EqualFold(g.Name, name) {
			return g, nil
		}
		names = append(names, g.Name)
	}
	return Guard{}, fmt.Errorf("gitops: guard %q: %w; choose one of %s", name, ErrUnknownGuard, strings.Join(names, ", "))
}

// Check reports whether s exceeds any of g's limits and, if so, which, for
// example "612 files > max 500 (balanced)". A value equal to its limit is
// allowed; when several limits are exceeded the reason lists them all.
func (g Guard) Check(s Summary) (exceeded bool, reason string) {
	name := g.Name
	if name == "" {
		name = "custom"
	}
	var over []string
	if g.MaxFiles > 0 && s.FileCount > g.MaxFiles {
		over = append(over, fmt.Sprintf("%d files > max %d (%s)", s.FileCount, g.MaxFiles, name))
	}
	if lines := s.Added + s.Deleted; g.MaxLines > 0 && lines > g.MaxLines {
		over = append(over, fmt.Sprintf("%d lines > max %d (%s)", lines, g.MaxLines, name))
	}
	if g.MaxBytes > 0 && s.TotalBytes > g.MaxBytes {
		have, limit := sizeString(s.TotalBytes), sizeString(g.MaxBytes)
		if have == limit { // just over: rounding would hide the difference
			have, limit = fmt.Sprintf("%d bytes", s.TotalBytes), fmt.Sprintf("%d bytes", g.MaxBytes)
		}
		over = append(over, fmt.Sprintf("%s > max %s (%s)", have, limit, name))
	}
	if len(over) == 0 {
		return false, ""
	}
	return true, strings.Join(over, "; ")
}

// sizeString renders n bytes in binary units with up to one decimal, e.g.
// "50 MiB", "50.1 MiB", "812 bytes".
func sizeString(n int64) string {
	const unit = 1 << 10
	if n < unit {
		return fmt.Sprintf("%d bytes", n)
	}
	v, i := float64(n), -1
	for v >= unit && i < 3 {
		v /= unit
		i++
	}
	return strings.TrimSuffix(fmt.Sprintf("%.1f", v), ".0") + " " + [...]string{"KiB", "MiB", "GiB", "TiB"}[i]
}
