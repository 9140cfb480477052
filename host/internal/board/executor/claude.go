package executor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/plugboard/plugboard/abi/tasks"
)

// claudeNormalizer reads Claude Code's `--output-format stream-json
// --verbose` events. Amp, Qwen Code and Cursor Agent emit the same
// envelope (system/assistant/user/result), so it serves them too; Cursor's
// extra tool_call events are read as tool calls.
//
// A failed run says why in more than one place, and each CLI picks its
// own: Claude Code sends an assistant message flagged as an API error
// ("error":"authentication_failed", "is_api_error_message":true) and then a
// result with is_error on a "success" subtype; a resume of an unknown
// session gets a result whose "errors" list says so; Qwen Code puts the
// message in the result's "error":{"message":…}. All of them become error
// messages carrying the CLI's text, which is what FailureReason reports.
type claudeNormalizer struct {
	mu        sync.Mutex
	sessionID string
	result    string // the result text of a successful run
	lastText  string // the last assistant text, for a run that ends without one
	tools     pendingTools
	fail      failureNotes
}

type claudeEvent struct {
	Type            string          `json:"type"`
	Subtype         string          `json:"subtype"`
	SessionID       string          `json:"session_id"`
	Model           string          `json:"model"`
	Cwd             string          `json:"cwd"`
	PermissionMode  string          `json:"permissionMode"`
	Version         string          `json:"claude_code_version"`
	Tools           json.RawMessage `json:"tools"`
	Message         json.RawMessage `json:"message"` // an object; a string on error events
	ParentToolUseID *string         `json:"parent_tool_use_id"`
	// An assistant message that is Claude Code's report of a failed API
	// call ("Not logged in · Please run /login") says so in these; its
	// "error" is a code such as "authentication_failed".
	IsAPIErrorMessage bool `json:"is_api_error_message"`

	// system/api_retry
	Attempt      *float64 `json:"attempt"`
	MaxRetries   *float64 `json:"max_retries"`
	RetryDelayMS *float64 `json:"retry_delay_ms"`
	ErrorStatus  *float64 `json:"error_status"`

	// result
	Result       json.RawMessage `json:"result"`
	IsError      bool            `json:"is_error"`
	NumTurns     *float64        `json:"num_turns"`
	TotalCostUSD *float64        `json:"total_cost_usd"`
	DurationMS   *float64        `json:"duration_ms"`
	Errors       json.RawMessage `json:"errors"`
	Error        json.RawMessage `json:"error"`

	// Cursor Agent's tool_call events
	CallID   string          `json:"call_id"`
	ToolCall json.RawMessage `json:"tool_call"`
}

type claudeMessage struct {
	Content json.RawMessage `json:"content"`
}

type claudeBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

func (n *claudeNormalizer) Line(stream string, line []byte, now time.Time) []Entry {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := n.line(stream, line, now)
	n.fail.note(out)
	return out
}

func (n *claudeNormalizer) line(stream string, line []byte, now time.Time) []Entry {
	var ev claudeEvent
	text, out, ok := decodeEvent(stream, line, now, &ev)
	if !ok {
		return out
	}
	raw := bytes.TrimSpace(line)
	if n.sessionID == "" && ev.SessionID != "" {
		n.sessionID = ev.SessionID
	}
	switch ev.Type {
	case "system":
		return []Entry{n.system(ev, raw, now)}
	case "assistant", "user":
		if out, ok := n.message(ev, now); ok {
			return out
		}
		return rawLineEntries(stream, text, now)
	case "result":
		return []Entry{n.resultEntry(ev, now)}
	case "tool_call":
		if out, ok := n.cursorToolCall(ev, now); ok {
			return out
		}
		return rawLineEntries(stream, text, now)
	case "error":
		msg := errorText(ev.Error)
		if msg == "" {
			msg = textOf(ev.Message)
		}
		if msg == "" {
			return []Entry{genericError(now, "error", nil)}
		}
		return []Entry{newEntry(now, tasks.EntryErrorMessage, msg, nil)}
	case "stream_event":
		// Partial-message deltas (--include-partial-messages) repeat what
		// the complete assistant message says; the profiles never ask for
		// them, and logging each token would drown the transcript.
		return nil
	default:
		meta := map[string]any{"event_type": ev.Type}
		rawDetail(meta, "event", raw)
		return []Entry{newEntry(now, tasks.EntrySystemMessage, "Event: "+ev.Type, meta)}
	}
}

