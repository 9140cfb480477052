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

// opencodeNormalizer reads the events of `opencode run --format json`
// (sst/opencode packages/opencode/src/cli/cmd/run.ts). Each line is
// {"type":…,"timestamp":…,"sessionID":…} with either a "part" (a message
// part as OpenCode stores it, packages/opencode/src/session/message-v2.ts)
// or an "error":
//
//	step_start   part step-start                    (no entry)
//	text         part text, once complete           assistant message
//	reasoning    part reasoning, once complete      thinking
//	tool_use     part tool, once completed or failed: its input, output or error
//	step_finish  part step-finish: reason, tokens, cost
//	error        {"name":"APIError","data":{"message":…,"isRetryable":…}}
//
// A tool is reported once, when it is done, so there is nothing to pair.
// With --print-logs the CLI's own log goes to stderr as logfmt, read by
// level like every normaliser's stderr (see stderrEntries); that is where a
// run that cannot reach its provider shows it, minutes before the final
// error event.
type opencodeNormalizer struct {
	mu        sync.Mutex
	sessionID string
	last      string // the last assistant text
	fail      failureNotes
}

type opencodeEvent struct {
	Type      string          `json:"type"`
	SessionID string          `json:"sessionID"`
	Part      json.RawMessage `json:"part"`
	Error     json.RawMessage `json:"error"`
}

type opencodePart struct {
	Type   string `json:"type"`
	Text   string `json:"text"`
	Tool   string `json:"tool"`
	CallID string `json:"callID"`
	State  struct {
		Status string          `json:"status"`
		Input  json.RawMessage `json:"input"`
		Output json.RawMessage `json:"output"`
		Error  json.RawMessage `json:"error"`
		Title  string          `json:"title"`
	} `json:"state"`
	// step-finish
	Reason string   `json:"reason"`
	Cost   *float64 `json:"cost"`
	Tokens *struct {
		Total     *float64 `json:"total"`
		Input     *float64 `json:"input"`
		Output    *float64 `json:"output"`
		Reasoning *float64 `json:"reasoning"`
		Cache     *struct {
			Read  *float64 `json:"read"`
			Write *float64 `json:"write"`
		} `json:"cache"`
	} `json:"tokens"`
}

func (n *opencodeNormalizer) Line(stream string, line []byte, now time.Time) []Entry {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := n.line(stream, line, now)
	n.fail.note(out)
	return out
}

func (n *opencodeNormalizer) line(stream string, line []byte, now time.Time) []Entry {
	var ev opencodeEvent
	if _, out, ok := decodeEvent(stream, line, now, &ev); !ok {
		return out
	}
	raw := bytes.TrimSpace(line)
	if n.sessionID == "" && ev.SessionID != "" {
		n.sessionID = ev.SessionID
	}
	var p opencodePart
	partOK := json.Unmarshal(ev.Part, &p) == nil
	switch ev.Type {
	case "step_start":
		return nil
	case "text":
		if !partOK {
			break
		}
		if strings.TrimSpace(p.Text) == "" {
			return nil
		}
		n.last = cutUTF8(p.Text, MaxContentBytes)
		return []Entry{newEntry(now, tasks.EntryAssistantMessage, p.Text, nil)}
	case "reasoning":
		if !partOK {
			break
		}
		if strings.TrimSpace(p.Text) == "" {
			return nil
		}
		return []Entry{newEntry(now, tasks.EntryThinking, p.Text, nil)}
	case "tool_use":
		if !partOK {
			break
		}
		return []Entry{n.tool(p, now)}
	case "step_finish":
		if !partOK {
			break
		}
		return []Entry{n.stepFinish(p, now)}
	case "error":
		return []Entry{n.errorEntry(ev.Error, now)}
	}
	meta := map[string]any{"event_type": ev.Type}
	rawDetail(meta, "event", raw)
	return []Entry{newEntry(now, tasks.EntrySystemMessage, "Event: "+ev.Type, meta)}
}

