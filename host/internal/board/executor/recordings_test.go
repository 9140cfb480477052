package executor_test

import (
	"os"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/abi/tasks"
	"github.com/plugboard/plugboard/host/internal/board/executor"
)

// runRecording feeds a recorded run (testdata/<name>.stderr and .stdout,
// either may be absent) to a fresh normaliser. The recordings kept the two
// streams apart, so their interleaving is lost; stderr is fed first, which
// is how these runs ended (the CLIs print their final event last).
func runRecording(t *testing.T, format, name string) ([]executor.Entry, executor.Normalizer) {
	t.Helper()
	n := executor.NewNormalizer(format)
	var out []executor.Entry
	found := false
	for _, stream := range []string{tasks.StreamStderr, tasks.StreamStdout} {
		if _, err := os.Stat("testdata/" + name + "." + stream); err != nil {
			continue
		}
		found = true
		for _, l := range fixtureLines(t, name+"."+stream) {
			out = append(out, n.Line(stream, l, now)...)
		}
	}
	if !found {
		t.Fatalf("no recording %s", name)
	}
	out = append(out, n.Finish(now)...)
	checkEntries(t, out)
	checkReason(t, n.FailureReason())
	return out, n
}

// warn is a warning entry in an expected sequence.
const warn = "warning"

// expectKinds is expectSequence that tells warnings from other system
// messages: a want of type warn matches a warning only.
func expectKinds(t *testing.T, got []executor.Entry, wants []want) {
	t.Helper()
	for i := range max(len(got), len(wants)) {
		switch {
		case i >= len(got):
			t.Errorf("entry %d missing, want (%s, %q…)", i, wants[i].typ, wants[i].prefix)
		case i >= len(wants):
			t.Errorf("extra entry %d: (%s, %q)", i, kind(got[i]), got[i].Content)
		case kind(got[i]) != wants[i].typ || !strings.HasPrefix(got[i].Content, wants[i].prefix):
			t.Errorf("entry %d = (%s, %q), want (%s, %q…)", i, kind(got[i]), got[i].Content, wants[i].typ, wants[i].prefix)
		}
	}
}

func kind(e executor.Entry) string {
	if executor.IsWarning(e) {
		return warn
	}
	return e.EntryType
}

const (
	sys  = tasks.EntrySystemMessage
	errm = tasks.EntryErrorMessage
)

