package executor_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/abi/tasks"
	"github.com/plugboard/plugboard/host/internal/board/executor"
)

func TestGeminiStream(t *testing.T) {
	got, n := run(t, executor.FormatGeminiStreamJSON, "gemini_stream.jsonl")
	expectKinds(t, got, []want{
		{sys, "Session started (model gemini-2.5-pro)"},
		{tasks.EntryUserMessage, "How many Go files are there?"},
		// Two deltas, one entry, logged when the tool call shows the reply is over.
		{tasks.EntryAssistantMessage, "I'll list the Go files first."},
		{tasks.EntryToolUse, "run_shell_command: ls *.go"},
		{tasks.EntryToolUse, "run_shell_command result: a.go …"},
		{tasks.EntryToolUse, "read_file: c.go"},
		{tasks.EntryToolUse, "read_file error: File not found: /w/c.go"},
		{warn, "Loop detected, stopping execution"},
		{tasks.EntryAssistantMessage, "There are 2 Go files: a.go and b.go."},
		{sys, "Run finished: success (1530 tokens, 3.20s, 2 tool calls)"},
	})
	if id := n.AgentSessionID(); id != "5b1c0d2e-7f3a-4e8b-9c6d-0a1b2c3d4e5f" {
		t.Errorf("AgentSessionID = %q", id)
	}
	if s := n.Summary(); s != "There are 2 Go files: a.go and b.go." {
		t.Errorf("Summary = %q", s)
	}
	if r := n.FailureReason(); r != "Loop detected, stopping execution" {
		t.Errorf("FailureReason = %q, want the warning", r)
	}
	if len(got) != 10 {
		return
	}
	if got[2].Content != "I'll list the Go files first." {
		t.Errorf("joined deltas = %q", got[2].Content)
	}
	call := got[3].Metadata
	if call["tool_name"] != "run_shell_command" || call["tool_use_id"] != "run_shell_command-1795489201400-0" || call["status"] != "started" {
		t.Errorf("tool_use metadata = %v", call)
	}
	if in, _ := json.Marshal(call["input"]); !bytes.Contains(in, []byte(`"command":"ls *.go"`)) {
		t.Errorf("tool_use input = %s", in)
	}
	if m := got[4].Metadata; m["tool_name"] != "run_shell_command" || m["status"] != "success" || m["result"] != "a.go\nb.go" {
		t.Errorf("tool_result metadata = %v", m)
	}
	if m := got[6].Metadata; m["tool_name"] != "read_file" || m["status"] != "error" || m["error_type"] != "file_not_found" {
		t.Errorf("tool error metadata = %v", m)
	}
	if m := got[9].Metadata; m["status"] != "success" || m["total_tokens"] != int64(1530) || m["tool_calls"] != int64(2) || m["duration_ms"] != 3200.0 {
		t.Errorf("result metadata = %v", m)
	}
}

