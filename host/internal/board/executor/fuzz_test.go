package executor_test

import (
	"testing"

	"github.com/plugboard/plugboard/abi/tasks"
	"github.com/plugboard/plugboard/host/internal/board/executor"
)

// FuzzNormalizers feeds arbitrary lines to every normaliser, on both
// streams and after a real event, and holds each entry to what the board
// relies on. An agent's output is untrusted: it must never panic the host.
func FuzzNormalizers(f *testing.F) {
	for _, name := range []string{
		"claude_stream.jsonl", "claude_error.jsonl", "amp_stream.jsonl", "codex_exec.jsonl", "codex_error.jsonl",
		"gemini_stream.jsonl", "opencode_stream.jsonl",
		"claude_notloggedin.stdout", "claude_resume_missing.stdout", "qwen_noauth.stdout",
		"codex_nonet.stdout", "gemini_dummykey.stdout", "opencode_nonet.stdout",
	} {
		for _, l := range fixtureLines(f, name) {
			f.Add(l, false)
		}
	}
	for _, name := range []string{
		"claude_resume_missing.stderr", "qwen_noauth.stderr", "codex_nonet.stderr", "codex_resume_missing.stderr",
		"gemini_dummykey.stderr", "gemini_untrusted.stderr", "opencode_resume_missing.stderr", "opencode_warnlogs.stderr",
	} {
		for i, l := range fixtureLines(f, name) {
			if i < 12 { // the rest of a stack trace adds nothing
				f.Add(l, true)
			}
		}
	}
	for _, s := range []string{
		"", "{", "null", `{"type":"tool_call","subtype":"completed","tool_call":{"function":{"name":"f","arguments":"{\"path\":1}"}}}`,
		`{"type":"item.started","item":{"id":"x","type":"mcp_tool_call"}}`, "\x1b]0;title\x07\x1b[2Kplain",
		`{"type":"message","role":"assistant","content":"\u00e9","delta":true}`, `timestamp=x level=ERROR message="a\"b" error.error=`,
	} {
		f.Add([]byte(s), true)
	}
	formats := []string{executor.FormatClaudeStreamJSON, executor.FormatCodexJSON, executor.FormatGeminiStreamJSON, executor.FormatOpenCodeJSON, executor.FormatLines}
	f.Fuzz(func(t *testing.T, line []byte, stderr bool) {
		stream := tasks.StreamStdout
		if stderr {
			stream = tasks.StreamStderr
		}
		for _, format := range formats {
			n := executor.NewNormalizer(format)
			var got []executor.Entry
			got = append(got, n.Line(stream, line, now)...)
			got = append(got, n.Line(tasks.StreamStdout, []byte(`{"type":"system","subtype":"init","session_id":"s"}`), now)...)
			got = append(got, n.Line(stream, line, now)...)
			got = append(got, n.Finish(now)...)
			checkEntries(t, got)
			_, _ = n.AgentSessionID(), n.Summary()
			checkReason(t, n.FailureReason())
		}
	})
}
