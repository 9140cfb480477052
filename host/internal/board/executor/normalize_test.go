package executor_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/plugboard/plugboard/abi/tasks"
	"github.com/plugboard/plugboard/host/internal/board/executor"
)

var now = time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("CET", 3600))

// fixtureLines reads a testdata file as the lines a process would print.
func fixtureLines(t testing.TB, name string) [][]byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var lines [][]byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, bytes.Clone(sc.Bytes()))
	}
	return lines
}

// run feeds a fixture to a fresh normaliser on stdout, then finishes it.
func run(t *testing.T, format, fixture string) ([]executor.Entry, executor.Normalizer) {
	t.Helper()
	n := executor.NewNormalizer(format)
	var out []executor.Entry
	for _, l := range fixtureLines(t, fixture) {
		out = append(out, n.Line(tasks.StreamStdout, l, now)...)
	}
	out = append(out, n.Finish(now)...)
	checkEntries(t, out)
	return out, n
}

type want struct{ typ, prefix string }

func expectSequence(t *testing.T, got []executor.Entry, wants []want) {
	t.Helper()
	for i := range max(len(got), len(wants)) {
		switch {
		case i >= len(got):
			t.Errorf("entry %d missing, want (%s, %q…)", i, wants[i].typ, wants[i].prefix)
		case i >= len(wants):
			t.Errorf("extra entry %d: (%s, %q)", i, got[i].EntryType, got[i].Content)
		case got[i].EntryType != wants[i].typ || !strings.HasPrefix(got[i].Content, wants[i].prefix):
			t.Errorf("entry %d = (%s, %q), want (%s, %q…)", i, got[i].EntryType, got[i].Content, wants[i].typ, wants[i].prefix)
		}
	}
}

// allFormats are the formats NewNormalizer knows, and one it does not.
var allFormats = []string{
	executor.FormatClaudeStreamJSON, executor.FormatCodexJSON, executor.FormatGeminiStreamJSON,
	executor.FormatOpenCodeJSON, executor.FormatLines, "unknown",
}

var entryTypes = map[string]bool{
	tasks.EntryUserMessage: true, tasks.EntryAssistantMessage: true, tasks.EntryToolUse: true,
	tasks.EntryThinking: true, tasks.EntrySystemMessage: true, tasks.EntryErrorMessage: true,
}

// checkEntries holds every entry to what the board relies on: a known type,
// a parseable UTC timestamp, bounded valid text, and metadata that marshals.
func checkEntries(t testing.TB, entries []executor.Entry) {
	t.Helper()
	for _, e := range entries {
		if !entryTypes[e.EntryType] {
			t.Errorf("unknown entry type %q", e.EntryType)
		}
		ts, err := time.Parse(time.RFC3339Nano, e.Timestamp)
		if err != nil || !strings.HasSuffix(e.Timestamp, "Z") || ts.Location() != time.UTC {
			t.Errorf("timestamp %q is not RFC3339Nano UTC", e.Timestamp)
		}
		if len(e.Content) > executor.MaxContentBytes || !utf8.ValidString(e.Content) {
			t.Errorf("content of %d bytes, valid UTF-8 %v", len(e.Content), utf8.ValidString(e.Content))
		}
		if strings.TrimSpace(e.Content) == "" {
			t.Errorf("empty %s entry", e.EntryType)
		}
		b, err := json.Marshal(e)
		if err != nil {
			t.Errorf("entry does not marshal: %v", err)
		} else if len(b) > 2*executor.MaxContentBytes+64<<10 {
			t.Errorf("entry marshals to %d bytes", len(b))
		}
		for k := range e.Metadata {
			if strings.ContainsRune(k, 0) {
				t.Errorf("internal metadata key %q leaked", k)
			}
		}
		if level, ok := e.Metadata["level"]; ok && level == "warning" && e.EntryType != tasks.EntrySystemMessage {
			t.Errorf("a %s entry marked as a warning", e.EntryType)
		}
	}
}

