package executor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/plugboard/plugboard/abi/tasks"
)

// geminiNormalizer reads Gemini CLI's `--output-format stream-json` events,
// whose shapes are in google-gemini/gemini-cli packages/core/src/output
// (types.ts, stream-json-formatter.ts) and are emitted by
// packages/cli/src/nonInteractiveCli.ts:
//
//	{"type":"init","session_id":…,"model":…}
//	{"type":"message","role":"user"|"assistant","content":…,"delta":true}
//	{"type":"tool_use","tool_name":…,"tool_id":…,"parameters":{…}}
//	{"type":"tool_result","tool_id":…,"status":"success"|"error","output":…,"error":{"type":…,"message":…}}
//	{"type":"error","severity":"warning"|"error","message":…}
//	{"type":"result","status":"success"|"error","error":{"type":…,"message":…},"stats":{…}}
//
// The CLI streams the model's reply as many assistant messages with
// "delta":true; consecutive deltas are joined into one entry, logged when
// the next stdout line (or Finish) shows the reply is over. Its stderr
// carries the notices and retries every normaliser classifies (see
// stderrEntries): "Attempt 2 failed. Retrying with backoff..." is a
// warning, its stack frames make no entry.
type geminiNormalizer struct {
	mu        sync.Mutex
	sessionID string
	reply     strings.Builder // assistant deltas not yet logged
	last      string          // the last assistant text logged
	tools     pendingTools
	fail      failureNotes
}

type geminiEvent struct {
	Type       string          `json:"type"`
	SessionID  string          `json:"session_id"`
	Model      string          `json:"model"`
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Delta      bool            `json:"delta"`
	ToolName   string          `json:"tool_name"`
	ToolID     string          `json:"tool_id"`
	Parameters json.RawMessage `json:"parameters"`
	Status     string          `json:"status"`
	Output     json.RawMessage `json:"output"`
	Error      json.RawMessage `json:"error"`
	Severity   string          `json:"severity"`
	Message    json.RawMessage `json:"message"`
	Stats      json.RawMessage `json:"stats"`
}

type geminiStats struct {
	TotalTokens  *float64 `json:"total_tokens"`
	InputTokens  *float64 `json:"input_tokens"`
	OutputTokens *float64 `json:"output_tokens"`
	Cached       *float64 `json:"cached"`
	DurationMS   *float64 `json:"duration_ms"`
	ToolCalls    *float64 `json:"tool_calls"`
}

func (n *geminiNormalizer) Line(stream string, line []byte, now time.Time) []Entry {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := n.line(stream, line, now)
	n.fail.note(out)
	return out
}

func (n *geminiNormalizer) line(stream string, line []byte, now time.Time) []Entry {
	var ev geminiEvent
	if _, kept, ok := decodeEvent(stream, line, now, &ev); !ok {
		if stream != tasks.StreamStderr && kept != nil {
			// A line that is not an event ends a streamed reply.
			return append(n.flush(now), kept...)
		}
		return kept
	}
	raw := bytes.TrimSpace(line)
	if ev.Type == "message" && ev.Role == "assistant" && ev.Delta {
		return n.delta(textOf(ev.Content), now)
	}
	out := n.flush(now)
	switch ev.Type {
	case "init":
		if n.sessionID == "" {
			n.sessionID = ev.SessionID
		}
		meta := map[string]any{}
		setIf(meta, "session_id", ev.SessionID)
		setIf(meta, "model", ev.Model)
		content := "Session started"
		if ev.Model != "" {
			content += " (model " + ev.Model + ")"
		}
		return append(out, newEntry(now, tasks.EntrySystemMessage, content, meta))
	case "message":
		msg := textOf(ev.Content)
		if strings.TrimSpace(msg) == "" {
			return out
		}
		switch ev.Role {
		case "user":
			return append(out, newEntry(now, tasks.EntryUserMessage, msg, nil))
		case "assistant":
			n.last = cutUTF8(msg, MaxContentBytes)
			return append(out, newEntry(now, tasks.EntryAssistantMessage, msg, nil))
		default:
			return append(out, newEntry(now, tasks.EntrySystemMessage, msg, map[string]any{"role": ev.Role}))
		}
	case "tool_use":
		n.tools.add(ev.ToolID, ev.ToolName)
		meta := map[string]any{"tool_name": ev.ToolName, "tool_use_id": ev.ToolID, "status": "started"}
		rawDetail(meta, "input", ev.Parameters)
		return append(out, newEntry(now, tasks.EntryToolUse, toolSummary(ev.ToolName, ev.Parameters), meta))
	case "tool_result":
		return append(out, n.toolResult(ev, now))
	case "error":
		meta := map[string]any{"event_type": ev.Type}
		setIf(meta, "severity", ev.Severity)
		msg := strings.TrimSpace(errorText(ev.Message))
		switch {
		case ev.Severity == "warning" && msg != "":
			return append(out, warningEntry(now, msg, meta))
		case ev.Severity == "warning":
			return append(out, warningEntry(now, "warning", meta))
		case msg == "":
			return append(out, genericError(now, "error", meta))
		default:
			return append(out, newEntry(now, tasks.EntryErrorMessage, msg, meta))
		}
	case "result":
		return append(out, n.result(ev, now))
	default:
		meta := map[string]any{"event_type": ev.Type}
		rawDetail(meta, "event", raw)
		return append(out, newEntry(now, tasks.EntrySystemMessage, "Event: "+ev.Type, meta))
	}
}

