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

// codexNormalizer reads the JSONL events of `codex exec --json`, whose
// shapes are defined in openai/codex codex-rs/exec/src/exec_events.rs.
// Items are logged when they complete, once each; an item that started but
// never completed (the process died) is logged by Finish.
//
// Codex reports transient trouble through the same "error" event and
// "error" item as real failures: "Reconnecting... 2/5 (…)", "Reconnecting...
// waiting for network (…)", "Falling back from WebSockets to HTTPS
// transport…". Those are warnings (see isWarningText); turn.failed and any
// other error stay errors. Without a network it reconnects for ever, so
// such a run ends by the board's timeout; its FailureReason is then the
// last error Codex logged on stderr ("failed to connect to Responses
// WebSocket …") or, when it logged none, the last reconnect notice.
type codexNormalizer struct {
	mu          sync.Mutex
	threadID    string
	lastMessage string
	pending     []codexItem // started, not yet completed, oldest first
	fail        failureNotes
}

type codexEvent struct {
	Type     string          `json:"type"`
	ThreadID string          `json:"thread_id"`
	Item     json.RawMessage `json:"item"`
	Usage    *codexUsage     `json:"usage"`
	Error    json.RawMessage `json:"error"`
	Message  json.RawMessage `json:"message"`
}

type codexUsage struct {
	InputTokens       int64 `json:"input_tokens"`
	CachedInputTokens int64 `json:"cached_input_tokens"`
	OutputTokens      int64 `json:"output_tokens"`
}

type codexItem struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	ItemType string `json:"item_type"` // the field's name before exec --json settled on "type"
	Text     string `json:"text"`
	Status   string `json:"status"`
	Message  string `json:"message"`

	// command_execution
	Command          string `json:"command"`
	AggregatedOutput string `json:"aggregated_output"`
	ExitCode         *int   `json:"exit_code"`

	// file_change
	Changes []struct {
		Path string          `json:"path"`
		Kind json.RawMessage `json:"kind"`
	} `json:"changes"`

	// mcp_tool_call
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Result    json.RawMessage `json:"result"`
	Error     json.RawMessage `json:"error"`

	// web_search
	Query string `json:"query"`

	// todo_list
	Items []struct {
		Text      string `json:"text"`
		Completed bool   `json:"completed"`
	} `json:"items"`
}

func (it codexItem) kind() string {
	if it.Type != "" {
		return it.Type
	}
	return it.ItemType
}

func (n *codexNormalizer) Line(stream string, line []byte, now time.Time) []Entry {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := n.line(stream, line, now)
	n.fail.note(out)
	return out
}

func (n *codexNormalizer) line(stream string, line []byte, now time.Time) []Entry {
	var ev codexEvent
	text, out, ok := decodeEvent(stream, line, now, &ev)
	if !ok {
		return out
	}
	raw := bytes.TrimSpace(line)
	switch ev.Type {
	case "thread.started", "thread.resumed":
		if n.threadID == "" {
			n.threadID = ev.ThreadID
		}
		return []Entry{newEntry(now, tasks.EntrySystemMessage, "Thread started", map[string]any{"thread_id": ev.ThreadID})}
	case "turn.started", "item.updated", "item.plan.delta":
		// Progress of something a later event reports whole.
		return nil
	case "turn.completed":
		meta := map[string]any{}
		content := "Turn completed"
		if u := ev.Usage; u != nil {
			meta["input_tokens"], meta["cached_input_tokens"], meta["output_tokens"] = u.InputTokens, u.CachedInputTokens, u.OutputTokens
			content += fmt.Sprintf(" (%d input, %d cached, %d output tokens)", u.InputTokens, u.CachedInputTokens, u.OutputTokens)
		}
		return []Entry{newEntry(now, tasks.EntrySystemMessage, content, meta)}
	case "turn.failed":
		meta := map[string]any{"event_type": ev.Type}
		if msg := errorText(ev.Error); msg != "" {
			return []Entry{newEntry(now, tasks.EntryErrorMessage, msg, meta)}
		}
		return []Entry{genericError(now, "turn failed", meta)}
	case "error":
		meta := map[string]any{"event_type": ev.Type}
		msg := errorText(ev.Message)
		if msg == "" {
			msg = errorText(ev.Error)
		}
		switch {
		case msg == "":
			return []Entry{genericError(now, "error", meta)}
		case isWarningText(msg): // "Reconnecting... 2/5 (…)"
			return []Entry{warningEntry(now, msg, meta)}
		default:
			return []Entry{newEntry(now, tasks.EntryErrorMessage, msg, meta)}
		}
	case "item.started", "item.completed":
		var it codexItem
		if json.Unmarshal(ev.Item, &it) != nil {
			return rawLineEntries(stream, text, now)
		}
		if ev.Type == "item.started" {
			n.start(it)
			return nil
		}
		n.done(it.ID)
		return n.item(it, raw, now)
	default:
		meta := map[string]any{"event_type": ev.Type}
		rawDetail(meta, "event", raw)
		return []Entry{newEntry(now, tasks.EntrySystemMessage, "Event: "+ev.Type, meta)}
	}
}

// start remembers a tool-like item so Finish can report it if it never
// completes; text items arrive complete and need no remembering.
func (n *codexNormalizer) start(it codexItem) {
	switch it.kind() {
	case "command_execution", "mcp_tool_call", "file_change", "web_search", "collab_tool_call":
	default:
		return
	}
	n.done(it.ID)
	n.pending = append(n.pending, it)
	if len(n.pending) > maxPending {
		n.pending = n.pending[len(n.pending)-maxPending:]
	}
}