// checkReason holds a FailureReason to what the board relies on: one
// trimmed line of bounded valid UTF-8.
func checkReason(t testing.TB, r string) {
	t.Helper()
	if len(r) > 300 || !utf8.ValidString(r) || strings.ContainsAny(r, "\r\n") || r != strings.TrimSpace(r) {
		t.Errorf("FailureReason %q is not one trimmed line of at most 300 bytes", r)
	}
}

func TestClaudeStream(t *testing.T) {
	got, n := run(t, executor.FormatClaudeStreamJSON, "claude_stream.jsonl")
	expectSequence(t, got, []want{
		{tasks.EntrySystemMessage, "Session started (model claude-opus-4-5-20251101)"},
		{tasks.EntryThinking, "The user wants the files in the current directory."},
		{tasks.EntryToolUse, "Bash: ls -la"},
		{tasks.EntryToolUse, "Bash result: total 1976 …"},
		{tasks.EntryAssistantMessage, "Here are the files in the current directory."},
		{tasks.EntrySystemMessage, "Run finished: success (2 turns, 8.72s, $0.2472)"},
	})
	if id := n.AgentSessionID(); id != "40e7b02d-c0f9-4876-9010-f514d4eb0603" {
		t.Errorf("AgentSessionID = %q", id)
	}
	if s := n.Summary(); s != "Here are the files in the current directory." {
		t.Errorf("Summary = %q", s)
	}
	if len(got) < 6 {
		return
	}
	if m := got[0].Metadata; m["model"] != "claude-opus-4-5-20251101" || m["session_id"] != "40e7b02d-c0f9-4876-9010-f514d4eb0603" || m["tools_count"] != 17 {
		t.Errorf("init metadata = %v", m)
	}
	call := got[2].Metadata
	if call["tool_name"] != "Bash" || call["tool_use_id"] != "toolu_01BeipFBP3sUY3EAwVg3qQnE" || call["status"] != "started" {
		t.Errorf("tool_use metadata = %v", call)
	}
	if in, _ := json.Marshal(call["input"]); !bytes.Contains(in, []byte(`"command":"ls -la"`)) {
		t.Errorf("tool_use input = %s", in)
	}
	res := got[3].Metadata
	if res["tool_name"] != "Bash" || res["status"] != "success" || !strings.HasPrefix(res["result"].(string), "total 1976\ndrwx") {
		t.Errorf("tool_result metadata = %v", res)
	}
	if m := got[5].Metadata; m["num_turns"] != 2 || m["total_cost_usd"] != 0.24722425 || m["is_error"] != false {
		t.Errorf("result metadata = %v", m)
	}
}

func TestClaudeErrorResult(t *testing.T) {
	got, n := run(t, executor.FormatClaudeStreamJSON, "claude_error.jsonl")
	expectSequence(t, got, []want{
		{tasks.EntrySystemMessage, "Session started"},
		// The subtype stays in the metadata; the content is the CLI's words.
		{tasks.EntryErrorMessage, "Reached maximum number of turns (40)"},
	})
	if id := n.AgentSessionID(); id != "1d1e46f9-35c7-4834-b529-846d5bb82288" {
		t.Errorf("AgentSessionID = %q", id)
	}
	if s := n.Summary(); s != "" {
		t.Errorf("Summary = %q, want none: the run never answered", s)
	}
	if len(got) == 2 && (got[1].Metadata["num_turns"] != 41 || got[1].Metadata["subtype"] != "error_max_turns") {
		t.Errorf("error metadata = %v", got[1].Metadata)
	}
	if r := n.FailureReason(); r != "Reached maximum number of turns (40)" {
		t.Errorf("FailureReason = %q", r)
	}
}

// Amp's stream is Claude Code's envelope; its thread id is the session id
// `amp threads continue` resumes.
func TestAmpStreamThroughClaudeNormalizer(t *testing.T) {
	got, n := run(t, executor.FormatClaudeStreamJSON, "amp_stream.jsonl")
	expectSequence(t, got, []want{
		{tasks.EntrySystemMessage, "Session started"},
		{tasks.EntryUserMessage, "what is 2+2?"},
		{tasks.EntryAssistantMessage, "2 + 2 equals 4."},
		{tasks.EntrySystemMessage, "Run finished: success (1 turn, 2.91s)"},
	})
	if id := n.AgentSessionID(); id != "T-2775dc92-90ed-4f85-8b73-8f9766029e83" {
		t.Errorf("AgentSessionID = %q", id)
	}
	if s := n.Summary(); s != "2 + 2 equals 4." {
		t.Errorf("Summary = %q", s)
	}
}