// A reply still streaming when the process ends is logged by Finish, and
// is the summary before then.
func TestGeminiDeltasFlush(t *testing.T) {
	n := executor.NewNormalizer(executor.FormatGeminiStreamJSON)
	var got []executor.Entry
	for _, l := range []string{
		`{"type":"message","role":"assistant","content":"Hel","delta":true}`,
		`{"type":"message","role":"assistant","content":"lo","delta":true}`,
	} {
		got = append(got, n.Line("stdout", []byte(l), now)...)
	}
	// stderr does not end the reply.
	got = append(got, n.Line("stderr", []byte("YOLO mode is enabled."), now)...)
	got = append(got, n.Line("stdout", []byte(`{"type":"message","role":"assistant","content":"!","delta":true}`), now)...)
	if s := n.Summary(); s != "Hello!" {
		t.Errorf("Summary while streaming = %q", s)
	}
	got = append(got, n.Finish(now)...)
	checkEntries(t, got)
	expectKinds(t, got, []want{{warn, "YOLO mode"}, {tasks.EntryAssistantMessage, "Hello!"}})
	if again := n.Finish(now); len(again) != 0 {
		t.Errorf("second Finish = %v", again)
	}
	if s := n.Summary(); s != "Hello!" {
		t.Errorf("Summary = %q", s)
	}

	// A non-delta assistant message is its own entry; a non-JSON stdout
	// line ends a reply too.
	n = executor.NewNormalizer(executor.FormatGeminiStreamJSON)
	got = nil
	for _, l := range []string{
		`{"type":"message","role":"assistant","content":"part","delta":true}`,
		`not json`,
		`{"type":"message","role":"assistant","content":"whole"}`,
		`{"type":"error","severity":"error","message":"Maximum session turns exceeded"}`,
		`{"type":"result","status":"error","error":{"type":"FatalTurnLimitedError","message":"Reached max session turns for this session."}}`,
	} {
		got = append(got, n.Line("stdout", []byte(l), now)...)
	}
	checkEntries(t, got)
	expectKinds(t, got, []want{
		{tasks.EntryAssistantMessage, "part"},
		{sys, "not json"},
		{tasks.EntryAssistantMessage, "whole"},
		{errm, "Maximum session turns exceeded"},
		{errm, "Reached max session turns for this session."},
	})
	if r := n.FailureReason(); r != "Reached max session turns for this session." {
		t.Errorf("FailureReason = %q", r)
	}
	if s := n.Summary(); s != "whole" {
		t.Errorf("Summary = %q", s)
	}
}

// However long the streamed reply, the normaliser keeps at most an
// entry's worth, and loses none of it.
func TestGeminiLongReply(t *testing.T) {
	n := executor.NewNormalizer(executor.FormatGeminiStreamJSON)
	chunk := strings.Repeat("x", 10000)
	line, _ := json.Marshal(map[string]any{"type": "message", "role": "assistant", "content": chunk, "delta": true})
	var got []executor.Entry
	for range 20 { // 200 kB
		got = append(got, n.Line("stdout", line, now)...)
	}
	huge, _ := json.Marshal(map[string]any{"type": "message", "role": "assistant", "content": strings.Repeat("y", 100000), "delta": true})
	got = append(got, n.Line("stdout", huge, now)...)
	got = append(got, n.Finish(now)...)
	checkEntries(t, got)
	total := 0
	for _, e := range got {
		if e.EntryType != tasks.EntryAssistantMessage {
			t.Errorf("entry %s", e.EntryType)
		}
		total += len(e.Content)
	}
	if total != 200000+executor.MaxContentBytes {
		t.Errorf("logged %d bytes of the reply", total)
	}
	if len(n.Summary()) > executor.MaxContentBytes {
		t.Errorf("Summary keeps %d bytes", len(n.Summary()))
	}
}

func TestOpenCodeStream(t *testing.T) {
	got, n := run(t, executor.FormatOpenCodeJSON, "opencode_stream.jsonl")
	expectKinds(t, got, []want{
		{tasks.EntryThinking, "The user wants to know how many Go files there are."},
		{tasks.EntryToolUse, "bash: ls *.go"},
		{tasks.EntryToolUse, "read: /w/c.go (error: File not found: /w/c.go)"},
		{sys, "Step finished: tool-calls (237 input, 39 output, 67 reasoning, 7936 cached tokens, $0.0000)"},
		{tasks.EntryAssistantMessage, "There are 2 Go files: a.go and b.go."},
		{sys, "Step finished: stop (609 input, 1 output, 9 reasoning, 7936 cached tokens, $0.0012)"},
	})
	if id := n.AgentSessionID(); id != "ses_1f2e3d4c5b6aAbCdEfGhIjKlMn" {
		t.Errorf("AgentSessionID = %q", id)
	}
	if s := n.Summary(); s != "There are 2 Go files: a.go and b.go." {
		t.Errorf("Summary = %q", s)
	}
	if r := n.FailureReason(); r != "" {
		t.Errorf("FailureReason = %q: a failed tool is not the run failing", r)
	}
	if len(got) != 6 {
		return
	}
	if m := got[1].Metadata; m["tool_name"] != "bash" || m["tool_use_id"] != "call_01" || m["status"] != "success" || m["result"] != "a.go\nb.go\n" || m["title"] != "ls *.go" {
		t.Errorf("tool metadata = %v", m)
	}
	if in, _ := json.Marshal(got[1].Metadata["input"]); !bytes.Contains(in, []byte(`"command":"ls *.go"`)) {
		t.Errorf("tool input = %s", in)
	}
	if m := got[2].Metadata; m["status"] != "error" || m["error"] != "File not found: /w/c.go" {
		t.Errorf("tool error metadata = %v", m)
	}
	if m := got[5].Metadata; m["reason"] != "stop" || m["input_tokens"] != int64(609) || m["cache_read_tokens"] != int64(7936) || m["total_tokens"] != int64(8555) || m["cost_usd"] != 0.0012 {
		t.Errorf("step_finish metadata = %v", m)
	}
}