// Real output of each CLI failing the ways a board run fails: how it
// normalises, and what the board is told was the reason.
func TestRecordedFailures(t *testing.T) {
	tests := []struct {
		name, format string
		want         []want
		reason       string
		session      string
	}{
		{
			name: "claude_notloggedin", format: executor.FormatClaudeStreamJSON,
			want: []want{
				{sys, "Session started (model claude-opus-5-5)"},
				// The assistant message flagged is_api_error_message.
				{errm, "Not logged in · Please run /login"},
				// The result: is_error on a "success" subtype.
				{errm, "Not logged in · Please run /login"},
			},
			reason:  "Not logged in · Please run /login",
			session: "6ef70b38-158f-444b-8a08-1083b072bd50",
		},
		{
			name: "claude_resume_missing", format: executor.FormatClaudeStreamJSON,
			want: []want{
				{errm, "No conversation found with session ID: 11111111-2222-3333-4444-555555555555"}, // stderr
				{errm, "No conversation found with session ID: 11111111-2222-3333-4444-555555555555"}, // result errors
			},
			reason:  "No conversation found with session ID: 11111111-2222-3333-4444-555555555555",
			session: "11111111-2222-3333-4444-555555555555",
		},
		{
			name: "qwen_noauth", format: executor.FormatClaudeStreamJSON,
			want: []want{
				{warn, "Ripgrep not available: spawn "},
				{warn, "Warning: running headless with --yolo"},
				{errm, "No auth type is selected. Please configure an auth type"},
			},
			reason:  "No auth type is selected. Please configure an auth type (e.g. via settings or `--auth-type`) before running in non-interactive mode.",
			session: "9c9f0e51-e36b-4ee6-8048-2a5b6e58331d",
		},
		{
			name: "qwen_resume_missing", format: executor.FormatClaudeStreamJSON,
			want:   []want{{errm, `No saved session found with title "11111111-2222-3333-4444-555555555555".`}},
			reason: `No saved session found with title "11111111-2222-3333-4444-555555555555".`,
		},
		{
			name: "codex_nonet", format: executor.FormatCodexJSON,
			want: []want{
				{warn, "WARNING: proceeding, even though we could not create PATH aliases"},
				{errm, "failed to connect to Responses WebSocket stage=Unknown"},
				{errm, "failed to connect to Responses WebSocket stage=Unknown"},
				{errm, "failed to connect to Responses WebSocket stage=Unknown"},
				{errm, "failed to connect to Responses WebSocket stage=Unknown"},
				{errm, "failed to connect to Responses WebSocket stage=Unknown"},
				{errm, "failed to connect to Responses WebSocket stage=Unknown"},
				{errm, "failed to connect to Responses WebSocket stage=Unknown"},
				{sys, "Thread started"},
				{warn, "Reconnecting... 2/5 (stream disconnected"},
				{warn, "Reconnecting... 3/5"},
				{warn, "Reconnecting... 4/5"},
				{warn, "Reconnecting... 5/5"},
				{warn, "Falling back from WebSockets to HTTPS transport."},
				{warn, "Reconnecting... waiting for network (Connection failed: error sending request)"},
				{warn, "Reconnecting... waiting for network (Connection failed: error sending request)"},
			},
			reason:  "Reconnecting... waiting for network (Connection failed: error sending request)",
			session: "01a20b49-32da-7913-8a77-62a208612b74",
		},
		{
			name: "codex_resume_missing", format: executor.FormatCodexJSON,
			want: []want{
				{warn, "WARNING: proceeding"},
				// "Stack backtrace:" and its frames make no entry.
				{errm, "Error: thread/resume: thread/resume failed: no rollout found for thread id 11111111-2222-3333-4444-555555555555 (code -32600)"},
			},
			reason: "Error: thread/resume: thread/resume failed: no rollout found for thread id 11111111-2222-3333-4444-555555555555 (code -32600)",
		},
		{
			name: "gemini_dummykey", format: executor.FormatGeminiStreamJSON,
			want: []want{
				{warn, "Warning: 256-color support not detected."},
				{warn, "YOLO mode is enabled."},
				{warn, "YOLO mode is enabled."},
				{warn, "Ripgrep is not available. Falling back to GrepTool."},
				{warn, "Attempt 1 failed. Retrying with backoff... Error: exception TypeError: fetch failed sending request"},
				{warn, "Attempt 2 failed."},
				{warn, "Attempt 3 failed."},
				{warn, "Attempt 4 failed."},
				{errm, "Error generating content via API: Error: exception TypeError: fetch failed sending request"},
				{errm, "[Routing] NumericalClassifierStrategy failed: Error: Failed to generate content: exception TypeError: fetch failed sending request"},
				{warn, "Attempt 1 failed."},
				{warn, "Attempt 2 failed."},
				{warn, "Attempt 3 failed."},
				{warn, "Attempt 4 failed."},
				{warn, "Attempt 5 failed."},
				{warn, "Attempt 6 failed."},
				{warn, "Attempt 7 failed."},
				{warn, "Attempt 8 failed."},
				{warn, "Attempt 9 failed."},
				{errm, "Error when talking to Gemini API: Error: exception TypeError: fetch failed sending request"},
				{sys, "Session started (model auto)"},
				{tasks.EntryUserMessage, "say hi"},
				{errm, "[API Error: exception TypeError: fetch failed sending request]"},
			},
			reason:  "[API Error: exception TypeError: fetch failed sending request]",
			session: "93d16a10-16d9-496c-9150-056d6e33f159",
		},
		{
			name: "gemini_nokey", format: executor.FormatGeminiStreamJSON,
			want: []want{
				{warn, "YOLO mode is enabled."},
				{errm, "Please set an Auth method in your /tmp/probe/home/.gemini/settings.json"},
			},
			reason: "Please set an Auth method in your /tmp/probe/home/.gemini/settings.json or specify one of the following environment variables before running: GEMINI_API_KEY, GOOGLE_GENAI_USE_VERTEXAI, GOOGLE_GENAI_USE_GCA",
		},
		{
			name: "gemini_resume_missing", format: executor.FormatGeminiStreamJSON,
			want:   []want{{errm, "Error resuming session: No previous sessions found for this project."}},
			reason: "Error resuming session: No previous sessions found for this project.",
		},
		{
			name: "gemini_untrusted", format: executor.FormatGeminiStreamJSON,
			want: []want{
				{warn, "YOLO mode is enabled."},
				{warn, `Approval mode overridden to "default"`},
				{warn, "YOLO mode is enabled."},
				{warn, `Approval mode overridden to "default"`},
				{errm, "Gemini CLI is not running in a trusted directory. To proceed, either use `--skip-trust`"},
			},
			// Cut to 300 bytes.
			reason: "Gemini CLI is not running in a trusted directory. To proceed, either use `--skip-trust`, set the `GEMINI_CLI_TRUST_WORKSPACE=true` environment variable, or trust this directory in interactive mode. For more details, see https://geminicli.com/docs/cli/trusted-folders/#headless-and-automated-enviro…",
		},
		{
			name: "opencode_nonet", format: executor.FormatOpenCodeJSON,
			want:    []want{{errm, "Cannot connect to API: Unable to connect. Is the computer able to access the url?"}},
			reason:  "Cannot connect to API: Unable to connect. Is the computer able to access the url?",
			session: "ses_df4ba5f27ffeWt6UtjfgKZy98v",
		},
		{
			name: "opencode_resume_missing", format: executor.FormatOpenCodeJSON,
			want:   []want{{errm, "Error: Session not found"}},
			reason: "Error: Session not found",
		},
		{
			name: "opencode_warnlogs", format: executor.FormatOpenCodeJSON,
			want: []want{
				{errm, "stream error: AI_APICallError: Cannot connect to API: Was there a typo in the url or port?"},
				{errm, "stream error: AI_APICallError: Cannot connect to API: Was there a typo in the url or port?"},
				{errm, "stream error: AI_RetryError: Failed after 3 attempts. Last error: Cannot connect to API: Unable to connect."},
				{errm, "stream error: AI_APICallError: Cannot connect to API: Was there a typo in the url or port?"},
				{errm, "stream error: AI_APICallError: Cannot connect to API: Unable to connect. Is the computer able to access the url?"},
			},
			reason: "stream error: AI_APICallError: Cannot connect to API: Unable to connect. Is the computer able to access the url? (cause: Error: Unable to connect. Is the computer able to access the url?)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, n := runRecording(t, tt.format, tt.name)
			expectKinds(t, got, tt.want)
			if r := n.FailureReason(); r != tt.reason {
				t.Errorf("FailureReason = %q\n                   want %q", r, tt.reason)
			}
			if id := n.AgentSessionID(); id != tt.session {
				t.Errorf("AgentSessionID = %q, want %q", id, tt.session)
			}
			if s := n.Summary(); s != "" {
				t.Errorf("Summary = %q: a failed run has none", s)
			}
		})
	}
}