func TestCodexExec(t *testing.T) {
	got, n := run(t, executor.FormatCodexJSON, "codex_exec.jsonl")
	expectSequence(t, got, []want{
		{tasks.EntrySystemMessage, "Thread started"},
		{tasks.EntryThinking, "**Searching for README files**"},
		{tasks.EntryToolUse, "Shell: bash -lc ls"},
		{tasks.EntryThinking, "**Checking repository root for README**"},
		{tasks.EntryAssistantMessage, "Yep — there’s a `README.md`"},
		{tasks.EntrySystemMessage, "Turn completed (24763 input, 24448 cached, 122 output tokens)"},
	})
	if id := n.AgentSessionID(); id != "0199a213-81c0-7800-8aa1-bbab2a035a53" {
		t.Errorf("AgentSessionID = %q", id)
	}
	if s := n.Summary(); s != "Yep — there’s a `README.md` in the repository root." {
		t.Errorf("Summary = %q", s)
	}
	if len(got) == 6 {
		m := got[2].Metadata
		if m["exit_code"] != 0 || m["status"] != "success" || m["tool_use_id"] != "item_1" || !strings.Contains(m["result"].(string), "AGENTS.md") {
			t.Errorf("command metadata = %v", m)
		}
		if got[2].Content != "Shell: bash -lc ls" {
			t.Errorf("a command that exited 0 is marked: %q", got[2].Content)
		}
	}
}

func TestCodexFailedTurn(t *testing.T) {
	got, n := run(t, executor.FormatCodexJSON, "codex_error.jsonl")
	expectSequence(t, got, []want{
		{tasks.EntrySystemMessage, "Thread started"},
		{tasks.EntryErrorMessage, "command timed out after 10000 ms"},
		{tasks.EntryErrorMessage, "Selected model is at capacity."},
		{tasks.EntryErrorMessage, "Selected model is at capacity."},
		// Finish reports the command that started and never completed.
		{tasks.EntryToolUse, "Shell: bash -lc 'go test ./...' (no result"},
	})
	if len(got) == 5 && got[4].Metadata["status"] != "incomplete" {
		t.Errorf("unfinished command metadata = %v", got[4].Metadata)
	}
	if id := n.AgentSessionID(); id != "0199b5e1-4c2a-7d31-9f0e-5a6b7c8d9e0f" {
		t.Errorf("AgentSessionID = %q", id)
	}
	if s := n.Summary(); s != "" {
		t.Errorf("Summary = %q", s)
	}
	if again := n.Finish(now); len(again) != 0 {
		t.Errorf("second Finish = %v", again)
	}
}

func TestCodexItemKinds(t *testing.T) {
	n := executor.NewNormalizer(executor.FormatCodexJSON)
	lines := []string{
		`{"type":"item.completed","item":{"id":"i1","type":"file_change","changes":[{"path":"a.go","kind":"update"},{"path":"b.go","kind":"add"}],"status":"completed"}}`,
		`{"type":"item.completed","item":{"id":"i2","type":"mcp_tool_call","server":"board","tool":"move","arguments":{"path":"card-7"},"result":{"content":[],"structured_content":null},"error":null,"status":"completed"}}`,
		`{"type":"item.completed","item":{"id":"i3","type":"web_search","query":"go 1.26 release notes"}}`,
		`{"type":"item.completed","item":{"id":"i4","type":"todo_list","items":[{"text":"a","completed":true},{"text":"b","completed":false}]}}`,
		`{"type":"item.completed","item":{"id":"i5","type":"command_execution","command":"false","aggregated_output":"","exit_code":1,"status":"failed"}}`,
		`{"type":"item.completed","item":{"id":"i6","item_type":"agent_message","text":"older field name"}}`,
		`{"type":"something.new","x":1}`,
	}
	var got []executor.Entry
	for _, l := range lines {
		got = append(got, n.Line("stdout", []byte(l), now)...)
	}
	checkEntries(t, got)
	expectSequence(t, got, []want{
		{tasks.EntryToolUse, "Edit: update a.go, add b.go"},
		{tasks.EntryToolUse, "MCP board.move: card-7"},
		{tasks.EntryToolUse, "WebSearch: go 1.26 release notes"},
		{tasks.EntryToolUse, "Todo: 1/2 done"},
		{tasks.EntryToolUse, "Shell: false (exit 1)"},
		{tasks.EntryAssistantMessage, "older field name"},
		{tasks.EntrySystemMessage, "Event: something.new"},
	})
	if len(got) == 7 && got[4].Metadata["status"] != "error" {
		t.Errorf("failed command status = %v", got[4].Metadata["status"])
	}
}