func (n *claudeNormalizer) system(ev claudeEvent, raw []byte, now time.Time) Entry {
	meta := map[string]any{"subtype": ev.Subtype}
	setIf(meta, "session_id", ev.SessionID)
	setIf(meta, "model", ev.Model)
	setIf(meta, "cwd", ev.Cwd)
	setIf(meta, "permission_mode", ev.PermissionMode)
	setIf(meta, "version", ev.Version)
	switch ev.Subtype {
	case "init", "session_start": // session_start is Qwen Code's name for it
		var tools []json.RawMessage
		if json.Unmarshal(ev.Tools, &tools) == nil {
			meta["tools_count"] = len(tools)
		}
		content := "Session started"
		if ev.Model != "" {
			content += " (model " + ev.Model + ")"
		}
		return newEntry(now, tasks.EntrySystemMessage, content, meta)
	case "api_retry":
		return n.apiRetry(ev, meta, now)
	default:
		rawDetail(meta, "event", raw)
		sub := ev.Subtype
		if sub == "" {
			sub = "event"
		}
		return newEntry(now, tasks.EntrySystemMessage, "System: "+sub, meta)
	}
}

// message reads an assistant or user message: text, thinking, tool calls
// and tool results, one entry per content block. ok is false for a message
// of no known shape, which the caller logs as printed.
func (n *claudeNormalizer) message(ev claudeEvent, now time.Time) (_ []Entry, ok bool) {
	var msg claudeMessage
	if json.Unmarshal(ev.Message, &msg) != nil {
		return nil, false
	}
	textType := tasks.EntryAssistantMessage
	if ev.Type == "user" {
		textType = tasks.EntryUserMessage
	}
	apiError := ""
	if ev.Type == "assistant" {
		_ = json.Unmarshal(ev.Error, &apiError) // a code: "authentication_failed", "rate_limit", …
		if apiError = strings.TrimSpace(apiError); apiError == "" && ev.IsAPIErrorMessage {
			apiError = "api_error"
		}
	}
	if apiError != "" {
		// The CLI's own words about a failed call, dressed as the
		// model's: an error, and never the run's summary.
		textType = tasks.EntryErrorMessage
	}
	withParent := func(meta map[string]any) map[string]any {
		if apiError != "" {
			if meta == nil {
				meta = map[string]any{}
			}
			meta["error"] = oneLine(apiError)
		}
		// A subagent's events carry the tool call that started it; without
		// it they read as the main agent's.
		if ev.ParentToolUseID != nil && *ev.ParentToolUseID != "" {
			if meta == nil {
				meta = map[string]any{}
			}
			meta["parent_tool_use_id"] = *ev.ParentToolUseID
		}
		return meta
	}

	var s string
	if json.Unmarshal(msg.Content, &s) == nil {
		if strings.TrimSpace(s) == "" {
			return nil, true
		}
		n.noteText(textType, s, ev)
		return []Entry{newEntry(now, textType, s, withParent(nil))}, true
	}
	var blocks []json.RawMessage
	if json.Unmarshal(msg.Content, &blocks) != nil {
		return nil, false
	}
	var out []Entry
	for _, rb := range blocks {
		var b claudeBlock
		if json.Unmarshal(rb, &b) != nil {
			continue
		}
		switch b.Type {
		case "text":
			if strings.TrimSpace(b.Text) == "" {
				continue
			}
			n.noteText(textType, b.Text, ev)
			out = append(out, newEntry(now, textType, b.Text, withParent(nil)))
		case "thinking":
			if strings.TrimSpace(b.Thinking) == "" {
				continue
			}
			out = append(out, newEntry(now, tasks.EntryThinking, b.Thinking, withParent(nil)))
		case "redacted_thinking":
			out = append(out, newEntry(now, tasks.EntryThinking, "[redacted thinking]", withParent(map[string]any{"redacted": true})))
		case "tool_use", "server_tool_use", "mcp_tool_use":
			n.tools.add(b.ID, b.Name)
			meta := map[string]any{"tool_name": b.Name, "tool_use_id": b.ID, "status": "started"}
			rawDetail(meta, "input", b.Input)
			out = append(out, newEntry(now, tasks.EntryToolUse, toolSummary(b.Name, b.Input), withParent(meta)))
		case "tool_result", "mcp_tool_result", "web_search_tool_result":
			out = append(out, n.toolResult(b, now, withParent))
		default:
			meta := map[string]any{"block_type": b.Type}
			rawDetail(meta, "block", rb)
			out = append(out, newEntry(now, tasks.EntrySystemMessage, "Unsupported content block: "+b.Type, withParent(meta)))
		}
	}
	return out, true
}

