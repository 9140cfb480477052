package executor

import (
	"testing"
	"time"

	"github.com/plugboard/plugboard/abi/tasks"
)

// TestStandingNoticesAreNoReason: the notices a CLI prints on every run
// never become the failure reason; a retry notice does.
func TestStandingNoticesAreNoReason(t *testing.T) {
	now := time.Now()
	for _, format := range []string{FormatLines, FormatGeminiStreamJSON, FormatClaudeStreamJSON, FormatOpenCodeJSON, FormatCodexJSON} {
		n := NewNormalizer(format)
		for _, line := range []string{
			"YOLO mode is enabled. All tool calls will be automatically approved.",
			"Ripgrep is not available. Falling back to GrepTool.",
			"Ripgrep not available: spawn rg EACCES. Falling back to built-in grep.",
			"Warning: 256-color support not detected. Using a terminal with at least 256-color support is recommended for a better visual experience.",
		} {
			n.Line(tasks.StreamStderr, []byte(line), now)
		}
		if r := n.FailureReason(); r != "" {
			t.Errorf("%s: FailureReason = %q from standing notices only", format, r)
		}
		n.Line(tasks.StreamStderr, []byte("Attempt 2 failed. Retrying with backoff... Error: fetch failed"), now)
		if r := n.FailureReason(); r != "Attempt 2 failed. Retrying with backoff... Error: fetch failed" {
			t.Errorf("%s: FailureReason = %q after a retry notice", format, r)
		}
	}
}