func TestCursorToolCalls(t *testing.T) {
	n := executor.NewNormalizer(executor.FormatClaudeStreamJSON)
	lines := []string{
		`{"type":"system","subtype":"init","session_id":"c-1","model":"gpt-5","cwd":"/w"}`,
		`{"type":"tool_call","subtype":"started","call_id":"t1","tool_call":{"readToolCall":{"args":{"path":"a.ts"}}}}`,
		`{"type":"tool_call","subtype":"completed","call_id":"t1","tool_call":{"readToolCall":{"args":{"path":"a.ts"},"result":{"success":{"content":"x"}}}}}`,
		`{"type":"tool_call","subtype":"completed","call_id":"t2","tool_call":{"shellToolCall":{"args":{"command":"make"},"result":{"rejected":{}}}}}`,
		`{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Findings: none"}]},"session_id":"c-1"}`,
		`{"type":"result","subtype":"success","is_error":false,"result":"Findings: none","duration_ms":1234,"session_id":"c-1"}`,
	}
	var got []executor.Entry
	for _, l := range lines {
		got = append(got, n.Line("stdout", []byte(l), now)...)
	}
	checkEntries(t, got)
	expectSequence(t, got, []want{
		{tasks.EntrySystemMessage, "Session started (model gpt-5)"},
		{tasks.EntryToolUse, "read: a.ts"},
		{tasks.EntryToolUse, "read result"},
		{tasks.EntryToolUse, "shell error"},
		{tasks.EntryAssistantMessage, "Findings: none"},
		{tasks.EntrySystemMessage, "Run finished: success (1.23s)"},
	})
	if n.AgentSessionID() != "c-1" || n.Summary() != "Findings: none" {
		t.Errorf("session %q summary %q", n.AgentSessionID(), n.Summary())
	}
}

// Lines that are not events are kept as written: stdout as system
// messages, stderr classified the same way by every normaliser.
func TestRawLines(t *testing.T) {
	for _, format := range allFormats {
		t.Run(format, func(t *testing.T) {
			n := executor.NewNormalizer(format)
			var got []executor.Entry
			feed := func(stream, line string) { got = append(got, n.Line(stream, []byte(line), now)...) }
			feed("stdout", "Welcome to the agent!\r")
			feed("stdout", "")
			feed("stdout", "   ")
			feed("stdout", "\x1b[31mred\x1b[0m text")
			feed("stderr", "disk full")
			feed("stderr", "warning: low disk")
			feed("stderr", "    at main (file:///agent.js:1:2)")
			feed("stdout", `{"type":"assistant","message":`) // cut short
			checkEntries(t, got)
			expectSequence(t, got, []want{
				{tasks.EntrySystemMessage, "Welcome to the agent!"},
				{tasks.EntrySystemMessage, "red text"},
				{tasks.EntryErrorMessage, "disk full"},
				{tasks.EntrySystemMessage, "warning: low disk"},
				{tasks.EntrySystemMessage, `{"type":"assistant","message":`},
			})
			if len(got) == 5 {
				if got[0].Content != "Welcome to the agent!" {
					t.Errorf("CR kept: %q", got[0].Content)
				}
				if got[0].Metadata["stream"] != "stdout" || got[2].Metadata["stream"] != "stderr" {
					t.Errorf("stream metadata: %v, %v", got[0].Metadata, got[2].Metadata)
				}
				if executor.IsWarning(got[2]) || !executor.IsWarning(got[3]) || executor.IsWarning(got[0]) {
					t.Errorf("warnings: %v %v %v", got[0].Metadata, got[2].Metadata, got[3].Metadata)
				}
			}
			if r := n.FailureReason(); r != "disk full" {
				t.Errorf("FailureReason = %q, want the error over the later warning", r)
			}
		})
	}
}