func (n *claudeNormalizer) noteText(typ, text string, ev claudeEvent) {
	// A subagent's last words are not the run's; only the main agent's
	// text can become the summary.
	if typ == tasks.EntryAssistantMessage && (ev.ParentToolUseID == nil || *ev.ParentToolUseID == "") {
		n.lastText = cutUTF8(text, MaxContentBytes)
	}
}

func (n *claudeNormalizer) toolResult(b claudeBlock, now time.Time, withParent func(map[string]any) map[string]any) Entry {
	name, known := n.tools.take(b.ToolUseID)
	meta := map[string]any{"tool_use_id": b.ToolUseID, "status": "success"}
	if known {
		meta["tool_name"] = name
	} else {
		name = "tool"
	}
	verb := "result"
	if b.IsError {
		meta["status"] = "error"
		verb = "error"
	}
	out := textOf(b.Content)
	detail(meta, "result", out)
	content := name + " " + verb
	if first := oneLine(out); first != "" {
		content += ": " + first
	}
	return newEntry(now, tasks.EntryToolUse, content, withParent(meta))
}

func (n *claudeNormalizer) resultEntry(ev claudeEvent, now time.Time) Entry {
	meta := map[string]any{"subtype": ev.Subtype, "is_error": ev.IsError}
	if ev.NumTurns != nil {
		meta["num_turns"] = int(*ev.NumTurns)
	}
	if ev.TotalCostUSD != nil {
		meta["total_cost_usd"] = *ev.TotalCostUSD
	}
	if ev.DurationMS != nil {
		meta["duration_ms"] = *ev.DurationMS
	}
	text := strings.TrimSpace(textOf(ev.Result))
	if ev.IsError || (ev.Subtype != "" && ev.Subtype != "success") {
		// The message is the result text (Claude Code's "Not logged in ·
		// Please run /login"), else the errors list ("No conversation
		// found with session ID: …"), else Qwen Code's error object; the
		// subtype stays in the metadata.
		msg := text
		var errs []string
		if json.Unmarshal(ev.Errors, &errs) == nil && len(errs) > 0 {
			meta["errors"] = errs
			if msg == "" {
				msg = strings.TrimSpace(strings.Join(errs, "; "))
			}
		}
		if e := strings.TrimSpace(errorText(ev.Error)); e != "" {
			detail(meta, "error", e)
			if msg == "" {
				msg = e
			}
		}
		if msg != "" {
			return newEntry(now, tasks.EntryErrorMessage, msg, meta)
		}
		content := ev.Subtype
		if content == "" || content == "success" { // is_error on a "success" says nothing by its subtype
			content = "run failed"
		}
		return genericError(now, content, meta)
	}
	if text != "" {
		n.result = cutUTF8(text, MaxContentBytes)
	}
	var parts []string
	if ev.NumTurns != nil {
		parts = append(parts, plural(int(*ev.NumTurns), "turn"))
	}
	if ev.DurationMS != nil {
		parts = append(parts, fmt.Sprintf("%.2fs", *ev.DurationMS/1000))
	}
	if ev.TotalCostUSD != nil {
		parts = append(parts, fmt.Sprintf("$%.4f", *ev.TotalCostUSD))
	}
	content := "Run finished: success"
	if len(parts) > 0 {
		content += " (" + strings.Join(parts, ", ") + ")"
	}
	return newEntry(now, tasks.EntrySystemMessage, content, meta)
}