// delta adds a piece of the streamed reply. A reply that outgrows an
// entry is logged in entry-sized parts, so nothing is dropped and nothing
// unbounded is kept.
func (n *geminiNormalizer) delta(s string, now time.Time) []Entry {
	if s == "" {
		return nil
	}
	var out []Entry
	if n.reply.Len()+len(s) > MaxContentBytes {
		out = n.flush(now)
	}
	if len(s) >= MaxContentBytes {
		n.last = cutUTF8(s, MaxContentBytes)
		return append(out, newEntry(now, tasks.EntryAssistantMessage, s, nil))
	}
	n.reply.WriteString(s)
	return out
}

// flush logs the reply gathered from deltas, if any.
func (n *geminiNormalizer) flush(now time.Time) []Entry {
	if n.reply.Len() == 0 {
		return nil
	}
	text := n.reply.String()
	n.reply.Reset()
	if strings.TrimSpace(text) == "" {
		return nil
	}
	n.last = text
	return []Entry{newEntry(now, tasks.EntryAssistantMessage, text, nil)}
}

func (n *geminiNormalizer) toolResult(ev geminiEvent, now time.Time) Entry {
	name, known := n.tools.take(ev.ToolID)
	meta := map[string]any{"tool_use_id": ev.ToolID, "status": "success"}
	if known {
		meta["tool_name"] = name
	} else {
		name = "tool"
	}
	out := textOf(ev.Output)
	detail(meta, "result", out)
	verb, first := "result", oneLine(out)
	if ev.Status == "error" {
		meta["status"], verb = "error", "error"
		if msg := strings.TrimSpace(errorText(ev.Error)); msg != "" {
			detail(meta, "error", msg)
			first = oneLine(msg)
		}
		var e struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(ev.Error, &e) == nil && e.Type != "" {
			meta["error_type"] = e.Type
		}
	}
	content := name + " " + verb
	if first != "" {
		content += ": " + first
	}
	return newEntry(now, tasks.EntryToolUse, content, meta)
}

func (n *geminiNormalizer) result(ev geminiEvent, now time.Time) Entry {
	meta := map[string]any{"status": ev.Status}
	var st geminiStats
	_ = json.Unmarshal(ev.Stats, &st)
	var parts []string
	if st.TotalTokens != nil {
		meta["total_tokens"] = int64(*st.TotalTokens)
		parts = append(parts, fmt.Sprintf("%d tokens", int64(*st.TotalTokens)))
	}
	if st.InputTokens != nil {
		meta["input_tokens"] = int64(*st.InputTokens)
	}
	if st.OutputTokens != nil {
		meta["output_tokens"] = int64(*st.OutputTokens)
	}
	if st.Cached != nil {
		meta["cached_tokens"] = int64(*st.Cached)
	}
	if st.DurationMS != nil {
		meta["duration_ms"] = *st.DurationMS
		parts = append(parts, fmt.Sprintf("%.2fs", *st.DurationMS/1000))
	}
	if st.ToolCalls != nil {
		meta["tool_calls"] = int64(*st.ToolCalls)
		parts = append(parts, plural(int(*st.ToolCalls), "tool call"))
	}
	switch ev.Status {
	case "success":
		content := "Run finished: success"
		if len(parts) > 0 {
			content += " (" + strings.Join(parts, ", ") + ")"
		}
		return newEntry(now, tasks.EntrySystemMessage, content, meta)
	case "error":
		var e struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(ev.Error, &e) == nil && e.Type != "" {
			meta["error_type"] = e.Type
		}
		if msg := strings.TrimSpace(errorText(ev.Error)); msg != "" {
			return newEntry(now, tasks.EntryErrorMessage, msg, meta)
		}
		// The reason, if any, was an error event just before.
		return genericError(now, "Run failed", meta)
	default:
		status := ev.Status
		if status == "" {
			status = "unknown"
		}
		return newEntry(now, tasks.EntrySystemMessage, "Run finished: "+status, meta)
	}
}

func (n *geminiNormalizer) Finish(now time.Time) []Entry {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := n.flush(now)
	n.fail.note(out)
	return out
}

func (n *geminiNormalizer) AgentSessionID() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.sessionID
}

// Summary is the last reply, including one still being streamed.
func (n *geminiNormalizer) Summary() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.reply.Len() > 0 && strings.TrimSpace(n.reply.String()) != "" {
		return n.reply.String()
	}
	return n.last
}

func (n *geminiNormalizer) FailureReason() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.fail.reason()
}

func (e *geminiEvent) kind() string { return e.Type }
