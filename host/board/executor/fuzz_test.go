package executor_test

import (
	"testing"

	"github.com/plugboard/plugboard/host/board/executor"
)

// FuzzNormalizers feeds arbitrary lines to every normaliser, on both
// streams and after a real event, and holds each entry to what the board
// relies on. An agent's output is untrusted: it must never panic the host.
func FuzzNormalizers(f *testing.F) {
	for _, name := range []string{"claude_stream.jsonl", "claude_error.jsonl", "amp_stream.jsonl", "codex_exec.jsonl", "codex_error.jsonl"} {
		for _, l := range fixtureLines(f, name) {
			f.Add(l, false)
		}
	}
	for _, s := range []string{
		"", "{", "null", `{"type":"tool_call","subtype":"completed","tool_call":{"function":{"name":"f","arguments":"{\"path\":1}"}}}`,
		`{"type":"item.started","item":{"id":"x","type":"mcp_tool_call"}}`, "\x1b]0;title\x07\x1b[2Kplain",
	} {
		f.Add([]byte(s), true)
	}
	formats := []string{executor.FormatClaudeStreamJSON, executor.FormatCodexJSON, executor.FormatLines}
	f.Fuzz(func(t *testing.T, line []byte, stderr bool) {
		stream := executor.StreamStdout
		if stderr {
			stream = executor.StreamStderr
		}
		for _, format := range formats {
			n := executor.NewNormalizer(format)
			var got []executor.Entry
			got = append(got, n.Line(stream, line, now)...)
			got = append(got, n.Line(executor.StreamStdout, []byte(`{"type":"system","subtype":"init","session_id":"s"}`), now)...)
			got = append(got, n.Line(stream, line, now)...)
			got = append(got, n.Finish(now)...)
			checkEntries(t, got)
			_, _ = n.AgentSessionID(), n.Summary()
		}
	})
}