func (n *codexNormalizer) done(id string) {
	for i, p := range n.pending {
		if p.ID == id {
			n.pending = append(n.pending[:i], n.pending[i+1:]...)
			return
		}
	}
}

func (n *codexNormalizer) item(it codexItem, raw []byte, now time.Time) []Entry {
	meta := map[string]any{"item_id": it.ID, "item_type": it.kind()}
	switch it.kind() {
	case "agent_message", "plan":
		if strings.TrimSpace(it.Text) == "" {
			return nil
		}
		n.lastMessage = cutUTF8(it.Text, MaxContentBytes)
		return []Entry{newEntry(now, tasks.EntryAssistantMessage, it.Text, meta)}
	case "reasoning":
		if strings.TrimSpace(it.Text) == "" {
			return nil
		}
		return []Entry{newEntry(now, tasks.EntryThinking, it.Text, meta)}
	case "error":
		msg := it.Message
		if msg == "" {
			msg = it.Text
		}
		switch {
		case strings.TrimSpace(msg) == "":
			return []Entry{genericError(now, "error", meta)}
		case isWarningText(msg): // "Falling back from WebSockets to HTTPS transport. …"
			return []Entry{warningEntry(now, msg, meta)}
		default:
			return []Entry{newEntry(now, tasks.EntryErrorMessage, msg, meta)}
		}
	case "command_execution", "file_change", "mcp_tool_call", "web_search", "todo_list", "collab_tool_call":
		return []Entry{n.toolEntry(it, raw, meta, now)}
	default:
		rawDetail(meta, "event", raw)
		return []Entry{newEntry(now, tasks.EntrySystemMessage, "Item: "+it.kind(), meta)}
	}
}

// toolEntry logs a tool-like item: what it did in one line, its input and
// outcome in metadata.
func (n *codexNormalizer) toolEntry(it codexItem, raw []byte, meta map[string]any, now time.Time) Entry {
	meta["tool_name"] = it.kind()
	meta["tool_use_id"] = it.ID
	meta["status"] = codexStatus(it.Status)
	var content string
	switch it.kind() {
	case "command_execution":
		meta["command"] = it.Command
		detail(meta, "result", it.AggregatedOutput)
		content = "Shell: " + oneLine(it.Command)
		if it.ExitCode != nil {
			meta["exit_code"] = *it.ExitCode
			if *it.ExitCode != 0 {
				content += fmt.Sprintf(" (exit %d)", *it.ExitCode)
			}
		}
	case "file_change":
		changes := make([]map[string]string, 0, len(it.Changes))
		parts := make([]string, 0, len(it.Changes))
		for _, c := range it.Changes {
			k := changeKind(c.Kind)
			changes = append(changes, map[string]string{"path": c.Path, "kind": k})
			parts = append(parts, strings.TrimSpace(k+" "+c.Path))
		}
		meta["changes"] = changes
		content = "Edit: " + oneLine(strings.Join(parts, ", "))
	case "mcp_tool_call":
		meta["server"], meta["tool"] = it.Server, it.Tool
		rawDetail(meta, "input", it.Arguments)
		rawDetail(meta, "result", it.Result)
		if msg := errorText(it.Error); msg != "" {
			meta["error"] = oneLine(msg)
		}
		content = toolSummary("MCP "+it.Server+"."+it.Tool, it.Arguments)
	case "web_search":
		meta["query"] = it.Query
		content = "WebSearch: " + oneLine(it.Query)
	case "todo_list":
		done := 0
		for _, t := range it.Items {
			if t.Completed {
				done++
			}
		}
		rawDetail(meta, "items", itemsOf(raw))
		content = fmt.Sprintf("Todo: %d/%d done", done, len(it.Items))
	default:
		rawDetail(meta, "event", raw)
		content = "Tool: " + it.kind()
	}
	return newEntry(now, tasks.EntryToolUse, content, meta)
}

// itemsOf digs the todo items out of an item.completed line.
func itemsOf(raw []byte) json.RawMessage {
	var ev struct {
		Item struct {
			Items json.RawMessage `json:"items"`
		} `json:"item"`
	}
	_ = json.Unmarshal(raw, &ev)
	return ev.Item.Items
}

// changeKind reads a file change's kind, a string ("update") or, in some
// versions, an object naming its type.
func changeKind(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(raw, &o)
	return o.Type
}

// codexStatus maps an item status onto the statuses the other normalisers
// use, so a reader need not know which agent produced an entry.
func codexStatus(s string) string {
	switch s {
	case "completed", "":
		return "success"
	case "failed":
		return "error"
	case "in_progress":
		return "started"
	default:
		return s // "declined", or a status newer than this code
	}
}

func (n *codexNormalizer) Finish(now time.Time) []Entry {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []Entry
	for _, it := range n.pending {
		e := n.toolEntry(it, nil, map[string]any{"item_id": it.ID, "item_type": it.kind()}, now)
		e.Metadata["status"] = "incomplete"
		e.Content += " (no result: the run ended first)"
		out = append(out, e)
	}
	n.pending = nil
	n.fail.note(out)
	return out
}

func (n *codexNormalizer) AgentSessionID() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.threadID
}

func (n *codexNormalizer) Summary() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.lastMessage
}

func (n *codexNormalizer) FailureReason() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.fail.reason()
}

func (e *codexEvent) kind() string { return e.Type }
