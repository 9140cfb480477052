package executor_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/plugboard/plugboard/abi/tasks"
	"github.com/plugboard/plugboard/host/internal/board/executor"
)

// Every normaliser reads stderr the same way.
func TestStderrClassification(t *testing.T) {
	tests := []struct {
		line string
		want []want // empty: no entry
	}{
		// Stack traces.
		{"    at file:///x/chunk.js:267671:13", nil},
		{"    at async Models.generateContent (file:///x/chunk.js:268643:16)", nil},
		{"\tat Object.<anonymous> (/x.js:1:1)", nil},
		{"Stack backtrace:", nil},
		{"   0: <unknown>", nil},
		{"  10: std::rt::lang_start", nil},
		{"             at /rustc/abc/library/std/src/rt.rs:12:5", nil},
		{"404: Not Found", []want{{errm, "404: Not Found"}}},
		// Retry notices.
		{"Attempt 3 failed. Retrying with backoff... Error: exception TypeError: fetch failed sending request", []want{{warn, "Attempt 3 failed."}}},
		{"Reconnecting... 2/5 (stream disconnected before completion)", []want{{warn, "Reconnecting... 2/5"}}},
		{"Request failed (429); retrying in 5s", []want{{warn, "Request failed (429); retrying in 5s"}}},
		{"Request failed; giving up after retrying 5 times", []want{{errm, "Request failed; giving up"}}},
		// Harmless notices.
		{"Warning: 256-color support not detected.", []want{{warn, "Warning: 256-color"}}},
		{"WARNING: proceeding, even though we could not create PATH aliases", []want{{warn, "WARNING: proceeding"}}},
		{"warning: low disk", []want{{warn, "warning: low disk"}}},
		{"[WARNING] --raw-output is enabled.", []want{{warn, "[WARNING] --raw-output"}}},
		{"YOLO mode is enabled. All tool calls will be automatically approved.", []want{{warn, "YOLO mode"}}},
		{`Approval mode overridden to "default" because the current folder is not trusted.`, []want{{warn, "Approval mode overridden"}}},
		{"Ripgrep is not available. Falling back to GrepTool.", []want{{warn, "Ripgrep is not available."}}},
		{"Ripgrep not available: spawn /x/rg EACCES. Falling back to built-in grep.", []want{{warn, "Ripgrep not available"}}},
		{"Falling back to the default model", []want{{warn, "Falling back to the default model"}}},
		// Structured logs.
		{`timestamp=2026-11-24T02:02:05.665Z level=ERROR run=6cca58d3 message="stream error" providerID=opencode error.error="AI_APICallError: Cannot connect to API: Was there a typo in the url or port?"`,
			[]want{{errm, "stream error: AI_APICallError: Cannot connect to API: Was there a typo in the url or port?"}}},
		{`timestamp=2026-11-24T01:57:32.716Z level=ERROR run=08307e27 message="Failed to fetch models.dev" cause="Cause([Fail(HttpClientError: Transport error)])"`,
			[]want{{errm, "Failed to fetch models.dev: Cause([Fail(HttpClientError: Transport error)])"}}},
		{`timestamp=2026-11-24T01:57:30.123Z level=WARN run=1 message="config \"x\" ignored"`, []want{{warn, `config "x" ignored`}}},
		{`timestamp=2026-11-24T01:57:30.123Z level=INFO run=1 message="all LSPs are disabled"`, []want{{sys, "all LSPs are disabled"}}},
		{"2026-11-24T02:01:16.433420Z ERROR codex_api::endpoint::responses_websocket: failed to connect to Responses WebSocket stage=Unknown",
			[]want{{errm, "failed to connect to Responses WebSocket stage=Unknown"}}},
		{"2026-11-24T02:01:16.433420Z  WARN codex_core::exec: sandbox denied", []want{{warn, "sandbox denied"}}},
		{"2026-11-24T02:01:16.433420Z  INFO codex_core: started", []want{{sys, "started"}}},
		{"\x1b[2m2026-11-24T02:01:16.433420Z\x1b[0m \x1b[31mERROR\x1b[0m \x1b[2mcodex_core\x1b[0m\x1b[2m:\x1b[0m boom", []want{{errm, "boom"}}},
		// A log level decides, whatever the message says.
		{`level=ERROR msg="retrying request"`, []want{{errm, "retrying request"}}},
		// Everything else is an error, as printed (ANSI removed).
		{"\x1b[91m\x1b[1mError: \x1b[0mSession not found", []want{{errm, "Error: Session not found"}}},
		{"Error resuming session: Invalid session identifier \"9\". Use --list-sessions to see available sessions.", []want{{errm, "Error resuming session: Invalid session identifier"}}},
		{"Error when talking to Gemini API Full report available at: /tmp/gemini-client-error-Turn.run-sendMessageStream-2026-11-24T02-00-47-098Z.json Error: exception TypeError: fetch failed sending request",
			[]want{{errm, "Error when talking to Gemini API: Error: exception TypeError: fetch failed sending request"}}},
		{"key=value but not a log line", []want{{errm, "key=value but not a log line"}}},
	}
	for _, format := range allFormats {
		for _, tt := range tests {
			n := executor.NewNormalizer(format)
			got := n.Line(tasks.StreamStderr, []byte(tt.line), now)
			checkEntries(t, got)
			t.Run(format+"/"+tt.line, func(t *testing.T) { expectKinds(t, got, tt.want) })
			for _, e := range got {
				if e.Metadata["stream"] != "stderr" {
					t.Errorf("%q: stream metadata %v", tt.line, e.Metadata)
				}
			}
		}
	}
}

