package board

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestAgentEnviron(t *testing.T) {
	t.Parallel()
	host := []string{"PATH=/bin", "HOME=/h", "ANTHROPIC_API_KEY=k", "AWS_SECRET=s", "AWS_REGION=eu",
		"PLUGBOARD_HTTP_TOKEN=tok", "PLUGBOARD_IDEMPOTENCY_COMPLETED_TTL_SECS=5", "PLUGBOARD_DATA=/other", "ODD"}
	for _, tc := range []struct {
		name string
		env  AgentEnv
		want []string
	}{
		{"default: all but plugboard's own", AgentEnv{},
			[]string{"PATH=/bin", "HOME=/h", "ANTHROPIC_API_KEY=k", "AWS_SECRET=s", "AWS_REGION=eu"}},
		{"drop by pattern, pass one back, set one", AgentEnv{Drop: []string{"AWS_*"}, Set: []string{"AWS_REGION", "EXTRA=1", "MISSING"}},
			[]string{"PATH=/bin", "HOME=/h", "ANTHROPIC_API_KEY=k", "AWS_REGION=eu", "EXTRA=1"}},
		{"allowlist", AgentEnv{Drop: []string{"*"}, Set: []string{"PATH", "HOME"}},
			[]string{"PATH=/bin", "HOME=/h"}},
		{"the operator may pass plugboard's own on purpose", AgentEnv{Set: []string{"PLUGBOARD_HTTP_TOKEN"}},
			[]string{"PATH=/bin", "HOME=/h", "ANTHROPIC_API_KEY=k", "AWS_SECRET=s", "AWS_REGION=eu", "PLUGBOARD_HTTP_TOKEN=tok"}},
	} {
		if err := tc.env.Validate(); err != nil {
			t.Errorf("%s: Validate: %v", tc.name, err)
		}
		if got := agentEnviron(host, tc.env, nil); !slices.Equal(got, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

func TestAgentEnvValidate(t *testing.T) {
	t.Parallel()
	for _, e := range []AgentEnv{
		{Drop: []string{"["}},
		{Drop: []string{""}},
		{Drop: []string{"A=B"}},
		{Set: []string{""}},
		{Set: []string{"=v"}},
		{Set: []string{"A B=1"}},
		{Set: []string{"PLUGBOARD_DATA=/x"}},
		{Set: []string{"PLUGBOARD_ATTEMPT_ID"}},
		{Set: []string{"PLUGBOARD_PROCESS_TREE=x"}},
	} {
		if err := e.Validate(); err == nil {
			t.Errorf("%+v: accepted", e)
		}
	}
}

// TestProcessEnv: attempt processes get the filtered host environment and
// the board's variables, never the data directory (PLUGBOARD_DATA) nor the
// host's PLUGBOARD_HTTP_TOKEN, nor a variable a plugin's secret is read
// from (AgentEnv.Never), even when Set names it.
func TestProcessEnv(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("PLUGBOARD_HTTP_TOKEN", "secret")
	t.Setenv("BOARD_TEST_DROPPED", "x")
	t.Setenv("PLUGIN_API_KEY", "plugin-secret")
	b := openBoard(t, Config{DataDir: "data", AgentEnv: AgentEnv{Drop: []string{"BOARD_TEST_*"},
		Set: []string{"BOARD_ADDED=1", "PLUGIN_API_KEY"}, Never: []string{"PLUGIN_API_KEY"}}})
	env := b.processEnv(nil, "p", "t", "a")
	joined := strings.Join(env, "\n")
	if strings.Contains(joined, "secret") || strings.Contains(joined, "BOARD_TEST_DROPPED") || strings.Contains(joined, "PLUGBOARD_DATA") ||
		strings.Contains(joined, filepath.Join(dir, "data")) {
		t.Errorf("environment leaks:\n%s", joined)
	}
	for _, want := range []string{"PLUGBOARD_ATTEMPT_ID=a", "BOARD_ADDED=1"} {
		if !slices.Contains(env, want) {
			t.Errorf("environment lacks %q:\n%s", want, joined)
		}
	}
	if _, err := Open(context.Background(), Config{DataDir: t.TempDir(), AgentEnv: AgentEnv{Set: []string{"PLUGBOARD_DATA=/x"}}}); err == nil {
		t.Error("Open accepted an agent environment setting PLUGBOARD_DATA")
	}
}

func TestStateIsDir(t *testing.T) {
	for path, want := range map[string]bool{".claude": true, ".gemini": true, ".config/opencode": true, ".factory": true,
		".claude.json": false, ".claude.json.backup": false, ".config/app/settings.toml": false} {
		if got := stateIsDir(path); got != want {
			t.Errorf("stateIsDir(%q) = %v, want %v", path, got, want)
		}
	}
}
