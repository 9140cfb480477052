package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// TestDemo runs `plugboard demo` on every first-party plugin and checks it
// walks the whole closed loop, exits 0 and removes what it made.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and the plugins and runs an attempt")
	}
	dir, _ := buildtest.Plugins(t, clitest.FirstPartyPlugins(t)...)
	bin := buildtest.Binary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "demo", "--plugins", dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	out := stdout.String()
	if err != nil {
		t.Fatalf("plugboard demo: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	if took := time.Since(start); took > time.Minute {
		t.Errorf("the demo took %s; it should take well under a minute", took)
	}
	steps := []string{
		"→ tools/list", "→ list_projects", "→ list_repos", "→ list_executors", "→ create_task",
		`→ start_task_attempt {"executor":"SHELL"`, "→ get_attempt_status", "← state=running",
		"→ tail_attempt_logs", `"after_entry_index":`, "edits done", "→ get_attempt_changes",
		"app/README.md", "app/NOTES.md", "→ get_attempt_patch", "+Edited by the demo agent.",
		"→ get_attempt_file", "| Notes from the demo agent", `→ follow_up {"action":"queue"`, "queued=true",
		"→ stop_attempt", "task_status=inreview", "== Summary", "Removed the sample repository",
	}
	for _, want := range steps {
		if !strings.Contains(out, want) {
			t.Errorf("the demo's output lacks %q\n%s", want, out)
		}
	}
	// Every call line is followed by an answer line.
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "→ ") && (i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "← ")) {
			t.Errorf("call %q is not followed by an answer", l)
		}
	}
	// The temporary directory is gone.
	m := regexp.MustCompile(`\$DEMO +(\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the demo does not name its directory:\n%s", out)
	}
	if _, err := os.Stat(m[1]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the demo left %s behind (stat: %v)", m[1], err)
	}
}

// TestDemoWithoutTaskTools checks the demo fails clearly, exit status 1,
// when the plugins folder lacks the task tools.
func TestDemoWithoutTaskTools(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and a plugin")
	}
	dir, _ := buildtest.Plugins(t, "plugins/echo")
	bin := buildtest.Binary(t)
	cmd := exec.Command(bin, "demo", "--plugins", dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("demo without task tools: %v, want exit status 1\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), "the task tools are missing") || !strings.Contains(stderr.String(), "list_projects") {
		t.Errorf("stderr does not say which tools are missing:\n%s", stderr.String())
	}
}