func TestLinesNormalizer(t *testing.T) {
	n := executor.NewNormalizer(executor.FormatLines)
	for _, l := range []string{
		`{"type":"init","timestamp":"2026-01-02T03:04:05Z","session_id":"gem-1","model":"gemini-2.5-pro"}`,
		`{"type":"step_start","sessionID":"ignored-once-one-is-known"}`,
		"building…",
		"done: 3 files",
	} {
		n.Line("stdout", []byte(l), now)
	}
	n.Line("stderr", []byte("a warning after the last line"), now)
	if got := n.Summary(); got != "done: 3 files" {
		t.Errorf("Summary = %q, want the last non-empty stdout line", got)
	}
	if got := n.AgentSessionID(); got != "gem-1" {
		t.Errorf("AgentSessionID = %q", got)
	}
	if f := n.Finish(now); len(f) != 0 {
		t.Errorf("Finish = %v", f)
	}

	n = executor.NewNormalizer(executor.FormatLines)
	n.Line("stdout", []byte(`{"type":"step_start","timestamp":1,"sessionID":"ses_abc","part":{}}`), now)
	if got := n.AgentSessionID(); got != "ses_abc" {
		t.Errorf("OpenCode sessionID = %q", got)
	}
}

func TestTimestamp(t *testing.T) {
	e := executor.NewNormalizer(executor.FormatLines).Line("stdout", []byte("x"), now)
	if len(e) != 1 || e[0].Timestamp != "2026-01-02T02:04:05.000000006Z" {
		t.Fatalf("entries = %+v", e)
	}
}

// However much an agent prints, an entry stays bounded and says it was cut.
func TestTruncation(t *testing.T) {
	big := strings.Repeat("é", 60<<10) // 120 KiB of two-byte runes
	assistant, _ := json.Marshal(map[string]any{"type": "assistant", "message": map[string]any{
		"content": []any{map[string]any{"type": "text", "text": big}}}})
	n := executor.NewNormalizer(executor.FormatClaudeStreamJSON)
	got := n.Line("stdout", assistant, now)
	checkEntries(t, got)
	if len(got) != 1 || got[0].Metadata["truncated"] != true || got[0].Metadata["content_bytes"] != len(big) {
		t.Fatalf("long text: %d entries, metadata %v", len(got), got[0].Metadata)
	}
	if len(n.Summary()) > executor.MaxContentBytes {
		t.Errorf("Summary keeps %d bytes", len(n.Summary()))
	}

	use := `{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Write","input":{"file_path":"big.txt","content":"` + strings.Repeat("x", 20000) + `"}}]}}`
	result, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{
		"content": []any{map[string]any{"type": "tool_result", "tool_use_id": "t1", "content": strings.Repeat("y", 20000), "is_error": true}}}})
	got = append(n.Line("stdout", []byte(use), now), n.Line("stdout", result, now)...)
	checkEntries(t, got)
	if len(got) != 2 {
		t.Fatalf("got %d entries", len(got))
	}
	if got[0].Content != "Write: big.txt" || got[0].Metadata["input_truncated"] != true || len(got[0].Metadata["input"].(string)) > 4096 {
		t.Errorf("big tool input: %q %v", got[0].Content, got[0].Metadata["input_truncated"])
	}
	if got[1].Metadata["status"] != "error" || got[1].Metadata["result_truncated"] != true || len(got[1].Metadata["result"].(string)) > 4096 {
		t.Errorf("big tool result metadata: status %v truncated %v", got[1].Metadata["status"], got[1].Metadata["result_truncated"])
	}
	if !strings.HasPrefix(got[1].Content, "Write error: yyy") || len(got[1].Content) > 300 {
		t.Errorf("tool result content = %.80q (%d bytes)", got[1].Content, len(got[1].Content))
	}

	lines := executor.NewNormalizer(executor.FormatLines).Line("stdout", []byte(big), now)
	checkEntries(t, lines)
	if lines[0].Metadata["truncated"] != true {
		t.Error("long raw line not marked truncated")
	}
}