func TestClaudeAPIRetryAndError(t *testing.T) {
	n := executor.NewNormalizer(executor.FormatClaudeStreamJSON)
	var got []executor.Entry
	for _, l := range []string{
		`{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":5400,"error_status":529,"error":"overloaded","session_id":"s"}`,
		`{"type":"system","subtype":"api_retry","attempt":2,"max_retries":10,"retry_delay_ms":500,"error_status":null,"error":"unknown","session_id":"s"}`,
		`{"type":"assistant","message":{"content":[{"type":"text","text":"API Error: Repeated 529 Overloaded errors"}]},"error":"overloaded","is_api_error_message":true,"parent_tool_use_id":null}`,
		`{"type":"assistant","message":{"content":[{"type":"text","text":"Synthetic notice"}]},"is_api_error_message":true}`,
	} {
		got = append(got, n.Line("stdout", []byte(l), now)...)
	}
	checkEntries(t, got)
	expectKinds(t, got, []want{
		{warn, "API request failed; retrying (attempt 1 of 10) in 5.4s: overloaded, HTTP 529"},
		{warn, "API request failed; retrying (attempt 2 of 10) in 0.5s: unknown"},
		{errm, "API Error: Repeated 529 Overloaded errors"},
		{errm, "Synthetic notice"},
	})
	if s := n.Summary(); s != "" {
		t.Errorf("Summary = %q: an API error is not the agent's answer", s)
	}
	if r := n.FailureReason(); r != "Synthetic notice" {
		t.Errorf("FailureReason = %q", r)
	}
	if len(got) == 4 && got[3].Metadata["error"] != "api_error" {
		t.Errorf("metadata = %v", got[3].Metadata)
	}
}

func TestCodexErrorEvents(t *testing.T) {
	n := executor.NewNormalizer(executor.FormatCodexJSON)
	var got []executor.Entry
	for _, l := range []string{
		`{"type":"error","message":"Reconnecting... 1/5 (stream disconnected before completion)"}`,
		`{"type":"item.completed","item":{"id":"item_0","type":"error","message":"Falling back from WebSockets to HTTPS transport."}}`,
		`{"type":"error","message":"unexpected status 401 Unauthorized"}`,
		`{"type":"item.completed","item":{"id":"item_1","type":"error","message":"command timed out"}}`,
		`{"type":"turn.failed","error":{"message":"stream disconnected before completion"}}`,
		`{"type":"turn.failed"}`,
	} {
		got = append(got, n.Line("stdout", []byte(l), now)...)
	}
	checkEntries(t, got)
	expectKinds(t, got, []want{
		{warn, "Reconnecting... 1/5"},
		{warn, "Falling back from WebSockets"},
		{errm, "unexpected status 401 Unauthorized"},
		{errm, "command timed out"},
		{errm, "stream disconnected before completion"},
		{errm, "turn failed"},
	})
	if r := n.FailureReason(); r != "stream disconnected before completion" {
		t.Errorf("FailureReason = %q: a bare status must not hide the message", r)
	}
}