func TestIsWarning(t *testing.T) {
	for _, tt := range []struct {
		e    executor.Entry
		want bool
	}{
		{executor.Entry{EntryType: tasks.EntrySystemMessage, Metadata: map[string]any{"level": "warning"}}, true},
		{executor.Entry{EntryType: tasks.EntrySystemMessage, Metadata: map[string]any{"level": "info"}}, false},
		{executor.Entry{EntryType: tasks.EntrySystemMessage}, false},
		{executor.Entry{EntryType: tasks.EntryErrorMessage, Metadata: map[string]any{"level": "warning"}}, false},
		{executor.Entry{EntryType: tasks.EntrySystemMessage, Metadata: map[string]any{"level": 1}}, false},
	} {
		if got := executor.IsWarning(tt.e); got != tt.want {
			t.Errorf("IsWarning(%+v) = %v", tt.e, got)
		}
	}
}

func TestFailureReason(t *testing.T) {
	feed := func(format string, lines ...string) executor.Normalizer {
		n := executor.NewNormalizer(format)
		for _, l := range lines {
			stream, text, _ := strings.Cut(l, "|")
			n.Line(stream, []byte(text), now)
		}
		n.Finish(now)
		checkReason(t, n.FailureReason())
		return n
	}
	for _, format := range allFormats {
		if r := feed(format).FailureReason(); r != "" {
			t.Errorf("%s: nothing reported, FailureReason = %q", format, r)
		}
		if r := feed(format, "stderr|Attempt 1 failed. Retrying", "stderr|Attempt 2 failed. Retrying").FailureReason(); r != "Attempt 2 failed. Retrying" {
			t.Errorf("%s: only warnings, FailureReason = %q, want the last", format, r)
		}
		if r := feed(format, "stderr|first error", "stderr|second error", "stderr|WARNING: later notice", "stderr|    at frame (x.js:1:1)").FailureReason(); r != "second error" {
			t.Errorf("%s: FailureReason = %q, want the last error", format, r)
		}
		long := strings.Repeat("é", 400)
		r := feed(format, "stderr|  "+long).FailureReason()
		if len(r) > 300 || !strings.HasSuffix(r, "…") || !strings.HasPrefix(r, "éé") || !utf8.ValidString(r) {
			t.Errorf("%s: long reason %q (%d bytes)", format, r, len(r))
		}
		r = feed(format, "stderr|bad \xff byte").FailureReason()
		if r != "bad \uFFFD byte" {
			t.Errorf("%s: invalid UTF-8 reason %q", format, r)
		}
	}

	// A status without words does not hide the message before it.
	n := feed(executor.FormatClaudeStreamJSON,
		`stderr|Credit balance is too low`,
		`stdout|{"type":"result","subtype":"error_during_execution","is_error":true}`)
	if r := n.FailureReason(); r != "Credit balance is too low" {
		t.Errorf("claude: FailureReason = %q", r)
	}
	n = feed(executor.FormatClaudeStreamJSON, `stdout|{"type":"result","subtype":"error_during_execution","is_error":true}`)
	if r := n.FailureReason(); r != "error_during_execution" {
		t.Errorf("claude, nothing but the status: FailureReason = %q", r)
	}
	n = feed(executor.FormatGeminiStreamJSON,
		`stdout|{"type":"error","severity":"error","message":"Model stream ended with an invalid chunk."}`,
		`stdout|{"type":"result","status":"error","stats":{}}`)
	if r := n.FailureReason(); r != "Model stream ended with an invalid chunk." {
		t.Errorf("gemini: FailureReason = %q", r)
	}
	n = feed(executor.FormatCodexJSON,
		`stdout|{"type":"error","message":"Reconnecting... 1/5 (stream disconnected)"}`,
		`stdout|{"type":"turn.failed","error":{"message":"stream disconnected before completion"}}`)
	if r := n.FailureReason(); r != "stream disconnected before completion" {
		t.Errorf("codex: FailureReason = %q", r)
	}
	n = feed(executor.FormatOpenCodeJSON,
		`stdout|{"type":"error","sessionID":"s","error":{"name":"ProviderAuthError","data":{"providerID":"x","message":"Invalid API key"}}}`)
	if r := n.FailureReason(); r != "Invalid API key" {
		t.Errorf("opencode: FailureReason = %q", r)
	}
	n = feed(executor.FormatOpenCodeJSON, `stdout|{"type":"error","sessionID":"s","error":{"name":"MessageOutputLengthError","data":{}}}`)
	if r := n.FailureReason(); r != "MessageOutputLengthError" {
		t.Errorf("opencode, a name only: FailureReason = %q", r)
	}
	// A multi-line message gives its first line.
	n = feed(executor.FormatClaudeStreamJSON, `stdout|{"type":"error","error":{"message":"\n  API Error: 500\nstack…"}}`)
	if r := n.FailureReason(); r != "API Error: 500" {
		t.Errorf("multi-line: FailureReason = %q", r)
	}
}