// Lines that are JSON but not the shape a normaliser expects are logged,
// never a panic or a lost line.
func TestMalformedEvents(t *testing.T) {
	odd := []string{
		`{`, `{}`, `null`, `[]`, `"str"`, `42`, `{"type":5}`, `{"type":""}`,
		`{"type":"assistant"}`, `{"type":"assistant","message":"str"}`, `{"type":"assistant","message":{"content":null}}`,
		`{"type":"assistant","message":{"content":[1,"a",null,{"type":"tool_use","input":"x"},{"type":"text"},{"type":"image"}]}}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","content":[{"type":"image"}]}]}}`,
		`{"type":"result","num_turns":"x"}`, `{"type":"result","is_error":true}`, `{"type":"result","result":{"a":1}}`,
		`{"type":"system"}`, `{"type":"tool_call","subtype":"started","tool_call":{"x":1}}`, `{"type":"tool_call","tool_call":[]}`,
		`{"type":"error"}`, `{"type":"error","error":{"message":"boom"}}`,
		`{"type":"item.completed"}`, `{"type":"item.completed","item":[]}`, `{"type":"item.started","item":{"type":"command_execution"}}`,
		`{"type":"item.completed","item":{"type":"file_change","changes":[{"path":1}]}}`,
		`{"type":"item.completed","item":{"type":"file_change","changes":[{"path":"a","kind":{"type":"update","move_path":null}}]}}`,
		`{"type":"turn.failed"}`, `{"type":"turn.completed","usage":{"input_tokens":1.5}}`,
		`{"type":"init","session_id":5}`, `{"type":"message","role":"assistant","delta":true,"content":7}`,
		`{"type":"message","role":"assistant","delta":true,"content":" "}`, `{"type":"message","role":"x","content":"y"}`,
		`{"type":"tool_result","tool_id":"nope","status":"error","error":"str"}`, `{"type":"tool_use","parameters":[1]}`,
		`{"type":"result","status":"error","error":{}}`, `{"type":"result","stats":{"tool_calls":"x"}}`, `{"type":"result","status":"odd"}`,
		`{"type":"error","severity":"warning"}`, `{"type":"error","error":{"name":"X","data":{"message":5}}}`, `{"type":"error","error":"plain"}`,
		`{"type":"error","error":[1]}`, `{"type":"text","part":null}`, `{"type":"text","part":{"text":7}}`, `{"type":"step_finish","part":{"tokens":null,"cost":"x"}}`,
		`{"type":"tool_use","part":{"state":{"status":"error","error":{"a":1}}}}`, `{"type":"tool_use","part":{"tool":"t","state":{"status":"weird"}}}`,
		`{"type":"system","subtype":"api_retry","attempt":"x"}`, `{"type":"assistant","error":7,"message":{"content":"x"}}`,
		"timestamp=1 level=ERROR message=\"unterminated", "level=WARN msg=", "2026-11-24T02:01:16.433420Z ERROR a::b:",
		"\xff\xfe{\"type\":\"x\"}", "{\"type\":\"assistant\",\"message\":{\"content\":\"\xff\"}}",
	}
	for _, format := range allFormats {
		n := executor.NewNormalizer(format)
		var got []executor.Entry
		for _, l := range odd {
			for _, stream := range []string{"stdout", "stderr"} {
				got = append(got, n.Line(stream, []byte(l), now)...)
			}
		}
		got = append(got, n.Finish(now)...)
		checkEntries(t, got)
		_, _ = n.AgentSessionID(), n.Summary()
		checkReason(t, n.FailureReason())
	}
}