func TestRecordedMetadata(t *testing.T) {
	got, _ := runRecording(t, executor.FormatClaudeStreamJSON, "claude_notloggedin")
	if len(got) == 3 {
		if got[1].Metadata["error"] != "authentication_failed" {
			t.Errorf("API error metadata = %v", got[1].Metadata)
		}
		if m := got[2].Metadata; m["subtype"] != "success" || m["is_error"] != true {
			t.Errorf("result metadata = %v", m)
		}
	}
	got, _ = runRecording(t, executor.FormatClaudeStreamJSON, "qwen_noauth")
	if len(got) == 3 && got[2].Metadata["subtype"] != "error_during_execution" {
		t.Errorf("Qwen result metadata = %v", got[2].Metadata)
	}
	got, _ = runRecording(t, executor.FormatOpenCodeJSON, "opencode_nonet")
	if len(got) == 1 {
		if m := got[0].Metadata; m["error_name"] != "APIError" || m["retryable"] != true {
			t.Errorf("OpenCode error metadata = %v", m)
		}
	}
	got, _ = runRecording(t, executor.FormatOpenCodeJSON, "opencode_warnlogs")
	if len(got) > 0 {
		if m := got[0].Metadata; m["level"] != "error" || m["session_id"] != "ses_df4b6198afferHpGyVPStPxlaH" || m["stream"] != "stderr" {
			t.Errorf("logfmt metadata = %v", m)
		}
	}
	got, _ = runRecording(t, executor.FormatGeminiStreamJSON, "gemini_dummykey")
	var reports int
	for _, e := range got {
		if p, _ := e.Metadata["report_path"].(string); strings.HasPrefix(p, "/tmp/gemini-client-error-") {
			reports++
		}
	}
	if reports != 2 {
		t.Errorf("%d entries name their report file, want 2", reports)
	}
	if last := got[len(got)-1].Metadata; last["error_type"] != "unknown" || last["total_tokens"] != int64(0) {
		t.Errorf("result metadata = %v", last)
	}
	got, _ = runRecording(t, executor.FormatCodexJSON, "codex_nonet")
	if len(got) > 1 && got[1].Metadata["target"] != "codex_api::endpoint::responses_websocket" {
		t.Errorf("tracing metadata = %v", got[1].Metadata)
	}
}