// cursorToolCall reads Cursor Agent's tool_call events, whose payload is one
// key naming the tool ("shellToolCall", "readToolCall", or "function" with
// a name) holding its args and, once completed, its result. ok is false
// for an event of no known shape, which the caller logs as printed.
func (n *claudeNormalizer) cursorToolCall(ev claudeEvent, now time.Time) (_ []Entry, ok bool) {
	var call map[string]json.RawMessage
	if json.Unmarshal(ev.ToolCall, &call) != nil || len(call) == 0 {
		return nil, false
	}
	key := sortedKeys(call)[0]
	var body struct {
		Args      json.RawMessage `json:"args"`
		Result    json.RawMessage `json:"result"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	_ = json.Unmarshal(call[key], &body) // a body of another shape still names the tool
	name := strings.TrimSuffix(key, "ToolCall")
	args := body.Args
	if key == "function" && body.Name != "" {
		name, args = body.Name, body.Arguments
		var s string // function arguments often come as a JSON string
		if json.Unmarshal(args, &s) == nil {
			args = json.RawMessage(s)
		}
	}
	switch ev.Subtype {
	case "started":
		n.tools.add(ev.CallID, name)
		meta := map[string]any{"tool_name": name, "tool_use_id": ev.CallID, "status": "started"}
		rawDetail(meta, "input", args)
		return []Entry{newEntry(now, tasks.EntryToolUse, toolSummary(name, args), meta)}, true
	case "completed":
		n.tools.take(ev.CallID)
		meta := map[string]any{"tool_name": name, "tool_use_id": ev.CallID, "status": "success"}
		verb := "result"
		var outcome map[string]json.RawMessage
		if json.Unmarshal(body.Result, &outcome) == nil {
			for _, k := range []string{"error", "failure", "rejected"} {
				if _, bad := outcome[k]; bad {
					meta["status"], verb = "error", "error"
				}
			}
		}
		rawDetail(meta, "result", body.Result)
		return []Entry{newEntry(now, tasks.EntryToolUse, name+" "+verb, meta)}, true
	default:
		return nil, false
	}
}

// apiRetry reads Claude Code's system/api_retry event, which says a failed
// API call will be tried again: a warning.
func (n *claudeNormalizer) apiRetry(ev claudeEvent, meta map[string]any, now time.Time) Entry {
	content := "API request failed; retrying"
	if ev.Attempt != nil {
		content += " (attempt " + strconv.Itoa(int(*ev.Attempt))
		if ev.MaxRetries != nil {
			content += " of " + strconv.Itoa(int(*ev.MaxRetries))
		}
		content += ")"
		meta["attempt"] = int(*ev.Attempt)
	}
	if ev.RetryDelayMS != nil {
		content += fmt.Sprintf(" in %.1fs", *ev.RetryDelayMS/1000)
		meta["retry_delay_ms"] = *ev.RetryDelayMS
	}
	var why []string
	if e := errorText(ev.Error); e != "" {
		why = append(why, oneLine(e))
		meta["error"] = oneLine(e)
	}
	if ev.ErrorStatus != nil {
		why = append(why, "HTTP "+strconv.Itoa(int(*ev.ErrorStatus)))
		meta["error_status"] = int(*ev.ErrorStatus)
	}
	if len(why) > 0 {
		content += ": " + strings.Join(why, ", ")
	}
	return warningEntry(now, content, meta)
}

func (n *claudeNormalizer) Finish(time.Time) []Entry { return nil }

func (n *claudeNormalizer) AgentSessionID() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.sessionID
}

func (n *claudeNormalizer) Summary() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.result != "" {
		return n.result
	}
	return n.lastText
}

func (n *claudeNormalizer) FailureReason() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.fail.reason()
}

// errorText reads an error that is either a string or {"message": ...}.
func errorText(raw json.RawMessage) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &e) == nil && e.Message != "" {
		return e.Message
	}
	return string(raw)
}

func setIf(meta map[string]any, key, value string) {
	if value != "" {
		meta[key] = value
	}
}

func (e *claudeEvent) kind() string { return e.Type }