// The caller reads stdout and stderr in separate goroutines and may feed
// both straight in.
func TestConcurrentFeeding(t *testing.T) {
	lines := fixtureLines(t, "claude_stream.jsonl")
	lines = append(lines, fixtureLines(t, "gemini_stream.jsonl")...)
	lines = append(lines, fixtureLines(t, "opencode_stream.jsonl")...)
	for _, format := range allFormats {
		n := executor.NewNormalizer(format)
		var wg sync.WaitGroup
		var mu sync.Mutex
		total := 0
		for _, stream := range []string{"stdout", "stderr"} {
			wg.Go(func() {
				for range 50 {
					for _, l := range lines {
						e := n.Line(stream, l, now)
						mu.Lock()
						total += len(e)
						mu.Unlock()
						_, _ = n.Summary(), n.FailureReason()
					}
				}
			})
		}
		wg.Wait()
		if total == 0 {
			t.Errorf("%s: no entries", format)
		}
	}
}

func TestClaudeEventVariants(t *testing.T) {
	tests := []struct {
		name, line string
		want       []want
	}{
		{"error flagged on a success subtype", `{"type":"result","subtype":"success","is_error":true,"result":"Claude AI usage limit reached|1760000000"}`,
			[]want{{tasks.EntryErrorMessage, "Claude AI usage limit reached|1760000000"}}},
		{"error without text", `{"type":"result","subtype":"error_during_execution","is_error":true,"result":""}`,
			[]want{{tasks.EntryErrorMessage, "error_during_execution"}}},
		{"Qwen Code's error object", `{"type":"result","subtype":"error_during_execution","is_error":true,"error":{"message":"No auth type is selected."}}`,
			[]want{{tasks.EntryErrorMessage, "No auth type is selected."}}},
		{"errors list", `{"type":"result","subtype":"error_during_execution","is_error":true,"errors":["No conversation found with session ID: x"]}`,
			[]want{{tasks.EntryErrorMessage, "No conversation found with session ID: x"}}},
		{"message of no known shape", `{"type":"assistant","message":"str"}`,
			[]want{{tasks.EntrySystemMessage, `{"type":"assistant","message":"str"}`}}},
		{"partial deltas are dropped", `{"type":"stream_event","event":{"type":"content_block_delta"}}`, nil},
		{"other system events", `{"type":"system","subtype":"compact_boundary","session_id":"s"}`,
			[]want{{tasks.EntrySystemMessage, "System: compact_boundary"}}},
		{"Qwen Code's session start", `{"type":"system","subtype":"session_start","uuid":"u","session_id":"q-1","model":"qwen3-coder-plus"}`,
			[]want{{tasks.EntrySystemMessage, "Session started (model qwen3-coder-plus)"}}},
		{"error event", `{"type":"error","error":{"code":"rate_limit","message":"Rate limit exceeded"}}`,
			[]want{{tasks.EntryErrorMessage, "Rate limit exceeded"}}},
		{"unknown event", `{"type":"usage","usage":{"input_tokens":100}}`,
			[]want{{tasks.EntrySystemMessage, "Event: usage"}}},
	}
	for _, tt := range tests {
		n := executor.NewNormalizer(executor.FormatClaudeStreamJSON)
		got := n.Line("stdout", []byte(tt.line), now)
		checkEntries(t, got)
		t.Run(tt.name, func(t *testing.T) { expectSequence(t, got, tt.want) })
	}
}

// A subagent's text is logged as its own, and does not become the run's
// summary.
func TestClaudeSubagentText(t *testing.T) {
	n := executor.NewNormalizer(executor.FormatClaudeStreamJSON)
	n.Line("stdout", []byte(`{"type":"assistant","message":{"content":[{"type":"text","text":"main answer"}]},"parent_tool_use_id":null}`), now)
	got := n.Line("stdout", []byte(`{"type":"assistant","message":{"content":[{"type":"text","text":"subagent notes"}]},"parent_tool_use_id":"toolu_9"}`), now)
	if len(got) != 1 || got[0].Metadata["parent_tool_use_id"] != "toolu_9" {
		t.Fatalf("subagent entry = %+v", got)
	}
	if s := n.Summary(); s != "main answer" {
		t.Errorf("Summary = %q", s)
	}
}