func (n *opencodeNormalizer) tool(p opencodePart, now time.Time) Entry {
	meta := map[string]any{"tool_name": p.Tool, "tool_use_id": p.CallID}
	rawDetail(meta, "input", p.State.Input)
	setIf(meta, "title", oneLine(p.State.Title))
	content := toolSummary(p.Tool, p.State.Input)
	switch p.State.Status {
	case "completed":
		meta["status"] = "success"
		detail(meta, "result", textOf(p.State.Output))
	case "error":
		meta["status"] = "error"
		msg := strings.TrimSpace(errorText(p.State.Error))
		detail(meta, "error", msg)
		if first := oneLine(msg); first != "" {
			content += " (error: " + first + ")"
		} else {
			content += " (error)"
		}
	case "pending", "running":
		meta["status"] = "started"
	default:
		setIf(meta, "status", p.State.Status)
	}
	return newEntry(now, tasks.EntryToolUse, content, meta)
}

func (n *opencodeNormalizer) stepFinish(p opencodePart, now time.Time) Entry {
	meta := map[string]any{}
	setIf(meta, "reason", p.Reason)
	var parts []string
	count := func(key, what string, v *float64) {
		if v != nil {
			meta[key] = int64(*v)
			if what != "" {
				parts = append(parts, fmt.Sprintf("%d %s", int64(*v), what))
			}
		}
	}
	if t := p.Tokens; t != nil {
		count("input_tokens", "input", t.Input)
		count("output_tokens", "output", t.Output)
		count("reasoning_tokens", "reasoning", t.Reasoning)
		count("total_tokens", "", t.Total)
		if c := t.Cache; c != nil {
			count("cache_read_tokens", "cached", c.Read)
			count("cache_write_tokens", "", c.Write)
		}
	}
	content := "Step finished"
	if p.Reason != "" {
		content += ": " + p.Reason
	}
	if len(parts) > 0 {
		content += " (" + strings.Join(parts, ", ") + " tokens"
		if p.Cost != nil {
			content += fmt.Sprintf(", $%.4f", *p.Cost)
		}
		content += ")"
	} else if p.Cost != nil {
		content += fmt.Sprintf(" ($%.4f)", *p.Cost)
	}
	if p.Cost != nil {
		meta["cost_usd"] = *p.Cost
	}
	return newEntry(now, tasks.EntrySystemMessage, content, meta)
}

// errorEntry reads the error event's payload: a named error whose data
// carries the message ({"name":"APIError","data":{"message":…}}), or
// whatever else the SDK returned.
func (n *opencodeNormalizer) errorEntry(raw json.RawMessage, now time.Time) Entry {
	meta := map[string]any{"event_type": "error"}
	var e struct {
		Name string `json:"name"`
		Data struct {
			Message     json.RawMessage `json:"message"`
			IsRetryable *bool           `json:"isRetryable"`
			StatusCode  *float64        `json:"statusCode"`
			ProviderID  string          `json:"providerID"`
		} `json:"data"`
		Message json.RawMessage `json:"message"`
	}
	_ = json.Unmarshal(raw, &e)
	setIf(meta, "error_name", e.Name)
	setIf(meta, "provider_id", e.Data.ProviderID)
	if e.Data.IsRetryable != nil {
		meta["retryable"] = *e.Data.IsRetryable
	}
	if e.Data.StatusCode != nil {
		meta["status_code"] = int(*e.Data.StatusCode)
	}
	msg := strings.TrimSpace(errorText(e.Data.Message))
	if msg == "" {
		msg = strings.TrimSpace(errorText(e.Message))
	}
	switch {
	case msg != "":
		return newEntry(now, tasks.EntryErrorMessage, msg, meta)
	case e.Name != "":
		return genericError(now, e.Name, meta)
	case len(bytes.TrimSpace(raw)) > 0 && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")):
		rawDetail(meta, "error", raw)
		if s := strings.TrimSpace(errorText(raw)); s != "" && s[0] != '{' && s[0] != '[' {
			return newEntry(now, tasks.EntryErrorMessage, s, meta)
		}
	}
	return genericError(now, "error", meta)
}

func (n *opencodeNormalizer) Finish(time.Time) []Entry { return nil }

func (n *opencodeNormalizer) AgentSessionID() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.sessionID
}

func (n *opencodeNormalizer) Summary() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.last
}

func (n *opencodeNormalizer) FailureReason() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.fail.reason()
}

func (e *opencodeEvent) kind() string { return e.Type }
